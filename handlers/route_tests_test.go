package handlers

import (
	"encoding/json"
	"strings"
	"testing"

	"stencil/store"
)

// TestRouteTests: tests saved with a route (SPEC 18, docs/tests.md) —
// saved, listed, changed, renamed and deleted, each change an event;
// refused by path when they cannot run; run as dry runs whose failures
// read as lines; a write route's test leaves no record; a draft that
// breaks a test is named before it is saved; a caller's own request and
// an anonymous one.
func TestRouteTests(t *testing.T) {
	t.Parallel()
	ta, h := runApp(t)
	if err := ta.h.store.CreateCollection(t.Context(), &store.Collection{ProjectID: "shop", ID: "members", Name: "Members"}, ta.root.ID); err != nil {
		t.Fatal(err)
	}
	if err := ta.h.store.CreateRecord(t.Context(), &store.Record{ProjectID: "shop", CollectionID: "members", Data: []byte(`{"username":"author"}`)}); err != nil {
		t.Fatal(err)
	}
	runnable{id: "list_books", method: "GET", path: "/books", params: `[{"id":"n","bdtype":"INTEGER"}]`, blocks: []string{fetchBooks,
		`{"type":"RETURN","depth":0,"pairs":` + pairsOf("items", ref("rows"), "n", ref("n")) + `,"conditions":[]}`}}.save(t, ta, h)
	runnable{id: "add_book", method: "POST", path: "/books", body: `[{"id":"title","bdtype":"STRING"}]`, blocks: []string{
		`{"type":"OBJECT","depth":0,"local_name":"book","pairs":` + pairsOf("title", ref("title")) + `}`,
		`{"type":"CREATE","depth":0,"ref_col":"books","ref_object":"book","save":true,"conditions":[]}`,
		`{"type":"RETURN","depth":0,"pairs":` + pairsOf("book", ref("book")) + `,"conditions":[],"status":201}`}}.save(t, ta, h)
	runnable{id: "me", method: "GET", path: "/me", auth: `{"active":true,"field":"username","ref_col":"members"}`, blocks: []string{
		`{"type":"RETURN","depth":0,"pairs":` + pairsOf("ok", lit("BOOLEAN", "true")) + `,"conditions":[]}`}}.save(t, ta, h)
	events := func() int {
		_, body := ta.call(t, "GET", "/event/fetch?project_id=shop&limit=1", "", as(ta.token(t, ta.root)))
		var env struct{ Amount int }
		_ = json.Unmarshal([]byte(body), &env)
		return env.Amount
	}
	before := events()
	ta.run(t, []scenario{
		{name: "a passing test", method: "POST", path: "/route/test/create", headers: h, status: 201, body: `{"project_id":"shop","route_id":"list_books","name":"lists three",
			"request":{"path":"/books","query":"n=3","caller":"anonymous"},
			"expect":{"status":200,"body":{"n":3,"items":[{"title":"Dune"},{},{}]},"paths":[{"path":"items","op":"length","value":3}],"max_ms":5000}}`,
			want: []string{`"name":"lists three"`, `"headers":[]`}, unwanted: []string{`"body":null`}},
		{name: "a failing test", method: "POST", path: "/route/test/create", headers: h, status: 201, body: `{"project_id":"shop","route_id":"list_books","name":"first is Emma",
			"request":{"caller":"anonymous"},"expect":{"status":201,"paths":[{"path":"items.0.title","op":"equals","value":"Emma"}]}}`},
		{name: "a write route's test", method: "POST", path: "/route/test/create", headers: h, status: 201, body: `{"project_id":"shop","route_id":"add_book","name":"adds",
			"request":{"body":{"title":"Kim"},"caller":"self"},"expect":{"status":201,"body":{"book":{"title":"Kim"}}}}`},
		{name: "an auth route as the caller", method: "POST", path: "/route/test/create", headers: h, status: 201, body: `{"project_id":"shop","route_id":"me","name":"signed in",
			"request":{"caller":"self"},"expect":{"status":200}}`},
		{name: "an auth route without one", method: "POST", path: "/route/test/create", headers: h, status: 201, body: `{"project_id":"shop","route_id":"me","name":"anonymous",
			"request":{"caller":"anonymous"},"expect":{"status":401}}`},
		{name: "a name taken", method: "POST", path: "/route/test/create", headers: h, status: 409, body: `{"project_id":"shop","route_id":"me","name":"anonymous",
			"request":{"caller":"anonymous"},"expect":{}}`, want: []string{`has a test named \"anonymous\" already`}},
		{name: "a bad op", method: "POST", path: "/route/test/create", headers: h, status: 422, body: `{"project_id":"shop","route_id":"me","name":"x",
			"request":{"caller":"anonymous"},"expect":{"paths":[{"path":"a","op":"near"}]}}`, want: []string{`"expect.paths[0].op":"must be one of: equals`}},
		{name: "an unknown field inside", method: "POST", path: "/route/test/create", headers: h, status: 422, body: `{"project_id":"shop","route_id":"me","name":"x",
			"request":{"caller":"anonymous","cookie":"a"},"expect":{}}`, want: []string{`"request.cookie":"is not a known field"`}},
		{name: "no expectation", method: "POST", path: "/route/test/create", headers: h, status: 400, body: `{"project_id":"shop","route_id":"me","name":"x",
			"request":{"caller":"anonymous"}}`, want: []string{`expect`}},
		{name: "an unknown route", method: "POST", path: "/route/test/create", headers: h, status: 404, body: `{"project_id":"shop","route_id":"nope","name":"x",
			"request":{"caller":"anonymous"},"expect":{}}`},
		{name: "listed", method: "GET", path: "/route/test/fetch?project_id=shop", headers: h, status: 200, want: []string{`"amount":5`}},
		{name: "a route's", method: "GET", path: "/route/test/fetch?project_id=shop&route_id=me", headers: h, status: 200, want: []string{`"amount":2`}},
	})
	if got := events() - before; got != 5 {
		t.Fatalf("%d events for 5 tests saved", got)
	}
	records := func() string {
		_, body := ta.call(t, "GET", "/data/fetch?project_id=shop&collection_id=books&limit=100", "", h)
		return body
	}

	type result struct {
		RouteID  string `json:"route_id"`
		Test     string
		Passed   bool
		Status   int
		Failures []string
	}
	run := func(body string) (int, []result, string) {
		t.Helper()
		status, raw := ta.call(t, "POST", "/route/test/run", body, h)
		var env struct {
			Data struct {
				Passed, Failed int
				Results        []result
			}
		}
		_ = json.Unmarshal([]byte(raw), &env)
		return status, env.Data.Results, raw
	}
	status, results, raw := run(`{"project_id":"shop"}`)
	if status != 200 || !strings.Contains(raw, `"passed":4`) || !strings.Contains(raw, `"failed":1`) || len(results) != 5 {
		t.Fatalf("run: %d %s", status, raw)
	}
	for _, r := range results {
		if r.Test == "first is Emma" {
			want := []string{"status: expected 201, got 200", `body.items.0.title: expected "Emma", got "Dune"`}
			if r.Passed || r.Status != 200 || strings.Join(r.Failures, "|") != strings.Join(want, "|") {
				t.Fatalf("the failing test: %+v", r)
			}
		} else if !r.Passed {
			t.Fatalf("%s failed: %+v", r.Test, r)
		}
	}
	if strings.Contains(records(), "Kim") {
		t.Fatal("a write route's test left its record")
	}

	// A draft that breaks a test is named before it is saved.
	draft := runnable{id: "list_books", method: "GET", path: "/books", params: `[{"id":"n","bdtype":"INTEGER"}]`, blocks: []string{fetchBooks,
		`{"type":"RETURN","depth":0,"pairs":` + pairsOf("items", ref("rows")) + `,"conditions":[]}`}}.JSON()
	status, results, raw = run(`{"project_id":"shop","draft":` + draft + `}`)
	if status != 200 || len(results) != 2 || results[0].Test != "first is Emma" || results[1].Test != "lists three" || results[1].Passed ||
		strings.Join(results[1].Failures, "|") != "body.n: expected 3, got none" {
		t.Fatalf("run against a draft: %d %s", status, raw)
	}
	if status, _, raw := run(`{"project_id":"shop","route_id":"me","draft":` + draft + `}`); status != 422 || !strings.Contains(raw, `"route_id":"must be the draft's route_id`) {
		t.Fatalf("a draft of another route: %d %s", status, raw)
	}
	if status, _, raw := run(`{"project_id":"shop","draft":{"route_id":"x"}}`); status != 422 && status != 400 || !strings.Contains(raw, `draft.`) {
		t.Fatalf("a draft that is no route: %d %s", status, raw)
	}
	if status, _, _ := run(`{"project_id":"shop","route_id":"nope"}`); status != 404 {
		t.Fatalf("tests of an unknown route: %d", status)
	}

	// Changed, renamed, deleted; a viewer reads but does not change.
	ta.run(t, []scenario{
		{name: "fixed", method: "PATCH", path: "/route/test/update", headers: h, status: 200, body: `{"project_id":"shop","route_id":"list_books","name":"first is Emma",
			"new_name":"first is Dune","expect":{"status":200,"paths":[{"path":"items.0.title","op":"equals","value":"Dune"}]}}`, want: []string{`"name":"first is Dune"`}},
		{name: "renamed onto another", method: "PATCH", path: "/route/test/update", headers: h, status: 409, body: `{"project_id":"shop","route_id":"list_books","name":"first is Dune",
			"new_name":"lists three"}`},
		{name: "an unknown test", method: "PATCH", path: "/route/test/update", headers: h, status: 404, body: `{"project_id":"shop","route_id":"list_books","name":"nope"}`},
		{name: "a bad new name", method: "PATCH", path: "/route/test/update", headers: h, status: 422, body: `{"project_id":"shop","route_id":"list_books","name":"first is Dune","new_name":" "}`,
			want: []string{`"new_name":"is required"`}},
		{name: "deleted", method: "DELETE", path: "/route/test/delete?project_id=shop&route_id=me&name=anonymous", headers: h, status: 200},
		{name: "deleted twice", method: "DELETE", path: "/route/test/delete?project_id=shop&route_id=me&name=anonymous", headers: h, status: 404},
	})
	if status, _, raw := run(`{"project_id":"shop"}`); status != 200 || !strings.Contains(raw, `"passed":4,"failed":0`) {
		t.Fatalf("run after the fix: %d %s", status, raw)
	}
	viewer := ta.newUser(t, "vic", store.RoleViewer)
	if err := ta.h.store.AddMember(t.Context(), "shop", viewer.ID, store.MembershipRole(viewer.Role)); err != nil {
		t.Fatal(err)
	}
	v := as(ta.token(t, viewer))
	ta.run(t, []scenario{
		{name: "a viewer reads", method: "GET", path: "/route/test/fetch?project_id=shop", headers: v, status: 200},
		{name: "a viewer runs not", method: "POST", path: "/route/test/run", headers: v, status: 403, body: `{"project_id":"shop"}`},
		{name: "a viewer saves not", method: "POST", path: "/route/test/create", headers: v, status: 403, body: `{"project_id":"shop","route_id":"me","name":"v",
			"request":{"caller":"anonymous"},"expect":{}}`},
	})
	// The tests go with their route.
	if status, body := ta.call(t, "DELETE", "/route/delete?project_id=shop&route_id=me", "", h); status != 200 {
		t.Fatalf("route/delete: %d %s", status, body)
	}
	if status, body := ta.call(t, "GET", "/route/test/fetch?project_id=shop", "", h); status != 200 || !strings.Contains(body, `"amount":3`) {
		t.Fatalf("tests after their route went: %d %s", status, body)
	}
}

// The editor's checks run the route's tests against the draft and name
// each that the draft breaks, before it is saved.
func TestEditorChecksNameBrokenTests(t *testing.T) {
	t.Parallel()
	ta, h := runApp(t)
	ret := func(n string) string {
		return runnable{id: "count", method: "GET", path: "/count", blocks: []string{
			`{"type":"RETURN","depth":0,"pairs":` + pairsOf("n", lit("INTEGER", n)) + `,"conditions":[]}`}}.JSON()
	}
	if status, body := ta.call(t, "POST", "/route/create", `{"project_id":"shop","route":`+ret("3")+`}`, h); status != 201 {
		t.Fatalf("route/create: %d %s", status, body)
	}
	if status, body := ta.call(t, "POST", "/route/test/create", `{"project_id":"shop","route_id":"count","name":"three",
		"request":{"caller":"self"},"expect":{"status":200,"body":{"n":3}}}`, h); status != 201 {
		t.Fatalf("test create: %d %s", status, body)
	}
	lint := func(route string) string {
		t.Helper()
		status, body := ta.call(t, "POST", "/web/routes/lint", `{"project_id":"shop","route":`+route+`}`, h)
		if status != 200 {
			t.Fatalf("lint: %d %s", status, body)
		}
		return body
	}
	if body := lint(ret("3")); strings.Contains(body, "fails on this draft") {
		t.Fatalf("a draft that keeps the test: %s", body)
	}
	if body := lint(ret("4")); !strings.Contains(body, `Test “three” fails on this draft: body.n: expected 3, got 4`) {
		t.Fatalf("a draft that breaks the test: %s", body)
	}
}
