package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// TestJourneyRouteHistory: an author edits a route in the editor with a
// note, opens its History from the route page by keyboard, reads what
// changed block by block, and restores the first version through the
// confirmation dialog by keyboard alone; the live route answers as the
// first version did. At 1280 and 390 px, audited.
func TestJourneyRouteHistory(t *testing.T) {
	t.Parallel()
	app, b := memberBrowser(t, "ada", "AUTHOR")
	token := apiLogin(t, app.URL, "ada", "ada-password-1")
	route := func(title string) string {
		return `{"route_id":"hello","route_path":"/hello","method":"GET","auth_jwt":{"active":false,"field":"","ref_col":""},"params":{"delimiter":"&","pairs":[]},"body":[],"flow":{"blocks":[` +
			`{"type":"RETURN","depth":0,"pairs":[{"id":"title","data":{"ref_var":false,"rtype":"STRING","data":"` + title + `"}}],"conditions":[]}]}}`
	}
	if status, body := api(t, "POST", app.URL+"/route/create", token, `{"project_id":"shop","note":"first words","route":`+route("Hello")+`}`); status != 201 {
		t.Fatalf("create: %d %s", status, body)
	}

	// Version 2, saved in the editor with a note.
	b.resize(1280, 900)
	b.do(chromedp.Navigate(app.URL + "/web/routes/edit?project_id=shop&route_id=hello"))
	b.waitText("Save route")
	eval[bool](b, `(() => { const s = JSON.parse(document.getElementById("raw-json").value); s.flow.blocks[0].pairs[0].data.data = "Goodbye";
		const raw = document.getElementById("raw-json"); raw.value = JSON.stringify(s); raw.dispatchEvent(new Event("input", {bubbles: true})); return true })()`)
	b.click("#save-note")
	b.typeKeys("#save-note", "say goodbye")
	b.press("\r") // Enter in the note saves
	b.waitText("(version 2)")
	if status, body := api(t, "GET", app.URL+"/x/shop/hello", "", ""); status != 200 || !strings.Contains(body, "Goodbye") {
		t.Fatalf("the edited route: %d %s", status, body)
	}

	for _, width := range []int64{1280, 390} {
		b.resize(width, 844)
		b.do(chromedp.Navigate(app.URL + "/web/routes/view?project_id=shop&route_id=hello"))
		b.waitText("(version 2)")
		b.tabToMatch(`a[href="/web/routes/history?project_id=shop&route_id=hello"]`)
		b.press("\r")
		b.waitText("From version 1 to version 2")
		b.waitText("say goodbye")
		b.waitText("first words")
		if got := eval[string](b, `document.querySelector('[data-testid="diff-block"]').textContent.replace(/\s+/g, " ")`); !strings.Contains(got, "changed") ||
			!strings.Contains(got, `"Hello"`) || !strings.Contains(got, `"Goodbye"`) {
			t.Fatalf("the diff reads %q", got)
		}
		// Down to the changed field, in the outline's words: no operand JSON.
		if got := eval[string](b, `document.querySelector('[data-testid="diff-field"]').textContent.replace(/\s+/g, " ")`); got != `Fields: title = "Hello" → title = "Goodbye"` {
			t.Fatalf("the changed field reads %q", got)
		}
		b.audit(fmt.Sprintf("history at %d", width))
		if bad := b.smallTargets(); width == 390 && len(bad) > 0 {
			t.Errorf("small targets at %d: %v", width, bad)
		}
		b.screenshot(fmt.Sprintf("history-%d", width))
	}

	// Restore version 1 by keyboard: the dialog asks, Tab reaches Restore.
	b.tabToMatch(`[aria-label="Restore version 1"]`)
	b.press("\r")
	b.do(chromedp.WaitVisible(chromedp.CSS("#confirm-dialog[open] [data-confirm]")))
	if q := eval[string](b, `document.getElementById("confirm-question").textContent`); !strings.Contains(q, "It becomes the live version 3") {
		t.Fatalf("the dialog asks %q", q)
	}
	b.press("\t")
	b.press("\r")
	b.waitText("Version 1 restored as version 3.")
	b.waitText("Restored version 1")
	if status, body := api(t, "GET", app.URL+"/x/shop/hello", "", ""); status != 200 || !strings.Contains(body, "Hello") {
		t.Fatalf("the restored route: %d %s", status, body)
	}
	// The focus stays where the work goes on: on the row's button, once
	// the reloaded table has settled.
	b.focusOn(`[aria-label="Restore version 1"]`)
	b.screenshot("history-restored-390")
}

// TestJourneyRouteUpgrade: two routes made from version 1 of a template
// and edited (a FETCH added, the title changed); version 2 of the template
// asks a new variable, moves the path and changes the title too. From the
// route page, by keyboard alone: Upgrade, the new value typed and Enter to
// preview, the focus on the conflict, a side chosen (the template's at
// 1280 px, the route's at 390 px), Enter to preview again with the focus
// on Upgrade, Enter. The kept value, the new one, the route's own block
// and the chosen side are all in the route that answers.
func TestJourneyRouteUpgrade(t *testing.T) {
	t.Parallel()
	app, b := memberBrowser(t, "ada", "ADMIN")
	token := apiLogin(t, app.URL, "ada", "ada-password-1")
	if status, out := api(t, "POST", app.URL+"/collection/create", token, `{"project_id":"shop","id":"books","name":"Books"}`); status != 201 {
		t.Fatalf("collection: %d %s", status, out)
	}
	pair := func(id, text string) string {
		return `{"id":"` + id + `","data":{"ref_var":false,"rtype":"STRING","data":"` + text + `"}}`
	}
	tmpl := func(id, path, vars, pairs string) string {
		return `{` + id + `"name":"lister","description":"Says what it lists","project_id":"shop","method":"GET","route_id":"list_{col}","route_path":"` + path + `",` +
			`"auth_jwt":{"active":false,"field":"","ref_col":""},"params":{"delimiter":"&","pairs":[]},"body":[],"variables":` + vars + `,` +
			`"flow":{"blocks":[{"type":"RETURN","depth":0,"pairs":[` + pairs + `],"conditions":[]}]}}`
	}
	col := `{"key":"col","description":"The collection","default_value":null}`
	status, body := api(t, "POST", app.URL+"/route/template/create", token, tmpl("", "/{col}", "["+col+"]", pair("title", "List of {col}")))
	if status != 201 {
		t.Fatalf("template: %d %s", status, body)
	}
	var created struct{ Data struct{ ID int64 } }
	_ = json.Unmarshal([]byte(body), &created)
	tid := created.Data.ID
	fetch := `{"type":"FETCH","depth":0,"local_name":"rows","ref_col":"books"}`
	for _, c := range []string{"books", "mags"} {
		status, body := api(t, "POST", app.URL+"/route/template/apply", token, fmt.Sprintf(`{"id":%d,"project_id":"shop","values":{"col":%q}}`, tid, c))
		var applied struct{ Data json.RawMessage }
		_ = json.Unmarshal([]byte(body), &applied)
		if status != 200 {
			t.Fatalf("apply: %d %s", status, body)
		}
		if status, body := api(t, "POST", app.URL+"/route/create", token, `{"project_id":"shop","route":`+string(applied.Data)+`}`); status != 201 {
			t.Fatalf("create: %d %s", status, body)
		}
		edited := `{"route_id":"list_` + c + `","route_path":"/` + c + `","method":"GET","auth_jwt":{"active":false,"field":"","ref_col":""},"params":{"delimiter":"&","pairs":[]},"body":[],` +
			`"flow":{"blocks":[` + fetch + `,{"type":"RETURN","depth":0,"pairs":[` + pair("title", "My "+c) + `],"conditions":[]}]}}`
		if status, body := api(t, "PATCH", app.URL+"/route/update", token, `{"project_id":"shop","route_id":"list_`+c+`","route":`+edited+`}`); status != 200 {
			t.Fatalf("edit: %d %s", status, body)
		}
	}
	label := `{"key":"label","description":"Who answers","default_value":null}`
	if status, body := api(t, "POST", app.URL+"/route/template/create", token,
		tmpl(fmt.Sprintf(`"id":%d,`, tid), "/{col}/all", "["+col+","+label+"]", pair("title", "All of {col}")+","+pair("by", "{label}"))); status != 200 {
		t.Fatalf("template version 2: %d %s", status, body)
	}

	for _, tc := range []struct {
		width      int64
		col, side  string
		key        string // the key pressed on the conflict's first choice (the template's)
		wantTitle  string
		unwantedBy bool
	}{
		{1280, "books", "template", " ", "All of books", false},
		{390, "mags", "route", kb.ArrowDown, "My mags", true},
	} {
		b.resize(tc.width, 844)
		b.do(chromedp.Navigate(app.URL + "/web/routes/view?project_id=shop&route_id=list_" + tc.col))
		b.waitText("Version 2 of the template is out.")
		b.tabToMatch(`a[href^="/web/routes/upgrade?"]`)
		b.press("\r")
		b.waitText("Give the new variables their values, then Preview.")
		b.tabToMatch("#var-label")
		b.typeKeys("#var-label", "Shop")
		b.press("\r")
		b.waitText("What the template changed (version 1 → 2)")
		b.focusOn(`input[name="resolve:0:pairs"][value="template"]`)
		b.audit(fmt.Sprintf("upgrade preview at %d", tc.width))
		if bad := b.smallTargets(); tc.width == 390 && len(bad) > 0 {
			t.Errorf("small targets at %d: %v", tc.width, bad)
		}
		b.screenshot(fmt.Sprintf("upgrade-%d", tc.width))
		b.press(tc.key)
		b.focusOn(`input[name="resolve:0:pairs"][value="` + tc.side + `"]:checked`)
		b.press("\r")
		b.focusOn(`button[hx-post="/route/upgrade"]`)
		b.loaded() // htmx has wired the button once the page has loaded
		if !strings.Contains(b.text(), "Upgrade to version 2") {
			t.Fatal("no Upgrade button after the preview")
		}
		b.press("\r")
		b.waitText("Upgraded to version 2 of template lister as route version 3.")
		status, body := api(t, "GET", app.URL+"/x/shop/"+tc.col+"/all", "", "")
		if status != 200 || !strings.Contains(body, tc.wantTitle) || strings.Contains(body, `"by":"Shop"`) == tc.unwantedBy {
			t.Fatalf("the upgraded route at %d: %d %s", tc.width, status, body)
		}
		_, body = api(t, "GET", app.URL+"/route/fetch/one?project_id=shop&route_id=list_"+tc.col, token, "")
		if !strings.Contains(body, `"type":"FETCH"`) || !strings.Contains(body, `"values":{"col":"`+tc.col+`","label":"Shop"}`) {
			t.Fatalf("the route's own block or the values are lost: %s", body)
		}
	}
}
