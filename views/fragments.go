package views

import (
	"bytes"
	"html/template"
	"sync"
)

// Fragments keeps parts of pages rendered once: a fragment whose key says
// everything it shows, the same for every reader, is executed the first
// time and copied after. Templates are reflection at every action, and a
// table of such rows is most of a page's rendering. It holds at most max
// bytes, making room by dropping arbitrary fragments, and forgets all of
// them when the templates are parsed again (development reloads).
type Fragments struct {
	max int

	mu   sync.Mutex
	set  *template.Template // the templates the fragments came from
	m    map[string]template.HTML
	size int
}

// NewFragments returns a store of at most max bytes of fragments.
func NewFragments(max int) *Fragments {
	return &Fragments{max: max, m: map[string]template.HTML{}}
}

// Render returns template name executed with binding, from the store when
// key was rendered before with the same templates. key must name the
// template's inputs completely; an empty key keeps nothing.
func (f *Fragments) Render(r Renderer, name, key string, binding any) (template.HTML, error) {
	set, err := r.Templates()
	if err != nil {
		return "", err
	}
	if key == "" {
		return render(r, name, binding)
	}
	f.mu.Lock()
	if f.set != set {
		f.set, f.m, f.size = set, map[string]template.HTML{}, 0
	}
	html, ok := f.m[key]
	f.mu.Unlock()
	if ok {
		return html, nil
	}
	html, err = render(r, name, binding)
	if err == nil {
		f.put(set, key, html)
	}
	return html, err
}

// render executes name with binding.
func render(r Renderer, name string, binding any) (template.HTML, error) {
	var buf bytes.Buffer
	if err := r.Render(&buf, name, binding); err != nil {
		return "", err
	}
	return template.HTML(buf.String()), nil
}

// put stores html under key unless the templates changed meanwhile or it
// is larger than the whole store.
func (f *Fragments) put(set *template.Template, key string, html template.HTML) {
	n := len(key) + len(html)
	if n > f.max {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.set != set {
		return
	}
	if _, ok := f.m[key]; ok {
		return
	}
	for k, v := range f.m { // map order: an arbitrary victim each turn
		if f.size+n <= f.max {
			break
		}
		delete(f.m, k)
		f.size -= len(k) + len(v)
	}
	f.m[key] = html
	f.size += n
}
