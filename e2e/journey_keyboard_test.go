package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// TestJourneyVaultKeyboard: the vault with the keyboard alone. Reveal puts
// the focus on Hide, Hide on Reveal, one Tab reaches Edit, Edit focuses
// the new value, Escape cancels back to Edit, a saved value leaves the focus
// on Edit, and paging keeps it on the pager.
func TestJourneyVaultKeyboard(t *testing.T) {
	t.Parallel()
	app, b := memberBrowser(t, "ada", "ADMIN")
	root := apiLogin(t, app.URL, "root", "root-password-1")
	for i := 1; i <= 12; i++ {
		body := fmt.Sprintf(`{"project_id":"shop","key":"KEY_%02d","value":"value-%02d"}`, i, i)
		if status, out := api(t, "POST", app.URL+"/vault/create", root, body); status != 201 {
			t.Fatalf("seed: %d %s", status, out)
		}
	}
	for i, width := range []int64{1280, 390} {
		key, value := fmt.Sprintf("KEY_%02d", i+1), fmt.Sprintf("value-%02d", i+1)
		on := func(format string) string { return fmt.Sprintf(format, key) }
		b.resize(width, 844)
		b.do(chromedp.Navigate(app.URL + "/web/vault?project_id=shop"))
		b.waitText("1–10 of 12")
		// The first Tab offers a skip past the navigation, which lands on
		// the filter.
		b.press("\t")
		b.focusOn(`a[href="#main"]`)
		b.press("\r")
		b.focusOn(`#filter`)

		b.tabToMatch(on(`[aria-label="Reveal %[1]s"]`))
		b.press("\r")
		b.waitText(value)
		b.focusOn(on(`#row-%[1]s [data-hide]`))
		b.press("\r")
		b.waitGone(value)
		b.focusOn(on(`[aria-label="Reveal %[1]s"]`))
		b.press("\t")
		b.focusOn(on(`[aria-label="Edit %[1]s"]`))
		b.press("\r")
		b.focusOn(on(`#edit-%[1]s`))
		// Editing starts from the current value, on one line.
		if got := eval[string](b, on(`document.querySelector("#edit-%[1]s").value`)); got != value {
			t.Fatalf("the edit field starts from %q, want the current value %q", got, value)
		}
		// … selected, to be typed over.
		if got := eval[string](b, on(`(f => f.selectionStart + "-" + f.selectionEnd)(document.querySelector("#edit-%[1]s"))`)); got != fmt.Sprintf("0-%d", len(value)) {
			t.Fatalf("the current value is not selected: selection %s", got)
		}
		b.press(kb.Escape)
		b.focusOn(on(`[aria-label="Edit %[1]s"]`))

		b.press("\r")
		b.focusOn(on(`#edit-%[1]s`))
		eval[bool](b, on(`(document.querySelector("#edit-%[1]s").value = "", true)`))
		b.typeKeys(on(`#edit-%[1]s`), fmt.Sprintf("new-%d", width))
		b.press("\t") // Multi-line comes after the value
		b.focusOn(on(`#row-%[1]s [data-multiline]`))
		b.press("\t")
		b.focusOn(on(`#row-%[1]s button[type=submit]`))
		b.press("\r")
		b.waitText("Value of " + key + " updated.")
		b.focusOn(on(`[aria-label="Edit %[1]s"]`))

		b.tabToMatch(`#vault-table [data-pager=next]`)
		b.press("\r")
		b.waitText("11–12 of 12")
		// On the last page the focus stays on Next, dimmed; Previous is one
		// Shift+Tab away.
		b.focusOn(`#vault-table [data-pager=next][aria-disabled=true]`)
		b.do(chromedp.KeyEvent("\t", chromedp.KeyModifiers(chromedp.ModifierShift)))
		b.focusOn(`#vault-table [data-pager=prev]`)
		b.press("\r")
		b.waitText("1–10 of 12")
		// Back on the first page the focus stays on Previous, now dimmed.
		b.focusOn(`#vault-table [data-pager=prev][aria-disabled=true]`)
	}
	// A new entry that lands on another page of the list is named, with a
	// link to it.
	b.fill("#vault-create #f-key", "ZZ_LAST")
	b.fill("#vault-create #f-value", "v")
	b.press("\r")
	b.waitText("ZZ_LAST is on another page of this list.")
	b.click(`#vault-table [data-new] a`)
	b.do(chromedp.WaitVisible(chromedp.CSS("#row-ZZ_LAST")))
}

// TestJourneyRecordsKeyboard: a collection's records with the keyboard
// alone, at both widths. A record typed into the form is added and the
// focus stays in the box; Edit focuses the record's JSON, a broken edit
// keeps the text and names the line, Escape cancels back to Edit, and a
// saved record leaves the focus on its Edit.
func TestJourneyRecordsKeyboard(t *testing.T) {
	t.Parallel()
	app, b := memberBrowser(t, "ada", "AUTHOR")
	root := apiLogin(t, app.URL, "root", "root-password-1")
	if status, out := api(t, "POST", app.URL+"/collection/create", root, `{"project_id":"shop","id":"books","name":"Books"}`); status != 201 {
		t.Fatalf("seed: %d %s", status, out)
	}
	for i, width := range []int64{1280, 390} {
		id := fmt.Sprint(i + 1)
		b.resize(width, 844)
		b.do(chromedp.Navigate(app.URL + "/web/data/collection?project_id=shop&id=books"))
		b.waitText("Books")

		b.tabToMatch(`[data-open-dialog="#record-panel"]`)
		b.press("\r")
		b.focusOn("#f-data")
		b.typeKeys("#f-data", fmt.Sprintf(`{"title":"Book %d","width":%d}`, i+1, width))
		if width == 1280 {
			b.press("\t")
			b.focusOn("#record-create button[type=submit]")
			b.press("\r")
		} else {
			// Ctrl+Enter in the JSON submits the form.
			b.do(chromedp.KeyEvent("\r", chromedp.KeyModifiers(chromedp.ModifierCtrl)))
		}
		b.waitText(fmt.Sprintf("Book %d", i+1))
		b.focusOn("#f-data")
		// Escape closes the panel; the focus is back on New record.
		b.press(kb.Escape)
		b.focusOn(`[data-open-dialog="#record-panel"]`)

		b.tabToMatch(`[aria-label="Edit record ` + id + `"]`)
		b.press("\r")
		b.focusOn("#edit-" + id)
		b.typeKeys("#edit-"+id, kb.End+",,")
		b.press("\t")
		b.focusOn("#record-edit-" + id + " button[type=submit]")
		b.press("\r")
		b.waitText("is not valid JSON: look at line")
		b.focusOn("#edit-" + id)
		b.press(kb.Escape)
		b.waitGone("is not valid JSON")
		b.focusOn(`[aria-label="Edit record ` + id + `"]`)

		b.press("\r")
		b.focusOn("#edit-" + id)
		eval[bool](b, fmt.Sprintf(`(el => { el.value = '{"title":"Edited %d"}'; return true })(document.getElementById("edit-%s"))`, width, id))
		b.press("\t")
		b.press("\r")
		b.waitText(fmt.Sprintf("Edited %d", width))
		b.focusOn(`[aria-label="Edit record ` + id + `"]`)
		b.screenshot(fmt.Sprintf("records-keyboard-%d", width))
	}
	// Delete asks first, in a dialog whose Cancel has the focus; Tab and
	// Enter confirm, and the focus then goes on in the reloaded table.
	b.tabToMatch(`[aria-label="Delete record 2"]`)
	b.press("\r")
	b.focusOn(`#confirm-dialog [data-confirm-cancel]`)
	question := eval[string](b, `document.getElementById("confirm-question").textContent`)
	b.mu.Lock()
	b.dialogs = append(b.dialogs, question)
	b.mu.Unlock()
	b.press("\t")
	b.focusOn(`#confirm-dialog [data-confirm]`)
	b.press("\r")
	b.waitGone("Edited 390")
	b.focusOn(`#records-table [data-edit]`)
	if len(b.dialogs) == 0 || !strings.Contains(b.dialogs[len(b.dialogs)-1], "Delete record 2?") {
		t.Fatalf("no confirmation before the delete: %v", b.dialogs)
	}
}

// TestJourneyVaultThreeSecrets: three secrets typed in a row by keyboard.
// From the key, Tab reaches the value (Multi-line comes after it), Enter
// adds the entry and the focus is in Key again for the next: two presses
// a secret besides typing (the goal: at most 8).
func TestJourneyVaultThreeSecrets(t *testing.T) {
	t.Parallel()
	app, b := memberBrowser(t, "ada", "ADMIN")
	for _, width := range []int64{1280, 390} {
		b.resize(width, 844)
		b.do(chromedp.Navigate(app.URL + "/web/vault?project_id=shop"))
		b.waitText("New entry")
		eval[bool](b, `(document.querySelector("#vault-create #f-key").focus(), true)`)
		for i := 1; i <= 3; i++ {
			key := fmt.Sprintf("K%d_%d", width, i)
			presses := 0
			b.focusOn("#vault-create #f-key")
			b.do(chromedp.KeyEvent(key))
			b.press("\t")
			presses++
			b.focusOn("#vault-create #f-value")
			b.do(chromedp.KeyEvent("secret-" + key))
			b.press("\r")
			presses++
			b.waitText(key)
			b.focusOn("#vault-create #f-key")
			if presses > 8 {
				t.Fatalf("secret %d took %d key presses besides typing", i, presses)
			}
		}
	}
	root := apiLogin(t, app.URL, "root", "root-password-1")
	if status, out := api(t, "GET", app.URL+"/vault/fetch?project_id=shop&limit=100", root, ""); status != 200 || !strings.Contains(out, `"K390_3"`) || !strings.Contains(out, `"K1280_1"`) {
		t.Fatalf("the vault after six secrets typed: %d %s", status, out)
	}
}

// TestJourneyRecordsGrid: a collection's records edited in place by
// keyboard at both widths: a number, a true/false and a new column's text
// saved from their cells, Escape leaving a cell as it was, and the table
// filtered by a column, a test and a value.
func TestJourneyRecordsGrid(t *testing.T) {
	t.Parallel()
	app, b := memberBrowser(t, "gus", "AUTHOR")
	token := apiLogin(t, app.URL, "gus", "gus-password-1")
	root := apiLogin(t, app.URL, "root", "root-password-1")
	if status, out := api(t, "POST", app.URL+"/collection/create", root, `{"project_id":"shop","id":"books","name":"Books"}`); status != 201 {
		t.Fatalf("collection: %d %s", status, out)
	}
	var ids []string
	for _, rec := range []string{`{"title":"Dune","year":1965,"read":false}`, `{"title":"Emma","year":1815,"read":true}`} {
		status, out := api(t, "POST", app.URL+"/data/create", token, `{"project_id":"shop","collection_id":"books","data":`+rec+`}`)
		if status != 201 {
			t.Fatalf("record: %d %s", status, out)
		}
		var env struct{ Data struct{ ID int64 } }
		_ = json.Unmarshal([]byte(out), &env)
		ids = append(ids, fmt.Sprint(env.Data.ID))
	}
	record := func(id string) string {
		_, out := api(t, "GET", app.URL+"/data/fetch/one?project_id=shop&collection_id=books&id="+id, token, "")
		return out
	}
	cell := func(id, field string) string {
		return fmt.Sprintf(`#record-%s td[data-field=%q]`, id, field)
	}
	for i, width := range []int64{1280, 390} {
		b.resize(width, 844)
		b.do(chromedp.Navigate(app.URL + "/web/data/collection?project_id=shop&id=books"))
		b.waitText("Books")
		// Columns come in the order their fields were first written.
		if got := eval[string](b, `Array.from(document.querySelectorAll("#record-`+ids[0]+` td[data-field]")).map(td => td.dataset.field).join(",")`); got != "read,year,title" && i == 0 {
			t.Fatalf("the grid's columns are %s", got)
		}
		// One cell is in the tab order; the arrows walk the grid.
		b.tabToMatch(`td[data-field]`)
		b.focusOn(cell(ids[0], "read"))
		b.press(kb.ArrowRight)
		b.focusOn(cell(ids[0], "year"))
		b.press("\r")
		b.focusOn(cell(ids[0], "year") + ` input[data-cell-editor="number"]`)
		year := fmt.Sprint(1966 + i)
		b.do(chromedp.KeyEvent(year))
		b.press("\r")
		b.focusOn(cell(ids[0], "year"))
		b.waitText("Saved: record " + ids[0] + ", year.")
		if got := record(ids[0]); !strings.Contains(got, `"year":`+year) || !strings.Contains(got, `"title":"Dune`) {
			t.Fatalf("after the year's cell was saved: %s", got)
		}
		// A true/false is chosen, not typed.
		b.press(kb.ArrowDown)
		b.press(kb.ArrowLeft)
		b.focusOn(cell(ids[1], "read"))
		b.press("\r")
		b.focusOn(cell(ids[1], "read") + ` select[data-cell-editor="boolean"]`)
		want := map[int]string{0: "false", 1: "true"}[i]
		if want == "false" { // the arrow keys choose
			b.press(kb.ArrowDown)
		} else {
			b.press(kb.ArrowUp)
		}
		if got := eval[string](b, `document.activeElement.value`); got != want {
			t.Fatalf("the arrow keys in the true/false cell chose %q, want %q", got, want)
		}
		b.press("\r")
		b.focusOn(cell(ids[1], "read"))
		b.waitText("Saved: record " + ids[1] + ", read.")
		if got := record(ids[1]); !strings.Contains(got, `"read":`+want) {
			t.Fatalf("after the read cell was saved: %s", got)
		}
		// Escape leaves a cell as it was.
		b.press(kb.ArrowRight)
		b.press(kb.ArrowRight)
		b.focusOn(cell(ids[1], "title"))
		b.press("\r")
		b.do(chromedp.KeyEvent("Persuasion"))
		b.press(kb.Escape)
		b.focusOn(cell(ids[1], "title"))
		if got := eval[string](b, `document.activeElement.textContent`); got != "Emma" {
			t.Fatalf("Escape left the cell reading %q", got)
		}
		// A click elsewhere keeps what was typed, as a spreadsheet does: the
		// cell is saved and closed, the focus where the click put it.
		if i == 0 {
			b.press(kb.ArrowUp)
			b.focusOn(cell(ids[0], "title"))
			b.press("\r")
			b.press(kb.End)
			b.do(chromedp.KeyEvent(" (1965)"))
			b.click(`#add-column input[name="column"]`)
			b.waitText("Saved: record " + ids[0] + ", title.")
			b.focusOn(`#add-column input[name="column"]`)
			if n := eval[int](b, `document.querySelectorAll("[data-cell-editor]").length`); n != 0 {
				t.Fatalf("%d cell editors stay open after a click elsewhere", n)
			}
			if got := record(ids[0]); !strings.Contains(got, `"title":"Dune (1965)"`) {
				t.Fatalf("after a click away from the title's cell: %s", got)
			}
		}

		// A new column, and its first cell saved with Tab.
		column := fmt.Sprintf("shelf%d", i)
		b.tabToMatch(`#add-column input[name="column"]`)
		b.do(chromedp.KeyEvent(column))
		b.press("\r")
		b.focusOn(cell(ids[0], column))
		b.press("\r")
		b.do(chromedp.KeyEvent("A1"))
		b.press("\t")
		b.waitText("Saved: record " + ids[0] + ", " + column + ".")
		if got := record(ids[0]); !strings.Contains(got, `"`+column+`":"A1"`) || !strings.Contains(got, `"year":`+year) {
			t.Fatalf("after the new column's cell was saved: %s", got)
		}
		if bad := b.smallTargets(); width == 390 && len(bad) > 0 {
			t.Errorf("small targets at 390: %v", bad)
		}
		b.screenshot(fmt.Sprintf("records-grid-%d", width))

		// The filter built from a column, a test and a value.
		b.tabToMatch(`[data-filter-builder] select[name="column"]`)
		b.do(chromedp.KeyEvent("t")) // title
		b.press("\t")
		b.press("\t")
		b.focusOn(`[data-filter-builder] input[name="value"]`)
		b.do(chromedp.KeyEvent("Emma"))
		b.press("\r")
		b.waitText("1 of 2 records match the filter")
		if got := eval[string](b, `document.getElementById("where").value`); got != `{"title":"Emma"}` {
			t.Fatalf("the built filter reads %s", got)
		}
	}
}
