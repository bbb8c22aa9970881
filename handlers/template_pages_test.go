package handlers

import (
	"fmt"
	"strings"
	"testing"

	"stencil/store"
)

func TestTemplateAndRoutePages(t *testing.T) {
	t.Parallel()
	ta, h := templateApp(t)
	_, body := ta.call(t, "POST", "/route/template/create", fetchByID("fetch_by_id", ptr("shop")), h)
	id := dataID(t, body)
	ta.call(t, "POST", "/route/template/create", fetchByID("global_one", nil), h)
	ta.call(t, "POST", "/route/create", `{"project_id":"shop","template_id":`+fmt.Sprint(id)+`,"route":`+plainRoute("items")+`}`, h)
	b := browser(ta.signIn(t, "author"))
	ta.newUser(t, "viewer", store.RoleViewer)
	vb := browser(ta.signIn(t, "viewer"))
	ta.run(t, []scenario{
		{name: "list: global by default", method: "GET", path: "/web/routes/templates", headers: b, status: 200,
			want: []string{"global_one", ">Global<", "New template", "1–1 of 1"}, unwanted: []string{"fetch_by_id"}},
		{name: "list: a project's and global", method: "GET", path: "/web/routes/templates?id=shop", headers: b, status: 200,
			want: []string{"global_one", "fetch_by_id", ">shop<", "1–2 of 2", `hx-delete="/route/template/delete?id=`}},
		{name: "list filtered", method: "GET", path: "/web/routes/templates?id=shop&filter=global", headers: b, status: 200,
			want: []string{"1–1 of 1"}, unwanted: []string{"fetch_by_id<"}},
		{name: "a viewer reads but gets no write actions", method: "GET", path: "/web/routes/templates", headers: vb, status: 200,
			want: []string{"global_one"}, unwanted: []string{"New template", "hx-delete"}},
		{name: "a non-member cannot list a project's", method: "GET", path: "/web/routes/templates?id=shop", headers: vb, status: 403},
		{name: "view with placeholders marked", method: "GET", path: fmt.Sprintf("/web/routes/templates/view?id=%d", id), headers: b, status: 200,
			want: []string{`<mark class="placeholder">{collection}</mark>`, "Collection to read", "Default: <code", "No default: a value is required.", "FETCH", "RETURN"}},
		{name: "view: a readable outline, the JSON behind a disclosure", method: "GET", path: fmt.Sprintf("/web/routes/templates/view?id=%d", id), headers: b, status: 200,
			want: []string{
				`<span class="badge mr-2 bg-slate-100 font-mono text-slate-700">GET</span>/<mark class="placeholder">{collection}</mark>/fetch`,
				"a valid JWT; the caller is uid in users",
				`<mark class="placeholder">{id_param}</mark> (INTEGER), joined by &#34;&amp;&#34;`,
				`Result name: items · Collection: <mark class="placeholder">{collection}</mark>`,
				`Conditions: not items &gt; 0 · When the conditions hold: fail · Fail with: 404 &#34;no <mark class="placeholder">{collection}</mark> found&#34;`,
				`Fields: <mark class="placeholder">{collection}</mark> = items`,
				"Block as JSON", "Request as JSON"}},
		{name: "route editor: an author member edits a route", method: "GET", path: "/web/routes/edit?project_id=shop&route_id=items", headers: b, status: 200,
			want: []string{"Edit route items", `"route_id":"items"`, `"mode":"route"`}},
		{name: "route editor: a viewer may not", method: "GET", path: "/web/routes/edit?project_id=shop&route_id=items", headers: vb, status: 403},
		{name: "route editor: an unknown route", method: "GET", path: "/web/routes/edit?project_id=shop&route_id=nope", headers: b, status: 404},
		{name: "route editor: use an unknown template", method: "GET", path: "/web/routes/create?id=shop&template_id=999999", headers: b, status: 404},
		{name: "route editor: a bad template id", method: "GET", path: "/web/routes/create?id=shop&template_id=x", headers: b, status: 422},
		{name: "view as JSON is the template", method: "GET", path: fmt.Sprintf("/web/routes/templates/view?id=%d", id), headers: merge(b, asJSONHeaders), status: 200,
			want: []string{`"name":"fetch_by_id"`}},
		{name: "view of another project's template", method: "GET", path: fmt.Sprintf("/web/routes/templates/view?id=%d", id), headers: vb, status: 403},
		{name: "editor", method: "GET", path: "/web/routes/templates/create", headers: b, status: 200,
			want: []string{`<script type="application/json" id="editor-data">`, `"mode":"template"`, `"SIMPLE_UPDATE"`, "/static/js/editor.js?v="}},
		{name: "editor of a template", method: "GET", path: fmt.Sprintf("/web/routes/templates/edit?id=%d", id), headers: b, status: 200,
			want: []string{`"name":"fetch_by_id"`, "Edit fetch_by_id"}},
		{name: "a viewer gets no editor", method: "GET", path: "/web/routes/templates/create", headers: vb, status: 403},
		{name: "routes of the project", method: "GET", path: "/web/routes?id=shop", headers: b, status: 200,
			want: []string{"/items", "fetch_by_id", "New route"}},
		{name: "routes of every project of the caller", method: "GET", path: "/web/routes", headers: b, status: 200,
			want: []string{">Project<", `href="/web/routes?id=shop">shop</a>`, "/items", "1–1 of 1"}, unwanted: []string{"New route"}},
		{name: "routes of every project, filtered", method: "GET", path: "/web/routes?filter=nothing", headers: b, status: 200,
			want: []string{"No routes match."}},
		{name: "routes of no project: none, and where to start", method: "GET", path: "/web/routes", headers: vb, status: 200,
			want: []string{"No routes in your projects yet."}, unwanted: []string{"/items"}},
		{name: "route view", method: "GET", path: "/web/routes/view?project_id=shop&route_id=items", headers: b, status: 200,
			want: []string{"Made from template", "fetch_by_id", "RETURN"}},
		{name: "route editor", method: "GET", path: "/web/routes/create?id=shop", headers: b, status: 200,
			want: []string{`"mode":"route"`, `"project_id":"shop"`, "New route in Shop"}},
		{name: "route editor of an unknown project", method: "GET", path: "/web/routes/create?id=nope", headers: b, status: 404},
	})
	// Live lint: warnings and problems by path, without saving.
	cookie, csrf := ta.signIn(t, "author")
	lint := map[string]string{"Accept": "application/json", "Cookie": cookie, "X-CSRF-Token": csrf}
	doc := strings.Replace(fetchByID("x", nil), `"ref_col":"{collection}"`, `"ref_col":"{table}"`, 1)
	doc = strings.Replace(doc, `"description":"Fetch one item",`, `"description":"",`, 1)
	status, out := ta.call(t, "POST", "/web/routes/templates/lint", doc, lint)
	if status != 200 || !strings.Contains(out, "placeholder {table} is used but not declared (flow.blocks[0].ref_col)") ||
		!strings.Contains(out, `"description":"is required"`) ||
		!strings.Contains(out, `"checks":[{"path":"flow.blocks[0].ref_col","message":"placeholder {table} is used but not declared","block":"Block 1 (FETCH)"}]`) {
		t.Fatalf("lint: %d %s", status, out)
	}
	ta.expectStatus(t, "lint without CSRF", "POST", "/web/routes/templates/lint", doc, map[string]string{"Cookie": cookie}, 403)
}
