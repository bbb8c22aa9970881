package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// TestJourneyTypedRecords: a typed collection's page at 1280 and 390 px.
// Its fields are the table's columns in their order before any record
// holds them; an AUTHOR adds three records by keyboard alone through a
// form of one input a field (a checkbox for a boolean), the focus back on
// the first input after each; a record a field refuses is told beside the
// field's input and nothing is written. Both widths are audited and shot.
// Then, by keyboard: a boolean, a date-time and a reference edited in the
// grid, a filter of year > 1990, and the collection exported as CSV and
// imported into another of the same fields (TestJourneyFieldsPanel types
// a collection's fields from its page).
func TestJourneyTypedRecords(t *testing.T) {
	t.Parallel()
	app, b := memberBrowser(t, "hal", "AUTHOR")
	root := apiLogin(t, app.URL, "root", "root-password-1")
	token := apiLogin(t, app.URL, "hal", "hal-password-1")
	for _, call := range [][2]string{
		{"/collection/create", `{"project_id":"shop","id":"people","name":"People"}`},
		{"/data/create", `{"project_id":"shop","collection_id":"people","data":{"name":"Frank Herbert"}}`},
		{"/collection/create", `{"project_id":"shop","id":"films","name":"Films","fields":[
		{"name":"title","type":"text","required":true},{"name":"year","type":"integer","min":1888},{"name":"seen","type":"boolean"},
		{"name":"genre","type":"select","values":["sf","drama"]},{"name":"shown","type":"datetime"},{"name":"by","type":"reference","collection":"people"}]}`},
	} {
		if status, out := api(t, "POST", app.URL+call[0], root, call[1]); status != 201 {
			t.Fatalf("%s: %d %s", call[0], status, out)
		}
	}
	_, people := api(t, "GET", app.URL+"/data/fetch?project_id=shop&collection_id=people", token, "")
	herbert := regexp.MustCompile(`"id":(\d+)`).FindStringSubmatch(people)[1]
	const page = "/web/data/collection?project_id=shop&id=films"
	for i, width := range []int64{1280, 390} {
		b.resize(width, 844)
		b.do(chromedp.Navigate(app.URL + page))
		b.waitText("Films")
		if got := eval[string](b, `Array.from(document.querySelectorAll("[data-sort]")).map(a => a.dataset.sort).join(",")`); got != "Id,title,year,seen,genre,shown,by,Created,Updated" {
			t.Fatalf("the columns are %s", got)
		}
		b.click(`[data-open-dialog="#record-panel"]`)
		b.focusOn("#f-data")
		title := fmt.Sprintf("Dune %d", i)
		b.do(chromedp.KeyEvent(title))
		b.press(kb.Tab)
		b.focusOn("#f-data-year")
		b.do(chromedp.KeyEvent("1965"))
		b.press(kb.Tab)
		b.focusOn("#f-data-seen")
		b.press(" ")
		b.press("\r")
		b.waitText("created.")
		b.focusOn("#f-data")
		// Two more, the focus back on the first input after each.
		for _, film := range [][2]string{{"Heat", "1995"}, {"Memento", "2000"}} {
			b.do(chromedp.KeyEvent(fmt.Sprintf("%s %d", film[0], i)))
			b.press(kb.Tab)
			b.focusOn("#f-data-year")
			b.do(chromedp.KeyEvent(film[1]))
			b.press("\r")
			b.waitText(fmt.Sprintf("%s %d", film[0], i))
			b.focusOn("#f-data")
		}
		// A year before cinema: told beside the year, nothing written.
		b.do(chromedp.KeyEvent("Early"))
		b.press(kb.Tab)
		b.do(chromedp.KeyEvent("1800"))
		b.press("\r")
		b.waitText("must be at least 1888")
		if got := eval[string](b, `document.querySelector("#f-data-year").getAttribute("aria-describedby")`); got != "e-f-data-year" {
			t.Fatalf("the year's error is not tied to its input: %q", got)
		}
		b.audit(fmt.Sprintf("typed collection at %d", width))
		b.screenshot(fmt.Sprintf("typed-form-%d", width))
		b.press(kb.Escape)
		b.do(chromedp.Navigate(app.URL + page))
		b.waitText(title)
		b.audit(fmt.Sprintf("typed records at %d", width))
		b.screenshot(fmt.Sprintf("typed-records-%d", width))
		if i == 0 {
			// A cell is edited by its field's type: a number for the year;
			// a value the field refuses stays in its editor with the reason.
			year := `tr[data-record] td[data-field="year"]`
			b.tabToMatch(`td[data-field]`)
			b.focusOn(`tr[data-record] td[data-field="title"]`)
			b.press(kb.ArrowRight)
			b.focusOn(year)
			b.press("\r")
			b.focusOn(year + ` input[data-cell-editor="number"]`)
			b.do(chromedp.KeyEvent("1800"))
			b.press("\r")
			b.waitText("data.year must be at least 1888")
			b.press(kb.Escape)
			b.focusOn(year)
			b.press(kb.ArrowRight)
			b.focusOn(`tr[data-record] td[data-field="seen"]`)
			b.press("\r")
			// A boolean changed and a date-time set, each saved with Enter.
			b.focusOn(`tr[data-record] td[data-field="seen"] input[type="checkbox"][data-cell-editor="boolean"]:checked`)
			b.press(" ")
			b.press("\r")
			b.waitText(", seen.")
			b.focusOn(`tr[data-record] td[data-field="seen"]`)
			b.press(kb.ArrowRight)
			b.press(kb.ArrowRight)
			shown := `tr[data-record] td[data-field="shown"]`
			b.focusOn(shown)
			b.press("\r")
			b.focusOn(shown + ` input[type="datetime-local"][data-cell-editor="datetime"]`)
			// Month, day, year, hour, minute, second, PM: the input's
			// own fields, in the browser's en-US order; a year may have
			// more digits, so → moves on from it (Tab saves the cell).
			b.do(chromedp.KeyEvent("05012024"))
			b.press(kb.ArrowRight)
			b.do(chromedp.KeyEvent("083000P"))
			b.press("\r")
			b.waitText(", shown.")
			b.focusOn(shown)
			// A reference picked among the people's records, by id.
			b.press(kb.ArrowRight)
			by := `tr[data-record] td[data-field="by"]`
			b.focusOn(by)
			b.press("\r")
			b.focusOn(by + ` input[data-cell-editor="reference"][list]`)
			b.do(chromedp.WaitReady(by + ` datalist option[label="Frank Herbert"][value="` + herbert + `"]`))
			b.do(chromedp.KeyEvent(herbert))
			b.press("\r")
			b.waitText(", by.")
			_, out := api(t, "GET", app.URL+"/data/fetch?project_id=shop&collection_id=films", token, "")
			if !strings.Contains(out, `"seen":false`) || !strings.Contains(out, `"shown":"2024-05-01T20:30:00Z"`) || !strings.Contains(out, `"by":`+herbert) {
				t.Fatalf("after the boolean, the date-time and the reference were edited: %s", out)
			}
			// A filter built from a field, an operator its type allows and
			// a value: year > 1990 keeps two records, > 2005 none.
			for _, f := range []struct{ value, want string }{{"1990", "Memento 0"}, {"2005", "No records match the filter."}} {
				b.do(chromedp.Navigate(app.URL + page))
				b.waitText(title)
				b.choose(`form[data-typed-filter] select[name="field"]`, "year")
				b.choose(`form[data-typed-filter] select[name="op"]`, "gt")
				b.fill(`form[data-typed-filter] input[name="value"]`, f.value)
				b.press("\r")
				b.waitText(`[["year","gt",` + strings.TrimSpace(f.value) + `]]`)
				b.waitText(f.want)
				if f.value == "1990" && (!strings.Contains(b.text(), "Heat 0") || strings.Contains(b.text(), "Dune 0")) {
					t.Fatalf("year > 1990 shows: %s", b.text())
				}
			}
			b.choose(`form[data-typed-filter] select[name="field"]`, "year")
			if !eval[bool](b, `document.querySelector('form[data-typed-filter] select[name="op"] option[value="contains"]').disabled`) {
				t.Fatal("contains is offered for a year")
			}
			b.screenshot("typed-filter-1280")
		}
	}
	_, out := api(t, "GET", app.URL+"/data/fetch?project_id=shop&collection_id=films", token, "")
	if strings.Count(out, `"seen":true`) != 1 || strings.Count(out, `"seen":false`) != 5 || strings.Contains(out, "Early") || !strings.Contains(out, `"year":1995`) {
		t.Fatalf("the records: %s", out)
	}

	// The collection exported as CSV (the page's link, with the browser's
	// session) and imported into another collection of the same fields
	// from its page, by keyboard.
	csv := eval[string](b, `fetch(document.querySelector("[data-testid=csv-export]").href).then(r => r.text())`, chromedp.EvalAwaitPromise)
	if !strings.HasPrefix(csv, "id,title,year,seen,genre,shown") && !strings.HasPrefix(csv, "title,year,seen,genre,shown") {
		t.Fatalf("the export: %q", csv)
	}
	if status, out := api(t, "POST", app.URL+"/collection/create", root, `{"project_id":"shop","id":"films_copy","name":"Films copy","fields":[
		{"name":"title","type":"text","required":true},{"name":"year","type":"integer","min":1888},{"name":"seen","type":"boolean"},
		{"name":"genre","type":"select","values":["sf","drama"]},{"name":"shown","type":"datetime"},{"name":"by","type":"reference","collection":"people"}]}`); status != 201 {
		t.Fatalf("collection: %d %s", status, out)
	}
	file := filepath.Join(t.TempDir(), "films.csv")
	if err := os.WriteFile(file, []byte(csv), 0o600); err != nil {
		t.Fatal(err)
	}
	b.do(chromedp.Navigate(app.URL + "/web/data/collection?project_id=shop&id=films_copy"))
	b.waitText("Films copy")
	b.do(chromedp.SetUploadFiles(`form[data-csv-import] input[type="file"]`, []string{file}))
	b.tabToMatch(`form[data-csv-import] button[type="submit"]`)
	b.press("\r")
	b.waitText("6 records imported")
	b.focusOn(`form[data-csv-import] input[type="file"]`)
	b.waitText("Dune 0")
	_, copied := api(t, "GET", app.URL+"/data/fetch?project_id=shop&collection_id=films_copy&sort=title", token, "")
	if !strings.Contains(copied, `"shown":"2024-05-01T20:30:00Z"`) || !strings.Contains(copied, `"seen":false`) || !strings.Contains(copied, `"title":"Dune 1"`) {
		t.Fatalf("the imported copy: %s", copied)
	}
	b.checkClean()
}
