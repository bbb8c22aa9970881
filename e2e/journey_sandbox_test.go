package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// takeOver is the audit's page: loaded by htmx from the pages' own origin,
// it would read a ROOT's CSRF token from the account page and make the
// route's author ROOT, with no inline script.
const takeOver = `<script src='/static/vendor/htmx.min.js'></script>` +
	`<div id='tok' hx-get='/web/account' hx-trigger='load' hx-select='input[name=csrf_token]' hx-swap='innerHTML'></div>` +
	`<div hx-patch='/user/update/role' hx-trigger='load delay:1500ms' hx-vals='{&quot;target_uid&quot;:&quot;%d&quot;,&quot;role&quot;:&quot;ROOT&quot;}' hx-include='#tok input' hx-swap='none'></div>`

// TestJourneyRouteCannotActAsItsVisitor: an AUTHOR's route answers that
// page as HTML; a ROOT opens its link in Chromium, signed in on the same
// origin. The sandbox policy stops it: no script loads, no request but the
// page's own is made, the console shows the refusal, and the author is
// still an AUTHOR.
func TestJourneyRouteCannotActAsItsVisitor(t *testing.T) {
	t.Parallel()
	app, b := memberBrowser(t, "boss", "ROOT")
	root := apiLogin(t, app.URL, "root", "root-password-1")
	status, body := api(t, "POST", app.URL+"/user/register", root, `{"username":"authora","email":"authora@example.com","password":"authora-password-1","role":"AUTHOR"}`)
	if status != 201 {
		t.Fatalf("register: %d %s", status, body)
	}
	var uid int
	if _, err := fmt.Sscanf(body[strings.Index(body, `"id":`)+5:], "%d", &uid); err != nil {
		t.Fatalf("the author's id: %s", body)
	}
	if status, body := api(t, "POST", app.URL+"/project/member/add", root, `{"project_id":"shop","username":"authora"}`); status >= 300 {
		t.Fatalf("member: %d %s", status, body)
	}
	author := apiLogin(t, app.URL, "authora", "authora-password-1")
	page, _ := json.Marshal(fmt.Sprintf(takeOver, uid))
	route := `{"project_id":"shop","route":{"route_id":"report","route_path":"/report","method":"GET","auth_jwt":{"active":false,"field":"","ref_col":""},"params":{"delimiter":"&","pairs":[]},"body":[],"flow":{"blocks":[
		{"type":"RETURN","depth":0,"status":200,"headers":[{"id":"Content-Type","data":{"ref_var":false,"rtype":"STRING","data":"text/html; charset=utf-8"}}],"pairs":[{"id":"x","data":{"ref_var":false,"rtype":"STRING","data":` + string(page) + `}}],"conditions":[]}]}}}`
	if status, body := api(t, "POST", app.URL+"/route/create", author, route); status != 201 {
		t.Fatalf("the author's route: %d %s", status, body)
	}
	b.mu.Lock()
	b.requests = nil
	b.mu.Unlock()
	b.do(chromedp.Navigate(app.URL + "/x/shop/report"))
	time.Sleep(2500 * time.Millisecond) // past the page's delay of 1.5 s
	b.mu.Lock()
	requests, refusals := b.requests, b.errors
	b.errors = nil
	b.mu.Unlock()
	if len(requests) != 1 || !strings.HasSuffix(requests[0], "/x/shop/report") {
		t.Errorf("the page made requests: %v", requests)
	}
	if !strings.Contains(strings.Join(refusals, "\n"), "sandboxed") {
		t.Errorf("the console shows no refusal: %v", refusals)
	}
	if _, body := api(t, "GET", app.URL+"/user/fetch/one?target_uid="+fmt.Sprint(uid), root, ""); !strings.Contains(body, `"role":"AUTHOR"`) {
		t.Fatalf("the author after ROOT opened the page: %s", body)
	}
}
