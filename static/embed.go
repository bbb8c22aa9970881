// Package static holds the files served under /static: the built Tailwind CSS,
// Stencil's own scripts and the vendored htmx and Scalar bundles. `make
// assets` rebuilds css/ and vendor/ from the versions pinned in package.json.
package static

import "embed"

// FS holds every served file.
//
//go:embed css js vendor img
var FS embed.FS
