// Package static holds the files served under /static: the built Tailwind CSS,
// Stencil's own scripts (minified from src/js) and the vendored htmx and Scalar
// bundles. `make assets` rebuilds css/, js/ and vendor/ with the tools and
// versions pinned in package.json. Nothing here is loaded from a CDN.
package static

import "embed"

// FS holds every served file.
//
//go:embed css js vendor img
var FS embed.FS
