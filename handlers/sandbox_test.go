package handlers

import (
	"net/http/httptest"
	"strings"
	"testing"

	"stencil/store"
	"stencil/store/storetest"
)

// wantSandbox is what every answer at /x carries (docs/security.md).
const wantSandbox = "sandbox; default-src 'none'; frame-ancestors 'none'"

// htmlPage is the finding's RETURN: a page of HTML whose htmx attributes
// would make whoever opens it ROOT, had it run on the pages' origin.
const htmlPage = `<script src='/static/vendor/htmx.min.js'></script><div id='tok' hx-get='/web/account' hx-trigger='load'></div>`

// TestRouteAnswersAreSandboxed: a route an AUTHOR saves may answer HTML,
// but every answer at /x — a run, a 404, a 429, a preflight, a refusal in
// front of the runtime — carries the sandbox policy and nosniff, which no
// RETURN header replaces; the headers a browser acts on are refused at
// save, naming the field, and a route saved before that rule has them
// dropped when it runs.
func TestRouteAnswersAreSandboxed(t *testing.T) {
	t.Parallel()
	ta, h := runApp(t)
	_, ah := adminOf(t, ta, "ada")
	runnable{id: "report", method: "GET", path: "/report", blocks: []string{
		`{"type":"RETURN","depth":0,"status":200,"headers":` + pairsOf("Content-Type", lit("STRING", "text/html; charset=utf-8")) +
			`,"pairs":` + pairsOf("x", lit("STRING", htmlPage)) + `,"conditions":[]}`}}.save(t, ta, h)
	for _, name := range []string{"X-Content-Type-Options", "Clear-Site-Data", "Refresh", "Link", "Content-Encoding", "Permissions-Policy", "Cross-Origin-Embedder-Policy"} {
		route := runnable{id: "bad", method: "GET", path: "/bad", blocks: []string{
			`{"type":"RETURN","depth":0,"status":200,"headers":` + pairsOf(name, lit("STRING", "x")) + `,"pairs":[],"conditions":[]}`}}
		status, body := ta.call(t, "POST", "/route/create", `{"project_id":"shop","route":`+route.JSON()+`}`, h)
		if status != 422 || !strings.Contains(body, `"route.flow.blocks[0].headers[0].id":"`+name+` is set by the platform`) {
			t.Errorf("%s: %d %s", name, status, body)
		}
	}
	// A route saved before the rule: its headers are in the database as
	// they were, and dropped at /x.
	if _, err := ta.pool.Exec(t.Context(), `UPDATE routes SET document = jsonb_set(document, '{flow,blocks,0,headers}',
		'[{"id":"Clear-Site-Data","data":{"ref_var":false,"rtype":"STRING","data":"\"cookies\""}},{"id":"Content-Security-Policy","data":{"ref_var":false,"rtype":"STRING","data":"script-src *"}},{"id":"Content-Type","data":{"ref_var":false,"rtype":"STRING","data":"text/html"}}]')
		WHERE project_id = 'shop' AND route_id = 'report'`); err != nil {
		t.Fatal(err)
	}
	sandboxed := map[string]string{"Content-Security-Policy": wantSandbox, "X-Content-Type-Options": "nosniff", "Clear-Site-Data": ""}
	if status, body := ta.call(t, "PATCH", "/project/update", `{"project_id":"shop","x_rate_limit":1,"x_rate_burst":3,"x_cors_origins":["https://app.example.com"]}`, ah); status != 200 {
		t.Fatalf("update: %d %s", status, body)
	}
	ta.run(t, []scenario{
		{name: "the page", method: "GET", path: "/x/shop/report", status: 200, want: []string{"hx-get"},
			header: map[string]string{"Content-Security-Policy": wantSandbox, "X-Content-Type-Options": "nosniff", "Clear-Site-Data": "", "Content-Type": "text/html"}},
		{name: "no route", method: "GET", path: "/x/shop/nothing", status: 404, header: sandboxed},
		{name: "a loop", method: "GET", path: "/x/shop/report", status: 508, header: sandboxed,
			headers: map[string]string{"Stencil-Hop": "4"}, want: []string{"Error: loop detected"}},
		{name: "a hop count that is not one", method: "GET", path: "/x/shop/report", status: 508, header: sandboxed,
			headers: map[string]string{"Stencil-Hop": "-1"}},
		{name: "a preflight", method: "OPTIONS", path: "/x/shop/report", status: 204, header: sandboxed,
			headers: map[string]string{"Origin": "https://app.example.com", "Access-Control-Request-Method": "GET"}},
		{name: "in front: not JSON", method: "POST", path: "/x/shop/report", status: 415, header: sandboxed,
			headers: map[string]string{"Content-Type": "application/xml"}, body: "<a/>"},
	})
	limited := false
	for range 6 {
		resp, _ := ta.do(t, httptest.NewRequest("GET", "/x/shop/report", nil))
		if resp.StatusCode == 429 {
			limited = true
			if resp.Header.Get("Content-Security-Policy") != wantSandbox || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
				t.Fatalf("429 without the sandbox: %v", resp.Header)
			}
		}
	}
	if !limited {
		t.Fatal("no request was limited")
	}
	// The pages keep their own policy.
	resp, _ := ta.do(t, httptest.NewRequest("GET", "/web/login", nil))
	if p := resp.Header.Get("Content-Security-Policy"); !strings.Contains(p, "script-src 'self'") {
		t.Fatalf("the pages' policy: %q", p)
	}
}

// TestRoutesOrigin: with ROUTES_ORIGIN set, /x answers only on that
// origin's host and the pages only on the others (404 both ways);
// health checks answer on both, and the route's links name that origin.
func TestRoutesOrigin(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.RoutesOrigin = "https://api.example.com"
	ta := newTestAppWith(t, storetest.Pool(t), cfg)
	ta.root = ta.newUser(t, "root", "ROOT")
	if err := ta.h.store.CreateProject(t.Context(), &store.Project{ID: "shop", Name: "Shop", APIPath: "/shop"}, ta.root.ID); err != nil {
		t.Fatal(err)
	}
	runnable{id: "ping", method: "GET", path: "/ping", blocks: []string{
		`{"type":"RETURN","depth":0,"pairs":` + pairsOf("ok", lit("BOOLEAN", "true")) + `,"conditions":[]}`}}.save(t, ta, as(ta.token(t, ta.root)))
	for _, c := range []struct {
		host, path string
		status     int
	}{
		{"api.example.com", "/x/shop/ping", 200},
		{"API.example.com:443", "/x/shop/ping", 200},
		{"api.example.com:8443", "/x/shop/ping", 404}, // another port: another origin
		{"app.example.com", "/x/shop/ping", 404},
		{"api.example.com", "/web/login", 404},
		{"API.example.com:443", "/web/login", 404},
		{"app.example.com", "/web/login", 200},
		{"api.example.com", "/healthz", 200},
		{"app.example.com", "/healthz", 200},
	} {
		req := httptest.NewRequest("GET", c.path, nil)
		req.Host = c.host
		resp, body := ta.do(t, req)
		if resp.StatusCode != c.status {
			t.Errorf("%s%s: %d %s", c.host, c.path, resp.StatusCode, body)
		}
		if strings.HasPrefix(c.path, "/x") && resp.Header.Get("Content-Security-Policy") != wantSandbox {
			t.Errorf("%s%s: not sandboxed", c.host, c.path)
		}
	}
	req := httptest.NewRequest("GET", "/x/shop/ping", nil)
	req.Host = "app.example.com"
	req.Header.Set("Accept", "application/json")
	if _, body := ta.do(t, req); !strings.Contains(body, "Error: not found") {
		t.Fatalf("the pages' host: %s", body)
	}
}
