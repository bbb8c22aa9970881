package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestJourneyRouteHistory: an author edits a route in the editor with a
// note, opens its History from the route page by keyboard, reads what
// changed block by block, and restores the first version through the
// confirmation dialog by keyboard alone; the live route answers as the
// first version did. At 1280 and 390 px, audited.
func TestJourneyRouteHistory(t *testing.T) {
	app, b := memberBrowser(t, "ada", "AUTHOR")
	token := apiLogin(t, app.URL, "ada", "ada-password-1")
	route := func(title string) string {
		return `{"route_id":"hello","route_path":"/hello","method":"GET","auth_jwt":{"active":false,"field":"","ref_col":""},"params":{"delimiter":"&","pairs":[]},"body":[],"flow":{"blocks":[` +
			`{"type":"RETURN","depth":0,"pairs":[{"id":"title","data":{"ref_var":false,"rtype":"STRING","data":"` + title + `"}}],"conditions":[]}]}}`
	}
	if status, body := api(t, "POST", app.URL+"/route/create", token, `{"project_id":"shop","note":"first words","route":`+route("Hello")+`}`); status != 201 {
		t.Fatalf("create: %d %s", status, body)
	}

	// Version 2, saved in the editor with a note.
	b.resize(1280, 900)
	b.do(chromedp.Navigate(app.URL + "/web/routes/edit?project_id=shop&route_id=hello"))
	b.waitText("Save route")
	eval[bool](b, `(() => { const s = JSON.parse(document.getElementById("raw-json").value); s.flow.blocks[0].pairs[0].data.data = "Goodbye";
		const raw = document.getElementById("raw-json"); raw.value = JSON.stringify(s); raw.dispatchEvent(new Event("input", {bubbles: true})); return true })()`)
	b.click("#save-note")
	b.do(chromedp.SendKeys(chromedp.CSS("#save-note"), "say goodbye"))
	b.press("\r") // Enter in the note saves
	b.waitText("(version 2)")
	if status, body := api(t, "GET", app.URL+"/x/shop/hello", "", ""); status != 200 || !strings.Contains(body, "Goodbye") {
		t.Fatalf("the edited route: %d %s", status, body)
	}

	for _, width := range []int64{1280, 390} {
		b.resize(width, 844)
		b.do(chromedp.Navigate(app.URL + "/web/routes/view?project_id=shop&route_id=hello"))
		b.waitText("(version 2)")
		b.tabToMatch(`a[href="/web/routes/history?project_id=shop&route_id=hello"]`)
		b.press("\r")
		b.waitText("From version 1 to version 2")
		b.waitText("say goodbye")
		b.waitText("first words")
		if got := eval[string](b, `document.querySelector('[data-testid="diff-block"]').textContent.replace(/\s+/g, " ")`); !strings.Contains(got, "changed") ||
			!strings.Contains(got, `"Hello"`) || !strings.Contains(got, `"Goodbye"`) {
			t.Fatalf("the diff reads %q", got)
		}
		b.audit(fmt.Sprintf("history at %d", width))
		if bad := b.smallTargets(); width == 390 && len(bad) > 0 {
			t.Errorf("small targets at %d: %v", width, bad)
		}
		b.screenshot(fmt.Sprintf("history-%d", width))
	}

	// Restore version 1 by keyboard: the dialog asks, Tab reaches Restore.
	b.tabToMatch(`[aria-label="Restore version 1"]`)
	b.press("\r")
	b.do(chromedp.WaitVisible(chromedp.CSS("#confirm-dialog[open] [data-confirm]")))
	if q := eval[string](b, `document.getElementById("confirm-question").textContent`); !strings.Contains(q, "It becomes the live version 3") {
		t.Fatalf("the dialog asks %q", q)
	}
	b.press("\t")
	b.press("\r")
	b.waitText("Version 1 restored as version 3.")
	b.waitText("Restored version 1")
	if status, body := api(t, "GET", app.URL+"/x/shop/hello", "", ""); status != 200 || !strings.Contains(body, "Hello") {
		t.Fatalf("the restored route: %d %s", status, body)
	}
	// The focus stays where the work goes on: on the row's button.
	if got := eval[string](b, `document.activeElement.getAttribute("aria-label") || document.activeElement.tagName`); got != "Restore version 1" {
		t.Errorf("after the restore the focus is on %q", got)
	}
	b.screenshot("history-restored-390")
}
