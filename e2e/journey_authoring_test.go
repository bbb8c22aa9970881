package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// TestJourneyBuildRouteByKeyboard builds a route of three blocks with the
// keyboard alone, as a new author would — a FETCH with one match, a
// PROPERTY taking its length, a RETURN of two fields — and counts the key
// presses besides the text typed (the goal: at most 60). Every press's
// focus is where the work goes on: the palette's Enter lands in the new
// block, "+ match" and "+ field" in the new row.
func TestJourneyBuildRouteByKeyboard(t *testing.T) {
	t.Parallel()
	app, b := memberBrowser(t, "kai", "AUTHOR")
	token := apiLogin(t, app.URL, "root", "root-password-1")
	if status, out := api(t, "POST", app.URL+"/collection/create", token, `{"project_id":"shop","id":"tickets","name":"Tickets"}`); status != 201 {
		t.Fatalf("collection: %d %s", status, out)
	}
	for _, s := range []string{"open", "closed", "open"} {
		if status, out := api(t, "POST", app.URL+"/data/create", token, `{"project_id":"shop","collection_id":"tickets","data":{"status":"`+s+`"}}`); status != 201 {
			t.Fatalf("record: %d %s", status, out)
		}
	}
	b.resize(1280, 900)
	b.do(chromedp.Navigate(app.URL + "/web/routes/create?id=shop"))
	b.waitText("New route in Shop")
	_ = eval[bool](b, `(document.activeElement && document.activeElement.blur(), true)`)

	presses := 0
	press := func(key string, mods ...chromedp.KeyOption) {
		t.Helper()
		b.do(chromedp.KeyEvent(key, mods...))
		presses++
	}
	// typed is text typed into the field with the focus: not counted.
	typed := func(sel, text string) {
		t.Helper()
		b.focusOn(sel)
		b.do(chromedp.KeyEvent(text))
	}
	// tab presses Tab until the focus is on sel (at most 12 presses).
	tab := func(sel string) {
		t.Helper()
		check := fmt.Sprintf(`!!document.activeElement && document.activeElement.matches(%q)`, sel)
		for n := 0; !eval[bool](b, check); n++ {
			if n == 12 {
				t.Fatalf("12 presses of Tab did not reach %s (the focus is on %s)", sel, eval[string](b, `document.activeElement.outerHTML.slice(0, 160)`))
			}
			press("\t")
		}
	}
	at := func(path string) string { return fmt.Sprintf(`[data-path=%q]`, path) }
	addBlock := func(search, first string) {
		t.Helper()
		tab(`[data-action="add-block"]`)
		press("\r")
		typed("#palette-filter", search)
		press("\r")
		b.focusOn(first)
	}

	// The skip link leads into the form: its first field, the method.
	tab(`a[href="#main"]`)
	press("\r")
	b.focusOn(at("method"))
	tab(at("route_id"))
	typed(at("route_id"), "open_count")
	tab(at("route_path"))
	typed(at("route_path"), "/open")

	addBlock("fetch", at("flow.blocks[0].local_name"))
	typed(at("flow.blocks[0].local_name"), "rows")
	tab(at("flow.blocks[0].ref_col"))
	typed(at("flow.blocks[0].ref_col"), "tickets")
	tab(`[data-action="add:flow.blocks[0].match"]`)
	press("\r")
	typed(at("flow.blocks[0].match[0].id"), "status")
	tab(at("flow.blocks[0].match[0].data.data"))
	typed(at("flow.blocks[0].match[0].data.data"), "open")

	addBlock("property", at("flow.blocks[1].local_name"))
	typed(at("flow.blocks[1].local_name"), "n")
	tab(at("flow.blocks[1].data.ref_var"))
	press("v") // Variable
	tab(at("flow.blocks[1].data.data"))
	typed(at("flow.blocks[1].data.data"), "rows")
	tab(at("flow.blocks[1].apply"))
	for eval[string](b, `document.activeElement.value`) != "LENGTH" {
		if presses > 80 {
			t.Fatal("the arrow keys never chose LENGTH")
		}
		press(kb.ArrowDown)
	}

	addBlock("return", `[data-action="add:flow.blocks[2].pairs"]`)
	for i, pair := range [][2]string{{"items", "rows"}, {"count", "n"}} {
		if i > 0 {
			tab(`[data-action="add:flow.blocks[2].pairs"]`)
		}
		press("\r")
		row := fmt.Sprintf("flow.blocks[2].pairs[%d]", i)
		typed(at(row+".id"), pair[0])
		tab(at(row + ".data.ref_var"))
		press("v")
		tab(at(row + ".data.data"))
		typed(at(row+".data.data"), pair[1])
	}
	press("s", chromedp.KeyModifiers(chromedp.ModifierCtrl))
	b.do(chromedp.WaitVisible(chromedp.CSS(`[data-testid="route-path"]`)))
	t.Logf("a route of three blocks by keyboard: %d key presses besides typing", presses)
	if presses > 60 {
		t.Errorf("building the route took %d key presses besides typing (the goal: at most 60)", presses)
	}
	status, out := api(t, "GET", app.URL+"/x/shop/open", "", "")
	if status != 200 || !strings.Contains(out, `"count":2`) || strings.Count(out, `"status":"open"`) != 2 {
		t.Fatalf("the route built by keyboard answers %d %s", status, out)
	}
}
