package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestJourneyFirstDay: a new ADMIN who belongs to no project finds a
// checklist on the home page that leads through a first day — a project
// (its id and API path made from the name as it is typed, from an empty
// state that says what to do), a secret, a route, a run, the route
// document — ticking itself from the data, and gone once all is done.
func TestJourneyFirstDay(t *testing.T) {
	t.Parallel()
	app, author := memberBrowser(t, "someone", "AUTHOR")
	root := apiLogin(t, app.URL, "root", "root-password-1")
	// An AUTHOR's checklist counts only the AUTHOR's steps: the vault's
	// is said to be an ADMIN's, and not counted.
	author.do(chromedp.Navigate(app.URL + "/"))
	author.waitText("Your first day")
	if got := eval[string](author, `document.querySelector('[data-testid="first-day-count"]').textContent`); got != "1 of 4 done" {
		t.Fatalf("an AUTHOR's checklist says %q, want 1 of 4 done", got)
	}
	author.waitText("Vaults are an ADMIN's")
	if status, body := api(t, "POST", app.URL+"/user/register", root, `{"username":"nina","email":"nina@example.com","password":"nina-password-1","role":"ADMIN"}`); status != 201 {
		t.Fatalf("register: %d %s", status, body)
	}
	b := newBrowser(t)
	b.signIn(app, "nina", "nina-password-1")
	nina := apiLogin(t, app.URL, "nina", "nina-password-1")
	count := func(want string) {
		t.Helper()
		b.do(chromedp.Navigate(app.URL + "/"))
		b.waitText("Your first day")
		if got := eval[string](b, `document.querySelector('[data-testid="first-day-count"]').textContent`); got != want {
			t.Fatalf("the checklist says %q, want %q", got, want)
		}
	}
	count("0 of 5 done")
	for _, width := range []int64{1280, 390} {
		b.resize(width, 844)
		b.audit(fmt.Sprintf("first day at %d", width))
		b.screenshot(fmt.Sprintf("home-first-day-%d", width))
	}
	b.resize(1280, 844)

	// The first step leads to the projects page, whose empty state leads to
	// the form; the id and path follow the name.
	b.click(`[data-step="0"] a`)
	b.waitText("No projects yet.")
	b.click(`[data-testid="projects-empty"] a`)
	b.focusOn("#f-name")
	b.typeKeys("#f-name", "Shop EU Café")
	if id, path := eval[string](b, `document.getElementById("f-id").value`), eval[string](b, `document.getElementById("f-api_path").value`); id != "shop_eu_cafe" || path != "/shop-eu-cafe" {
		t.Fatalf("from the name the form made id %q and path %q", id, path)
	}
	// An id typed by hand stays as typed when the name changes.
	b.fill("#f-id", "eu_shop")
	b.typeKeys("#f-name", "s")
	if id := eval[string](b, `document.getElementById("f-id").value`); id != "eu_shop" {
		t.Fatalf("the id typed by hand became %q", id)
	}
	b.click(`#project-form button[type=submit]`)
	b.waitText("eu_shop")
	count("1 of 5 done")

	for _, call := range [][2]string{
		{"/vault/create", `{"project_id":"eu_shop","key":"PSP_KEY","value":"k-1"}`},
		{"/route/create", `{"project_id":"eu_shop","route":{"route_id":"hello","route_path":"/hello","method":"GET","auth_jwt":{"active":false,"field":"","ref_col":""},"params":{"delimiter":"&","pairs":[]},"body":[],"flow":{"blocks":[{"type":"RETURN","depth":0,"pairs":[],"conditions":[]}]}}}`},
	} {
		if status, body := api(t, "POST", app.URL+call[0], nina, call[1]); status >= 300 {
			t.Fatalf("POST %s: %d %s", call[0], status, body)
		}
	}
	count("3 of 5 done")
	if status, body := api(t, "GET", app.URL+"/x/shop-eu-cafes/hello", "", ""); status != 200 {
		t.Fatalf("GET the route: %d %s", status, body)
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		b.do(chromedp.Navigate(app.URL + "/"))
		b.waitText("Your first day")
		if strings.Contains(b.text(), "4 of 5 done") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run never ticked its step: %s", b.text())
		}
		time.Sleep(300 * time.Millisecond)
	}
	b.click(`[data-step="4"] a`)
	b.waitText("the JSON document is at")
	b.do(chromedp.Navigate(app.URL + "/"))
	b.waitText("Welcome, nina")
	if strings.Contains(b.text(), "Your first day") {
		t.Fatal("the checklist stays after every step is done")
	}

	// Back links go back where one came from: from the project's page to
	// its vault and back to the project (not the list of vaults); from the
	// routes list, filtered, to a route, its Try page, back to the route
	// and back to the list with its filter, all by keyboard.
	b.do(chromedp.Navigate(app.URL + "/web/project?id=eu_shop"))
	b.waitText("Members")
	b.loaded()
	b.tabToMatch(`main a[href="/web/vault?project_id=eu_shop"]`)
	b.press("\r")
	b.waitText("PSP_KEY")
	b.loaded()
	if got := eval[string](b, `document.querySelector("a[data-back]").getAttribute("href")`); got != "/web/project?id=eu_shop" {
		t.Errorf("the vault opened from the project goes back to %q", got)
	}
	if got := eval[string](b, `document.querySelector("a[data-back]").textContent`); got == "← Vaults" || !strings.HasPrefix(got, "← ") {
		t.Errorf("the vault's back link reads %q", got)
	}
	b.do(chromedp.Navigate(app.URL + "/web/routes?id=eu_shop"))
	b.waitText("hello")
	b.loaded()
	b.tabToMatch("#filter")
	b.typeKeys("#filter", "hel")
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(eval[string](b, "location.search"), "filter=hel"); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the filter is not in the address: %s", eval[string](b, "location.search"))
		}
	}
	b.tabToMatch(`a[href^="/web/routes/view"]`)
	b.press("\r")
	b.waitText("Flow (1 block)")
	b.loaded()
	b.tabToMatch(`a[href^="/web/routes/try"]`)
	b.press("\r")
	b.waitText("Send the request")
	b.loaded()
	b.tabToMatch("a[data-back]")
	b.press("\r")
	b.waitText("Flow (1 block)")
	b.loaded()
	if got := eval[string](b, `document.querySelector("a[data-back]").getAttribute("href")`); !strings.Contains(got, "filter=hel") || !strings.Contains(got, "id=eu_shop") {
		t.Errorf("the route's back link leads to %q, not the list as it was left", got)
	}
	b.tabToMatch("a[data-back]")
	b.press("\r")
	b.waitText("hello")
	if got := eval[string](b, `document.getElementById("filter").value`); got != "hel" {
		t.Errorf("back on the list, its filter reads %q", got)
	}
}
