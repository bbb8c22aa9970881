package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestJourneyEditorControls: blocks are added, moved, indented under a LOOP
// (and no deeper), outdented and removed; editing the raw JSON redraws the
// form; a save with a fault shows the error beside its field.
func TestJourneyEditorControls(t *testing.T) {
	app, b := memberBrowser(t, "erin", "AUTHOR")
	b.do(chromedp.Navigate(app.URL + "/web/routes/templates/create"))
	b.waitText("New route template")
	blockTypes := func() string {
		return eval[string](b, `Array.from(document.querySelectorAll("[data-block]")).map(e => e.querySelector(".badge").textContent + ":" + e.style.marginLeft).join(",")`)
	}
	for i, typ := range []string{"FETCH", "LOOP", "VAULT"} {
		b.choose("#add-block-type", typ)
		b.click(`[data-action="add-block"]`)
		// The new block's first field has the focus; its next is one Tab
		// away; the type chosen stays chosen.
		b.focusOn(fmt.Sprintf(`[data-path="flow.blocks[%d].local_name"]`, i))
		if typ == "FETCH" {
			b.press("\t")
			b.focusOn(`[data-path="flow.blocks[0].ref_col"]`)
		}
		if got := eval[string](b, `document.getElementById("add-block-type").value`); got != typ {
			t.Fatalf("after adding a %s block the type choice shows %s", typ, got)
		}
	}
	if title := eval[string](b, `document.querySelector('[aria-label="Move block 1 down"]').title`); title != "Move block 1 down" {
		t.Fatalf("the arrow buttons have no tooltip: %q", title)
	}
	// A block added after a LOOP goes into its body.
	if got := blockTypes(); got != "FETCH:0rem,LOOP:0rem,VAULT:1.5rem" {
		t.Fatalf("after adding: %s", got)
	}
	b.click(`[aria-label="Indent block 3"]`) // already as deep as allowed
	b.click(`[aria-label="Outdent block 3"]`)
	b.click(`[aria-label="Indent block 2"]`) // FETCH before it is no LOOP
	if got := blockTypes(); got != "FETCH:0rem,LOOP:0rem,VAULT:0rem" {
		t.Fatalf("indent limits: %s", got)
	}
	b.click(`[aria-label="Move block 1 down"]`)
	b.click(`[aria-label="Indent block 2"]`) // FETCH now follows the LOOP
	if got := blockTypes(); got != "LOOP:0rem,FETCH:1.5rem,VAULT:0rem" {
		t.Fatalf("move and indent: %s", got)
	}
	b.click(`[aria-label="Remove block 3"]`)
	if got := blockTypes(); got != "LOOP:0rem,FETCH:1.5rem" {
		t.Fatalf("remove: %s", got)
	}

	// The raw JSON view edits the same document.
	b.click("main details summary")
	raw := `{"name":"raw_made","description":"from raw","project_id":null,"method":"POST","route_id":"r","route_path":"/r",
		"auth_jwt":{"active":false,"field":"","ref_col":""},"params":{"delimiter":"&","pairs":[]},"body":[{"id":"title","bdtype":"STRING"}],
		"variables":[],"flow":{"blocks":[{"type":"FETCH","depth":0,"local_name":"x","ref_col":""}]}}`
	eval[bool](b, fmt.Sprintf(`(el => { el.value = %q; el.dispatchEvent(new Event("input", {bubbles: true})); return true })(document.getElementById("raw-json"))`, raw))
	b.waitGone("Body fields are for POST") // POST shows the body rows instead
	if v := eval[string](b, `document.querySelector('[data-path="body[0].id"]').value`); v != "title" {
		t.Fatalf("the form does not follow the raw JSON: body[0].id = %q", v)
	}
	b.click(`[data-action="save"]`)
	// The summary names the field as the form shows it, not by its API
	// path, and leads to it.
	b.waitText("Block 1 (FETCH) · Collection is required")
	if strings.Contains(b.text(), "flow.blocks[0]") {
		t.Fatalf("the checks name a field by its API path: %s", b.text())
	}
	b.click(`[data-testid="problems"] button`)
	if got := eval[string](b, `document.activeElement.getAttribute("data-path")`); got != "flow.blocks[0].ref_col" {
		t.Fatalf("the summary's link focuses %q, not the field", got)
	}
	if strings.Contains(b.text(), "Error: ") {
		t.Fatal("the editor speaks the API's \"Error: \" prefix")
	}
	if n := eval[int](b, `document.querySelectorAll('[data-error-for="flow.blocks[0].ref_col"]').length`); n != 1 {
		t.Fatal("the error is not shown beside flow.blocks[0].ref_col")
	}
	b.screenshot("editor-error-beside-field")
	b.waitText("Fix these before saving")
	if eval[int](b, `document.querySelectorAll('[data-testid="lint-clear"]').length`) != 0 {
		t.Fatal("the checks call the template clean beside an error")
	}

	// Fixing the field takes its error, the summary and the save's message
	// away at once, before any new save.
	// A lint warning names its field the same way.
	b.fill(`[data-path="flow.blocks[0].ref_col"]`, "{table}")
	b.waitText("placeholder {table} is used but not declared — Block 1 (FETCH) · Collection")
	b.fill(`[data-path="flow.blocks[0].ref_col"]`, "items")
	b.waitGone("Collection is required")
	b.waitGone("Fix these before saving")
	if n := eval[int](b, `document.querySelectorAll('[data-error-for], .input-error').length`); n != 0 {
		t.Fatalf("%d error marks left after the fix", n)
	}
	if got := eval[string](b, `document.getElementById("save-status").textContent`); got != "" {
		t.Fatalf("the save's message outlived the fix: %q", got)
	}
	b.click(`[data-action="save"]`)
	b.waitText("raw_made")
	b.waitText("from raw")

	// Unsaved edits: leaving asks first; a saved editor leaves freely.
	b.mu.Lock()
	before := b.unloads
	b.mu.Unlock()
	if before != 0 {
		t.Fatalf("saving asked %d times before leaving", before)
	}
	b.click(`a[href^="/web/routes/templates/edit"]`)
	b.waitText("Edit raw_made")
	b.fill(`[data-path="description"]`, "changed, not saved")
	b.click(`nav a[href="/web/projects"]`)
	b.waitText("Projects")
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.unloads != 1 {
		t.Fatalf("leaving with unsaved edits asked %d times, want once", b.unloads)
	}
}

// TestJourneyEditorDelete: an author builds a template with a FETCH that
// matches, sorts and limits, and a DELETE with a target, saves it, and
// reads both in the template's outline.
func TestJourneyEditorDelete(t *testing.T) {
	app, b := memberBrowser(t, "dora", "AUTHOR")
	b.do(chromedp.Navigate(app.URL + "/web/routes/templates/create"))
	b.waitText("New route template")
	b.fill(`[data-path="name"]`, "tidy_up")
	b.fill(`[data-path="description"]`, "Delete finished tasks")
	b.fill(`[data-path="route_id"]`, "tidy")
	b.fill(`[data-path="route_path"]`, "/tidy")
	b.choose("#add-block-type", "FETCH")
	b.click(`[data-action="add-block"]`)
	b.fill(`[data-path="flow.blocks[0].local_name"]`, "done")
	b.fill(`[data-path="flow.blocks[0].ref_col"]`, "tasks")
	b.click(`[data-action="add:flow.blocks[0].match"]`)
	b.waitText("Property (a dot path)")
	b.fill(`[data-path="flow.blocks[0].match[0].id"]`, "status")
	b.fill(`[data-path="flow.blocks[0].match[0].data.data"]`, "done")
	b.click(`[data-path="flow.blocks[0].sort?"]`)
	b.fill(`[data-path="flow.blocks[0].sort.property"]`, "finished")
	b.click(`[data-path="flow.blocks[0].sort.descending"]`)
	b.choose("#add-block-type", "DELETE")
	b.click(`[data-action="add-block"]`)
	// A DELETE's first field is its collection.
	b.focusOn(`[data-path="flow.blocks[1].ref_col"]`)
	b.fill(`[data-path="flow.blocks[1].ref_col"]`, "tasks")
	b.click(`[data-action="add:flow.blocks[1].targets"]`)
	b.fill(`[data-path="flow.blocks[1].targets[0].field"]`, "status")
	b.fill(`[data-path="flow.blocks[1].targets[0].value.data"]`, "done")
	b.click(`[data-path="flow.blocks[1].save"]`)
	b.screenshot("editor-delete-block")
	b.click(`[data-action="save"]`)
	b.waitText("Targets: status = \"done\"")
	for _, want := range []string{"DELETE", "Sort by: finished, descending", "Match (property = value): status = \"done\"", "Save the change: yes"} {
		if !strings.Contains(b.text(), want) {
			t.Fatalf("the outline lacks %q:\n%s", want, b.text())
		}
	}
}
