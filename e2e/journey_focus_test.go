package e2e

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// TestJourneyFocusAfterEachAction: after each action that used to drop
// the focus on the page's body, it lands on the field named or on the
// control the work goes on from (docs/pages.md): a refused save in the
// route editor (the first field named, not the one Ctrl+S was pressed
// in), Ctrl+Z of a block move (the block, back in its place), Fill the
// form from a template's variables (the route's id), Create collection
// (its Fields), Escape on the New record panel (New record), a filter of
// the records (the filter), a refused CORS save (the origins field).
func TestJourneyFocusAfterEachAction(t *testing.T) {
	t.Parallel()
	app, b := memberBrowser(t, "ada", "ADMIN")
	ada := apiLogin(t, app.URL, "ada", "ada-password-1")
	tmpl := `{"name":"lister","description":"Lists a collection","project_id":"shop","method":"GET","route_id":"list_{col}","route_path":"/{col}",
		"auth_jwt":{"active":false,"field":"","ref_col":""},"params":{"delimiter":"&","pairs":[]},"body":[],
		"variables":[{"key":"col","description":"Collection","default_value":null}],
		"flow":{"blocks":[{"type":"FETCH","depth":0,"local_name":"rows","ref_col":"{col}"},{"type":"RETURN","depth":0,"pairs":[],"conditions":[]}]}}`
	if status, body := api(t, "POST", app.URL+"/route/template/create", ada, tmpl); status != 201 {
		t.Fatalf("template: %d %s", status, body)
	}

	// The route editor: a refused save puts the focus on the first field
	// named; Ctrl+Z of a move takes the focus back with the block.
	b.do(chromedp.Navigate(app.URL + "/web/routes/create?id=shop"))
	b.waitText("New route")
	b.fill(`[data-path="route_path"]`, "/rates")
	b.addBlock("OBJECT")
	b.fill(`[data-path="flow.blocks[0].local_name"]`, "a")
	b.addBlock("OBJECT")
	b.fill(`[data-path="flow.blocks[1].local_name"]`, "b")
	b.click(`[aria-label^="Move block 2 up"]`)
	b.focusOn(`[data-block="0"] [data-action="up"]`)
	b.do(chromedp.KeyEvent("z", chromedp.KeyModifiers(chromedp.ModifierCtrl)))
	b.waitText("Undone: moved block 2 (OBJECT) up")
	b.focusOn(`[data-block="1"] [data-action="up"]`)
	b.focusOn(`[data-block="1"] [data-action="up"]`)
	b.do(chromedp.KeyEvent("z", chromedp.KeyModifiers(chromedp.ModifierShift|chromedp.ModifierCtrl)))
	b.focusOn(`[data-block="0"] [data-action="up"]`)
	b.click(`[data-path="flow.blocks[1].local_name"]`)
	b.do(chromedp.KeyEvent("s", chromedp.KeyModifiers(chromedp.ModifierCtrl)))
	b.waitText("Not saved")
	b.focusOn(`[data-path="route_id"]`)

	// Fill the form from a template's variables: the route's id next.
	b.do(chromedp.Navigate(app.URL + "/web/routes/create?id=shop"))
	b.waitText("New route")
	b.click(`[data-action="from-template"]`)
	b.click(`#picker-list button`)
	b.focusOn(`#template-dialog input`)
	b.typeKeys(`#template-dialog input`, "books")
	b.click(`#template-dialog [data-action="apply"]`)
	b.waitUntil(`document.querySelector('[data-path="route_id"]') && document.querySelector('[data-path="route_id"]').value === "list_books"`,
		func() string { return "the form was not filled" })
	b.focusOn(`[data-path="route_id"]`)

	// Create collection: its page, the focus on Fields.
	b.do(chromedp.Navigate(app.URL + "/web/data?project_id=shop"))
	b.waitText("New collection")
	b.fill("#collection-create #f-id", "books")
	b.fill("#collection-create #f-name", "Books")
	b.click("#collection-create button[type=submit]")
	b.waitText("Collection books created.")
	b.focusOn("#fields-button")

	// Escape on the New record panel: back on New record.
	b.click(`button[data-open-dialog="#record-panel"].btn-primary`)
	b.focusOn("#f-data")
	b.press(kb.Escape)
	b.focusOn(`button[data-open-dialog="#record-panel"].btn-primary`)

	// A filter of the records loads the page with the focus on the filter.
	b.fill("#where", `{"status":"open"}`)
	b.click(`form[role="search"] button[type=submit]`)
	b.waitText("No records contain")
	b.focusOn("#where")

	// A refused CORS save: the origins field, with its error.
	b.do(chromedp.Navigate(app.URL + "/web/project?id=shop"))
	b.waitText("Browser origins (CORS)")
	b.fill("#f-x_cors_origins", "not an origin")
	b.click("#project-details button[type=submit]")
	b.waitUntil(`!!document.querySelector('#f-x_cors_origins[aria-invalid="true"]')`, func() string { return "the origins were not refused" })
	b.focusOn("#f-x_cors_origins")
}

// TestJourneyUndoAfterCreate: a route just created in the editor opens
// again with its undo (the last change before the save); the "Undone: …"
// line goes once the author changes something else.
func TestJourneyUndoAfterCreate(t *testing.T) {
	t.Parallel()
	app, b := memberBrowser(t, "una", "AUTHOR")
	b.do(chromedp.Navigate(app.URL + "/web/routes/create?id=shop"))
	b.waitText("New route")
	b.fill(`[data-path="route_id"]`, "fresh")
	b.fill(`[data-path="route_path"]`, "/fresh")
	b.addBlock("RETURN")
	b.click(`[data-action="save"]`)
	b.waitText("Last 24 hours")
	b.do(chromedp.Navigate(app.URL + "/web/routes/edit?project_id=shop&route_id=fresh"))
	b.waitText("Save route")
	if got := eval[string](b, `document.querySelector('[data-action="undo"]').getAttribute("aria-disabled") || ""`); got == "true" {
		t.Fatal("the route just created opens without its undo")
	}
	b.click(`[data-action="undo"]`)
	b.waitText("Undone: added block 1 (RETURN)")
	b.fill(`[data-path="route_path"]`, "/fresher")
	b.waitUntil(`document.querySelector('[data-testid="undo-status"]').textContent === ""`,
		func() string { return "the undo line stays after an edit" })
}
