// Package views holds the HTML templates. Each file is parsed into one
// namespace under its path without extension ("vault/index"); every define
// inside a file is named by that path too ("vault/row"), so names never collide.
// Templates only show what their view model holds: they query nothing.
package views

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
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
	// Templates returns the parsed templates, parsing them when needed.
	Templates() (*template.Template, error)
	// Cached returns template name executed with binding, from the cache
	// of page parts under key (see Fragments): the same key must mean the
	// same output. An empty key caches nothing. Templates call it as cached.
	Cached(name, key string, binding any) (template.HTML, error)
}

// Layout is what a layout template renders: the page's Base (the layout
// data every view model embeds) and the page, or inner layout, already
// rendered.
type Layout struct {
	Base    any
	Content template.HTML
}

// Engine returns the template engine. With reload set and the views folder
// present under dir, templates are read from disk, and read again when a
// file there changes, so edits show without a rebuild; otherwise the
// embedded copies are used.
func Engine(reload bool, dir string, funcs map[string]any) Renderer {
	r := &renderer{cache: NewFragments(cacheMaxBytes)}
	funcs = maps.Clone(funcs)
	if funcs == nil {
		funcs = map[string]any{}
	}
	funcs["cached"] = r.Cached
	if st, err := os.Stat(dir); reload && err == nil && st.IsDir() {
		r.engine, r.watch = html.New(dir, ".html"), &watch{dir: dir}
	} else {
		r.engine = html.NewFileSystem(http.FS(files), ".html")
	}
	r.engine.AddFuncMap(funcs)
	return r
}

// cacheMaxBytes bounds the page parts a renderer caches (about 3,000
// vault rows, or 500 tables of ten).
const cacheMaxBytes = 4 << 20

// renderer executes the parsed templates itself: parsed templates are safe
// to execute in parallel, and the engine's own Render serializes every page
// that has a layout behind one lock.
type renderer struct {
	engine *html.Engine
	watch  *watch     // development: reload when a file changed
	cache  *Fragments // page parts rendered once (Cached)
}

// Cached returns name executed with binding, from r's cache.
func (r *renderer) Cached(name, key string, binding any) (template.HTML, error) {
	return r.cache.Render(r, name, key, binding)
}

// Load parses the templates.
func (r *renderer) Load() error {
	return r.engine.Load()
}

// Templates returns the parsed templates.
func (r *renderer) Templates() (*template.Template, error) {
	if err := r.load(); err != nil {
		return nil, err
	}
	r.engine.Mutex.RLock()
	defer r.engine.Mutex.RUnlock()
	return r.engine.Templates, nil
}

func (r *renderer) load() error {
	if r.watch != nil && r.watch.changed() {
		r.engine.Mutex.Lock()
		r.engine.Loaded = false
		r.engine.Mutex.Unlock()
	}
	return r.engine.Load() // does nothing once loaded
}

// buffers hold pages while their layouts are executed around them: a
// page's buffer would otherwise grow from nothing on every render.
var buffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// putBuffer returns buf to buffers unless it grew past what pages need.
func putBuffer(buf *bytes.Buffer) {
	if buf.Cap() <= 1<<20 {
		buf.Reset()
		buffers.Put(buf)
	}
}

// Render executes name with binding, then each layout around the result,
// innermost first.
func (r *renderer) Render(out io.Writer, name string, binding any, layouts ...string) error {
	tmpls, err := r.Templates()
	if err != nil {
		return err
	}
	page := tmpls.Lookup(name)
	if page == nil {
		return fmt.Errorf("render: template %s does not exist", name)
	}
	layouts = slices.DeleteFunc(slices.Clone(layouts), func(l string) bool { return l == "" })
	if len(layouts) == 0 {
		return page.Execute(out, binding)
	}
	buf := buffers.Get().(*bytes.Buffer)
	defer putBuffer(buf)
	if err := page.Execute(buf, binding); err != nil {
		return err
	}
	data := Layout{Base: baseOf(binding)}
	for i, name := range layouts {
		lay := tmpls.Lookup(name)
		if lay == nil {
			return fmt.Errorf("render: layout %s does not exist", name)
		}
		data.Content = template.HTML(buf.String())
		if i == len(layouts)-1 {
			return lay.Execute(out, data)
		}
		buf.Reset()
		if err := lay.Execute(buf, data); err != nil {
			return err
		}
	}
	return nil
}

// baseOf returns the field Base of a view model (a struct or a pointer to
// one), or nil.
func baseOf(view any) any {
	v := reflect.ValueOf(view)
	for v.Kind() == reflect.Pointer && !v.IsNil() {
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return nil
	}
	if f := v.FieldByName("Base"); f.IsValid() {
		return f.Interface()
	}
	return nil
}

// watch tells when a folder's files changed, looking at most every
// checkEvery: parsing every file on every render would cost more than the
// page.
type watch struct {
	dir string

	mu      sync.Mutex
	stamp   string
	checked time.Time
}

const checkEvery = 250 * time.Millisecond

// changed reports whether the folder's files differ from the last look.
func (w *watch) changed() bool {
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
	first := w.stamp == ""
	w.stamp = string(stamp)
	return !first
}
