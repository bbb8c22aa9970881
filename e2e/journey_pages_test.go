package e2e

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	kb "github.com/chromedp/chromedp/kb"
)

// pagesTemplate is a small template with a placeholder in its path, a
// FETCH, a CONDITION and a RETURN.
const pagesTemplate = `{"name":"fetch_items","description":"Fetch the items of a collection","method":"GET",
	"route_id":"read_{col}","route_path":"/{col}",
	"variables":[{"key":"col","description":"Collection to read","default_value":"books"}],
	"flow":{"blocks":[
		{"type":"FETCH","depth":0,"local_name":"rows","ref_col":"{col}"},
		{"type":"CONDITION","depth":0,"conditions":[{"left":{"ref_var":true,"rtype":"INTEGER","data":"n"},"right":{"ref_var":false,"rtype":"INTEGER","data":"0"},"condition_type":"EQUAL_TO","not":false,"next":"NONE"}],"action":"FAIL","fail":{"status":404,"message":"no {col}"}},
		{"type":"RETURN","depth":0,"pairs":[{"id":"items","data":{"ref_var":true,"rtype":"ARRAY","data":"rows"}}],"conditions":[]}]}}`

// TestJourneyEveryPage visits every page of the app with a ROOT member of
// a project signed in — and the sign-in page signed out — at 1280 and at
// 390 px wide. On each: no sideways scrolling, every control on screen, no
// serious or critical axe-core violation; a screenshot of each is kept in
// artifacts/screenshots for people to look at.
func TestJourneyEveryPage(t *testing.T) {
	t.Parallel()
	app, b := memberBrowser(t, "ada", "ROOT")
	root := apiLogin(t, app.URL, "root", "root-password-1")
	ada := apiLogin(t, app.URL, "ada", "ada-password-1")
	mustAPI := func(method, path, token, body string) json.RawMessage {
		t.Helper()
		status, out := api(t, method, app.URL+path, token, body)
		if status >= 300 {
			t.Fatalf("%s %s: %d %s", method, path, status, out)
		}
		var env struct{ Data json.RawMessage }
		_ = json.Unmarshal([]byte(out), &env)
		return env.Data
	}
	mustAPI("POST", "/vault/create", root, `{"project_id":"shop","key":"STRIPE_SECRET_KEY","value":"sk_live_0123456789abcdefghijklmnopqrstuvwxyz"}`)
	mustAPI("GET", "/vault/fetch/one?project_id=shop&key=STRIPE_SECRET_KEY", root, "")
	mustAPI("POST", "/pat/create", ada, `{"name":"deploy"}`)
	var tmpl struct{ ID int64 }
	_ = json.Unmarshal(mustAPI("POST", "/route/template/create", root, pagesTemplate), &tmpl)
	route := mustAPI("POST", "/route/template/apply", root, fmt.Sprintf(`{"id":%d,"project_id":"shop","values":{"col":"books"}}`, tmpl.ID))
	mustAPI("POST", "/route/create", root, fmt.Sprintf(`{"project_id":"shop","template_id":%d,"route":%s}`, tmpl.ID, route))
	// A long name without a break point must not push a page past 390 px.
	var long struct{ ID int64 }
	_ = json.Unmarshal(mustAPI("POST", "/route/template/create", root, strings.Replace(pagesTemplate, `"name":"fetch_items"`, `"name":"inventory_reconciliation_for_warehouses"`, 1)), &long)
	mustAPI("POST", "/collection/create", root, `{"project_id":"shop","id":"books","name":"Books","description":"The shop's catalogue"}`)
	for _, rec := range []string{
		`{"title":"Dune","author":{"name":"Frank Herbert"},"year":1965,"tags":["sf","classic"],"price":9.5}`,
		`{"title":"A Very Long Title That Goes On And On Past Any Reasonable Width For A Table Cell","year":2001}`,
		`{"title":"Emma","author":{"name":"Jane Austen"},"year":1815,"in_stock":true}`,
	} {
		mustAPI("POST", "/data/create", root, `{"project_id":"shop","collection_id":"books","data":`+rec+`}`)
	}
	mustAPI("POST", "/email/template/create", root, `{"project_id":"shop","name":"order_done","subject":"Your order {order}","text":"Hello {name}, order {order} is on its way.","html":"<p>Hello <b>{name}</b></p>"}`)
	var invited struct {
		ID   int64
		Link string
	}
	_ = json.Unmarshal(mustAPI("POST", "/project/invite", root, `{"project_id":"shop","email":"kim@example.com","role":"AUTHOR"}`), &invited)
	var outbox []struct{ ID int64 }
	_ = json.Unmarshal(mustAPI("GET", "/outbox/fetch?project_id=shop", root, ""), &outbox)
	if invited.Link == "" || len(outbox) != 1 {
		t.Fatalf("a held invitation: %+v, outbox %+v", invited, outbox)
	}
	link, err := url.Parse(invited.Link)
	if err != nil {
		t.Fatal(err)
	}
	invitePath := link.RequestURI()

	pages := []struct{ name, path, shows string }{
		{"email", "/web/email?project_id=shop", "order_done"},
		{"email-template", "/web/email/template?project_id=shop&name=order_done", "Sample values stand in"},
		{"outbox", "/web/outbox?project_id=shop", "kim@example.com"},
		{"outbox-message", fmt.Sprintf("/web/outbox/message?project_id=shop&id=%d", outbox[0].ID), "invites you to Shop"},
		{"forgot", "/web/forgot", "Forgot your password?"},
		{"invite", invitePath, "Join Shop"},
		{"home", "/", "Welcome"},
		{"account", "/web/account", "Change password"},
		{"users", "/web/users", "ada"},
		{"projects", "/web/projects", "Shop"},
		{"project", "/web/project?id=shop", "Members"},
		{"pats", "/web/pats", "deploy"},
		{"vaults", "/web/vaults", "Shop"},
		{"vault", "/web/vault?project_id=shop", "STRIPE_SECRET_KEY"},
		{"vault-log", "/web/vault/log?project_id=shop", "STRIPE_SECRET_KEY"},
		{"configs", "/web/configs", "Configs"},
		{"events", "/web/events", "email template order_done created"},
		{"vault-import", "/web/vault/import?project_id=shop", "Import a .env file"},
		{"project-apply", "/web/project/apply?project_id=shop", "Paste a project file"},
		{"templates", "/web/routes/templates", "fetch_items"},
		{"template", fmt.Sprintf("/web/routes/templates/view?id=%d", tmpl.ID), "fetch_items"},
		{"template-editor", fmt.Sprintf("/web/routes/templates/edit?id=%d", tmpl.ID), "fetch_items"},
		{"template-new", "/web/routes/templates/create", "New route template"},
		{"template-long-name", fmt.Sprintf("/web/routes/templates/view?id=%d", long.ID), "inventory_reconciliation_for_warehouses"},
		{"template-long-name-editor", fmt.Sprintf("/web/routes/templates/edit?id=%d", long.ID), "inventory_reconciliation_for_warehouses"},
		{"routes", "/web/routes?id=shop", "read_books"},
		{"all-routes", "/web/routes", "read_books"},
		{"data-projects", "/web/data", "Shop"},
		{"data", "/web/data?project_id=shop", "books"},
		{"collection", "/web/data/collection?project_id=shop&id=books", "Frank Herbert"},
		{"route", "/web/routes/view?project_id=shop&route_id=read_books", "read_books"},
		{"route-history", "/web/routes/history?project_id=shop&route_id=read_books", "Version 1"},
		{"route-stats", "/web/routes/stats?project_id=shop", "Requests by status"},
		{"vault-versions", "/web/vault/versions?project_id=shop&key=STRIPE_SECRET_KEY", "STRIPE_SECRET_KEY"},
		{"route-new", "/web/routes/create?id=shop", "New route in Shop"},
		{"route-edit", "/web/routes/edit?project_id=shop&route_id=read_books", "Edit route read_books"},
		{"route-try", "/web/routes/try?project_id=shop&route_id=read_books", "Send the request"},
		{"route-docs", "/web/routes/docs?project_id=shop", "Shop API"},
		{"api-reference", "/scalar", "Stencil API"},
		{"not-found", "/web/nowhere", "Not Found"},
	}
	// Where the skip link lands on the pages whose main task is a field.
	mainTask := map[string]string{
		"users": "#filter", "projects": "#filter", "vaults": "#filter", "vault": "#filter", "vault-log": "#log-filter",
		"configs": "#filter", "routes": "#filter", "all-routes": "#filter", "data": "#filter", "collection": "#where",
		"account": "#f-current_password", "pats": "#f-name", "forgot": "#f-email", "invite": "#f-username",
		"vault-import": "#import-env", "project-apply": "#f-document", "email-template": "#f-subject",
		"route-new": `[aria-label="Method"]`, "route-edit": `[aria-label="Method"]`, "template-editor": `[aria-label="Name"]`,
		"template-new": `[aria-label="Name"]`, "template": "#use-in", "route-try": "#try-caller", "events": "#events-project",
	}
	// Each width and half of the pages in a tab of its own, side by side.
	t.Run("pages", func(t *testing.T) {
		for _, width := range []int64{1280, 390} {
			for half, list := range [][]struct{ name, path, shows string }{pages[:len(pages)/2], pages[len(pages)/2:]} {
				t.Run(fmt.Sprintf("%d-%d", width, half+1), func(t *testing.T) {
					t.Parallel()
					b := newBrowser(t)
					b.signIn(app, "ada", "ada-password-1")
					b.resize(width, 844)
					everyPage(t, b, app, width, list, mainTask, half == 1)
				})
			}
		}
	})

	// "Use this template": from a global template's view to a route of a
	// chosen project, the template's values asked first.
	b.resize(1280, 844)
	b.do(chromedp.Navigate(fmt.Sprintf("%s/web/routes/templates/view?id=%d", app.URL, tmpl.ID)))
	b.waitText("Use this template")
	b.click(`[data-testid="use-template"] button[type=submit]`)
	b.waitText("Values for fetch_items")
	b.fill("#var-col", "authors")
	b.click(`#template-dialog button[type=submit]`)
	b.waitText("Filled from template fetch_items")
	b.click(`[data-action="save"]`)
	b.waitText("read_authors")
	b.waitText("Made from template fetch_items")
	// Routes are edited in the same editor.
	b.click(`a[href^="/web/routes/edit"]`)
	b.waitText("Edit route read_authors")
	b.fill(`[data-path="route_path"]`, "/authors/all")
	b.click(`[data-action="save"]`)
	b.waitText("/authors/all")
	if !strings.Contains(eval[string](b, "location.href"), "/web/routes/view") {
		t.Fatalf("saving a route lands on %s", eval[string](b, "location.href"))
	}
	// At 1280 the rare links are under More, opened by the keyboard.
	b.tabToMatch("nav [data-nav-more] summary")
	b.press("\r")
	b.do(chromedp.WaitVisible(`nav [data-nav-more] a[href="/web/pats"]`))
	b.screenshot("nav-more-1280")
	b.press(kb.Escape)
	b.resize(390, 844)

	// On a phone the menu opens with the keyboard: Sign out is in it.
	b.tabTo("nav-menu")
	b.do(chromedp.KeyEvent("\r"))
	b.do(chromedp.WaitVisible(`[data-nav-menu] button[type=submit]`))
	b.screenshot("nav-menu-390")
	b.click(`[data-nav-menu] button[type=submit]`)
	b.waitText("Sign in")
	for _, width := range []int64{1280, 390} {
		b.resize(width, 844)
		b.do(chromedp.Navigate(app.URL + "/web/login"))
		b.waitText("Sign in")
		b.audit("sign-in")
		b.screenshot(fmt.Sprintf("login-%d", width))
	}
	if !strings.Contains(b.text(), "Sign in") {
		t.Fatal("not signed out")
	}
}

// everyPage visits each of pages at width in b: the skip link by keyboard
// at 1280 px, the page's layout and axe-core's audit (at 390 px, the
// layout of each and the audit of the first), touch targets at 390 px, a
// screenshot; with revealed, the vault with a value shown too.
func everyPage(t *testing.T, b *browser, app *instance, width int64, pages []struct{ name, path, shows string }, mainTask map[string]string, revealed bool) {
	t.Helper()
	for i, p := range pages {
		b.do(chromedp.Navigate(app.URL + p.path))
		b.waitText(p.shows)
		state := fmt.Sprintf("%s (%s)", p.name, p.path)
		if width == 1280 {
			// Tab, Enter: the skip link lands on the page's main task,
			// inside the content, and nothing else happens.
			b.loaded()
			b.press("\t")
			if !eval[bool](b, `document.activeElement.matches("a[data-skip]")`) && p.path != "/scalar" {
				t.Errorf("%s: the first Tab is not on the skip link", state)
			}
			b.press("\r")
			want := mainTask[p.name]
			if want == "" {
				want = "#main, #main *"
			}
			if p.path != "/scalar" && !eval[bool](b, fmt.Sprintf(`document.activeElement.matches(%q)`, want)) {
				t.Errorf("%s: the skip link lands on %s, want %s", state, eval[string](b, `document.activeElement.outerHTML.slice(0, 120)`), want)
			}
		}
		if width == 390 && i > 0 {
			// axe-core's rules read the markup, which is the same at
			// both widths but for the menu: its phone form is audited on
			// the first page; every page's layout is checked at 390 all
			// the same (docs/testing.md).
			b.layout(state)
		} else {
			b.audit(state)
		}
		// On a phone every control is a finger's size and fields use
		// 16 px text (the viewer of API documents is Scalar's own).
		if width == 390 && !strings.Contains(p.path, "docs") && p.path != "/scalar" {
			for _, small := range b.smallTargets() {
				t.Errorf("%s at 390 px: %s", state, small)
			}
		}
		b.screenshot(fmt.Sprintf("%s-%d", p.name, width))
	}
	if !revealed {
		return
	}
	// The vault with a value revealed.
	b.do(chromedp.Navigate(app.URL + "/web/vault?project_id=shop"))
	b.click(`button[aria-label="Reveal STRIPE_SECRET_KEY"]`)
	b.waitText("sk_live_0123456789")
	b.audit("vault with a value revealed")
	b.screenshot(fmt.Sprintf("vault-revealed-%d", width))
}
