package handlers

import (
	"bytes"
	"compress/gzip"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/andybalholm/brotli"
)

// TestAnswersAreCompressed: pages, lists and error pages come brotli- or
// gzip-encoded as the caller accepts, and decode to the plain answer;
// answers that carry a secret never are.
func TestAnswersAreCompressed(t *testing.T) {
	t.Parallel()
	ta, _, h := vaultApp(t)
	ta.expectStatus(t, "create", "POST", "/vault/create", `{"project_id":"shop","key":"K","value":"v"}`, h, 201)
	get := func(path, encoding string, headers map[string]string) (*http.Response, []byte) {
		t.Helper()
		req := httptest.NewRequest(http.MethodGet, path, nil)
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		if encoding != "" {
			req.Header.Set("Accept-Encoding", encoding)
		}
		resp, err := ta.app.Test(req, -1)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		return resp, raw
	}
	decode := func(encoding string, raw []byte) string {
		t.Helper()
		var r io.Reader
		switch encoding {
		case "br":
			r = brotli.NewReader(bytes.NewReader(raw))
		case "gzip":
			zr, err := gzip.NewReader(bytes.NewReader(raw))
			if err != nil {
				t.Fatalf("gzip: %v", err)
			}
			r = zr
		default:
			return string(raw)
		}
		plain, err := io.ReadAll(r)
		if err != nil {
			t.Fatalf("%s: %v", encoding, err)
		}
		return string(plain)
	}
	for _, c := range []struct {
		name, path string
		headers    map[string]string
		status     int
		want       string
	}{
		{"sign-in page", "/web/login", asBrowserHeaders, 200, "Sign in"},
		{"project list", "/project/fetch", h, 200, `"shop"`},
		{"error page", "/web/nowhere", asBrowserHeaders, 404, "Not Found"},
		{"stylesheet", "/static/css/app.css", nil, 200, "tailwindcss"},
	} {
		plain, plainRaw := get(c.path, "", c.headers)
		if plain.Header.Get("Content-Encoding") != "" || plain.StatusCode != c.status {
			t.Fatalf("%s without Accept-Encoding: %d %q", c.name, plain.StatusCode, plain.Header.Get("Content-Encoding"))
		}
		for _, enc := range []string{"br", "gzip"} {
			resp, raw := get(c.path, enc, c.headers)
			if got := resp.Header.Get("Content-Encoding"); got != enc || resp.StatusCode != c.status {
				t.Fatalf("%s, Accept-Encoding %s: %d, Content-Encoding %q", c.name, enc, resp.StatusCode, got)
			}
			if !strings.Contains(resp.Header.Get("Vary"), "Accept-Encoding") {
				t.Errorf("%s: Vary = %q", c.name, resp.Header.Get("Vary"))
			}
			body := decode(enc, raw)
			if !strings.Contains(body, c.want) || len(raw) >= len(plainRaw) {
				t.Errorf("%s, %s: %d bytes from %d; decoded holds %q: %v", c.name, enc, len(raw), len(plainRaw), c.want, strings.Contains(body, c.want))
			}
		}
	}
	for _, path := range []string{"/vault/fetch/one?project_id=shop&key=K", "/vault/fetch?project_id=shop"} {
		resp, raw := get(path, "br, gzip", h)
		if resp.StatusCode != 200 || resp.Header.Get("Content-Encoding") != "" || !strings.Contains(string(raw), `"v"`) {
			t.Errorf("%s: a vault value must go uncompressed: %d %q %s", path, resp.StatusCode, resp.Header.Get("Content-Encoding"), raw)
		}
	}
	for _, c := range []struct{ path, body, secret string }{
		{"/user/login", `{"auth_data":"keeper","password":"` + testPassword + `"}`, `"jwt":"`},
		{"/pat/create", `{"name":"ci"}`, `"token":"stp_`},
	} {
		req := jsonRequest("POST", c.path, c.body, merge(h, map[string]string{"Accept-Encoding": "br, gzip"}))
		resp, err := ta.app.Test(req, -1)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode >= 300 || resp.Header.Get("Content-Encoding") != "" || !strings.Contains(string(raw), c.secret) {
			t.Errorf("%s: a new token must go uncompressed: %d %q %s", c.path, resp.StatusCode, resp.Header.Get("Content-Encoding"), raw)
		}
	}
}

// TestStaticLifetimes: a file linked by its content hash is kept a year;
// the same file by another URL is checked on each use.
func TestStaticLifetimes(t *testing.T) {
	t.Parallel()
	ta := newTestApp(t)
	ta.h.cfg.Production = true
	app := ta.h.App()
	url, err := ta.h.assets.URL("css/app.css")
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		string(url):                    "public, max-age=31536000, immutable",
		"/static/css/app.css":          "no-cache",
		"/static/css/app.css?v=000000": "no-cache",
	} {
		resp, err := app.Test(httptest.NewRequest(http.MethodGet, path, nil), -1)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := resp.Header.Get("Cache-Control"); resp.StatusCode != 200 || got != want {
			t.Errorf("%s: %d, Cache-Control %q, want %q", path, resp.StatusCode, got, want)
		}
	}
	resp, err := app.Test(httptest.NewRequest(http.MethodGet, "/static/nothing.css", nil), -1)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 || resp.Header.Get("Cache-Control") == "public, max-age=31536000, immutable" {
		t.Errorf("a missing file: %d %q", resp.StatusCode, resp.Header.Get("Cache-Control"))
	}
}

// BenchmarkStaticScalarBrotli: the API reference's 4.3 MB script asked
// for brotli-encoded, as a browser asks for it.
func BenchmarkStaticScalarBrotli(b *testing.B) {
	ta := newTestApp(b)
	app := ta.h.App()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodGet, "/static/vendor/scalar/standalone.js", nil)
		req.Header.Set("Accept-Encoding", "br")
		resp, err := app.Test(req, -1)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

// TestPageWeights: what a browser downloads for the sign-in, vault,
// template list and editor pages — the page and every script, stylesheet
// and icon it links — brotli-compressed, stays under 40 KB each. The
// figures are logged (go test -run TestPageWeights -v ./handlers).
func TestPageWeights(t *testing.T) {
	t.Parallel()
	ta, _, h := vaultApp(t)
	ta.expectStatus(t, "entry", "POST", "/vault/create", `{"project_id":"shop","key":"STRIPE_SECRET_KEY","value":"sk"}`, h, 201)
	cookie, csrf := ta.signIn(t, "keeper")
	linked := regexp.MustCompile(`(?:src|href)="(/static/[^"]+)"`)
	weigh := func(path string, headers map[string]string) int {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		req.Header.Set("Accept-Encoding", "br")
		resp, err := ta.app.Test(req, -1)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d", path, resp.StatusCode)
		}
		return len(raw)
	}
	for _, page := range []struct {
		name, path string
		headers    map[string]string
	}{
		{"sign-in", "/web/login", asBrowserHeaders},
		{"vault", "/web/vault?project_id=shop", browser(cookie, csrf)},
		{"template list", "/web/routes/templates", browser(cookie, csrf)},
		{"editor", "/web/routes/templates/create", browser(cookie, csrf)},
	} {
		req := httptest.NewRequest(http.MethodGet, page.path, nil)
		for k, v := range page.headers {
			req.Header.Set(k, v)
		}
		_, body := ta.do(t, req)
		total := weigh(page.path, page.headers)
		files := 0
		for _, m := range linked.FindAllStringSubmatch(body, -1) {
			total += weigh(html.UnescapeString(m[1]), nil)
			files++
		}
		t.Logf("%-14s %5.1f KB brotli (the page and %d linked files)", page.name, float64(total)/1024, files)
		if total >= 40*1024 {
			t.Errorf("%s weighs %d bytes compressed, over 40 KB", page.name, total)
		}
	}
}
