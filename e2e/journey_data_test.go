package e2e

import (
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// TestJourneyDataByRole: an ADMIN creates a collection (a bad id first), an
// AUTHOR adds three records, filters them with a containment filter that
// the URL keeps, edits one (invalid JSON first, and the error names the
// line), and deletes one; a VIEWER sees the records and no control that
// changes them. Each role's pages are audited at 1280 and 390 px.
func TestJourneyDataByRole(t *testing.T) {
	t.Parallel()
	app, admin := memberBrowser(t, "ada", "ADMIN")
	root := apiLogin(t, app.URL, "root", "root-password-1")
	for _, m := range [][2]string{{"ben", "AUTHOR"}, {"cyd", "VIEWER"}} {
		for _, call := range [][2]string{
			{"/user/register", fmt.Sprintf(`{"username":%q,"email":"%s@example.com","password":"%s-password-1","role":%q}`, m[0], m[0], m[0], m[1])},
			{"/project/member/add", fmt.Sprintf(`{"project_id":"shop","username":%q}`, m[0])},
		} {
			if status, body := api(t, "POST", app.URL+call[0], root, call[1]); status >= 300 {
				t.Fatalf("POST %s: %d %s", call[0], status, body)
			}
		}
	}
	const page = "/web/data/collection?project_id=shop&id=books"

	// ADMIN: from the navigation to the project's data, and a collection.
	admin.resize(1280, 900)
	admin.click(`nav a[href="/web/data"]`)
	admin.waitText("Shop")
	admin.click(`a[href="/web/data?project_id=shop"]`)
	admin.waitText("No collections yet")
	admin.fill("#collection-create #f-id", "Books!")
	admin.fill("#collection-create #f-name", "Books")
	admin.click("#collection-create button[type=submit]")
	admin.waitText("must be 3–50 lowercase letters")
	admin.waitText("No collections yet")
	admin.fill("#collection-create #f-id", "books")
	admin.fill("#collection-create #f-description", "What the shop sells")
	admin.click("#collection-create button[type=submit]")
	admin.waitText("Collection books created.")
	admin.waitText("What the shop sells")
	for _, width := range []int64{1280, 390} {
		admin.resize(width, 844)
		admin.do(chromedp.Navigate(app.URL + "/web/data?project_id=shop"))
		admin.waitText("books")
		admin.audit(fmt.Sprintf("data as ADMIN at %d", width))
		admin.screenshot(fmt.Sprintf("data-admin-%d", width))
	}

	// AUTHOR: three records, a filter, an edit, a delete.
	author := newBrowser(t)
	author.signIn(app, "ben", "ben-password-1")
	author.resize(1280, 900)
	author.do(chromedp.Navigate(app.URL + page))
	author.waitText("No records yet")
	if eval[bool](author, `!!document.querySelector('[aria-label^="Delete collection"], #collection-create')`) {
		t.Fatal("an AUTHOR is offered to create or delete collections")
	}
	// New record opens a side panel that stays open for the next one.
	author.click(`[data-open-dialog="#record-panel"]`)
	author.focusOn("#f-data")
	for i, rec := range []string{
		`{"title":"Dune","genre":"sf","stock":{"shelf":"A3","count":4}}`,
		`{"title":"Emma","genre":"classic","stock":{"shelf":"B1","count":0}}`,
		`{"title":"Solaris","genre":"sf","stock":{"shelf":"A3","count":2}}`,
	} {
		author.fill("#f-data", rec)
		author.click("#record-create button[type=submit]")
		author.waitText(fmt.Sprintf("Record %d created.", i+1))
	}
	author.waitText("1–3 of 3")
	author.waitText("What the shop sells · 3 records")
	author.press(kb.Escape)
	author.focusOn(`[data-open-dialog="#record-panel"]`)
	// The table has the page's width, not what a form beside it leaves.
	if w := eval[float64](author, `document.getElementById("records-table").getBoundingClientRect().width`); w < 1000 {
		t.Fatalf("the records table is %.0f px wide at 1280", w)
	}
	for _, width := range []int64{1280, 390} {
		author.resize(width, 844)
		author.do(chromedp.Navigate(app.URL + page))
		author.waitText("1–3 of 3")
		author.audit(fmt.Sprintf("records as AUTHOR at %d", width))
		author.screenshot(fmt.Sprintf("data-author-%d", width))
	}
	author.resize(1280, 900)

	author.fill("#where", `{"stock":{"shelf":"A3"}}`)
	author.click(`form[role=search] button[type=submit]`)
	author.waitText("1–2 of 2")
	if text := author.text(); strings.Contains(text, "Emma") || !strings.Contains(text, "Solaris") {
		t.Fatalf("the filter on a nested property shows: %s", text)
	}
	search := eval[string](author, "location.search")
	if q, _ := url.ParseQuery(strings.TrimPrefix(search, "?")); q.Get("where") != `{"stock":{"shelf":"A3"}}` {
		t.Fatalf("the URL does not keep the filter: %s", search)
	}
	author.do(chromedp.Reload())
	author.waitText("1–2 of 2")
	author.fill("#where", `{"genre":`)
	author.click(`form[role=search] button[type=submit]`)
	author.waitText("Fix the filter to see records.")
	author.do(chromedp.NavigateBack())
	author.waitText("1–2 of 2")
	author.screenshot("data-author-filtered")
	// The same filter by keyboard alone, at a phone's width: Enter loads
	// the page, the summary counts the matches, and the focus is back in
	// the filter to change it.
	author.resize(390, 844)
	author.do(chromedp.Navigate(app.URL + page))
	author.waitText("1–3 of 3")
	author.tabTo("where")
	author.press(`{"genre":"sf"}`)
	author.press("\r")
	author.waitText("2 of 3 records match the filter")
	author.waitText("1–2 of 2")
	author.focusOn("#where")
	author.audit("records filtered at 390")
	author.screenshot("data-author-filtered-390")
	author.resize(1280, 900)

	author.click(`[aria-label="Edit record 1"]`)
	author.waitText("Record 1 (a JSON object)")
	eval[bool](author, `(el => { el.value = '{\n  "title": "Dune",\n  "genre": "sf"\n  "stock": 4\n}'; return true })(document.getElementById("edit-1"))`)
	author.click(`#record-edit-1 button[type=submit]`)
	author.waitText("is not valid JSON: look at line 4")
	if v := eval[string](author, `document.getElementById("edit-1").value`); !strings.Contains(v, `"genre": "sf"`+"\n") {
		t.Fatalf("the broken text was not kept for fixing: %q", v)
	}
	author.audit("a record with an error")
	author.screenshot("data-author-edit-error")
	eval[bool](author, `(el => { el.value = '{"title": "Dune Messiah", "genre": "sf", "stock": {"shelf": "A3", "count": 7}}'; return true })(document.getElementById("edit-1"))`)
	author.click(`#record-edit-1 button[type=submit]`)
	author.waitText("Dune Messiah")
	author.waitGone("is not valid JSON")
	// Saved, the edit panel has closed and the focus is on the row's Edit.
	author.focusOn(`[aria-label="Edit record 1"]`)
	if eval[bool](author, `document.getElementById("record-edit-panel").open`) {
		t.Fatal("the edit panel stays open after the save")
	}

	author.click(`[aria-label="Delete record 3"]`)
	author.confirm()
	author.waitGone("Solaris")
	if len(author.dialogs) == 0 || !strings.Contains(author.dialogs[len(author.dialogs)-1], "Delete record 3?") {
		t.Fatalf("no confirmation before the delete: %v", author.dialogs)
	}
	author.waitText("1–1 of 1")

	// VIEWER: sees what is there, and nothing that changes it.
	viewer := newBrowser(t)
	viewer.signIn(app, "cyd", "cyd-password-1")
	for _, width := range []int64{1280, 390} {
		viewer.resize(width, 844)
		viewer.do(chromedp.Navigate(app.URL + page))
		viewer.waitText("Dune Messiah")
		viewer.waitText("Emma")
		if n := eval[int](viewer, `document.querySelectorAll('main :is(#record-create, [data-edit], [hx-delete], [hx-patch], [hx-post], textarea)').length`); n != 0 {
			t.Fatalf("a VIEWER at %d px is offered %d controls that change data", width, n)
		}
		viewer.audit(fmt.Sprintf("records as VIEWER at %d", width))
		viewer.screenshot(fmt.Sprintf("data-viewer-%d", width))
	}
	viewer.do(chromedp.Navigate(app.URL + "/web/data?project_id=shop"))
	viewer.waitText("books")
	if eval[bool](viewer, `!!document.querySelector('#collection-create, [hx-delete]')`) {
		t.Fatal("a VIEWER is offered to create or delete collections")
	}
	cyd := apiLogin(t, app.URL, "cyd", "cyd-password-1")
	if status, body := api(t, "POST", app.URL+"/data/create", cyd, `{"project_id":"shop","collection_id":"books","data":{"title":"x"}}`); status != 403 {
		t.Fatalf("a VIEWER's create: %d %s", status, body)
	}
	for _, b := range []*browser{admin, author, viewer} {
		b.checkClean()
	}
}
