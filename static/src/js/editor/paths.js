// Paths name a place in a route document the way the server's checks do:
// "flow.blocks[2].conditions[0].left.data" (docs/routes.md, "Checks").

// parts splits a path into its keys and indexes, as text.
export function parts(path) {
  return path.replace(/\[(\d+)\]/g, ".$1").split(".").filter(Boolean);
}

function numeric(p) { return /^\d+$/.test(p || ""); }

// join writes parts back as a path: indexes in brackets.
export function join(ps) {
  return ps.reduce(function (s, p) { return numeric(p) ? s + "[" + p + "]" : s ? s + "." + p : p; }, "");
}

// get reads the value at path in doc (undefined when it is not there).
export function get(doc, path) {
  return parts(path).reduce(function (o, k) { return o == null ? undefined : o[k]; }, doc);
}

// set writes value at path in doc; every part but the last must exist.
export function set(doc, path, value) {
  const ps = parts(path);
  let o = doc;
  for (let i = 0; i < ps.length - 1; i++) o = o[ps[i]];
  o[ps[ps.length - 1]] = value;
}

// holds says whether a check about held covers path: the same place, or a
// place inside it.
export function holds(held, path) {
  return held === path || path.indexOf(held + ".") === 0;
}

// where names a path for people, the way the form shows it:
// "flow.blocks[1].conditions[0].left.data" is "Block 2 (CONDITION) ·
// Condition 1 · Left value". form tells what the page knows: item(path)
// is the name of a list's rows ("Field"), label(path) the label of the
// field at path; either may give nothing.
export function where(doc, path, form) {
  path = path.replace(/\?$/, ""); // an optional part's switch names the part
  const all = parts(path), out = [];
  let skip = 0;
  if (all[0] === "flow" && all[1] === "blocks" && numeric(all[2])) {
    const b = ((doc.flow && doc.flow.blocks) || [])[+all[2]];
    out.push("Block " + (+all[2] + 1) + (b && b.type ? " (" + b.type + ")" : ""));
    skip = 3;
  } else if (all[0] === "params" && all[1] === "pairs" && numeric(all[2])) {
    out.push("URL parameter " + (+all[2] + 1));
    skip = 3;
  } else if (all[0] === "body" && numeric(all[1])) {
    out.push("Body field " + (+all[1] + 1));
    skip = 2;
  }
  const ps = all.slice(skip);
  for (let i = 1; i < ps.length; i++) {
    if (numeric(ps[i]) && !numeric(ps[i - 1])) {
      // A list's rows are named as the form names them ("Field 2" of a
      // RETURN's pairs), else by the path.
      const item = (form && form.item(join(all.slice(0, skip + i)))) || ps[i - 1].replace(/_/g, " ").replace(/s$/, "");
      out.push(item.charAt(0).toUpperCase() + item.slice(1) + " " + (+ps[i] + 1));
    }
  }
  // A whole block, row or parameter is named by itself, not by its first
  // field's label.
  let label = ps.length && form && form.label(path);
  if (!label && ps.length && !numeric(ps[ps.length - 1])) label = ps[ps.length - 1].replace(/_/g, " ");
  if (label) out.push(label.trim().charAt(0).toUpperCase() + label.trim().slice(1));
  return out.join(" · ") || path;
}
