package handlers

import (
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// TestRouterAndDocumentListTheSameOperations: every API operation the app
// serves is in the OpenAPI document, and every operation of the document is
// served.
func TestRouterAndDocumentListTheSameOperations(t *testing.T) {
	t.Parallel()
	ta := newTestApp(t)
	served := map[string]bool{}
	for _, r := range ta.app.GetRoutes(true) {
		// A project's routes at /x are described by the project's own
		// document, not this one.
		if r.Method == http.MethodHead || browserOnly(r.Path) || strings.HasPrefix(r.Path, "/static") || r.Path == "/x/*" {
			continue
		}
		served[r.Method+" "+r.Path] = true
	}
	documented := map[string]bool{}
	for path, item := range ta.h.api.Doc.Paths.Map() {
		for method := range item.Operations() {
			documented[method+" "+path] = true
		}
	}
	for _, op := range slices.Sorted(maps.Keys(served)) {
		if !documented[op] {
			t.Errorf("%s is served but not in the OpenAPI document", op)
		}
	}
	for _, op := range slices.Sorted(maps.Keys(documented)) {
		if !served[op] {
			t.Errorf("%s is in the OpenAPI document but not served", op)
		}
	}
	if len(served) == 0 {
		t.Fatal("no API operations found: the comparison proves nothing")
	}
}

func TestAPIDocumentIsServed(t *testing.T) {
	t.Parallel()
	ta := newTestApp(t)
	ta.run(t, []scenario{
		{name: "openapi.json", method: "GET", path: "/openapi.json", status: 200,
			want:   []string{`"openapi":"3.1.0"`, `"bearerAuth"`, `"/readyz"`, `"Envelope"`},
			header: map[string]string{"Content-Type": "application/json; charset=utf-8"}},
		{name: "scalar page loads only local files", method: "GET", path: "/scalar", status: 200,
			want: []string{`/static/vendor/scalar/standalone.js?v=`, `<div id="api-docs" class="-mx-4 sm:mx-0" data-url="/openapi.json"`}, unwanted: []string{"https://", "http://"}},
	})
}
