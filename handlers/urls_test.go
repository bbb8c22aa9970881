package handlers

import (
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
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
	for path, item := range ta.h.api.doc.Paths.Map() {
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

// TestBlockSchemaIsStrict: the generated Block schema accepts a block of
// each type as the server writes it and refuses malformed ones, so the
// response checks of the other tests really check blocks.
func TestBlockSchemaIsStrict(t *testing.T) {
	t.Parallel()
	api, err := loadAPIDoc()
	if err != nil {
		t.Fatal(err)
	}
	schema := api.doc.Components.Schemas["Block"].Value
	check := func(doc string) error {
		var v any
		if err := json.Unmarshal([]byte(doc), &v); err != nil {
			t.Fatal(err)
		}
		return schema.VisitJSON(v, openapi3.EnableJSONSchema2020())
	}
	if err := check(`{"type":"FETCH","depth":0,"local_name":"a","ref_col":"b"}`); err != nil {
		t.Fatalf("a valid block is refused: %v", err)
	}
	for name, doc := range map[string]string{
		"missing field":    `{"type":"FETCH","depth":0,"local_name":"a"}`,
		"field of another": `{"type":"FETCH","depth":0,"local_name":"a","ref_col":"b","pairs":[]}`,
		"unknown type":     `{"type":"GOTO","depth":0}`,
		"bad enum":         `{"type":"CONDITION","depth":0,"conditions":[],"action":"RETRY","fail":null}`,
		"negative depth":   `{"type":"VAULT","depth":-1,"local_name":"a","key":"K"}`,
		"operand shape":    `{"type":"PROPERTY","depth":0,"local_name":"a","data":{"ref_var":1},"apply":"LENGTH","additional":""}`,
	} {
		if check(doc) == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
