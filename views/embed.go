// Package views holds the HTML templates. Each file is parsed into one
// namespace under its path without extension ("vault/index"); every define
// inside a file is named by that path too ("vault/row"), so names never collide.
package views

import (
	"embed"
	"net/http"
	"os"

	"github.com/gofiber/template/html/v2"
)

//go:embed */*.html
var files embed.FS

// Engine returns the template engine. With reload set and the views folder
// present under dir, templates are read from disk on every render, so edits
// show without a rebuild; otherwise the embedded copies are used.
func Engine(reload bool, dir string, funcs map[string]any) *html.Engine {
	var e *html.Engine
	if st, err := os.Stat(dir); reload && err == nil && st.IsDir() {
		e = html.New(dir, ".html")
		e.Reload(true)
	} else {
		e = html.NewFileSystem(http.FS(files), ".html")
	}
	e.AddFuncMap(funcs)
	return e
}
