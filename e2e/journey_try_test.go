package e2e

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// tryTemplate makes a route that adds an item to a collection: typed body
// fields, a FAIL for a year before 0, an OBJECT, a CREATE and a RETURN.
const tryTemplate = `{"name":"add_item","description":"Add an item to a collection","method":"POST",
	"route_id":"add_{col}","route_path":"/{col}/:shelf","body":[{"id":"title","bdtype":"STRING"},{"id":"year","bdtype":"INTEGER"},{"id":"signed","bdtype":"BOOLEAN"}],
	"variables":[{"key":"col","description":"Collection to add to","default_value":"books"}],
	"flow":{"blocks":[
		{"type":"CONDITION","depth":0,"conditions":[{"left":{"ref_var":true,"rtype":"INTEGER","data":"year"},"right":{"ref_var":false,"rtype":"INTEGER","data":"0"},"condition_type":"LESS_THAN","not":false,"next":"NONE"}],"action":"FAIL","fail":{"status":422,"message":"a year before 0"}},
		{"type":"OBJECT","depth":0,"local_name":"item","pairs":[{"id":"title","data":{"ref_var":true,"rtype":"STRING","data":"title"}},{"id":"year","data":{"ref_var":true,"rtype":"INTEGER","data":"year"}},{"id":"shelf","data":{"ref_var":true,"rtype":"STRING","data":"shelf"}},{"id":"signed","data":{"ref_var":true,"rtype":"BOOLEAN","data":"signed"}}]},
		{"type":"CREATE","depth":0,"ref_col":"{col}","ref_object":"item","save":true,"conditions":[]},
		{"type":"RETURN","depth":0,"pairs":[{"id":"item","data":{"ref_var":true,"rtype":"OTHER","data":"item"}}],"conditions":[]}]}}`

// TestJourneyTryRoute: an AUTHOR opens a route made from a template, tries
// it from its page with the keyboard alone — a dry run that answers and
// shows its trace and writes nothing, a body field of the wrong type named
// beside it, a FAIL marked on its block — and follows the failing block's
// link into the editor; at 1280 and 390 px.
func TestJourneyTryRoute(t *testing.T) {
	t.Parallel()
	app, b := memberBrowser(t, "ada", "AUTHOR")
	token := apiLogin(t, app.URL, "ada", "ada-password-1")
	root := apiLogin(t, app.URL, "root", "root-password-1")
	mustAPI := func(path, token, body string) json.RawMessage {
		t.Helper()
		status, out := api(t, "POST", app.URL+path, token, body)
		if status >= 300 {
			t.Fatalf("POST %s: %d %s", path, status, out)
		}
		var env struct{ Data json.RawMessage }
		_ = json.Unmarshal([]byte(out), &env)
		return env.Data
	}
	mustAPI("/collection/create", root, `{"project_id":"shop","id":"books","name":"Books"}`)
	var tmpl struct{ ID int64 }
	_ = json.Unmarshal(mustAPI("/route/template/create", token, tryTemplate), &tmpl)
	route := mustAPI("/route/template/apply", token, fmt.Sprintf(`{"id":%d,"project_id":"shop","values":{"col":"books"}}`, tmpl.ID))
	mustAPI("/route/create", token, fmt.Sprintf(`{"project_id":"shop","template_id":%d,"route":%s}`, tmpl.ID, route))
	books := func() string {
		_, body := api(t, "GET", app.URL+"/data/fetch?project_id=shop&collection_id=books", token, "")
		return body
	}

	// The route's page says where it answers, and its cURL command, copied
	// and run in a shell, calls it.
	b.do(chromedp.Navigate(app.URL + "/web/routes/view?project_id=shop&route_id=add_books"))
	b.waitText("Call it")
	if got := eval[string](b, `document.querySelector('[data-testid="route-address"]').textContent`); got != app.URL+"/x/shop/books/{shelf}" {
		t.Fatalf("the route's page gives its address as %q", got)
	}
	b.click(`section[aria-labelledby="call-title"] summary`)
	b.click(`button[data-copy="#route-curl"]`)
	b.waitText("Copied")
	command := eval[string](b, `document.querySelector('[data-testid="route-curl"]').textContent`)
	out, err := exec.Command("sh", "-c", command).CombinedOutput()
	if err != nil || !strings.Contains(string(out), `"shelf":"{shelf}"`) || !strings.Contains(books(), `"shelf":"{shelf}"`) {
		t.Fatalf("the copied command %s answered %s (%v); records: %s", command, out, err, books())
	}

	// The routes list leads to the playground too.
	b.do(chromedp.Navigate(app.URL + "/web/routes?id=shop"))
	b.waitText("Routes of Shop")
	b.tabToMatch(`a[href="/web/routes/try?project_id=shop&route_id=add_books"]`)
	b.press("\r")
	b.waitText("Send the request")

	for _, width := range []int64{1280, 390} {
		b.resize(width, 844)
		b.do(chromedp.Navigate(app.URL + "/web/routes/view?project_id=shop&route_id=add_books"))
		b.waitText("Made from template")
		b.tabToMatch(`a[href="/web/routes/try?project_id=shop&route_id=add_books"]`)
		b.press("\r")
		b.waitText("Send the request")
		if on := eval[bool](b, `document.getElementById("try-dry").checked`); !on {
			t.Fatal("dry run is not on by default")
		}
		// The form, by keyboard: the path parameter, then the body fields.
		b.tabTo("path-shelf")
		b.do(chromedp.KeyEvent("A3"))
		b.tabTo("body-title")
		b.do(chromedp.KeyEvent("Kim"))
		b.tabTo("body-year")
		b.do(chromedp.KeyEvent("1901"))
		b.tabTo("body-signed")
		b.press(" ")
		b.tabTo("try-send")
		b.press("\r")
		b.waitText("dry run: nothing written")
		for _, want := range []string{`"title": "Kim"`, `"shelf": "A3"`, "item = {", "conditions did not hold", "RETURN"} {
			b.waitText(want)
		}
		if status := eval[string](b, `document.querySelector("[data-testid=try-status]").textContent`); status != "200" {
			t.Fatalf("status %s", status)
		}
		if strings.Contains(books(), "Kim") {
			t.Fatal("a dry run wrote the record")
		}
		// Like a request tool: the URL being sent, each block's time, the
		// answer's type and size, a RETURN that reads once, bodies wrapped.
		if got := eval[string](b, `document.querySelector("[data-testid=try-url]").textContent`); got != app.URL+"/x/shop/books/A3" {
			t.Fatalf("the URL bar shows %q", got)
		}
		if got := eval[string](b, `[...document.querySelectorAll("[data-testid=try-trace] li")].pop().textContent`); !strings.Contains(got, "answered") || strings.Contains(got, "RETURNRETURN") {
			t.Fatalf("the RETURN row reads %q", got)
		}
		if n := eval[int](b, `document.querySelectorAll("[data-testid=took]").length`); n < 4 {
			t.Fatalf("%d trace rows give their time", n)
		}
		if got := eval[string](b, `document.querySelector("[data-testid=try-headers]").textContent + " | " + getComputedStyle(document.querySelector("[data-testid=try-body]")).whiteSpace`); !strings.HasPrefix(got, "Content-Type: application/json · ") || !strings.HasSuffix(got, "| pre-wrap") {
			t.Fatalf("the answer's headers and wrapping: %q", got)
		}
		b.audit(fmt.Sprintf("try, answered, at %d", width))
		b.screenshot(fmt.Sprintf("route-try-answer-%d", width))

		// A body field of the wrong type: the route's 400, beside the field.
		b.tabTo("body-year")
		b.do(chromedp.KeyEvent("soon"))
		b.tabTo("try-send")
		b.press("\r")
		b.waitText("year must be an integer")
		if invalid := eval[string](b, `document.getElementById("body-year").getAttribute("aria-invalid") + " " + document.querySelector("[data-testid=try-status]").textContent`); invalid != "true 400" {
			t.Fatalf("the wrong type is not named beside its field: %s", invalid)
		}

		// A FAIL: its block marked, with its message.
		b.fill("#body-year", "-5")
		b.tabTo("try-send")
		b.press("\r")
		b.waitText("a year before 0")
		marked := eval[string](b, `(r => r ? r.dataset.block + " " + getComputedStyle(r).borderLeftColor : "none")(document.querySelector("[data-outcome=FAIL]"))`)
		if !strings.HasPrefix(marked, "0 rgb(220, 38, 38)") {
			t.Fatalf("the failing block is not marked in red: %s", marked)
		}
		b.audit(fmt.Sprintf("try, failed, at %d", width))
		// Long recent requests are cut, not widening the page's column
		// past the screen (the audit's scroll check does not see a
		// column clipped by the layout).
		if over := eval[string](b, `[...document.querySelectorAll("#try-form, #try-recent, #try-answer")].filter(e => e.getBoundingClientRect().right > window.innerWidth).map(e => e.id).join(" ")`); over != "" {
			t.Fatalf("past the right edge at %d px: %s", width, over)
		}
		b.screenshot(fmt.Sprintf("route-try-fail-%d", width))
		// The last requests are kept for sending again.
		if n := eval[int](b, `document.querySelectorAll("#try-recent li").length`); n != 3 {
			t.Fatalf("%d recent requests, want 3", n)
		}
	}

	// The failing block's link opens the editor at that block.
	b.tabToMatch(`[data-outcome=FAIL] a[href$="#block-1"]`)
	b.press("\r")
	b.waitText("Edit route add_books")
	b.do(chromedp.WaitVisible(chromedp.CSS(`[data-block="0"].ring-red-500`)))
	if focused := eval[string](b, `(c => c ? String(c.contains(document.activeElement)) + " " + c.className.includes("ring-red-500") : "none")(document.querySelector("[data-block='0']"))`); focused != "true true" {
		t.Fatalf("the editor does not open at the failing block: %s", focused)
	}
	b.screenshot("route-try-editor")

	// The project's route document, in the Scalar viewer.
	b.resize(1280, 844)
	b.do(chromedp.Navigate(app.URL + "/web/routes/docs?project_id=shop"))
	b.waitText("Shop API")
	b.waitText("POST /books/:shelf")
	b.screenshot("route-docs-1280")
}
