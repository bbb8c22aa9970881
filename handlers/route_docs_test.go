package handlers

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"stencil/store"
)

// TestProjectDocument: GET /x/<api_path>/openapi.json describes a project
// with routes of every method, path parameters, typed query and body
// inputs, auth_jwt and FAILs; it is valid OpenAPI 3.1, passes the
// platform's Spectral ruleset with no error, and every real answer of the
// routes has its status and body in it.
func TestProjectDocument(t *testing.T) {
	t.Parallel()
	ta, h := runApp(t)
	ctx := context.Background()
	if err := ta.h.store.CreateCollection(ctx, &store.Collection{ProjectID: "shop", ID: "members", Name: "Members"}, ta.root.ID); err != nil {
		t.Fatal(err)
	}
	member := store.Record{ProjectID: "shop", CollectionID: "members", Data: []byte(`{"username":"author"}`)}
	if err := ta.h.store.CreateRecord(ctx, &member); err != nil {
		t.Fatal(err)
	}
	ret := func(kv ...string) string {
		return `{"type":"RETURN","depth":0,"pairs":` + pairsOf(kv...) + `,"conditions":[]}`
	}
	fail := func(status int, left, right, message string) string {
		return `{"type":"CONDITION","depth":0,"conditions":[` + cond(left, "EQUAL_TO", right) + `],"action":"FAIL","fail":{"status":` + strconv.Itoa(status) + `,"message":"` + message + `"}}`
	}
	auth := `{"active":true,"field":"username","ref_col":"members"}`
	for _, r := range []runnable{
		{id: "list_books", method: "GET", path: "/books", params: `[{"id":"limit","bdtype":"INTEGER"},{"id":"sf","bdtype":"BOOLEAN"},{"id":"ids","bdtype":"ARRAY"}]`,
			blocks: []string{fetchBooks, ret("items", ref("rows"), "limit", ref("limit"))}},
		{id: "one_book", method: "GET", path: "/books/:id", blocks: []string{
			fail(404, ref("id"), lit("STRING", "0"), "no such book"), ret("id", ref("id"))}},
		{id: "add_book", method: "POST", path: "/books", body: `[{"id":"title","bdtype":"STRING"},{"id":"year","bdtype":"INTEGER"},{"id":"extra","bdtype":"OTHER"}]`, blocks: []string{
			fail(409, ref("title"), lit("STRING", "Dune"), "taken"),
			`{"type":"OBJECT","depth":0,"local_name":"book","pairs":` + pairsOf("title", ref("title"), "year", ref("year")) + `}`,
			`{"type":"CREATE","depth":0,"ref_col":"books","ref_object":"book","save":true,"conditions":[]}`,
			`{"type":"RETURN","depth":0,"pairs":` + pairsOf("book", ref("book")) + `,"conditions":[],"status":201,"headers":` + pairsOf("Location", lit("STRING", "/books/new")) + `}`}},
		{id: "put_book", method: "PUT", path: "/books/:id", auth: auth, body: `[{"id":"price","bdtype":"FLOAT"}]`, blocks: []string{
			ret("id", ref("id"), "price", ref("price"), "by", ref("auth.username"))}},
		{id: "patch_book", method: "PATCH", path: "/books/:id/flags", auth: auth, body: `[{"id":"ok","bdtype":"BOOLEAN"},{"id":"tags","bdtype":"ARRAY"}]`, blocks: []string{
			`{"type":"ASSIGNMENT","depth":0,"local_name":"x","conditions":[],"operations":[{"left":` + ref("ok") + `,"right":` + lit("STRING", "") + `,"operation_type":"NONE","not":false,"next":"NONE"}]}`}},
		{id: "delete_book", method: "DELETE", path: "/books/:id", blocks: []string{
			fail(403, lit("INTEGER", "1"), lit("INTEGER", "1"), "books are kept"),
			`{"type":"RETURN","depth":0,"pairs":[],"conditions":[],"status":204}`}},
		{id: "notify", method: "POST", path: "/notify", blocks: []string{
			`{"type":"HTTP","depth":0,"local_name":"res","method":"POST","url":` + lit("STRING", "https://hooks.example.com/x") + `,"query":[],"headers":[],"body":null,"timeout_ms":null,"conditions":[]}`,
			ret("status", ref("res.status"))}},
	} {
		r.save(t, ta, h)
	}
	// A route whose ":name" segment would match the document's path does
	// not hide it.
	runnable{id: "any_file", method: "GET", path: "/:file", blocks: []string{ret("file", ref("file"))}}.save(t, ta, h)
	status, raw := ta.call(t, "GET", "/x/shop/openapi.json", "", nil)
	if status != 200 {
		t.Fatalf("document: %d %s", status, raw)
	}
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(ctx); err != nil {
		t.Fatalf("not valid OpenAPI: %v", err)
	}
	if doc.OpenAPI != "3.1.0" || doc.Servers[0].URL != "/x/shop" || doc.Info.Title != "Shop API" {
		t.Fatalf("document head: %s %+v %q", doc.OpenAPI, doc.Servers, doc.Info.Title)
	}
	put := doc.Paths.Value("/books/{id}").Put
	if put == nil || put.Security == nil || len(*put.Security) != 1 || put.Parameters.GetByInAndName("path", "id") == nil || put.Responses.Status(401) == nil {
		t.Fatalf("PUT /books/{id}: %+v", put)
	}
	if q := doc.Paths.Value("/books").Get.Parameters.GetByInAndName("query", "limit"); q == nil || !q.Schema.Value.Type.Is("integer") ||
		q.Schema.Value.Max == nil || *q.Schema.Value.Max != 1<<53-1 || q.Schema.Value.Min == nil || *q.Schema.Value.Min != -(1<<53-1) {
		t.Fatalf("query parameter limit: %+v", q)
	}
	post := doc.Paths.Value("/books").Post.Responses
	if created := post.Status(201); created == nil || post.Status(200) != nil || created.Value.Headers["Location"] == nil ||
		!created.Value.Headers["Location"].Value.Required || created.Value.Content.Get("application/json") == nil {
		t.Fatalf("POST /books answers %v", post.Map())
	}
	if gone := doc.Paths.Value("/books/{id}").Delete.Responses.Status(204); gone == nil || gone.Value.Content != nil {
		t.Fatalf("DELETE /books/{id} 204: %+v", gone)
	}
	if notify := doc.Paths.Value("/notify").Post.Responses; notify.Status(502) == nil || notify.Status(504) == nil {
		t.Fatalf("POST /notify answers %v", notify.Map())
	}
	if doc.Paths.Value("/books/{id}").Get.Security != nil || doc.Paths.Value("/books").Post.Responses.Status(409) == nil {
		t.Fatal("a public route with security, or a FAIL status missing")
	}

	// Spectral, with the platform's ruleset.
	file := filepath.Join(t.TempDir(), "routes.json")
	if err := os.WriteFile(file, []byte(raw), 0o600); err != nil {
		t.Fatal(err)
	}
	spectral := filepath.Join("..", "node_modules", ".bin", "spectral")
	if _, err := os.Stat(spectral); err != nil {
		t.Fatalf("Spectral is not installed (make deps-node installs it): %v", err)
	}
	if out, err := exec.Command(spectral, "lint", "--ruleset", filepath.Join("..", ".spectral.yaml"), "--fail-severity", "error", file).CombinedOutput(); err != nil {
		t.Fatalf("Spectral: %v\n%s", err, out)
	}

	// The routes' real answers are in the document.
	token := h["Authorization"]
	for _, c := range []struct {
		method, path, docPath, body string
		auth                        bool
		status                      int
	}{
		{"GET", "/books?limit=2&sf=true", "/books", "", false, 200},
		{"GET", "/books?limit=many", "/books", "", false, 400},
		{"GET", "/books/7", "/books/{id}", "", false, 200},
		{"GET", "/books/0", "/books/{id}", "", false, 404},
		{"GET", "/books/a%00b", "/books/{id}", "", false, 400},
		{"POST", "/books", "/books", `{"title":"Kim","year":1901,"extra":null}`, false, 201},
		{"POST", "/books", "/books", `{"title":"Dune","year":1965,"extra":1}`, false, 409},
		{"POST", "/books", "/books", `{"title":"Kim"}`, false, 400},
		{"PUT", "/books/3", "/books/{id}", `{"price":9.5}`, true, 200},
		{"PUT", "/books/3", "/books/{id}", `{"price":9.5}`, false, 401},
		{"PATCH", "/books/3/flags", "/books/{id}/flags", `{"ok":true,"tags":[]}`, true, 200},
		{"DELETE", "/books/3", "/books/{id}", "", false, 403},
	} {
		req := httptest.NewRequest(c.method, "/x/shop"+c.path, strings.NewReader(c.body))
		req.Header.Set("Content-Type", "application/json")
		if c.auth {
			req.Header.Set("Authorization", token)
		}
		resp, body := ta.do(t, req)
		if resp.StatusCode != c.status {
			t.Errorf("%s %s: %d %s, want %d", c.method, c.path, resp.StatusCode, body, c.status)
			continue
		}
		op := doc.Paths.Value(c.docPath).GetOperation(c.method)
		answer := op.Responses.Status(resp.StatusCode)
		if answer == nil {
			t.Errorf("%s %s answered %d, which the document does not list", c.method, c.path, resp.StatusCode)
			continue
		}
		for name, h := range answer.Value.Headers {
			if h.Value.Required && resp.Header.Get(name) == "" {
				t.Errorf("%s %s answered without its documented header %s", c.method, c.path, name)
			}
		}
		var v any
		if err := json.Unmarshal([]byte(body), &v); err != nil {
			t.Fatal(err)
		}
		if err := answer.Value.Content.Get("application/json").Schema.Value.VisitJSON(v); err != nil {
			t.Errorf("%s %s: the answer %s is not as documented: %v", c.method, c.path, body, err)
		}
	}
}
