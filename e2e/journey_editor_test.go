package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// TestJourneyEditorControls: blocks are added, moved, indented under a LOOP
// (and no deeper), outdented and removed; editing the raw JSON redraws the
// form; a save with a fault shows the error beside its field.
func TestJourneyEditorControls(t *testing.T) {
	t.Parallel()
	app, b := memberBrowser(t, "erin", "AUTHOR")
	b.do(chromedp.Navigate(app.URL + "/web/routes/templates/create"))
	b.waitText("New route template")
	blockTypes := func() string {
		return eval[string](b, `Array.from(document.querySelectorAll("[data-block]")).map(e => e.querySelector(".badge").textContent + ":" + e.style.marginLeft).join(",")`)
	}
	for i, typ := range []string{"FETCH", "LOOP", "VAULT"} {
		b.addBlock(typ)
		// The new block's first field has the focus; its next is one Tab
		// away; the type chosen stays chosen.
		b.focusOn(fmt.Sprintf(`[data-path="flow.blocks[%d].local_name"]`, i))
		if typ == "FETCH" {
			b.press("\t")
			b.focusOn(`[data-path="flow.blocks[0].ref_col"]`)
		}
	}
	if title := eval[string](b, `document.querySelector('[aria-label^="Move block 1 down"]').title`); title != "Move block 1 down (Alt+↓)" {
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
	b.click(`[aria-label^="Move block 1 down"]`)
	b.click(`[aria-label="Indent block 2"]`) // FETCH now follows the LOOP
	if got := blockTypes(); got != "LOOP:0rem,FETCH:1.5rem,VAULT:0rem" {
		t.Fatalf("move and indent: %s", got)
	}
	b.click(`[aria-label="Remove block 3"]`)
	if got := blockTypes(); got != "LOOP:0rem,FETCH:1.5rem" {
		t.Fatalf("remove: %s", got)
	}
	// Moves go by whole blocks of one level, as an outliner's do: a block
	// next to a LOOP hops over its body, a LOOP takes its body with it,
	// and the first block of a body stays in it.
	b.addBlock("VAULT")
	b.click(`[aria-label="Outdent block 3"]`)
	b.click(`[aria-label^="Move block 3 up"]`)
	if got := blockTypes(); got != "VAULT:0rem,LOOP:0rem,FETCH:1.5rem" {
		t.Fatalf("a block moved up past a LOOP: %s", got)
	}
	b.focusOn(`[aria-label^="Move block 1 up"]`)
	b.click(`[aria-label^="Move block 2 up"]`)
	if got := blockTypes(); got != "LOOP:0rem,FETCH:1.5rem,VAULT:0rem" {
		t.Fatalf("a LOOP moved up: %s", got)
	}
	b.click(`[aria-label^="Move block 2 up"]`)
	if got := blockTypes(); got != "LOOP:0rem,FETCH:1.5rem,VAULT:0rem" {
		t.Fatalf("the first block of a loop's body moved out of it: %s", got)
	}
	b.click(`[aria-label="Remove block 3"]`)

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
	// The list is drawn again as checks come back: press the link it
	// shows now, until the focus is in the field (a loaded machine can
	// draw it again between finding the link and clicking it).
	for try := 0; ; try++ {
		b.click(`[data-testid="problems"] button`)
		got := eval[string](b, `document.activeElement.getAttribute("data-path") || document.activeElement.outerHTML.slice(0, 120)`)
		if got == "flow.blocks[0].ref_col" {
			break
		}
		if try == 4 {
			t.Fatalf("the summary's link focuses %q, not the field", got)
		}
		time.Sleep(200 * time.Millisecond)
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
	t.Parallel()
	app, b := memberBrowser(t, "dora", "AUTHOR")
	b.do(chromedp.Navigate(app.URL + "/web/routes/templates/create"))
	b.waitText("New route template")
	b.fill(`[data-path="name"]`, "tidy_up")
	b.fill(`[data-path="description"]`, "Delete finished tasks")
	b.fill(`[data-path="route_id"]`, "tidy")
	b.fill(`[data-path="route_path"]`, "/tidy")
	b.addBlock("FETCH")
	b.fill(`[data-path="flow.blocks[0].local_name"]`, "done")
	b.fill(`[data-path="flow.blocks[0].ref_col"]`, "tasks")
	b.click(`[data-action="add:flow.blocks[0].match"]`)
	b.waitText("Property (a dot path)")
	b.fill(`[data-path="flow.blocks[0].match[0].id"]`, "status")
	b.fill(`[data-path="flow.blocks[0].match[0].data.data"]`, "done")
	b.click(`[data-path="flow.blocks[0].sort?"]`)
	b.screenshot("editor-sort-1280")
	b.fill(`[data-path="flow.blocks[0].sort.property"]`, "finished")
	b.click(`[data-path="flow.blocks[0].sort.descending"]`)
	b.addBlock("DELETE")
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

// TestJourneyEditorKeyboard: the editor driven from the keyboard. Every
// block action leaves the focus where the work goes on; the palette adds a
// block by typing; Alt+↓ twice and Ctrl+S move the first block to the end
// and save it in three key presses. The checks never call a blank form
// clear, and list what saving needs in the form's order.
func TestJourneyEditorKeyboard(t *testing.T) {
	t.Parallel()
	app, b := memberBrowser(t, "kim", "AUTHOR")
	b.do(chromedp.Navigate(app.URL + "/web/routes/templates/create"))
	b.waitText("New route template")
	b.waitText("Before it can be saved:")
	if n := eval[int](b, `document.querySelectorAll('[data-testid="lint-clear"]').length`); n != 0 {
		t.Fatal("a blank form is called all clear")
	}
	order := eval[string](b, `Array.from(document.querySelectorAll('[data-testid="pending"] li button')).map(e => e.textContent).join(" | ")`)
	if !strings.HasPrefix(order, "Name | Description | Route id") {
		t.Fatalf("the checks are not in the form's order: %s", order)
	}
	if got := eval[string](b, `document.getElementById("check-count").textContent`); !strings.HasSuffix(got, "checks") {
		t.Fatalf("the save bar does not count the checks: %q", got)
	}
	b.fill(`[data-path="name"]`, "three_reads")
	b.fill(`[data-path="description"]`, "Three reads")
	b.fill(`[data-path="route_id"]`, "reads")
	b.fill(`[data-path="route_path"]`, "/reads")

	// The palette from the keyboard: Enter on Add block, type, arrow, Enter.
	for _, name := range []string{"a", "b", "c"} {
		eval[bool](b, `(document.querySelector('[data-action="add-block"]').focus(), true)`)
		b.press("\r")
		b.focusOn("#palette-filter")
		b.typeKeys("#palette-filter", "fet")
		b.do(chromedp.KeyEvent(kb.ArrowDown))
		b.focusOn(`#palette-list button[data-block-type="FETCH"]`)
		if b.text() == "" || !strings.Contains(b.text(), "Read records of a collection") {
			t.Fatal("the palette does not say what a FETCH does")
		}
		b.press("\r")
		i := map[string]int{"a": 0, "b": 1, "c": 2}[name]
		b.focusOn(fmt.Sprintf(`[data-path="flow.blocks[%d].local_name"]`, i))
		b.typeKeys(fmt.Sprintf(`[data-path="flow.blocks[%d].local_name"]`, i), name)
		b.fill(fmt.Sprintf(`[data-path="flow.blocks[%d].ref_col"]`, i), "items")
	}
	names := func() string {
		return eval[string](b, `Array.from(document.querySelectorAll('[data-path$="].local_name"]')).map(e => e.value).join("")`)
	}

	// Buttons keep the focus on the same action, in the block's new place.
	eval[bool](b, `(document.querySelector('[aria-label^="Move block 1 down"]').focus(), true)`)
	b.press("\r")
	b.focusOn(`[aria-label^="Move block 2 down"]`)
	b.press("\r")
	b.focusOn(`[aria-label^="Move block 3 down"]`)
	if got := names(); got != "bca" {
		t.Fatalf("after two moves down the order is %s", got)
	}
	eval[bool](b, `(document.querySelector('[aria-label="Indent block 2"]').focus(), true)`)
	b.press("\r")
	b.focusOn(`[aria-label="Indent block 2"]`)
	b.press("\t")
	b.focusOn(`[aria-label="Outdent block 2"]`)
	b.press("\r")
	b.focusOn(`[aria-label="Outdent block 2"]`)
	// Folding keeps the focus on the switch and shows the block in a line.
	eval[bool](b, `(document.querySelector('[aria-label="Collapse block 1"]').focus(), true)`)
	b.press("\r")
	b.focusOn(`[aria-label="Expand block 1"][aria-expanded="false"]`)
	if got := eval[string](b, `document.querySelector('[data-testid="folded-summary"]').textContent`); got != "Result name: b · Collection: items" {
		t.Fatalf("a folded block reads %q", got)
	}
	b.press("\r")
	b.focusOn(`[aria-label="Collapse block 1"]`)
	// A fourth block, removed: the focus goes to the block before, not to
	// another Remove.
	b.addBlock("RETURN")
	// The editor names a RETURN's pairs as the view does: Fields.
	if got := eval[string](b, `document.querySelector('[data-path="flow.blocks[3].pairs"] .label').textContent`); got != "Fields" {
		t.Fatalf("a RETURN's pairs are headed %q", got)
	}
	// "+ field" puts the focus in the new row's first field; removing a
	// row puts it in the row that took its place, the last row's removal
	// on the add button: never on the page's body.
	add := `[data-action="add:flow.blocks[3].pairs"]`
	eval[bool](b, `(document.querySelector('`+add+`').focus(), true)`)
	b.press("\r")
	b.focusOn(`[data-path="flow.blocks[3].pairs[0].id"]`)
	b.typeKeys(`[data-path="flow.blocks[3].pairs[0].id"]`, "one")
	eval[bool](b, `(document.querySelector('`+add+`').focus(), true)`)
	b.press("\r")
	b.focusOn(`[data-path="flow.blocks[3].pairs[1].id"]`)
	b.typeKeys(`[data-path="flow.blocks[3].pairs[1].id"]`, "two")
	eval[bool](b, `(document.querySelector('[aria-label="Remove field 1"]').focus(), true)`)
	b.press("\r")
	b.focusOn(`[data-path="flow.blocks[3].pairs[0].id"]`)
	if got := eval[string](b, `document.activeElement.value`); got != "two" {
		t.Fatalf("after removing field 1 the focus is in a field holding %q", got)
	}
	eval[bool](b, `(document.querySelector('[aria-label="Remove field 1"]').focus(), true)`)
	b.press("\r")
	b.focusOn(add)
	eval[bool](b, `(document.querySelector('[aria-label="Remove block 4"]').focus(), true)`)
	b.press("\r")
	b.focusOn(`[aria-label="Collapse block 3"]`)
	// With every field filled, the checks say so.
	b.waitText("No warnings: ready to save.")
	if got := eval[string](b, `document.getElementById("check-count").textContent`); got != "Checks clear" {
		t.Fatalf("the save bar says %q with the checks clear", got)
	}
	b.screenshot("editor-keyboard")

	// Back to b, c, a: the first block goes to the end and the template is
	// saved in three key presses from its first field.
	eval[bool](b, `(document.querySelector('[aria-label^="Move block 3 up"]').focus(), true)`)
	b.press("\r")
	b.press("\r")
	if got := names(); got != "abc" {
		t.Fatalf("after two moves up the order is %s", got)
	}
	eval[bool](b, `(document.querySelector('[data-path="flow.blocks[0].local_name"]').focus(), true)`)
	presses := 0
	alt := func(key string) {
		b.do(chromedp.KeyEvent(key, chromedp.KeyModifiers(chromedp.ModifierAlt)))
		presses++
	}
	alt(kb.ArrowDown)
	b.focusOn(`[data-path="flow.blocks[1].local_name"]`)
	alt(kb.ArrowDown)
	b.focusOn(`[data-path="flow.blocks[2].local_name"]`)
	b.do(chromedp.KeyEvent("s", chromedp.KeyModifiers(chromedp.ModifierCtrl)))
	presses++
	b.waitText("three_reads")
	b.waitText("Three reads")
	if presses > 6 {
		t.Fatalf("moving the first block down twice and saving took %d key presses", presses)
	}
	for n, want := range []string{"b", "c", "a"} {
		sel := fmt.Sprintf(`[data-testid="block-summary-%d"]`, n+1)
		if got := eval[string](b, `document.querySelector('`+sel+`').textContent`); !strings.HasPrefix(got, "Result name: "+want) {
			t.Fatalf("saved block %d reads %q, want %s first", n+1, got, want)
		}
	}
}

// TestJourneyEditorOnAPhone: at 390 px the save bar stays in view while the
// form scrolls, every control is a finger's size and inputs use 16 px text.
func TestJourneyEditorOnAPhone(t *testing.T) {
	t.Parallel()
	app, b := memberBrowser(t, "pia", "AUTHOR")
	b.resize(390, 844)
	b.do(chromedp.Navigate(app.URL + "/web/routes/templates/create"))
	b.waitText("New route template")
	b.screenshot("editor-390-blank")
	for _, typ := range []string{"FETCH", "CONDITION", "RETURN"} {
		b.addBlock(typ)
	}
	b.click(`[data-action="add:flow.blocks[1].conditions"]`)
	// The FETCH's sort, switched on from the keyboard: the focus stays on
	// the switch, and the property says _id is the record's id.
	eval[bool](b, `(document.querySelector('[data-path="flow.blocks[0].sort?"]').focus(), true)`)
	b.press(" ")
	b.focusOn(`[data-path="flow.blocks[0].sort?"]`)
	if got := eval[string](b, `document.querySelector('[data-path="flow.blocks[0].sort.property"]').placeholder`); !strings.Contains(got, "_id") {
		t.Fatalf("the sort property's placeholder reads %q", got)
	}
	if eval[bool](b, `document.documentElement.scrollWidth > innerWidth`) {
		t.Fatal("the form scrolls sideways at 390 px")
	}
	if n := eval[int](b, `document.querySelectorAll('[aria-expanded="false"]').length`); n != 0 {
		t.Fatalf("%d blocks were folded by adding them", n)
	}
	eval[bool](b, `(window.scrollTo(0, 0), true)`)
	if !eval[bool](b, `(r => r.bottom <= innerHeight && r.top >= 0)(document.querySelector('[data-action="save"]').getBoundingClientRect())`) {
		t.Fatal("at the top of a long form the Save button is out of view")
	}
	if small := b.smallTargets(); len(small) > 0 {
		t.Fatalf("controls a finger would miss at 390 px: %s", strings.Join(small, "; "))
	}
	// The bar spans the window, and no field it lies over is focused
	// under it: each field focused in turn shows above the bar.
	if !eval[bool](b, `(r => r.left <= 0 && r.right >= innerWidth)(document.querySelector('[data-testid="save-bar"]').getBoundingClientRect())`) {
		t.Error("the save bar does not span the window at 390 px")
	}
	if covered := eval[string](b, `(() => {
		const bar = document.querySelector('[data-testid="save-bar"]'), covered = [];
		for (const f of document.querySelectorAll('main input:not([type=hidden]), main select, main textarea')) {
			if (bar.contains(f) || !f.getClientRects().length) continue;
			f.focus();
			const r = f.getBoundingClientRect(), b = bar.getBoundingClientRect();
			if (r.bottom > b.top && r.top < b.bottom) covered.push(f.getAttribute("aria-label") || f.id);
		}
		return covered.join(", ");
	})()`); covered != "" {
		t.Errorf("fields focused under the save bar at 390 px: %s", covered)
	}
	eval[bool](b, `(window.scrollTo(0, 0), true)`)
	b.screenshot("editor-390")
	// Undo on a phone: the bar says what was undone.
	b.click(`[data-action="undo"]`)
	b.waitText("Undone: ")
	if got := eval[string](b, `document.querySelector('[data-testid="undo-status"]').textContent`); got != "Undone: edited Block 1 (FETCH) · Sort by" {
		t.Errorf("the undo of the sort's switch says %q", got)
	}
	if small := b.smallTargets(); len(small) > 0 {
		t.Fatalf("controls a finger would miss at 390 px after an undo: %s", strings.Join(small, "; "))
	}
	b.screenshot("editor-undo-390")
}

// TestJourneyEditorUndo: every kind of editor action is undone by Ctrl+Z
// and redone by Ctrl+Shift+Z, the save bar saying what; typing in a field
// is one change; a removed block is named with the way back; and after a
// save, undo in the editor opened again gives back the document before the
// last change, unsaved (the route as saved answers on).
func TestJourneyEditorUndo(t *testing.T) {
	t.Parallel()
	app, b := memberBrowser(t, "una", "AUTHOR")
	token := apiLogin(t, app.URL, "una", "una-password-1")
	route := `{"route_id":"undo","route_path":"/undo","method":"GET","auth_jwt":{"active":false,"field":"","ref_col":""},"params":{"delimiter":"&","pairs":[]},"body":[],"flow":{"blocks":[` +
		`{"type":"FETCH","depth":0,"local_name":"rows","ref_col":"books"},` +
		`{"type":"RETURN","depth":0,"pairs":[{"id":"items","data":{"ref_var":true,"rtype":"ARRAY","data":"rows"}}],"conditions":[]}]}}`
	if status, body := api(t, "POST", app.URL+"/route/create", token, `{"project_id":"shop","route":`+route+`}`); status != 201 {
		t.Fatalf("create: %d %s", status, body)
	}
	b.resize(1280, 900)
	b.do(chromedp.Navigate(app.URL + "/web/routes/edit?project_id=shop&route_id=undo"))
	b.waitText("Save route")
	types := func() string {
		return eval[string](b, `Array.from(document.querySelectorAll("[data-block]")).map(e => e.querySelector(".badge").textContent + (e.style.marginLeft === "0rem" ? "" : ">")).join(",")`)
	}
	ctrl := func(key string, shift bool) {
		mods := chromedp.ModifierCtrl
		if shift {
			mods |= chromedp.ModifierShift
		}
		b.do(chromedp.KeyEvent(key, chromedp.KeyModifiers(mods)))
	}
	said := func(want string) {
		t.Helper()
		if got := eval[string](b, `document.querySelector('[data-testid="undo-status"]').textContent`); got != want {
			t.Fatalf("the save bar says %q, want %q", got, want)
		}
	}
	// check undoes and redoes the last change: before is the document's
	// block types before it, after after it.
	check := func(label, before, after string) {
		t.Helper()
		if got := types(); got != after {
			t.Fatalf("after %s the blocks are %s, want %s", label, got, after)
		}
		ctrl("z", false)
		said("Undone: " + label)
		if got := types(); got != before {
			t.Fatalf("undoing %s left %s, want %s", label, got, before)
		}
		ctrl("z", true)
		said("Redone: " + label)
		if got := types(); got != after {
			t.Fatalf("redoing %s left %s, want %s", label, got, after)
		}
	}

	// Added to a route that ends in RETURN, a block goes before it.
	b.addBlock("LOOP")
	check("added block 2 (LOOP) before the RETURN", "FETCH,RETURN", "FETCH,LOOP,RETURN")
	eval[bool](b, `(document.querySelector('[aria-label^="Move block 2 down"]').focus(), true)`)
	b.press("\r")
	b.focusOn(`[aria-label^="Move block 3 down"]`)
	check("moved block 2 (LOOP) down", "FETCH,LOOP,RETURN", "FETCH,RETURN,LOOP")
	// Undo and redo of a move took the focus with the block.
	b.focusOn(`[data-block="2"] [data-action="down"]`)
	eval[bool](b, `(document.querySelector('[aria-label^="Move block 3 up"]').focus(), true)`)
	b.press("\r")
	b.focusOn(`[aria-label^="Move block 2 up"]`)
	check("moved block 3 (LOOP) up", "FETCH,RETURN,LOOP", "FETCH,LOOP,RETURN")
	eval[bool](b, `(document.querySelector('[aria-label="Indent block 3"]').focus(), true)`)
	b.press("\r")
	check("indented block 3 (RETURN)", "FETCH,LOOP,RETURN", "FETCH,LOOP,RETURN>")
	b.press("\t")
	b.focusOn(`[aria-label="Outdent block 3"]`)
	b.press("\r")
	check("outdented block 3 (RETURN)", "FETCH,LOOP,RETURN>", "FETCH,LOOP,RETURN")
	// Remove is not the next stop after Outdent; removing says what went.
	b.press("\t")
	if eval[bool](b, `document.activeElement.matches('[data-action="remove"]')`) {
		t.Fatal("the next Tab after Outdent is Remove")
	}
	eval[bool](b, `(document.querySelector('[aria-label="Remove block 2"]').focus(), true)`)
	b.press("\r")
	said("Removed block 2 (LOOP): Undo (Ctrl+Z) brings it back")
	b.focusOn(`[aria-label="Collapse block 2"]`)
	check("removed block 2 (LOOP)", "FETCH,LOOP,RETURN", "FETCH,RETURN")

	// A row added to a list, and a field typed: one change each.
	eval[bool](b, `(document.querySelector('[data-action="add:flow.blocks[1].pairs"]').focus(), true)`)
	b.press("\r")
	b.focusOn(`[data-path="flow.blocks[1].pairs[1].id"]`)
	b.typeKeys(`[data-path="flow.blocks[1].pairs[1].id"]`, "count")
	value := func() string {
		return eval[string](b, `(document.querySelector('[data-path="flow.blocks[1].pairs[1].id"]') || {value: "none"}).value`)
	}
	ctrl("z", false)
	said("Undone: edited Block 2 (RETURN) · Field 2 · Name")
	if got := value(); got != "" {
		t.Fatalf("undoing the typing left %q", got)
	}
	ctrl("z", false)
	said("Undone: added a field to Block 2 (RETURN) · Fields")
	if got := value(); got != "none" {
		t.Fatalf("undoing the new row left a row holding %q", got)
	}
	ctrl("z", true)
	ctrl("z", true)
	if got := value(); got != "count" {
		t.Fatalf("redoing the row and its name gives %q", got)
	}
	b.click(`[data-action="undo"]`)
	b.focusOn(`[data-action="undo"]`)
	if got := value(); got != "" {
		t.Fatalf("the Undo button left %q", got)
	}
	b.click(`[data-action="redo"]`)

	// Across a save: the editor opened again undoes the last change.
	b.do(chromedp.KeyEvent("s", chromedp.KeyModifiers(chromedp.ModifierCtrl)))
	b.waitText("(version 2)")
	b.do(chromedp.Navigate(app.URL + "/web/routes/edit?project_id=shop&route_id=undo"))
	b.waitText("Save route")
	b.focusOn("body")
	ctrl("z", false)
	said("Undone: edited Block 2 (RETURN) · Field 2 · Name")
	if got := value(); got != "" {
		t.Fatalf("undo after the save left %q", got)
	}
	if status, body := api(t, "GET", app.URL+"/route/fetch/one?project_id=shop&route_id=undo", token, ""); status != 200 || !strings.Contains(body, `"id":"count"`) {
		t.Fatalf("undo in the editor changed the saved route: %d %s", status, body)
	}
	b.screenshot("editor-undo")

	// A draft the checks refuse says so in the save bar; once it runs, the
	// save bar no longer does.
	b.choose(`[data-path="flow.blocks[1].pairs[1].data.rtype"]`, "INTEGER")
	b.fill(`[data-path="flow.blocks[1].pairs[1].data.data"]`, "x")
	b.click(`[data-action="try-draft"]`)
	b.waitText("The draft cannot run: fix the checks first.")
	b.fill(`[data-path="flow.blocks[1].pairs[1].id"]`, "count")
	b.fill(`[data-path="flow.blocks[1].pairs[1].data.data"]`, "7")
	b.click(`[data-action="try-draft"]`)
	b.do(chromedp.WaitVisible(chromedp.CSS(`[data-testid="draft-status"]`)))
	b.waitGone("The draft cannot run")
}
