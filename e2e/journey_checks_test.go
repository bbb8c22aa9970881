package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestJourneyChecksKnowTheProject: the route editor's checks know what the
// project allows and what never runs. An HTTP block to a host the project's
// "Hosts routes may call" leaves out is named with a link to the setting; a
// block added to a route that ends in RETURN goes before it, and a block
// moved after it is named as never running; a check whose subject is its
// block leads with the block's name in the editor's words; removing a LOOP
// with a body asks whether the body goes too, and Undo brings it back.
func TestJourneyChecksKnowTheProject(t *testing.T) {
	t.Parallel()
	app, b := memberBrowser(t, "erin", "AUTHOR")
	root := apiLogin(t, app.URL, "root", "root-password-1")
	if status, body := api(t, "PATCH", app.URL+"/project/update", root, `{"project_id":"shop","x_egress_hosts":["api.stripe.com"]}`); status != 200 {
		t.Fatalf("hosts: %d %s", status, body)
	}
	b.do(chromedp.Navigate(app.URL + "/web/routes/create?id=shop"))
	b.waitText("New route")
	order := func() string {
		return eval[string](b, `Array.from(document.querySelectorAll("[data-block]")).map(e => e.querySelector(".badge").textContent + (e.style.marginLeft === "0rem" ? "" : ">")).join(",")`)
	}
	warnings := func() string {
		return eval[string](b, `Array.from(document.querySelectorAll('[data-testid="lint-warning"]')).map(e => e.textContent).join(" | ")`)
	}
	b.fill(`[data-path="route_id"]`, "rates")
	b.fill(`[data-path="route_path"]`, "/rates")
	b.addBlock("HTTP")
	b.fill(`[data-path="flow.blocks[0].local_name"]`, "rates")
	b.fill(`[data-path="flow.blocks[0].url.data"]`, "https://api.frankfurter.app/latest")
	b.addBlock("RETURN")
	b.waitText("calls api.frankfurter.app, which the project's “Hosts routes may call” does not list: every run would fail — Block 1 (HTTP) · URL")
	if href := eval[string](b, `(document.querySelector('[data-testid="lint-warning"] a') || {}).href || ""`); !strings.HasSuffix(href, "/web/project?id=shop#f-x_egress_hosts") {
		t.Fatalf("the egress check links to %q", href)
	}

	// Added to a route that ends in RETURN, a block goes before it.
	b.addBlock("ASSIGNMENT")
	b.fill(`[data-path="flow.blocks[1].local_name"]`, "total")
	if got := order(); got != "HTTP,ASSIGNMENT,RETURN" {
		t.Fatalf("a block added after the RETURN: %s", got)
	}
	b.waitText("Block 2 (ASSIGNMENT) · Operations has no operations")
	b.click(`[aria-label^="Move block 3 up"]`)
	b.waitText("Block 3 (ASSIGNMENT) never runs: Block 2 (RETURN) answers first")
	if strings.Contains(warnings(), "flow.blocks[") {
		t.Fatalf("a check names a block by its API path: %s", warnings())
	}
	b.screenshot("checks-project-1280")
	b.resize(390, 844)
	b.waitText("never runs")
	if bad := b.smallTargets(); len(bad) > 0 {
		t.Errorf("small targets at 390 px: %v", bad)
	}
	b.screenshot("checks-project-390")
	b.resize(1280, 900)
	b.click(`[aria-label^="Move block 2 down"]`)
	b.waitGone("never runs")

	// A LOOP with a body: Remove asks; keeping the body lifts it, Undo
	// puts the loop back, and removing all takes both.
	b.addBlock("LOOP")
	b.addBlock("OBJECT")
	b.fill(`[data-path="flow.blocks[2].local_name"]`, "i")
	b.fill(`[data-path="flow.blocks[3].local_name"]`, "o")
	if got := order(); got != "HTTP,ASSIGNMENT,LOOP,OBJECT>,RETURN" {
		t.Fatalf("a LOOP and its body before the RETURN: %s", got)
	}
	b.click(`[aria-label="Remove block 3"]`)
	b.waitText("Remove block 3 (LOOP)?")
	b.focusOn(`#template-dialog [data-action="cancel"]`)
	b.press("\t")
	b.focusOn(`#template-dialog [data-action="lift-body"]`)
	b.press("\r")
	b.waitText("Removed block 3 (LOOP); its body runs in its place")
	if got := order(); got != "HTTP,ASSIGNMENT,OBJECT,RETURN" {
		t.Fatalf("the body kept: %s", got)
	}
	b.focusOn(`[data-block="2"] [data-action="fold"]`)
	b.do(chromedp.KeyEvent("z", chromedp.KeyModifiers(chromedp.ModifierCtrl)))
	b.waitUntil(fmt.Sprintf(`(%s) === "HTTP,ASSIGNMENT,LOOP,OBJECT>,RETURN"`, `Array.from(document.querySelectorAll("[data-block]")).map(e => e.querySelector(".badge").textContent + (e.style.marginLeft === "0rem" ? "" : ">")).join(",")`),
		func() string { return "Undo did not bring the loop back: " + order() })
	b.click(`[aria-label="Remove block 3"]`)
	b.click(`#template-dialog [data-action="remove-with-body"]`)
	b.waitText("Removed block 3 (LOOP) and its body")
	if got := order(); got != "HTTP,ASSIGNMENT,RETURN" {
		t.Fatalf("the loop removed with its body: %s", got)
	}
	b.focusOn(`[data-block="2"] [data-action="fold"]`)
}

// TestJourneyEditorAsksWhatMatters: the editor asks only what a block can
// use — a FILTER's comparison offers no arithmetic, an HTTP block's URL
// and an EMAIL's recipients ask no data type — and "+ Recipient" adds one
// row with the focus in its address.
func TestJourneyEditorAsksWhatMatters(t *testing.T) {
	t.Parallel()
	app, b := memberBrowser(t, "erin", "AUTHOR")
	b.do(chromedp.Navigate(app.URL + "/web/routes/create?id=shop"))
	b.waitText("New route")
	b.addBlock("FILTER")
	b.click(`[data-action="add:flow.blocks[0].filters"]`)
	ops := eval[string](b, `Array.from(document.querySelector('[data-path="flow.blocks[0].filters[0].operation_type"]').options).map(o => o.value).join(",")`)
	if strings.Contains(ops, "ADDITION") || strings.Contains(ops, "MODULO") || !strings.Contains(ops, "EQUAL_TO") || !strings.Contains(ops, "INCLUDES") {
		t.Fatalf("a filter's comparisons: %s", ops)
	}
	b.addBlock("HTTP")
	if n := eval[int](b, `document.querySelectorAll('[data-path="flow.blocks[1].url.rtype"]').length`); n != 0 {
		t.Fatal("an HTTP block's URL asks for a data type")
	}
	b.addBlock("EMAIL")
	add := `[data-action="add:flow.blocks[2].recipients"]`
	if got := eval[string](b, `document.querySelector('`+add+`').textContent`); got != "+ Recipient" {
		t.Fatalf("the recipients' add button reads %q", got)
	}
	b.focusOn(`[data-path="flow.blocks[2].template"]`)
	b.tabToMatch(add)
	b.press("\r")
	b.focusOn(`[data-path="flow.blocks[2].recipients[0].data"]`)
	if n := eval[int](b, `document.querySelectorAll('[data-path="flow.blocks[2].recipients[0].rtype"]').length`); n != 0 {
		t.Fatal("a recipient asks for a data type")
	}
}

// TestJourneyTryTemplateDraft: the template editor tries the draft as the
// route editor does — the route its values make (defaults filled in, the
// path following them), in a project of the author's, dry — by keyboard.
func TestJourneyTryTemplateDraft(t *testing.T) {
	t.Parallel()
	app, b := memberBrowser(t, "erin", "AUTHOR")
	token := apiLogin(t, app.URL, "erin", "erin-password-1")
	tmpl := `{"name":"greeter","description":"says hello","project_id":null,"method":"GET","route_id":"hello_{who}","route_path":"/hello/{who}",
		"auth_jwt":{"active":false,"field":"","ref_col":""},"params":{"delimiter":"&","pairs":[]},"body":[],
		"variables":[{"key":"who","description":"whom","default_value":"world"},{"key":"word","description":"the greeting","default_value":null}],
		"flow":{"blocks":[{"type":"RETURN","depth":0,"pairs":[{"id":"{word}","data":{"ref_var":false,"rtype":"STRING","data":"{who}"}}],"conditions":[]}]}}`
	status, body := api(t, "POST", app.URL+"/route/template/create", token, tmpl)
	var out struct{ Data struct{ ID int64 } }
	if status != 201 || json.Unmarshal([]byte(body), &out) != nil {
		t.Fatalf("template: %d %s", status, body)
	}
	for i, width := range []int64{1280, 390} {
		b.resize(width, 844)
		b.do(chromedp.Navigate(fmt.Sprintf("%s/web/routes/templates/edit?id=%d", app.URL, out.Data.ID)))
		b.waitText("Try the draft")
		if got := eval[string](b, `document.getElementById("draft-project").value`); got != "shop" {
			t.Fatalf("the project to run in: %q", got)
		}
		if got := eval[string](b, `document.querySelector('[data-variable="who"]').value`); got != "world" {
			t.Fatalf("who's value starts as %q, not its default", got)
		}
		b.tabToMatch(`[data-variable="word"]`)
		b.typeKeys(`[data-variable="word"]`, []string{"hi", "yo"}[i])
		b.tabToMatch(`[data-variable="who"]`) // Tab selects the default: typing replaces it
		b.typeKeys(`[data-variable="who"]`, "you")
		if got := eval[string](b, `document.getElementById("draft-path").value`); got != "/hello/you" {
			t.Fatalf("the path follows the values: %q", got)
		}
		b.tabToMatch(`[data-action="try-draft"]`)
		b.press("\r")
		b.waitText(`"` + []string{"hi", "yo"}[i] + `": "you"`)
		if got := eval[string](b, `document.querySelector('[data-testid="draft-status"]').textContent`); got != "200" {
			t.Fatalf("the draft answered %s", got)
		}
		b.audit(fmt.Sprintf("a template's draft at %d px", width))
		if bad := b.smallTargets(); width == 390 && len(bad) > 0 {
			t.Errorf("small targets at 390 px: %v", bad)
		}
		b.screenshot(fmt.Sprintf("template-try-%d", width))
	}
}
