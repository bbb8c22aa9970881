package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestJourneyTemplates: an AUTHOR builds a template with two variables (one
// with a default) and FETCH, CONDITION and RETURN blocks in the visual
// editor, watches the lint clear, saves; then creates a route in a project
// from it with Create from Template, and sees the substituted route.
func TestJourneyTemplates(t *testing.T) {
	t.Parallel()
	app, b := memberBrowser(t, "alan", "AUTHOR")

	b.click(`nav a[href="/web/routes/templates"]`)
	b.waitText("No templates yet.")
	b.click(`a[href="/web/routes/templates/create"]`)
	b.waitText("New route template")
	at := func(path string) string { return fmt.Sprintf(`[data-path=%q]`, path) }

	b.fill(at("name"), "fetch_by_id")
	b.fill(at("description"), "Fetch one item of a collection")
	b.fill(at("route_id"), "fetch_{collection}")
	b.fill(at("route_path"), "/{collection}/{id_param}")
	b.waitText("placeholder {collection} is used but not declared")

	b.click(`[data-action="add:variables"]`)
	b.fill(at("variables[0].key"), "collection")
	b.fill(at("variables[0].description"), "Collection to read")
	b.fill(at("variables[0].default_value"), "posts")
	b.click(`[data-action="add:variables"]`)
	b.fill(at("variables[1].key"), "id_param")
	b.fill(at("variables[1].description"), "Name of the id parameter")

	b.addBlock("FETCH")
	b.fill(at("flow.blocks[0].local_name"), "items")
	b.fill(at("flow.blocks[0].ref_col"), "{collection}")

	b.addBlock("CONDITION")
	b.click(`[data-action="add:flow.blocks[1].conditions"]`)
	b.choose(at("flow.blocks[1].conditions[0].left.ref_var"), "ref")
	b.fill(at("flow.blocks[1].conditions[0].left.data"), "items")
	b.choose(at("flow.blocks[1].conditions[0].condition_type"), "NOT_EQUAL_TO")
	b.choose(at("flow.blocks[1].conditions[0].right.rtype"), "OTHER")
	b.fill(at("flow.blocks[1].conditions[0].right.data"), "null")
	b.click(at("flow.blocks[1].fail?"))
	b.fill(at("flow.blocks[1].fail.message"), "no {collection} with this {id_param}")

	b.addBlock("RETURN")
	b.click(`[data-action="add:flow.blocks[2].pairs"]`)
	b.fill(at("flow.blocks[2].pairs[0].id"), "{collection}")
	b.choose(at("flow.blocks[2].pairs[0].data.ref_var"), "ref")
	b.fill(at("flow.blocks[2].pairs[0].data.data"), "items")

	b.waitText("No warnings: ready to save.")
	raw := eval[string](b, `document.getElementById("raw-json").value`)
	if !strings.Contains(raw, `"condition_type": "NOT_EQUAL_TO"`) || !strings.Contains(raw, `"message": "no {collection} with this {id_param}"`) {
		t.Fatalf("the raw JSON view does not follow the form:\n%s", raw)
	}
	b.screenshot("templates-01-editor")
	b.click(`[data-action="save"]`)
	b.waitText("Fetch one item of a collection")
	b.waitText("Variables")
	if n := eval[int](b, `document.querySelectorAll("mark.placeholder").length`); n < 5 {
		t.Fatalf("only %d placeholders highlighted", n)
	}
	b.screenshot("templates-02-view")

	root := apiLogin(t, app.URL, "root", "root-password-1")
	if status, out := api(t, "POST", app.URL+"/route/template/create", root, `{"name":"read_secret","description":"Read a secret","method":"GET","route_id":"secret","route_path":"/secret",
		"auth_jwt":{"active":false,"field":"","ref_col":""},"params":{"delimiter":"&","pairs":[]},"body":[],"variables":[],
		"flow":{"blocks":[{"type":"VAULT","depth":0,"local_name":"k","key":"API_KEY"}]}}`); status != 201 {
		t.Fatalf("a VAULT template: %d %s", status, out)
	}
	b.do(chromedp.Navigate(app.URL + "/web/routes/create?id=shop"))
	b.waitText("Create from Template")
	// What the author typed is not replaced without asking: Keep my edits
	// keeps it; Choose a template goes on.
	b.fill(at("route_id"), "typed_by_hand")
	b.click(`[data-action="from-template"]`)
	b.waitText("Replace what you typed?")
	b.focusOn(`[data-action="keep"]`)
	b.press("\r")
	b.waitGone("Replace what you typed?")
	if got := eval[string](b, fmt.Sprintf(`document.querySelector(%q).value`, at("route_id"))); got != "typed_by_hand" {
		t.Fatalf("keeping the edits left route id %q", got)
	}
	b.click(`[data-action="from-template"]`)
	b.click(`[data-action="replace"]`)
	// A template that reads the vault is offered to an AUTHOR marked as
	// one only an ADMIN can make a route of, and choosing it does nothing.
	b.waitText("read_secret")
	if got := eval[string](b, `document.querySelector('[data-template="read_secret"]').getAttribute("aria-disabled") + " " + document.querySelector('[data-template="read_secret"] [data-testid="needs-admin"]').textContent`); !strings.HasPrefix(got, "true Reads the vault") {
		t.Fatalf("the VAULT template is offered as %q", got)
	}
	b.click(`[data-template="read_secret"]`)
	if eval[bool](b, `!!document.querySelector("[data-variable]")`) {
		t.Fatal("choosing the VAULT template went on to its values")
	}
	b.fill("#picker-filter", "fetch")
	b.click(`[data-template="fetch_by_id"]`)
	b.waitText("Collection to read")
	if v := eval[string](b, `document.getElementById("var-collection").value`); v != "posts" {
		t.Fatalf("the default is not pre-filled: %q", v)
	}
	b.click(`[data-action="apply"]`)
	b.waitText("has no value and the variable has no default")
	b.screenshot("templates-03-dialog-error")
	b.fill("#var-id_param", "item_id")
	b.click(`[data-action="apply"]`)
	b.waitText("Filled from template fetch_by_id")
	for path, want := range map[string]string{
		"route_id": "fetch_posts", "route_path": "/posts/item_id", "flow.blocks[0].ref_col": "posts",
		"flow.blocks[1].fail.message": "no posts with this item_id", "flow.blocks[2].pairs[0].id": "posts",
		"flow.blocks[2].pairs[0].data.data": "items",
	} {
		if got := eval[string](b, fmt.Sprintf(`document.querySelector(%q).value`, at(path))); got != want {
			t.Errorf("%s = %q, want %q", path, got, want)
		}
	}
	// The route's checks: the template's collection is not in this project.
	b.waitText("collection posts does not exist in this project yet — Block 1 (FETCH) · Collection")
	b.screenshot("templates-04-filled")
	// Suggestions: a variable reference offers the names the route defines.
	if got := eval[string](b, `document.querySelector('[data-path="flow.blocks[2].pairs[0].data.data"]').getAttribute("list") + " " +
		[...document.querySelectorAll("#dl-variables option")].map(o => o.value).join(",")`); got != "dl-variables items" {
		t.Fatalf("the variable suggestions: %q", got)
	}
	if got := eval[string](b, `document.querySelector('[data-path="flow.blocks[0].ref_col"]').getAttribute("list")`); got != "dl-collections" {
		t.Fatalf("the collection field suggests %q", got)
	}
	// The draft runs from the editor, unsaved and dry, its trace beside the
	// form: here its FETCH faults, the collection being missing.
	// Its request starts as the route's own path, and follows it.
	if got := eval[string](b, `document.getElementById("draft-path").value`); got != "/posts/item_id" {
		t.Fatalf("the draft's path starts as %q, not the route's", got)
	}
	b.fill("#draft-path", "/posts/item_id")
	b.click(`[data-action="try-draft"]`)
	b.do(chromedp.WaitVisible(chromedp.CSS(`[data-testid="draft-trace"]`)))
	if got := eval[string](b, `document.querySelector('[data-testid="draft-status"]').textContent + " " + document.querySelector('[data-testid="draft-trace"]').textContent`); !strings.HasPrefix(got, "500 ") || !strings.Contains(got, "#1") {
		t.Fatalf("the draft's run shows %q", got)
	}
	b.screenshot("editor-try-draft")
	b.fill(at("route_path"), "/posts/{item_id}")
	b.click(`[data-action="save"]`)
	b.waitText("Made from template fetch_by_id")
	if text := b.text(); !strings.Contains(text, "/posts/{item_id}") || !strings.Contains(text, "fetch_posts") {
		t.Fatalf("route view: %s", text)
	}
	b.screenshot("templates-05-route")
}
