package handlers

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5/pgxpool"

	"stencil/store"
	"stencil/store/storetest"
)

func TestUnknownPathInEveryRepresentation(t *testing.T) {
	t.Parallel()
	ta := newTestApp(t)
	ta.run(t, []scenario{
		{name: "browser gets the error page in the layout", method: "GET", path: "/nope", headers: asBrowserHeaders,
			status: 404, want: []string{"<!DOCTYPE html>", "Not Found", "There is no page at /nope.", "Back to the start page"}, unwanted: []string{"Error: "},
			header: map[string]string{"Content-Type": "text/html; charset=utf-8", "Vary": "Accept, HX-Request"}},
		{name: "htmx gets a fragment aimed at the flash area", method: "GET", path: "/nope", headers: asHTMXHeaders,
			status: 404, want: []string{"There is no page at /nope.", `data-flash="error"`}, unwanted: []string{"<!DOCTYPE html>", "<nav", "Error: "},
			header: map[string]string{"HX-Retarget": "#flash", "HX-Reswap": "innerHTML"}},
		{name: "boosted htmx gets the full page", method: "GET", path: "/nope", headers: merge(asHTMXHeaders, map[string]string{"HX-Boosted": "true"}),
			status: 404, want: []string{"<!DOCTYPE html>"}},
		{name: "history restore gets the full page", method: "GET", path: "/nope", headers: merge(asHTMXHeaders, map[string]string{"HX-History-Restore-Request": "true"}),
			status: 404, want: []string{"<!DOCTYPE html>"}},
		{name: "API client gets the envelope", method: "GET", path: "/nope", headers: asJSONHeaders,
			status: 404, want: []string{`{"status":404,"message":"Error: not found: GET /nope"}`},
			header: map[string]string{"Content-Type": "application/json", "Vary": "Accept, HX-Request"}},
		{name: "JSON preferred by quality wins", method: "DELETE", path: "/nope/deeper", headers: map[string]string{"Accept": "text/html;q=0.5, application/json"},
			status: 404, want: []string{`"message":"Error: not found: DELETE /nope/deeper"`}},
	})
}

func TestHealthAndReadiness(t *testing.T) {
	t.Parallel()
	ta := newTestApp(t)
	ta.run(t, []scenario{
		{name: "healthz is JSON for API clients", method: "GET", path: "/healthz", headers: asJSONHeaders,
			status: 200, want: []string{`{"status":200,"message":"ok"}`}},
		{name: "healthz is JSON for browsers too", method: "GET", path: "/healthz", headers: asBrowserHeaders,
			status: 200, want: []string{`"status":200`}, header: map[string]string{"Content-Type": "application/json"}},
		{name: "readyz with database and migrations", method: "GET", path: "/readyz", headers: asJSONHeaders,
			status: 200, want: []string{`"data":{"database":"ok","migrations":"applied"}`}},
		{name: "readyz for htmx is JSON as well", method: "GET", path: "/readyz", headers: asHTMXHeaders,
			status: 200, want: []string{`"migrations":"applied"`}},
	})

	t.Run("pending migrations", func(t *testing.T) {
		if _, err := ta.pool.Exec(context.Background(), "UPDATE schema_version SET version = version - 1"); err != nil {
			t.Fatal(err)
		}
		ta.run(t, []scenario{{name: "503", method: "GET", path: "/readyz", headers: asJSONHeaders,
			status: 503, want: []string{`"message":"Error: not ready"`, `"migrations":"pending"`}}})
	})

	t.Run("database unreachable", func(t *testing.T) {
		pool, err := pgxpool.New(context.Background(), "postgres://nobody:x@127.0.0.1:1/none?connect_timeout=1")
		if err != nil {
			t.Fatal(err)
		}
		defer pool.Close()
		down := newTestAppOn(t, pool)
		down.run(t, []scenario{{name: "503", method: "GET", path: "/readyz", headers: asJSONHeaders,
			status: 503, want: []string{`"database":"unreachable"`}}})
	})
}

func TestStartPage(t *testing.T) {
	t.Parallel()
	ta := newTestApp(t)
	ta.run(t, []scenario{
		{name: "browser", method: "GET", path: "/", headers: asBrowserHeaders, status: 200,
			want: []string{"<!DOCTYPE html>", "Welcome to Stencil", `href="/scalar"`, `<meta name="csrf-token" content="`, "/static/css/app.css?v=", "/static/vendor/htmx.min.js?v="}},
		{name: "htmx navigation gets the body: nav, flash and content, no document", method: "GET", path: "/", headers: asHTMXHeaders, status: 200,
			want: []string{"Welcome to Stencil", "<nav", `id="flash"`}, unwanted: []string{"<!DOCTYPE html>", "<head>"}},
		{name: "JSON", method: "GET", path: "/", headers: asJSONHeaders, status: 200,
			want: []string{`{"status":200,"message":"OK"}`}},
	})
}

func TestSecurityHeaders(t *testing.T) {
	t.Parallel()
	ta := newTestApp(t)
	ta.run(t, []scenario{{name: "on pages", method: "GET", path: "/", headers: asBrowserHeaders, status: 200,
		header: map[string]string{"X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY", "Content-Security-Policy": contentSecurityPolicy}}})
}

func TestStaticFiles(t *testing.T) {
	t.Parallel()
	ta := newTestApp(t)
	url, err := ta.h.assets.URL("css/app.css")
	if err != nil {
		t.Fatal(err)
	}
	ta.run(t, []scenario{
		{name: "versioned CSS", method: "GET", path: string(url), status: 200, want: []string{"tailwindcss"},
			header: map[string]string{"Content-Type": "text/css"}},
		{name: "htmx", method: "GET", path: "/static/vendor/htmx.min.js", status: 200, want: []string{"htmx"}},
		{name: "missing file", method: "GET", path: "/static/nope.js", headers: asJSONHeaders, status: 404},
	})
	if _, err := ta.h.assets.URL("nope.css"); err == nil {
		t.Error("asset URL of a missing file must fail")
	}
}

// testInput exercises bind and the validator's messages.
type testInput struct {
	Name  string `json:"name" form:"name" validate:"required,max=5"`
	Count int    `json:"count" form:"count" validate:"min=0"`
	Role  string `json:"role" form:"role" validate:"omitempty,oneof=ADMIN VIEWER"`
}

func TestBindAndValidate(t *testing.T) {
	t.Parallel()
	ta := newTestApp(t)
	ta.app.Post("/test/bind", func(c *fiber.Ctx) error {
		var in testInput
		if err := bind(c, &in); err != nil {
			return err
		}
		return ta.h.respond(c, Reply{Status: 201, Message: "Created", Data: in})
	})
	ta.run(t, []scenario{
		{name: "valid", method: "POST", path: "/test/bind", headers: asJSONHeaders, body: `{"name":"abc","count":2}`,
			status: 201, want: []string{`"data":{"name":"abc","count":2,"role":""}`}},
		{name: "invalid JSON is 400", method: "POST", path: "/test/bind", headers: asJSONHeaders, body: `{"name":`,
			status: 400, want: []string{`"message":"Error: the request body is not valid JSON"`}},
		{name: "wrong type is 400 naming the field", method: "POST", path: "/test/bind", headers: asJSONHeaders, body: `{"name":"a","count":"two"}`,
			status: 400, want: []string{`"message":"Error: count must be an integer"`}},
		{name: "array body is 400", method: "POST", path: "/test/bind", headers: asJSONHeaders, body: `[1]`,
			status: 400, want: []string{`Error: the request body must be a JSON object`}},
		{name: "rules broken are 422 with fields", method: "POST", path: "/test/bind", headers: asJSONHeaders, body: `{"name":"toolong","count":-1,"role":"KING"}`,
			status: 422, want: []string{`"fields":{`, `"name":"must be at most 5 characters"`, `"count":"must be at least 0"`, `"role":"must be one of: ADMIN, VIEWER"`, `"message":"Error: count must be at least 0"`}},
		{name: "missing required field is 400", method: "POST", path: "/test/bind", headers: asJSONHeaders, body: `{}`,
			status: 400, want: []string{`"message":"Error: name is required"`, `"name":"is required"`}},
		{name: "present but empty required field is 422", method: "POST", path: "/test/bind", headers: asJSONHeaders, body: `{"name":""}`,
			status: 422, want: []string{`"name":"must not be empty"`}},
	})

	t.Run("form-encoded bodies bind too", func(t *testing.T) {
		req := httptest.NewRequest("POST", "/test/bind", strings.NewReader("name=ab&count=3"))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Accept", "application/json")
		resp, body := ta.do(t, req)
		if resp.StatusCode != 201 || !strings.Contains(body, `"name":"ab","count":3`) {
			t.Fatalf("got %d %s", resp.StatusCode, body)
		}
	})
	for _, ct := range []string{"text/plain", "application/xml", "multipart/form-data; boundary=x", ""} {
		t.Run("content type "+ct+" is 415", func(t *testing.T) {
			req := httptest.NewRequest("POST", "/test/bind", strings.NewReader("name=ab"))
			req.Header.Set("Content-Type", ct)
			req.Header.Set("Accept", "application/json")
			resp, body := ta.do(t, req)
			if resp.StatusCode != 415 || !strings.Contains(body, "application/json") {
				t.Fatalf("got %d %s", resp.StatusCode, body)
			}
		})
	}
}

type testQuery struct {
	Offset int    `query:"offset" json:"offset" validate:"min=0"`
	Filter string `query:"filter" json:"filter" validate:"max=10"`
}

func TestBindQuery(t *testing.T) {
	t.Parallel()
	ta := newTestApp(t)
	ta.app.Get("/test/query", func(c *fiber.Ctx) error {
		var in testQuery
		if err := bindQuery(c, &in); err != nil {
			return err
		}
		return ta.h.respond(c, Reply{Data: in})
	})
	ta.run(t, []scenario{
		{name: "valid", method: "GET", path: "/test/query?offset=3&filter=ab", headers: asJSONHeaders, status: 200,
			want: []string{`"data":{"offset":3,"filter":"ab"}`}},
		{name: "unparseable number is 400", method: "GET", path: "/test/query?offset=three", headers: asJSONHeaders, status: 400,
			want: []string{`"message":"Error: offset must be an integer"`}},
		{name: "rule broken is 422", method: "GET", path: "/test/query?offset=-1", headers: asJSONHeaders, status: 422,
			want: []string{`"offset":"must be at least 0"`}},
	})
}

func TestRedirectAfterSuccessfulPost(t *testing.T) {
	t.Parallel()
	ta := newTestApp(t)
	ta.app.Post("/test/done", func(c *fiber.Ctx) error {
		return ta.h.respond(c, Reply{Message: "Saved", Redirect: "/elsewhere"})
	})
	ta.run(t, []scenario{
		{name: "browser gets 303", method: "POST", path: "/test/done", headers: asBrowserHeaders, status: 303,
			header: map[string]string{"Location": "/elsewhere"}},
		{name: "htmx gets HX-Location", method: "POST", path: "/test/done", headers: asHTMXHeaders, status: 200,
			header: map[string]string{"HX-Location": "/elsewhere", "Location": ""}},
		{name: "API client gets the envelope", method: "POST", path: "/test/done", headers: asJSONHeaders, status: 200,
			want: []string{`{"status":200,"message":"Saved"}`}, header: map[string]string{"Location": ""}},
	})
}

func TestInternalErrorsDoNotLeak(t *testing.T) {
	t.Parallel()
	ta := newTestApp(t)
	ta.app.Get("/test/fail", func(c *fiber.Ctx) error {
		return errors.New("pq: relation secret_table does not exist")
	})
	ta.app.Get("/test/panic", func(c *fiber.Ctx) error {
		panic("boom at secret place")
	})
	for _, path := range []string{"/test/fail", "/test/panic"} {
		ta.run(t, []scenario{
			{name: path + " JSON", method: "GET", path: path, headers: asJSONHeaders, status: 500,
				want: []string{`{"status":500,"message":"Error: internal error"}`}, unwanted: []string{"secret"}},
			{name: path + " page", method: "GET", path: path, headers: asBrowserHeaders, status: 500,
				want: []string{"Something went wrong on our side"}, unwanted: []string{"secret", "Error: "}},
		})
	}
	logs := ta.logs.String()
	if !strings.Contains(logs, "secret_table") || !strings.Contains(logs, "boom at secret place") {
		t.Errorf("5xx details must reach the server log; log: %s", logs)
	}
}

func TestCSRF(t *testing.T) {
	t.Parallel()
	ta := newTestApp(t)
	ta.app.Post("/test/change", func(c *fiber.Ctx) error {
		return ta.h.respond(c, Reply{Message: "changed"})
	})
	cookie, token := ta.signIn(t, "root")
	withCookie := merge(asJSONHeaders, map[string]string{"Cookie": cookie})
	ta.run(t, []scenario{
		{name: "session without token is refused", method: "POST", path: "/test/change", headers: withCookie, body: `{}`,
			status: 403, want: []string{"Error: CSRF token missing or invalid"}},
		{name: "session with a wrong token is refused", method: "POST", path: "/test/change",
			headers: merge(withCookie, map[string]string{"X-CSRF-Token": token + "x"}), body: `{}`, status: 403},
		{name: "session with the header token passes", method: "POST", path: "/test/change",
			headers: merge(withCookie, map[string]string{"X-CSRF-Token": token}), body: `{}`, status: 200},
		{name: "bearer requests need no token", method: "POST", path: "/test/change",
			headers: merge(withCookie, map[string]string{"Authorization": "Bearer " + ta.token(t, ta.root)}), body: `{}`, status: 200},
		{name: "no cookie, no ambient authority: passes", method: "POST", path: "/test/change", headers: asJSONHeaders, body: `{}`, status: 200},
		{name: "safe methods are not checked", method: "GET", path: "/", headers: withCookie, status: 200},
	})
	t.Run("every page masks the token afresh; each mask passes, the bare token does not", func(t *testing.T) {
		_, again := ta.pageToken(t, "/", cookie)
		if again == token {
			t.Fatal("two pages carried the same token bytes")
		}
		var bare string
		if err := ta.pool.QueryRow(context.Background(), "SELECT convert_from(data, 'UTF8') FROM sessions LIMIT 1").Scan(&bare); err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(`"csrf_token":"([^"]+)"`).FindStringSubmatch(bare)
		if m == nil {
			t.Fatalf("no token in the session: %s", bare)
		}
		for tok, want := range map[string]int{again: 200, token: 200, m[1]: 403} {
			req := httptest.NewRequest("POST", "/test/change", strings.NewReader(`{}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json")
			req.Header.Set("Cookie", cookie)
			req.Header.Set("X-CSRF-Token", tok)
			if resp, body := ta.do(t, req); resp.StatusCode != want {
				t.Fatalf("token %q: %d, want %d: %s", tok, resp.StatusCode, want, body)
			}
		}
	})
	t.Run("form field token passes", func(t *testing.T) {
		req := httptest.NewRequest("POST", "/test/change", strings.NewReader("csrf_token="+token))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Accept", "application/json")
		req.Header.Set("Cookie", cookie)
		if resp, body := ta.do(t, req); resp.StatusCode != 200 {
			t.Fatalf("got %d %s", resp.StatusCode, body)
		}
	})
}

// TestSessionCookie: the session cookie is HttpOnly and SameSite=Lax, and
// Secure (with HSTS) in production only.
func TestSessionCookie(t *testing.T) {
	t.Parallel()
	for _, production := range []bool{false, true} {
		cfg := testConfig(t)
		cfg.Production = production
		ta := newTestAppWith(t, storetest.Pool(t), cfg)
		ta.newUser(t, "root", store.RoleRoot)
		visitor, csrf := ta.browserSession(t)
		req := httptest.NewRequest("POST", "/web/login", strings.NewReader("auth_data=root&password="+testPassword+"&csrf_token="+csrf))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Cookie", visitor)
		resp, _ := ta.do(t, req)
		login, _ := ta.do(t, httptest.NewRequest("GET", "/web/login", nil))
		for _, cookie := range []string{resp.Header.Get("Set-Cookie"), login.Header.Get("Set-Cookie")} {
			if !strings.HasPrefix(cookie, "stencil_") || !strings.Contains(cookie, "HttpOnly") || !strings.Contains(cookie, "SameSite=Lax") {
				t.Errorf("production=%v: cookie %q", production, cookie)
			}
			if strings.Contains(cookie, "secure") != production {
				t.Errorf("production=%v: Secure flag wrong in %q", production, cookie)
			}
		}
		if !strings.HasPrefix(resp.Header.Get("Set-Cookie"), "stencil_session=") {
			t.Errorf("sign-in set no session cookie: %q", resp.Header.Get("Set-Cookie"))
		}
		if hsts := resp.Header.Get("Strict-Transport-Security"); (hsts != "") != production {
			t.Errorf("production=%v: HSTS %q", production, hsts)
		}
	}
}

// TestBearerRequestsMakeNoSession: API clients get no cookie and leave no
// session row, whatever the handler does (flash, forms, pages).
func TestBearerRequestsMakeNoSession(t *testing.T) {
	t.Parallel()
	ta := newTestApp(t)
	h := as(ta.token(t, ta.root))
	for _, req := range []struct{ method, path, body string }{
		{"POST", "/config/create", `{"key":"a","value":"b"}`},
		{"POST", "/config/create", `{"key":"1 bad","value":"b"}`},
		{"POST", "/project/create", `{"id":"shop","name":"Shop","api_path":"/shop"}`},
		{"GET", "/web/projects", ""},
		{"DELETE", "/config/delete?key=a", ""},
	} {
		r := httptest.NewRequest(req.method, req.path, strings.NewReader(req.body))
		r.Header.Set("Content-Type", "application/json")
		for k, v := range h {
			r.Header.Set(k, v)
		}
		resp, body := ta.do(t, r)
		if c := resp.Header.Get("Set-Cookie"); c != "" {
			t.Errorf("%s %s (%d) set a cookie: %s; body %s", req.method, req.path, resp.StatusCode, c, body)
		}
	}
	var n int
	if err := ta.pool.QueryRow(context.Background(), "SELECT count(*) FROM sessions").Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d session rows (%v)", n, err)
	}
}

func TestSessionCommittedEvenWhenHandlerFails(t *testing.T) {
	t.Parallel()
	ta := newTestApp(t)
	ta.app.Post("/test/flash-then-fail", func(c *fiber.Ctx) error {
		ta.h.flash(c, "error", "remembered across the failure")
		return fiber.NewError(fiber.StatusConflict, "it failed")
	})
	cookie, token := ta.signIn(t, "root")
	req := httptest.NewRequest("POST", "/test/flash-then-fail", nil)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Cookie", cookie)
	req.Header.Set("X-CSRF-Token", token)
	resp, body := ta.do(t, req)
	if resp.StatusCode != http.StatusConflict || !strings.Contains(body, "Error: it failed") {
		t.Fatalf("the handler's error must come through the adapter: %d %s", resp.StatusCode, body)
	}
	req = httptest.NewRequest("GET", "/", nil)
	req.Header.Set("Cookie", cookie)
	_, page := ta.do(t, req)
	if !strings.Contains(page, "remembered across the failure") {
		t.Fatal("the session change made before the error was not committed")
	}
	_, again := ta.do(t, req)
	if strings.Contains(again, "remembered across the failure") {
		t.Fatal("a flash must show once")
	}
}
