package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// TestJourneyFieldsPanel: an ADMIN types an untyped collection's fields
// from its page, by keyboard alone, at 1280 and 390 px — adds two fields
// in the fields panel, is told beside a row what the server refuses and
// above the rows when stored records break a change (nothing changes),
// then renames a field with its values, moves it first and removes an
// unsaved one. The focus stays on the work after each step and returns to
// the panel's button once the page has loaded the saved fields.
func TestJourneyFieldsPanel(t *testing.T) {
	t.Parallel()
	app, b := memberBrowser(t, "ada", "ADMIN")
	token := apiLogin(t, app.URL, "ada", "ada-password-1")
	row := func(n int, sel string) string {
		return fmt.Sprintf(`#fields-panel [data-field-row]:nth-child(%d) %s`, n, sel)
	}
	for i, width := range []int64{1280, 390} {
		id := fmt.Sprintf("albums%d", i)
		if status, out := api(t, "POST", app.URL+"/collection/create", token, `{"project_id":"shop","id":"`+id+`","name":"Albums"}`); status != 201 {
			t.Fatalf("collection: %d %s", status, out)
		}
		for _, doc := range []string{`{"title":"Blue","yr":1971}`, `{"title":"Hejira","yr":1976}`, `{"yr":1980}`} {
			if status, out := api(t, "POST", app.URL+"/data/create", token, `{"project_id":"shop","collection_id":"`+id+`","data":`+doc+`}`); status != 201 {
				t.Fatalf("record: %d %s", status, out)
			}
		}
		b.resize(width, 844)
		b.do(chromedp.Navigate(app.URL + "/web/data/collection?project_id=shop&id=" + id))
		b.waitText("Albums")
		b.tabToMatch("#fields-button")
		b.press("\r")
		b.focusOn("#fields-panel [data-field-add]")

		// Two fields typed: title, required, and yr, an integer.
		b.press("\r")
		b.focusOn(row(1, `input[name="name"]`))
		b.do(chromedp.KeyEvent("title"))
		tabOnTo(b, row(1, `input[name="required"]`), false)
		b.press(" ")
		tabOnTo(b, "#fields-panel [data-field-add]", false)
		b.press("\r")
		b.focusOn(row(2, `input[name="name"]`))
		b.do(chromedp.KeyEvent("yr"))
		b.press("\t")
		b.focusOn(row(2, `select[name="type"]`))
		b.do(chromedp.KeyEvent("i")) // integer
		if !eval[bool](b, `!document.querySelector('`+row(2, `input[name="min"]`)+`').disabled && document.querySelector('`+row(2, `input[name="max_length"]`)+`').disabled`) {
			t.Fatal("an integer's row does not offer min without max_length")
		}
		// A third row left without a name: told beside it, the focus in it.
		tabOnTo(b, "#fields-panel [data-field-add]", false)
		b.press("\r")
		b.focusOn(row(3, `input[name="name"]`))
		tabOnTo(b, `#fields-panel button[type="submit"]`, false)
		b.press("\r")
		b.focusOn(row(3, `input[name="name"][aria-invalid="true"]`))
		b.waitText("name must be")
		if got := eval[string](b, `document.activeElement.getAttribute("aria-describedby")`); got != "field-error-2" {
			t.Fatalf("the name's error is not tied to it: %q", got)
		}
		b.do(chromedp.KeyEvent("seen"))
		b.press("\t")
		b.do(chromedp.KeyEvent("b")) // boolean
		tabOnTo(b, row(3, "[data-field-remove]"), false)
		b.press("\r")
		b.focusOn("#fields-panel [data-field-add]")
		if n := eval[int](b, `document.querySelectorAll("#fields-panel [data-field-row]").length`); n != 2 {
			t.Fatalf("%d rows after one was removed", n)
		}
		// A stored record has no title: refused above the rows, nothing
		// changes.
		tabOnTo(b, `#fields-panel button[type="submit"]`, false)
		b.press("\r")
		b.waitText("1 record does not fit: data.title is required")
		b.focusOn(`#fields-panel button[type="submit"]`)
		if _, out := api(t, "GET", app.URL+"/collection/fetch/one?project_id=shop&id="+id, token, ""); !strings.Contains(out, `"fields":[]`) {
			t.Fatalf("a refused change was stored: %s", out)
		}
		b.audit(fmt.Sprintf("fields panel at %d", width))
		b.screenshot(fmt.Sprintf("fields-panel-%d", width))
		tabOnTo(b, row(1, `input[name="required"]`), true)
		b.press(" ")
		tabOnTo(b, `#fields-panel button[type="submit"]`, false)
		b.press("\r")
		b.focusOn("#fields-button")
		b.waitText("Collection " + id + " updated.")
		if got := eval[string](b, `Array.from(document.querySelectorAll("[data-sort]")).map(a => a.dataset.sort).join(",")`); got != "Id,title,yr,Created,Updated" {
			t.Fatalf("the columns are %s", got)
		}

		// yr renamed year, with its values, and moved first.
		b.press("\r")
		b.focusOn(row(1, `input[name="name"]`))
		tabOnTo(b, row(2, `input[name="name"]`), false)
		b.do(chromedp.KeyEvent(kb.End))
		b.press(kb.Backspace)
		b.press(kb.Backspace)
		b.do(chromedp.KeyEvent("year"))
		tabOnTo(b, row(2, `[data-field-move="-1"]`), false)
		b.press("\r")
		b.focusOn(row(1, `[data-field-move="-1"]`))
		b.waitText("year moved to 1 of 2.")
		tabOnTo(b, `#fields-panel button[type="submit"]`, false)
		b.press("\r")
		b.focusOn("#fields-button")
		if got := eval[string](b, `Array.from(document.querySelectorAll("[data-sort]")).map(a => a.dataset.sort).join(",")`); got != "Id,year,title,Created,Updated" {
			t.Fatalf("the columns after the rename are %s", got)
		}
		_, out := api(t, "GET", app.URL+"/data/fetch?project_id=shop&collection_id="+id+"&sort=year", token, "")
		if !strings.Contains(out, `{"year":1971,"title":"Blue"}`) || strings.Contains(out, `"yr"`) {
			t.Fatalf("the records after the rename: %s", out)
		}
		if bad := b.smallTargets(); width == 390 && len(bad) > 0 {
			t.Errorf("small targets at 390: %v", bad)
		}
	}
	b.checkClean()
}

// tabOnTo presses Tab (Shift+Tab with back) from where the focus is until
// it is on an element matching selector, failing after 40 presses.
func tabOnTo(b *browser, selector string, back bool) {
	b.t.Helper()
	var mods []chromedp.KeyOption
	if back {
		mods = append(mods, chromedp.KeyModifiers(chromedp.ModifierShift))
	}
	for range 40 {
		b.do(chromedp.KeyEvent("\t", mods...))
		if eval[bool](b, fmt.Sprintf(`!!document.activeElement && document.activeElement.matches(%q)`, selector)) {
			return
		}
	}
	b.t.Fatalf("40 presses of Tab did not reach %s", selector)
}
