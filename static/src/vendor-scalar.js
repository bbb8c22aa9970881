// Copies Scalar's standalone bundle into static/vendor, without the
// @font-face rules that point at Scalar's font CDN: Stencil serves the API
// reference with no request leaving the machine, in system fonts.
// Usage: node static/src/vendor-scalar.js <output file>
"use strict";
const fs = require("fs");

const path = require("path");
const src = path.join(__dirname, "..", "..", "node_modules", "@scalar", "api-reference", "dist", "browser", "standalone.js");
const out = process.argv[2];
let js = fs.readFileSync(src, "utf8");

// The rules live in one template literal that starts with this comment.
const start = js.indexOf("`/* Inter (--scalar-font) */");
const end = start < 0 ? -1 : js.indexOf("`", start + 1);
if (start < 0 || end < 0 || js.indexOf("fonts.scalar.com", end) >= 0) {
  console.error("vendor-scalar: the bundle's font rules have moved; update this script");
  process.exit(1);
}
js = js.slice(0, start) + "``" + js.slice(end + 1);
fs.writeFileSync(out, js);
