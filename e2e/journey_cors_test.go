package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// corsPage is a web app of another origin calling the project's routes
// with fetch: a GET, and a POST of JSON with a bearer token (which the
// browser sends only after a preflight). It writes what each call read,
// or how it failed, into the page.
const corsPage = `<!doctype html><html><head><meta charset="utf-8"><title>Other app</title></head><body>
<p id="get">…</p><p id="post">…</p>
<script>
const base = %q, token = %q;
const show = (id, text) => { document.getElementById(id).textContent = text; };
fetch(base + "/x/shop/books")
  .then(r => r.json().then(j => show("get", "GET " + r.status + " " + j.items.map(b => b.title).join(","))))
  .catch(e => show("get", "GET failed: " + e.name));
fetch(base + "/x/shop/books", {method: "POST", headers: {"Content-Type": "application/json", "Authorization": "Bearer " + token}, body: JSON.stringify({title: "Ubik"})})
  .then(r => r.json().then(j => show("post", "POST " + r.status + " " + j.added + " " + (r.headers.get("Retry-After") === null ? "no wait" : "wait"))))
  .catch(e => show("post", "POST failed: " + e.name));
</script></body></html>`

// TestJourneyCORS: an ADMIN lists a web app's origin on the project page
// by keyboard; the app, served from that other loopback origin, calls the
// project's routes from Chromium — a GET, and a POST of JSON with a bearer
// token after its preflight — and reads their answers once the project
// lists its origin; the same app from an origin not listed fails as
// browsers fail, and the route never runs for it.
func TestJourneyCORS(t *testing.T) {
	t.Parallel()
	app, b := memberBrowser(t, "ada", "ADMIN")
	token := apiLogin(t, app.URL, "ada", "ada-password-1")
	for _, call := range [][2]string{
		{"/collection/create", `{"project_id":"shop","id":"books","name":"Books"}`},
		{"/data/create", `{"project_id":"shop","collection_id":"books","data":{"title":"Dune"}}`},
		{"/route/create", `{"project_id":"shop","route":{"route_id":"list","route_path":"/books","method":"GET","auth_jwt":{"active":false,"field":"","ref_col":""},"params":{"delimiter":"&","pairs":[]},"body":[],"flow":{"blocks":[
			{"type":"FETCH","depth":0,"local_name":"rows","ref_col":"books"},
			{"type":"RETURN","depth":0,"pairs":[{"id":"items","data":{"ref_var":true,"rtype":"OTHER","data":"rows"}}],"conditions":[]}]}}}`},
		{"/route/create", `{"project_id":"shop","route":{"route_id":"add","route_path":"/books","method":"POST","auth_jwt":{"active":false,"field":"","ref_col":""},"params":{"delimiter":"&","pairs":[]},"body":[{"id":"title","bdtype":"STRING"}],"flow":{"blocks":[
			{"type":"OBJECT","depth":0,"local_name":"book","pairs":[{"id":"title","data":{"ref_var":true,"rtype":"STRING","data":"title"}}]},
			{"type":"CREATE","depth":0,"ref_col":"books","ref_object":"book","save":true,"conditions":[]},
			{"type":"RETURN","depth":0,"pairs":[{"id":"added","data":{"ref_var":true,"rtype":"STRING","data":"title"}}],"conditions":[]}]}}}`},
	} {
		if status, body := api(t, "POST", app.URL+call[0], token, call[1]); status >= 300 {
			t.Fatalf("POST %s: %d %s", call[0], status, body)
		}
	}
	serve := func() *httptest.Server {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprintf(w, corsPage, app.URL, token)
		}))
		t.Cleanup(srv.Close)
		return srv
	}
	listed, unlisted := serve(), serve()
	// The ADMIN lists the app's origin on the project page, by keyboard.
	b.do(chromedp.Navigate(app.URL + "/web/project?id=shop"))
	b.waitText("Browser origins (CORS)")
	b.tabTo("f-x_cors_origins")
	b.typeKeys("#f-x_cors_origins", listed.URL)
	b.press("\t")
	b.focused("f-x_egress_hosts") // the hosts its routes may call come next
	b.press("\t")
	if got := eval[string](b, `document.activeElement.textContent.trim()`); got != "Save" {
		t.Fatalf("Tab after the hosts goes to %q, not Save", got)
	}
	b.press("\r")
	b.waitText("Project saved.")
	if _, body := api(t, "GET", app.URL+"/project/fetch/one?project_id=shop", token, ""); !strings.Contains(body, `"x_cors_origins":["`+listed.URL+`"]`) {
		t.Fatalf("after saving the page: %s", body)
	}
	books := func() int {
		_, body := api(t, "GET", app.URL+"/data/fetch?project_id=shop&collection_id=books", token, "")
		return strings.Count(body, `"title"`)
	}

	b.do(chromedp.Navigate(listed.URL))
	b.waitText("GET 200 Dune")
	b.waitText("POST 200 Ubik no wait")
	if n := books(); n != 2 {
		t.Fatalf("after the listed app's POST: %d books", n)
	}
	b.screenshot("cors-listed")

	// Another origin: both calls fail in the browser; the POST's preflight
	// gets no CORS header, so the POST itself is never sent.
	b.do(chromedp.Navigate(unlisted.URL))
	b.waitText("GET failed: TypeError")
	b.waitText("POST failed: TypeError")
	if n := books(); n != 2 {
		t.Fatalf("after the unlisted app's POST: %d books", n)
	}
	// The page leaves the other apps before their servers close (a
	// cleanup): nothing of theirs is asked for once they are gone.
	b.do(chromedp.Navigate("about:blank"))
	// The browser reports each blocked call on the console: expected here.
	b.mu.Lock()
	kept := b.errors[:0]
	for _, e := range b.errors {
		if !strings.Contains(e, "CORS policy") && !strings.Contains(e, "net::ERR_FAILED") {
			kept = append(kept, e)
		}
	}
	b.errors = kept
	b.mu.Unlock()
}
