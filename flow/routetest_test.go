package flow

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// A test's expectation judges an answer: status, headers, the body as a
// subset, dot-path checks and the time bound, each failure a line that
// names where and what.
func TestExpectationFailures(t *testing.T) {
	body := `{"items":[{"title":"Dune","year":1965,"tags":["sf"]},{"title":"Emma","year":1815}],"count":2,"next":null,"by":"ann@example.com"}`
	header := http.Header{"Location": {"/books/7"}}
	answer := TestAnswer{Status: 200, Header: header.Get, Body: []byte(body), Duration: 30 * time.Millisecond}
	for _, tc := range []struct {
		name   string
		expect string
		want   []string
	}{
		{"all met", `{"status":200,"headers":[{"id":"location","data":{"ref_var":false,"rtype":"STRING","data":"/books/7"}}],
			"body":{"items":[{"title":"Dune"},{"year":1815.0}],"count":2},"max_ms":100,
			"paths":[{"path":"items.0.tags.0","op":"equals","value":"sf"},{"path":"next","op":"exists"},{"path":"items.2","op":"not_exists"},
			{"path":"by","op":"matches","value":"^[a-z]+@example\\.com$"},{"path":"count","op":"lt","value":3},{"path":"items.1.year","op":"gt","value":1800},
			{"path":"items","op":"length","value":2},{"path":"by","op":"length","value":15}]}`, nil},
		{"status", `{"status":201}`, []string{"status: expected 201, got 200"}},
		{"a value in an item", `{"body":{"items":[{"title":"Emma"},{}]}}`, []string{`body.items.0.title: expected "Emma", got "Dune"`}},
		{"an array's length", `{"body":{"items":[{}]}}`, []string{"body.items: expected 1 items, got 2"}},
		{"a key missing", `{"body":{"total":2}}`, []string{"body.total: expected 2, got none"}},
		{"an object for an array", `{"body":{"items":{}}}`, []string{`body.items: expected an object, got [{"tags":["sf"],"title":"Dune","year":1965},{"title":"Emma","year":1815}]`}},
		{"a header", `{"headers":[{"id":"ETag","data":{"ref_var":false,"rtype":"STRING","data":"x"}}]}`, []string{`header ETag: expected "x", got none`}},
		{"equals", `{"paths":[{"path":"items.1.title","op":"equals","value":"Dune"}]}`, []string{`body.items.1.title: expected "Dune", got "Emma"`}},
		{"exists", `{"paths":[{"path":"items.0.isbn","op":"exists"}]}`, []string{"body.items.0.isbn: expected a value, got none"}},
		{"not_exists", `{"paths":[{"path":"count","op":"not_exists"}]}`, []string{"body.count: expected none, got 2"}},
		{"matches", `{"paths":[{"path":"count","op":"matches","value":"^2$"}]}`, []string{`body.count: expected text matching "^2$", got 2`}},
		{"lt", `{"paths":[{"path":"count","op":"lt","value":2}]}`, []string{"body.count: expected a number below 2, got 2"}},
		{"gt of text", `{"paths":[{"path":"by","op":"gt","value":1}]}`, []string{`body.by: expected a number above 1, got "ann@example.com"`}},
		{"length", `{"paths":[{"path":"items","op":"length","value":3}]}`, []string{"body.items: expected a length of 3, got 2"}},
		{"length of a number", `{"paths":[{"path":"count","op":"length","value":1}]}`, []string{"body.count: expected a length of 1, got 2, which has none"}},
		{"time", `{"max_ms":10}`, []string{"time: expected at most 10 ms, took 30.0 ms"}},
	} {
		var e Expectation
		if err := json.Unmarshal([]byte(tc.expect), &e); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if p := (RouteTest{Name: "t", Request: TestRequest{Caller: TestAnonymous}, Expect: e}).Check(); len(p) > 0 {
			t.Fatalf("%s: the test does not check: %v", tc.name, p)
		}
		got := e.Failures(answer)
		if want := tc.want; !slices.Equal(got, append([]string{}, want...)) {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, want)
		}
	}
	// No body at all: a body expectation and a path check fail, a
	// not_exists holds.
	empty := TestAnswer{Status: 204}
	e := Expectation{Body: json.RawMessage(`{"a":1}`), Paths: []PathCheck{{Path: "a", Op: "exists"}, {Path: "b", Op: "not_exists"}}}
	if got := e.Failures(empty); !slices.Equal(got, []string{"body: expected JSON, got none", "body.a: expected a value, got none"}) {
		t.Errorf("no body: %q", got)
	}
}

// A test that cannot be run is refused by path before it is saved.
func TestRouteTestCheck(t *testing.T) {
	for _, tc := range []struct {
		test string
		path string
		want string
	}{
		{`{"name":"","request":{"caller":"anonymous"},"expect":{}}`, "name", "is required"},
		{`{"name":"` + strings.Repeat("n", 101) + `","request":{"caller":"anonymous"},"expect":{}}`, "name", "at most 100"},
		{`{"name":"a\u0007b","request":{"caller":"anonymous"},"expect":{}}`, "name", "control characters"},
		{`{"name":"t","request":{"caller":"root"},"expect":{}}`, "request.caller", "anonymous, self"},
		{`{"name":"t","request":{"caller":"self","path":"books"},"expect":{}}`, "request.path", "must start with /"},
		{`{"name":"t","request":{"caller":"self","headers":[{"id":"X Y","data":{"ref_var":false,"rtype":"STRING","data":"1"}}]},"expect":{}}`, "request.headers[0].id", "header name"},
		{`{"name":"t","request":{"caller":"self","headers":[{"id":"X","data":{"ref_var":true,"rtype":"OTHER","data":"v"}}]},"expect":{}}`, "request.headers[0].data.ref_var", "must be false"},
		{`{"name":"t","request":{"caller":"self"},"expect":{"status":700}}`, "expect.status", "100 to 599"},
		{`{"name":"t","request":{"caller":"self"},"expect":{"max_ms":-1}}`, "expect.max_ms", "from 0"},
		{`{"name":"t","request":{"caller":"self"},"expect":{"paths":[{"path":"a","op":"near"}]}}`, "expect.paths[0].op", "equals, exists"},
		{`{"name":"t","request":{"caller":"self"},"expect":{"paths":[{"path":"","op":"exists"}]}}`, "expect.paths[0].path", "dot path"},
		{`{"name":"t","request":{"caller":"self"},"expect":{"paths":[{"path":"a","op":"exists","value":1}]}}`, "expect.paths[0].value", "left out"},
		{`{"name":"t","request":{"caller":"self"},"expect":{"paths":[{"path":"a","op":"matches","value":"("}]}}`, "expect.paths[0].value", "not a regular expression"},
		{`{"name":"t","request":{"caller":"self"},"expect":{"paths":[{"path":"a","op":"lt","value":"x"}]}}`, "expect.paths[0].value", "a number"},
		{`{"name":"t","request":{"caller":"self"},"expect":{"paths":[{"path":"a","op":"length","value":-1}]}}`, "expect.paths[0].value", "whole number"},
		{`{"name":"t","request":{"caller":"self"},"expect":{"paths":[{"path":"a","op":"equals"}]}}`, "expect.paths[0].value", "is required"},
	} {
		var rt RouteTest
		if err := json.Unmarshal([]byte(tc.test), &rt); err != nil {
			t.Fatalf("%s: %v", tc.test, err)
		}
		if got := rt.Check()[tc.path]; !strings.Contains(got, tc.want) {
			t.Errorf("%s: %s = %q, want %q (all: %v)", tc.test, tc.path, got, tc.want, rt.Check())
		}
	}
}
