package handlers

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"stencil/store"
)

// listerTemplate is template "lister" of project shop: GET /{col}, its
// records under items; version 2 adds the variable label, a pair saying
// it, and /list to the path.
func listerTemplate(id int64, v2 bool) string {
	head := ""
	if id > 0 {
		head = fmt.Sprintf(`"id":%d,`, id)
	}
	vars := `[{"key":"col","description":"The collection","default_value":null}]`
	path := "/{col}"
	pairs := pairsOf("items", ref("rows"))
	if v2 {
		vars = `[{"key":"col","description":"The collection","default_value":null},{"key":"label","description":"Who answers","default_value":null}]`
		path = "/{col}/list"
		pairs = pairsOf("items", ref("rows"), "from", lit("STRING", "{label}"))
	}
	return fmt.Sprintf(`{%s"name":"lister","description":"Lists a collection","project_id":"shop","method":"GET","route_id":"list_{col}","route_path":%q,
		"auth_jwt":{"active":false,"field":"","ref_col":""},"params":{"delimiter":"&","pairs":[]},"body":[],"variables":%s,
		"flow":{"blocks":[{"type":"FETCH","depth":0,"local_name":"rows","ref_col":"{col}"},{"type":"RETURN","depth":0,"pairs":%s,"conditions":[]}]}}`,
		head, path, vars, pairs)
}

// TestRouteUpgrade: a route made from version 1 of a template, then edited
// (a FILTER added, its RETURN changed), upgraded to version 2 (a new
// variable, a new path, its RETURN changed too): the preview lists the
// template's changes, the route's and the conflict; the upgrade keeps the
// values given at apply time, asks the new variable, keeps the route's own
// edit and resolves the conflict either way; bad input changes nothing.
func TestRouteUpgrade(t *testing.T) {
	t.Parallel()
	ta, h, admin := mailApp(t)
	status, body := ta.call(t, "POST", "/route/template/create", listerTemplate(0, false), h)
	if status != 201 {
		t.Fatalf("template: %d %s", status, body)
	}
	tid := dataID(t, body)
	// Two routes made from version 1, each edited the same way.
	made := func(col string) {
		status, body := ta.call(t, "POST", "/route/template/apply", fmt.Sprintf(`{"id":%d,"project_id":"shop","values":{"col":%q}}`, tid, col), h)
		if status != 200 {
			t.Fatalf("apply: %d %s", status, body)
		}
		var env struct{ Data json.RawMessage }
		_ = json.Unmarshal([]byte(body), &env)
		if status, body := ta.call(t, "POST", "/route/create", `{"project_id":"shop","route":`+string(env.Data)+`}`, h); status != 201 || !strings.Contains(body, `"values":{"col":"`+col+`"}`) {
			t.Fatalf("create: %d %s", status, body)
		}
		edited := runnable{id: "list_" + col, method: "GET", path: "/" + col, blocks: []string{
			`{"type":"FETCH","depth":0,"local_name":"rows","ref_col":"` + col + `"}`, sfOnly,
			`{"type":"RETURN","depth":0,"pairs":` + pairsOf("items", ref("sf")) + `,"conditions":[]}`}}
		if status, body := ta.call(t, "PATCH", "/route/update", `{"project_id":"shop","route_id":"list_`+col+`","note":"science fiction","route":`+edited.JSON()+`}`, h); status != 200 {
			t.Fatalf("edit: %d %s", status, body)
		}
	}
	made("books")
	made("mags")
	runnable{id: "plain", method: "GET", path: "/plain", blocks: []string{`{"type":"RETURN","depth":0,"pairs":[],"conditions":[]}`}}.save(t, ta, h)
	up := func(route, rest string) string {
		return `{"project_id":"shop","route_id":"` + route + `"` + rest + `}`
	}
	ta.run(t, []scenario{
		{name: "at the newest version", method: "POST", path: "/route/upgrade", headers: h, body: up("list_books", `,"dry_run":true`), status: 422,
			want: []string{`"route_id":"is at version 1 of template \"lister\", its newest"`}},
		{name: "not made from a template", method: "POST", path: "/route/upgrade", headers: h, body: up("plain", `,"dry_run":true`), status: 422,
			want: []string{"was not made from a template"}},
	})
	if status, body := ta.call(t, "POST", "/route/template/create", listerTemplate(tid, true), h); status != 200 || !strings.Contains(body, `"version":2`) {
		t.Fatalf("template version 2: %d %s", status, body)
	}
	viewer := ta.newUser(t, "viewer", "VIEWER")
	if err := ta.h.store.AddMember(t.Context(), "shop", viewer.ID, store.MembershipRole(viewer.Role)); err != nil {
		t.Fatal(err)
	}
	conflict := `"conflicts":[{"block":1,"type":"RETURN","field":"pairs","label":"Fields"`
	ta.run(t, []scenario{
		{name: "the route page says a newer version is out", method: "GET", path: "/web/routes/view?project_id=shop&route_id=list_books",
			headers: browser(ta.signIn(t, "author")), status: 200, want: []string{"Version 2 of the template is out.", "/web/routes/upgrade?project_id=shop&amp;route_id=list_books"}},
		{name: "the upgrade page asks the new variable", method: "GET", path: "/web/routes/upgrade?project_id=shop&route_id=list_books",
			headers: browser(ta.signIn(t, "author")), status: 200,
			want:     []string{"Upgrade from its template", `name="value:label"`, "required", "Give the new variables their values, then Preview."},
			unwanted: []string{"Error:", "Upgrade to version 2"}},
		{name: "the upgrade page's preview goes on at the open conflict", method: "GET", path: "/web/routes/upgrade?project_id=shop&route_id=list_books&version=2&value%3Alabel=Shop",
			headers: browser(ta.signIn(t, "author")), status: 200,
			want: []string{"What the template changed (version 1 → 2)", "What this route's own edits changed", `value="template" required autofocus`, "open conflicts keep this route's side"}},
		{name: "a chosen side shows in the result", method: "GET", path: "/web/routes/upgrade?project_id=shop&route_id=list_books&version=2&value%3Alabel=Shop&resolve%3A1%3Apairs=template",
			headers: browser(ta.signIn(t, "author")), status: 200,
			want: []string{`value="template" required checked`, "Upgrade to version 2</button>"}, unwanted: []string{"open conflicts keep"}},
		{name: "a viewer has no upgrade page", method: "GET", path: "/web/routes/upgrade?project_id=shop&route_id=list_books", headers: as(ta.token(t, viewer)), status: 403},
		{name: "the new variable is asked", method: "POST", path: "/route/upgrade", headers: h, body: up("list_books", `,"dry_run":true`), status: 422,
			want: []string{`"values.label":"has no value and the variable has no default"`}},
		{name: "a variable the template does not have", method: "POST", path: "/route/upgrade", headers: h,
			body: up("list_books", `,"values":{"label":"Shop","nope":"x"},"dry_run":true`), status: 422, want: []string{`"values.nope":"is not a variable of this template"`}},
		{name: "the preview", method: "POST", path: "/route/upgrade", headers: h, body: up("list_books", `,"values":{"label":"Shop"},"dry_run":true`), status: 200,
			want: []string{`"from_version":1`, `"to_version":2`, `"new_variables":[{"key":"label"`, `"values":{"col":"books","label":"Shop"}`,
				`"field":"route_path","label":"Path","old":"\"/books\"","new":"\"/books/list\""`, `"kind":"added","from":-1,"to":1,"type":"FILTER"`,
				conflict, `"route_block":2,"template_block":1`, `"unresolved":1`, `"applied":false`, `"route_path":"/books/list"`}},
		{name: "a conflict without a side", method: "POST", path: "/route/upgrade", headers: h, body: up("list_books", `,"values":{"label":"Shop"}`), status: 409,
			want: []string{"1 of the upgrade's conflicts have no side chosen"}},
		{name: "a resolution naming no conflict", method: "POST", path: "/route/upgrade", headers: h,
			body: up("list_books", `,"values":{"label":"Shop"},"resolutions":[{"block":0,"field":"ref_col","take":"route"}]`), status: 422,
			want: []string{`"resolutions[0]":"names no conflict of this upgrade (block 0, field ref_col)"`}},
		{name: "a side that is neither", method: "POST", path: "/route/upgrade", headers: h,
			body: up("list_books", `,"values":{"label":"Shop"},"resolutions":[{"block":1,"field":"pairs","take":"both"}]`), status: 422},
		{name: "a stale preview", method: "POST", path: "/route/upgrade", headers: h,
			body: up("list_books", `,"version":1,"values":{"label":"Shop"},"resolutions":[{"block":1,"field":"pairs","take":"route"}]`), status: 409,
			want: []string{"changed since the preview (version 1, now 2)"}},
		{name: "a viewer may not upgrade", method: "POST", path: "/route/upgrade", headers: as(ta.token(t, viewer)),
			body: up("list_books", `,"values":{"label":"Shop"},"dry_run":true`), status: 403},
		{name: "a route that does not exist", method: "POST", path: "/route/upgrade", headers: h, body: up("nope", `,"dry_run":true`), status: 404},
	})
	// Nothing above changed either route.
	for _, r := range []string{"list_books", "list_mags"} {
		if _, body := ta.call(t, "GET", "/route/fetch/one?project_id=shop&route_id="+r, "", h); !strings.Contains(body, `"version":2`) || strings.Contains(body, "/list") {
			t.Fatalf("after refusals, %s: %s", r, body)
		}
	}

	// The route's side: its RETURN stays; the path is the template's; the
	// FILTER it added stays.
	status, body = ta.call(t, "POST", "/route/upgrade", up("list_books", `,"version":2,"values":{"label":"Shop"},"resolutions":[{"block":1,"field":"pairs","take":"route"}]`), admin)
	if status != 200 || !strings.Contains(body, `"applied":true`) || !strings.Contains(body, `"version":3`) {
		t.Fatalf("upgrade, the route's side: %d %s", status, body)
	}
	_, body = ta.call(t, "GET", "/route/fetch/one?project_id=shop&route_id=list_books", "", h)
	for _, want := range []string{`"route_path":"/books/list"`, `"type":"FILTER"`, `{"id":"items","data":` + ref("sf"), `"template":{"id":`, `"version":2,"values":{"col":"books","label":"Shop"}}`} {
		if !strings.Contains(body, want) {
			t.Errorf("after the upgrade the route lacks %s: %s", want, body)
		}
	}
	if strings.Contains(body, `"from"`) {
		t.Errorf("the template's pair came in although the route's side was chosen: %s", body)
	}
	if _, body := ta.call(t, "GET", "/route/versions?project_id=shop&route_id=list_books&limit=1", "", h); !strings.Contains(body, `"note":"Upgraded to version 2 of template lister"`) {
		t.Errorf("the version's note: %s", body)
	}
	// The route answers at its new path.
	if status, body := ta.call(t, "GET", "/x/shop/books/list", "", nil); status != 200 {
		t.Errorf("the upgraded route: %d %s", status, body)
	}

	// The template's side, by form: its RETURN comes, the FILTER stays.
	form := "project_id=shop&route_id=list_mags&value%3Alabel=Mags&resolve%3A1%3Apairs=template&note=by+form"
	status, body = ta.call(t, "POST", "/route/upgrade", form, merge(h, map[string]string{"Content-Type": "application/x-www-form-urlencoded"}))
	if status != 200 {
		t.Fatalf("upgrade, the template's side: %d %s", status, body)
	}
	_, body = ta.call(t, "GET", "/route/fetch/one?project_id=shop&route_id=list_mags", "", h)
	for _, want := range []string{`"route_path":"/mags/list"`, `"type":"FILTER"`, `{"id":"from","data":` + lit("STRING", "Mags"), `{"id":"items","data":` + ref("rows")} {
		if !strings.Contains(body, want) {
			t.Errorf("after the upgrade by form the route lacks %s: %s", want, body)
		}
	}

	// Restoring the version before the upgrade puts the route back on
	// version 1 of the template: it can be upgraded again.
	if status, body := ta.call(t, "POST", "/route/restore", `{"project_id":"shop","route_id":"list_mags","version":2}`, h); status != 200 || !strings.Contains(body, `"version":1,"values":{"col":"mags"}`) {
		t.Fatalf("restore: %d %s", status, body)
	}
	if status, body := ta.call(t, "POST", "/route/upgrade", up("list_mags", `,"values":{"label":"Mags"},"dry_run":true`), h); status != 200 || !strings.Contains(body, `"from_version":1`) {
		t.Fatalf("upgrade after the restore: %d %s", status, body)
	}
}

// TestUpgradesAtOnce: eight clients upgrade one route at the same moment:
// one makes the new version, the others are told it is at the newest; the
// route gains exactly one version.
func TestUpgradesAtOnce(t *testing.T) {
	t.Parallel()
	ta, h := templateApp(t)
	status, body := ta.call(t, "POST", "/route/template/create", listerTemplate(0, false), h)
	if status != 201 {
		t.Fatalf("template: %d %s", status, body)
	}
	tid := dataID(t, body)
	_, body = ta.call(t, "POST", "/route/template/apply", fmt.Sprintf(`{"id":%d,"project_id":"shop","values":{"col":"books"}}`, tid), h)
	var env struct{ Data json.RawMessage }
	_ = json.Unmarshal([]byte(body), &env)
	if status, body := ta.call(t, "POST", "/route/create", `{"project_id":"shop","route":`+string(env.Data)+`}`, h); status != 201 {
		t.Fatalf("create: %d %s", status, body)
	}
	if status, body := ta.call(t, "POST", "/route/template/create", listerTemplate(tid, true), h); status != 200 {
		t.Fatalf("version 2: %d %s", status, body)
	}
	const clients = 8
	statuses := make([]int, clients)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			statuses[i], _ = ta.call(t, "POST", "/route/upgrade", `{"project_id":"shop","route_id":"list_books","values":{"label":"Shop"}}`, h)
		}()
	}
	close(start)
	wg.Wait()
	ok := 0
	for _, s := range statuses {
		switch s {
		case 200:
			ok++
		case 422:
		default:
			t.Errorf("an upgrade answered %d", s)
		}
	}
	if ok != 1 {
		t.Errorf("%d upgrades succeeded, want 1 (%v)", ok, statuses)
	}
	var versions int
	if err := ta.pool.QueryRow(t.Context(), "SELECT count(*) FROM route_versions WHERE project_id = 'shop' AND route_id = 'list_books'").Scan(&versions); err != nil || versions != 2 {
		t.Errorf("versions %d (%v), want 2", versions, err)
	}
}
