package handlers

import (
	"context"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// TestCORSOrigins: a project's CORS origins are set on create and update,
// by JSON and by the page's form (one a line), stored as browsers send
// Origin (lower case, no default port, no trailing "/", each once); what
// is not an origin is refused naming the field, and changes nothing.
func TestCORSOrigins(t *testing.T) {
	t.Parallel()
	ta, _ := runApp(t)
	_, ah := adminOf(t, ta, "ada")
	ta.run(t, []scenario{
		{name: "created with origins", method: "POST", path: "/project/create", headers: ah, status: 201,
			body: `{"id":"web","name":"Web","api_path":"/web-api","x_cors_origins":["HTTPS://App.Example.com:443/","http://localhost:5173","https://app.example.com"]}`,
			want: []string{`"x_cors_origins":["https://app.example.com","http://localhost:5173"]`}},
		{name: "created without", method: "POST", path: "/project/create", headers: ah, status: 201,
			body: `{"id":"plain","name":"Plain","api_path":"/plain"}`, want: []string{`"x_cors_origins":[]`}},
		{name: "any origin", method: "PATCH", path: "/project/update", headers: ah, status: 200,
			body: `{"project_id":"plain","x_cors_origins":["*"]}`, want: []string{`"x_cors_origins":["*"]`}},
		{name: "left out: unchanged", method: "PATCH", path: "/project/update", headers: ah, status: 200,
			body: `{"project_id":"plain","name":"Plain 2"}`, want: []string{`"x_cors_origins":["*"]`}},
	})
	bad := map[string]string{
		`["ftp://files.example.com"]`:          "must start with https:// or http://",
		`["https://app.example.com/path"]`:     "no path, query or user",
		`["https://app.example.com?x=1"]`:      "no path, query or user",
		`["https://user@app.example.com"]`:     "no path, query or user",
		`["app.example.com"]`:                  "must start with https:// or http://",
		`["https://app.example.com:70000"]`:    "has a port that is not 1–65535",
		`["https://app.example.com:0"]`:        "has a port that is not 1–65535",
		`["*","https://app.example.com"]`:      `\"*\" stands alone`,
		`["https://"]`:                         "has no host",
		`["` + strings.Repeat("a", 256) + `"]`: "longer than 255",
		`[` + strings.Repeat(`"https://a.example.com",`, 100) + `"https://b.example.com"]`: "at most 100",
	}
	for origins, want := range bad {
		status, body := ta.call(t, "PATCH", "/project/update", `{"project_id":"plain","x_cors_origins":`+origins+`}`, ah)
		if status != 422 || !strings.Contains(body, `"x_cors_origins":"`) || !strings.Contains(body, want) {
			t.Errorf("%.60s: %d %s", origins, status, body)
		}
	}
	if status, body := ta.call(t, "GET", "/project/fetch/one?project_id=plain", "", ah); status != 200 || !strings.Contains(body, `"x_cors_origins":["*"]`) {
		t.Fatalf("after the refusals: %d %s", status, body)
	}
	// The page's form: one origin a line, blank lines skipped.
	page := merge(browser(ta.signIn(t, "ada")), map[string]string{"Content-Type": "application/x-www-form-urlencoded", "HX-Request": "true"})
	form := url.Values{"project_id": {"plain"}, "name": {"Plain"}, "api_path": {"/plain"}, "x_rate_limit": {"50"}, "x_rate_burst": {"100"},
		"x_cors_origins": {"https://one.example.com\r\n\r\n  http://127.0.0.1:8080  \r\n"}}
	if status, body := ta.call(t, "PATCH", "/project/update", form.Encode(), page); status >= 400 {
		t.Fatalf("the form: %d %s", status, body)
	}
	if status, body := ta.call(t, "GET", "/project/fetch/one?project_id=plain", "", ah); status != 200 || !strings.Contains(body, `"x_cors_origins":["https://one.example.com","http://127.0.0.1:8080"]`) {
		t.Fatalf("after the form: %d %s", status, body)
	}
	// A bad line is shown beside the field, as typed.
	form.Set("x_cors_origins", "https://ok.example.com\nnot an origin")
	status, body := ta.call(t, "PATCH", "/project/update", form.Encode(), page)
	if status != 422 || !strings.Contains(body, `id="e-x_cors_origins"`) || !strings.Contains(body, "not an origin") || !strings.Contains(body, "https://ok.example.com") {
		t.Fatalf("a bad line: %d %s", status, body)
	}
}

// TestCORSAtX: at /x, a listed origin gets Access-Control-Allow-Origin and
// Vary: Origin on every answer — a run, a FAIL, a refusal, 404, 405, 429
// and a refusal of the layers in front — and a preflight is answered 204
// with the methods of the routes at its path, running and logging
// nothing; an origin not listed gets no CORS header, the platform's own API
// none at all, and credentials are never allowed.
func TestCORSAtX(t *testing.T) {
	t.Parallel()
	ta, h := runApp(t)
	_, ah := adminOf(t, ta, "ada")
	runnable{id: "list", method: "GET", path: "/books", blocks: []string{
		`{"type":"FETCH","depth":0,"local_name":"rows","ref_col":"books"}`,
		`{"type":"RETURN","depth":0,"pairs":` + pairsOf("items", ref("rows")) + `,"conditions":[]}`}}.save(t, ta, h)
	runnable{id: "add", method: "POST", path: "/books", body: `[{"id":"title","bdtype":"STRING"}]`, auth: `{"active":true,"field":"username","ref_col":"books"}`, blocks: []string{
		`{"type":"RETURN","depth":0,"pairs":` + pairsOf("title", ref("title")) + `,"conditions":[]}`}}.save(t, ta, h)
	const app, other = "https://app.example.com", "https://evil.example.com"
	if status, body := ta.call(t, "PATCH", "/project/update", `{"project_id":"shop","x_rate_limit":0,"x_cors_origins":["`+app+`"]}`, ah); status != 200 {
		t.Fatalf("update: %d %s", status, body)
	}
	// The layers in front add their own Vary (Accept, HX-Request) after
	// Origin.
	inFront := map[string]string{"Access-Control-Allow-Origin": app, "Vary": "Origin, Accept, HX-Request", "Access-Control-Expose-Headers": "Retry-After"}
	listed := map[string]string{"Access-Control-Allow-Origin": app, "Vary": "Origin", "Access-Control-Expose-Headers": "Retry-After", "Access-Control-Allow-Credentials": ""}
	from := func(origin string, more ...string) map[string]string {
		m := map[string]string{"Origin": origin, "Accept": "application/json"}
		for i := 0; i+1 < len(more); i += 2 {
			m[more[i]] = more[i+1]
		}
		return m
	}
	ta.run(t, []scenario{
		{name: "a run", method: "GET", path: "/x/shop/books", headers: from(app), status: 200, want: []string{"Dune"}, header: listed},
		{name: "a refusal: no token", method: "POST", path: "/x/shop/books", headers: from(app), body: `{"title":"x"}`, status: 401, header: listed},
		{name: "a route not found", method: "GET", path: "/x/shop/nothing", headers: from(app), status: 404, header: listed},
		{name: "a method not allowed", method: "DELETE", path: "/x/shop/books", headers: from(app), status: 405, header: listed},
		{name: "the route document", method: "GET", path: "/x/shop/openapi.json", headers: from(app), status: 200, header: listed},
		{name: "the layers in front: a body that is not JSON", method: "POST", path: "/x/shop/books", headers: from(app, "Content-Type", "application/xml"), body: `<a/>`, status: 415, header: inFront},
		{name: "an origin not listed", method: "GET", path: "/x/shop/books", headers: from(other), status: 200,
			header: map[string]string{"Access-Control-Allow-Origin": "", "Access-Control-Expose-Headers": "", "Vary": "Origin"}},
		{name: "the platform's API", method: "GET", path: "/project/fetch/one?project_id=shop", headers: map[string]string{"Origin": app, "Authorization": ah["Authorization"], "Accept": "application/json"}, status: 200,
			header: map[string]string{"Access-Control-Allow-Origin": ""}},
	})
	// Past the rate limit (1 a second, burst 2): 429 with the headers too.
	if status, body := ta.call(t, "PATCH", "/project/update", `{"project_id":"shop","x_rate_limit":1,"x_rate_burst":2}`, ah); status != 200 {
		t.Fatalf("update: %d %s", status, body)
	}
	limited := false
	for range 6 {
		req := httptest.NewRequest("GET", "/x/shop/books", nil)
		req.Header.Set("Origin", app)
		resp, _ := ta.do(t, req)
		if resp.StatusCode == 429 {
			limited = true
			if resp.Header.Get("Access-Control-Allow-Origin") != app || resp.Header.Get("Retry-After") == "" {
				t.Fatalf("429 without its CORS headers: %v", resp.Header)
			}
		}
	}
	if !limited {
		t.Fatal("no request was limited")
	}
	if err := ta.h.runs.FlushLog(context.Background()); err != nil {
		t.Fatal(err)
	}
	runs := func() (n int) {
		_ = ta.pool.QueryRow(context.Background(), "SELECT count(*) FROM route_runs").Scan(&n)
		return n
	}
	before := runs()
	// Preflights: never rate-limited (the limit is spent) nor logged.
	preflight := func(origin string) map[string]string {
		return from(origin, "Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "Content-Type, Authorization, X-Bad Header")
	}
	ta.run(t, []scenario{
		{name: "a preflight", method: "OPTIONS", path: "/x/shop/books", headers: preflight(app), status: 204, header: map[string]string{
			"Access-Control-Allow-Origin": app, "Access-Control-Allow-Methods": "GET, POST", "Access-Control-Allow-Headers": "content-type, authorization",
			"Access-Control-Max-Age": "600", "Vary": "Origin", "Access-Control-Allow-Credentials": ""}},
		{name: "a preflight of an origin not listed", method: "OPTIONS", path: "/x/shop/books", headers: preflight(other), status: 204, header: map[string]string{
			"Access-Control-Allow-Origin": "", "Access-Control-Allow-Methods": "", "Access-Control-Allow-Headers": ""}},
		{name: "a preflight to a path of no route", method: "OPTIONS", path: "/x/shop/nothing", headers: preflight(app), status: 404, header: map[string]string{
			"Access-Control-Allow-Origin": app, "Access-Control-Allow-Methods": ""}},
	})
	if err := ta.h.runs.FlushLog(context.Background()); err != nil {
		t.Fatal(err)
	}
	if after := runs(); after != before {
		t.Fatalf("preflights were logged: %d runs, then %d", before, after)
	}
	// "*": any origin, named "*".
	if status, body := ta.call(t, "PATCH", "/project/update", `{"project_id":"shop","x_rate_limit":0,"x_cors_origins":["*"]}`, ah); status != 200 {
		t.Fatalf("update: %d %s", status, body)
	}
	ta.run(t, []scenario{{name: "any origin", method: "GET", path: "/x/shop/books", headers: from(other), status: 200,
		header: map[string]string{"Access-Control-Allow-Origin": "*", "Access-Control-Expose-Headers": "Retry-After"}}})
	// None: no CORS header, no Vary.
	if status, body := ta.call(t, "PATCH", "/project/update", `{"project_id":"shop","x_cors_origins":[]}`, ah); status != 200 {
		t.Fatalf("update: %d %s", status, body)
	}
	ta.run(t, []scenario{{name: "no origins", method: "GET", path: "/x/shop/books", headers: from(app), status: 200,
		header: map[string]string{"Access-Control-Allow-Origin": "", "Vary": ""}}})
}
