package handlers

import (
	"bytes"
	"sort"
	"strings"
	"testing"

	"stencil/views"
)

// sampleViews gives every template and named fragment a view model to render
// with. A template missing here fails TestEveryTemplateRenders, so new
// templates are rendered in CI before a person meets them.
func sampleViews() map[string]sample {
	base := Base{Title: "Sample", CSRF: "token", Flash: &Flash{Kind: "success", Text: "Saved"},
		Nav: []NavItem{{Label: "Home", Href: "/", Active: true}}}
	errView := errorView{Base: base, Status: 404, Heading: "Not Found", Message: "Error: not found"}
	return map[string]sample{
		"home/index":      {page: true, view: homeView{Base: base, Cards: []homeCard{{Title: "T", Text: "x", Href: "/"}}}},
		"errors/page":     {page: true, view: errView},
		"errors/fragment": {view: errView},
		"partials/nav":    {view: base},
		"partials/flash":  {view: base.Flash},
		"api/scalar":      {view: nil},
	}
}

// sample is a view model to render a template with; page templates are
// rendered inside the layout as well.
type sample struct {
	view any
	page bool
}

func TestEveryTemplateRenders(t *testing.T) {
	h := newTestApp(t).h
	engine := views.Engine(false, "", h.templateFuncs())
	if err := engine.Load(); err != nil {
		t.Fatal(err)
	}
	samples := sampleViews()
	var names []string
	for _, tmpl := range engine.Templates.Templates() {
		if name := tmpl.Name(); name != "/" {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	if len(names) < len(samples) {
		t.Fatalf("found only %d templates: %v", len(names), names)
	}
	for _, name := range names {
		if name == "layouts/base" {
			continue // rendered around every page below
		}
		s, ok := samples[name]
		if !ok {
			t.Errorf("template %q has no sample view in sampleViews", name)
			continue
		}
		var buf bytes.Buffer
		if err := engine.Render(&buf, name, s.view); err != nil {
			t.Errorf("render %s: %v", name, err)
		}
		if !s.page {
			continue
		}
		buf.Reset()
		if err := engine.Render(&buf, name, s.view, "layouts/base"); err != nil {
			t.Errorf("render %s in the layout: %v", name, err)
		} else if !strings.Contains(buf.String(), "<title>") {
			t.Errorf("%s in the layout has no title", name)
		}
	}
}
