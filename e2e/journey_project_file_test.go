package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestJourneyProjectFile: an ADMIN exports the project from its page,
// edits the file, and applies it through the page — the plan shown in the
// outline's words, then Apply — by keyboard, at 1280 and 390 px; a file
// that cannot be applied lists its faults by path.
func TestJourneyProjectFile(t *testing.T) {
	t.Parallel()
	app, b := memberBrowser(t, "ann", "ADMIN")
	ann := apiLogin(t, app.URL, "ann", "ann-password-1")
	for _, call := range [][2]string{
		{"/collection/create", `{"project_id":"shop","id":"books","name":"Books"}`},
		{"/route/create", `{"project_id":"shop","route":{"route_id":"books","route_path":"/books","method":"GET",
			"auth_jwt":{"active":false,"field":"","ref_col":""},"params":{"delimiter":"&","pairs":[]},"body":[],
			"flow":{"blocks":[{"type":"FETCH","depth":0,"local_name":"rows","ref_col":"books","match":[]},
			{"type":"RETURN","depth":0,"pairs":[{"id":"items","data":{"ref_var":true,"rtype":"OTHER","data":"rows"}}],"conditions":[]}]}}}`},
	} {
		if status, body := api(t, "POST", app.URL+call[0], ann, call[1]); status >= 300 {
			t.Fatalf("POST %s: %d %s", call[0], status, body)
		}
	}
	for i, width := range []int64{1280, 390} {
		b.resize(width, 844)
		b.do(chromedp.Navigate(app.URL + "/web/project?id=shop"))
		b.waitText("Project file")
		// Export: the link downloads the file; the page's session reads it.
		href := eval[string](b, `document.querySelector("[data-testid=project-file] a[download]").getAttribute("href")`)
		file, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](fmt.Sprintf(`fetch(%q).then(r => r.text())`, href), chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(file, "{\n  \"format\": 1,") {
			t.Fatalf("the export link gives %.80q", file)
		}
		limit := 60 + i
		edited := strings.Replace(file, `"ref_col": "books"`, `"ref_col": "shelves"`, 1)
		edited = strings.Replace(edited, fmt.Sprintf(`"x_rate_limit": %d`, map[int]int{0: 50, 1: 60}[i]), fmt.Sprintf(`"x_rate_limit": %d`, limit), 1)
		edited = strings.Replace(edited, `"collections": [`, `"collections": [{"id": "shelves", "name": "Shelves", "description": ""}, `, 1)
		if i == 1 {
			edited = strings.Replace(edited, `{"id": "shelves", "name": "Shelves", "description": ""}, `, "", 1)
		}

		// Apply a file, by keyboard from the project page.
		b.tabToMatch(`[data-testid=project-file] a[href^="/web/project/apply"]`)
		b.press("\r")
		b.waitText("Paste a project file")
		b.do(chromedp.WaitVisible(chromedp.CSS("#f-document")))
		b.screenshot(fmt.Sprintf("project-apply-%d", width))
		// A file with a fault first: the plan lists it by its path.
		bad := strings.Replace(edited, `"route_path": "/books"`, `"route_path": "books"`, 1)
		eval[bool](b, fmt.Sprintf(`(el => { el.value = %q; el.focus(); return true })(document.getElementById("f-document"))`, bad))
		b.tabToMatch(`#file-form button`)
		b.press("\r")
		b.waitText("The file cannot be applied")
		b.waitText("Route books · Route path must start with")
		b.waitText("routes[0].route_path")
		b.screenshot(fmt.Sprintf("project-apply-problems-%d", width))
		b.focusOn("#plan-title")
		eval[bool](b, fmt.Sprintf(`(el => { el.value = %q; return true })(document.getElementById("f-document"))`, edited))
		b.tabToMatch(`#file-form button`)
		b.press("\r")
		want := "Plan: 1 to add, 2 to change, 0 to remove"
		if i == 1 {
			want = "Plan: 0 to add, 1 to change, 0 to remove" // the route changed in the first turn
		}
		b.waitText(want)
		if i == 0 {
			b.waitText(`Collection: books → shelves`)
			if got := eval[string](b, `document.querySelector("[data-testid=plan-change] [data-testid=diff-block]").innerText`); !strings.Contains(got, "changed") || !strings.Contains(got, "FETCH") {
				t.Fatalf("the route's change reads %q", got)
			}
		}
		// A setting by its label on the project's page.
		b.waitText("Rate limit (requests a second)")
		b.waitText(fmt.Sprintf("%d → %d", map[int]int{0: 50, 1: 60}[i], limit))
		b.focusOn(`[data-testid=file-plan] button.btn-primary`)
		b.audit(fmt.Sprintf("the plan at %d px", width))
		if small := b.smallTargets(); len(small) > 0 && width == 390 {
			t.Errorf("small targets at 390 px: %v", small)
		}
		b.screenshot(fmt.Sprintf("project-plan-%d", width))
		b.press("\r")
		b.waitText("File applied:")
		b.waitText("Members")
		if _, body := api(t, "GET", app.URL+"/project/fetch/one?project_id=shop", ann, ""); !strings.Contains(body, fmt.Sprintf(`"x_rate_limit":%d`, limit)) {
			t.Fatalf("the project after apply: %s", body)
		}
	}
	if _, body := api(t, "GET", app.URL+"/route/fetch/one?project_id=shop&route_id=books", ann, ""); !strings.Contains(body, `"ref_col":"shelves"`) {
		t.Fatalf("the route after apply: %s", body)
	}
	b.checkClean()
}
