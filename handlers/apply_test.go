package handlers

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
)

// saveTemplate saves doc as the vault app's ADMIN and returns its id.
func saveTemplate(t *testing.T, ta *testApp, h map[string]string, doc string) int64 {
	t.Helper()
	req := jsonRequest("POST", "/route/template/create", doc, h)
	resp, body := ta.do(t, req)
	if resp.StatusCode != 201 {
		t.Fatalf("save: %d %.300s", resp.StatusCode, body)
	}
	var out struct{ Data struct{ ID int64 } }
	_ = json.Unmarshal([]byte(body), &out)
	return out.Data.ID
}

// variableTemplate is a template whose route_id, route_path and delimiter
// are all placeholders.
const variableTemplate = `{"name":%q,"description":"d","method":"GET","route_id":"{rid}","route_path":"/{rpath}",
	"params":{"delimiter":"{delim}","pairs":[]},"body":[],
	"variables":[{"key":"rid","description":"id","default_value":"fallback"},{"key":"rpath","description":"p"},{"key":"delim","description":"d","default_value":"&"}],
	"flow":{"blocks":[]}}`

// TestApplyMakesOnlyValidRoutes: the substituted route meets the route rules
// (docs/routes.md rule 6), null values take the default, a placeholder delimiter
// is a valid template.
func TestApplyMakesOnlyValidRoutes(t *testing.T) {
	t.Parallel()
	ta, _, h := vaultApp(t)
	id := saveTemplate(t, ta, h, fmt.Sprintf(variableTemplate, "vars"))
	apply := func(values string) string {
		return fmt.Sprintf(`{"id":%d,"project_id":"shop","values":%s}`, id, values)
	}
	ta.run(t, []scenario{
		{name: "valid", method: "POST", path: "/route/template/apply", headers: h, body: apply(`{"rid":"ok","rpath":"x"}`), status: 200,
			want: []string{`"route_id":"ok"`, `"route_path":"/x"`, `"delimiter":"\u0026"`}},
		{name: "null takes the default", method: "POST", path: "/route/template/apply", headers: h, body: apply(`{"rid":null,"rpath":"x"}`), status: 200,
			want: []string{`"route_id":"fallback"`}},
		{name: "null without a default is missing", method: "POST", path: "/route/template/apply", headers: h, body: apply(`{"rpath":null}`), status: 422,
			want: []string{`"values.rpath":"has no value and the variable has no default"`}},
		{name: "bad route id", method: "POST", path: "/route/template/apply", headers: h, body: apply(`{"rid":"bad id!/..","rpath":"x"}`), status: 422,
			want: []string{`"route_id":"must be 1–100 letters, digits, _ or -"`}},
		{name: "non-ASCII path", method: "POST", path: "/route/template/apply", headers: h, body: apply(`{"rid":"r","rpath":"Ünïcødé"}`), status: 422,
			want: []string{`"route_path":`}},
		{name: "6-character delimiter", method: "POST", path: "/route/template/apply", headers: h, body: apply(`{"rid":"r","rpath":"x","delim":"&&&&&&"}`), status: 422,
			want: []string{`"params.delimiter":"must be 1–5 characters"`}},
	})
}

// TestApplyStaysSmall: a template whose text holds {col} 20,000 times,
// applied with a 40 KB value, is refused while substituting — not after
// building 800 MB.
func TestApplyStaysSmall(t *testing.T) {
	t.Parallel()
	ta, _, h := vaultApp(t)
	doc := fmt.Sprintf(`{"name":"big","description":"d","method":"GET","route_id":"r","route_path":"/r",
		"variables":[{"key":"col","description":"c"}],
		"flow":{"blocks":[{"type":"TEMPLATE","depth":0,"local_name":"x","templatestring":%q,"data":[],"conditions":[]}]}}`,
		strings.Repeat("{col}", 20000))
	id := saveTemplate(t, ta, h, doc)
	ta.run(t, []scenario{
		{name: "40 KB value", method: "POST", path: "/route/template/apply", headers: h,
			body: fmt.Sprintf(`{"id":%d,"project_id":"shop","values":{"col":%q}}`, id, strings.Repeat("v", 40<<10)), status: 422,
			want: []string{"Error: the route would be larger than 1 MiB"}},
		{name: "short value", method: "POST", path: "/route/template/apply", headers: h,
			body: fmt.Sprintf(`{"id":%d,"project_id":"shop","values":{"col":"ab"}}`, id), status: 200},
	})
}

// TestLintStaysSmall: documents over 1 MiB are 413 for every role, and the
// warnings of a document with many faults are capped.
func TestLintStaysSmall(t *testing.T) {
	t.Parallel()
	ta := newTestApp(t)
	viewer := as(ta.token(t, ta.newUser(t, "viewer", "VIEWER")))
	var blocks []string
	for i := range 200 {
		blocks = append(blocks, fmt.Sprintf(`{"type":"FETCH","depth":0,"local_name":"{p%d}","ref_col":"c"}`, i))
	}
	doc := `{"name":"t","description":"d","method":"GET","route_id":"r","route_path":"/r","flow":{"blocks":[` + strings.Join(blocks, ",") + `]}}`
	req := jsonRequest("POST", "/web/routes/templates/lint", doc, viewer)
	resp, body := ta.do(t, req)
	var out struct{ Warnings []string }
	if err := json.Unmarshal([]byte(body), &out); err != nil || resp.StatusCode != 200 || len(out.Warnings) != 51 ||
		out.Warnings[50] != "and 150 more warnings" {
		t.Fatalf("%d, %d warnings: %.300s", resp.StatusCode, len(out.Warnings), body)
	}
	huge := `{"name":"t","description":"` + strings.Repeat("x", 2<<20) + `"}`
	ta.expectStatus(t, "2 MB document", "POST", "/web/routes/templates/lint", huge, viewer, 413)
	ta.expectStatus(t, "2 MB template", "POST", "/route/template/create", huge, viewer, 413)
}

// jsonRequest is a request with a JSON body and headers.
func jsonRequest(method, path, body string, headers map[string]string) *http.Request {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	return req
}

// TestListedTemplatesAreWhole: a template in a list, whose document passes
// through undecoded, is the same JSON value as the template fetched alone.
func TestListedTemplatesAreWhole(t *testing.T) {
	t.Parallel()
	ta, _, h := vaultApp(t)
	id := saveTemplate(t, ta, h, fetchByID("whole", ptr("shop")))
	_, one := ta.do(t, jsonRequest("GET", fmt.Sprintf("/route/template/fetch/one?id=%d", id), "", h))
	_, list := ta.do(t, jsonRequest("GET", "/route/template/fetch?project_id=shop", "", h))
	var a struct{ Data any }
	var b struct{ Data []any }
	if err := json.Unmarshal([]byte(one), &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(list), &b); err != nil || len(b.Data) != 1 {
		t.Fatalf("%v %s", err, list)
	}
	if !reflect.DeepEqual(a.Data, b.Data[0]) {
		t.Fatalf("fetched alone:\n%s\nlisted:\n%s", one, list)
	}
}

// TestLargeTemplatesAreCachedByVersion: a large template is applied from its
// decoded copy while its version stands, and never after it changed.
func TestLargeTemplatesAreCachedByVersion(t *testing.T) {
	t.Parallel()
	ta, _, h := vaultApp(t)
	blocks := strings.TrimSuffix(strings.Repeat(`{"type":"FETCH","depth":0,"local_name":"rows","ref_col":"{col}"},`, 1500), ",")
	doc := func(routeID string) string {
		return fmt.Sprintf(`{"name":"large","description":"d","method":"GET","route_id":%q,"route_path":"/r",
			"variables":[{"key":"col","description":"c","default_value":"books"}],"flow":{"blocks":[%s]}}`, routeID, blocks)
	}
	id := saveTemplate(t, ta, h, doc("first"))
	apply := fmt.Sprintf(`{"id":%d,"project_id":"shop","values":{}}`, id)
	for range 2 {
		ta.run(t, []scenario{{name: "apply", method: "POST", path: "/route/template/apply", headers: h, body: apply, status: 200,
			want: []string{`"route_id":"first"`, `"ref_col":"books"`}}})
	}
	if !ta.h.templates.Kept(id) {
		t.Fatal("the large template was not kept")
	}
	updated := strings.Replace(doc("second"), `{"name"`, fmt.Sprintf(`{"id":%d,"name"`, id), 1)
	if status, body := ta.call(t, "POST", "/route/template/create", updated, h); status != 200 {
		t.Fatalf("update: %d %.200s", status, body)
	}
	ta.run(t, []scenario{{name: "apply after the update", method: "POST", path: "/route/template/apply", headers: h, body: apply, status: 200,
		want: []string{`"route_id":"second"`}, unwanted: []string{`"route_id":"first"`}}})
}
