// Package views holds the HTML templates. Each file is parsed into one
// namespace under its path without extension ("vault/index"); every define
// inside a file is named by that path too ("vault/row"), so names never collide.
package views

import (
	"embed"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/gofiber/template/html/v2"
)

//go:embed */*.html
var files embed.FS

// Renderer is what Fiber renders pages with.
type Renderer interface {
	Load() error
	Render(out io.Writer, name string, binding any, layout ...string) error
}

// Engine returns the template engine. With reload set and the views folder
// present under dir, templates are read from disk, and read again when a
// file there changes, so edits show without a rebuild; otherwise the
// embedded copies are used.
func Engine(reload bool, dir string, funcs map[string]any) Renderer {
	if st, err := os.Stat(dir); reload && err == nil && st.IsDir() {
		e := html.New(dir, ".html")
		e.AddFuncMap(funcs)
		return &watched{Engine: e, dir: dir}
	}
	e := html.NewFileSystem(http.FS(files), ".html")
	e.AddFuncMap(funcs)
	return e
}

// watched re-parses its templates only when a file of its folder changed,
// looking at most every checkEvery: parsing every file on every render
// would cost more than the page.
type watched struct {
	*html.Engine
	dir string

	mu      sync.Mutex
	stamp   string
	checked time.Time
}

const checkEvery = 250 * time.Millisecond

// Render renders name after reloading the templates if they changed.
func (w *watched) Render(out io.Writer, name string, binding any, layout ...string) error {
	if w.changed() {
		w.Engine.Mutex.Lock()
		w.Engine.Loaded = false
		w.Engine.Mutex.Unlock()
	}
	return w.Engine.Render(out, name, binding, layout...)
}

// changed reports whether the folder's files differ from the last look.
func (w *watched) changed() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if time.Since(w.checked) < checkEvery {
		return false
	}
	w.checked = time.Now()
	var stamp []byte
	_ = filepath.WalkDir(w.dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if info, err := d.Info(); err == nil {
			stamp = append(stamp, path...)
			stamp = info.ModTime().AppendFormat(stamp, time.RFC3339Nano)
		}
		return nil
	})
	if string(stamp) == w.stamp {
		return false
	}
	w.stamp = string(stamp)
	return true
}
