package e2e

import (
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
		// The first Tab offers a skip past the navigation; from there the
		// filter is five Tabs away (past the back link, the access log,
		// import and export).
		b.press("\t")
		b.focusOn(`a[href="#main"]`)
		b.press("\r")
		b.focusOn("#main")
		for range 5 {
			b.press("\t")
		}
		b.focusOn(`#vault-table-filter, input[type=search]`)

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
		b.press(kb.Escape)
		b.focusOn(on(`[aria-label="Edit %[1]s"]`))

		b.press("\r")
		b.focusOn(on(`#edit-%[1]s`))
		eval[bool](b, on(`(document.querySelector("#edit-%[1]s").value = "", true)`))
		b.typeKeys(on(`#edit-%[1]s`), fmt.Sprintf("new-%d", width))
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
		b.press("\t")
		b.focusOn("#record-create button[type=submit]")
		b.press("\r")
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
