package handlers

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"stencil/authoring"
	"stencil/store"
)

// TestRouteVersionsAPI: saves keep versions with their notes; one version
// reads whole; restore makes a new version equal to an old one, checked as
// saving is; a kept version runs dry; bad input changes nothing.
func TestRouteVersionsAPI(t *testing.T) {
	t.Parallel()
	ta, h, admin := mailApp(t)
	viewer := ta.newUser(t, "viewer", store.RoleViewer)
	if err := ta.h.store.AddMember(context.Background(), "shop", viewer.ID, store.MembershipRole(viewer.Role)); err != nil {
		t.Fatal(err)
	}
	v := as(ta.token(t, viewer))
	first := runnable{id: "books", method: "GET", path: "/books", blocks: []string{fetchBooks,
		`{"type":"RETURN","depth":0,"pairs":` + pairsOf("rows", ref("rows")) + `,"conditions":[]}`}}
	if status, body := ta.call(t, "POST", "/route/create", `{"project_id":"shop","note":"the first cut","route":`+first.JSON()+`}`, h); status != 201 || !strings.Contains(body, `"version":1`) {
		t.Fatalf("create: %d %s", status, body)
	}
	second := first
	second.blocks = []string{fetchBooks, sfOnly, `{"type":"RETURN","depth":0,"pairs":` + pairsOf("rows", ref("sf")) + `,"conditions":[]}`}
	update := func(r runnable, note string, headers map[string]string) (int, string) {
		return ta.call(t, "PATCH", "/route/update", `{"project_id":"shop","route_id":"books","note":`+authoring.Quote(note)+`,"route":`+r.JSON()+`}`, headers)
	}
	if status, body := update(second, "science fiction only", h); status != 200 || !strings.Contains(body, `"version":2`) {
		t.Fatalf("update: %d %s", status, body)
	}
	withVault := first
	withVault.blocks = append([]string{`{"type":"VAULT","depth":0,"local_name":"k","key":"API_KEY"}`}, first.blocks...)
	if status, body := update(withVault, "", admin); status != 200 {
		t.Fatalf("update by the admin: %d %s", status, body)
	}
	// Another route takes the path version 1 had, under another method.
	other := runnable{id: "other", method: "POST", path: "/books", blocks: first.blocks}
	other.save(t, ta, h)

	ta.run(t, []scenario{
		{name: "members list the versions, newest first", method: "GET", path: "/route/versions?project_id=shop&route_id=books", headers: v, status: 200,
			want: []string{`"amount":3`, `"version":3,"note":"","created_by":`, `"created_by_name":"boss"`, `"version":2,"note":"science fiction only"`, `"note":"the first cut"`, `"blocks":3`}},
		{name: "a page of one", method: "GET", path: "/route/versions?project_id=shop&route_id=books&limit=1&offset=1", headers: v, status: 200,
			want: []string{`"amount":3`, `"version":2`}, unwanted: []string{`"version":3`, `"version":1`}},
		{name: "the list has no documents", method: "GET", path: "/route/versions?project_id=shop&route_id=books", headers: v, status: 200,
			unwanted: []string{`"flow"`}},
		{name: "a route that does not exist", method: "GET", path: "/route/versions?project_id=shop&route_id=nope", headers: v, status: 404,
			want: []string{`route \"nope\" not found in project \"shop\"`}},
		{name: "no route_id", method: "GET", path: "/route/versions?project_id=shop", headers: v, status: 400},
		{name: "one version whole", method: "GET", path: "/route/version?project_id=shop&route_id=books&version=2", headers: v, status: 200,
			want: []string{`"version":2`, `"route":{"project_id":"shop","route_id":"books"`, `"type":"FILTER"`}},
		{name: "a version the route does not have", method: "GET", path: "/route/version?project_id=shop&route_id=books&version=9", headers: v, status: 404,
			want: []string{`route \"books\" has no version 9`}},
		{name: "version 0", method: "GET", path: "/route/version?project_id=shop&route_id=books&version=0", headers: v, status: 422},
		{name: "a version that is no number", method: "GET", path: "/route/version?project_id=shop&route_id=books&version=two", headers: v, status: 400, want: []string{"version must be an integer"}},
		{name: "a viewer may not restore", method: "POST", path: "/route/restore", headers: v, body: `{"project_id":"shop","route_id":"books","version":2}`, status: 403},
		{name: "an author may not restore a version holding a VAULT block", method: "POST", path: "/route/restore", headers: h,
			body: `{"project_id":"shop","route_id":"books","version":3}`, status: 403, want: []string{"(VAULT) reads the vault"}},
		{name: "a note with a control character", method: "POST", path: "/route/restore", headers: h,
			body: `{"project_id":"shop","route_id":"books","version":2,"note":"a\u0007b"}`, status: 422, want: []string{`"note":"must not contain control characters"`}},
		{name: "a version that does not exist", method: "POST", path: "/route/restore", headers: h,
			body: `{"project_id":"shop","route_id":"books","version":7}`, status: 404},
		{name: "a kept version runs dry", method: "POST", path: "/route/run", headers: h,
			body: `{"project_id":"shop","route_id":"books","version":1}`, status: 200, want: []string{`"dry_run":true`, `"title":"Emma"`}},
		{name: "the live version filters", method: "POST", path: "/route/run", headers: admin,
			body: `{"project_id":"shop","route_id":"books","version":2,"dry_run":false}`, status: 200, want: []string{`"dry_run":true`}, unwanted: []string{`"title":"Emma"`}},
		{name: "a version with a draft", method: "POST", path: "/route/run", headers: h,
			body: `{"project_id":"shop","route":` + first.JSON() + `,"version":1}`, status: 422, want: []string{`"version":"must be left out with route`}},
	})
	// Nothing above made a version.
	if status, body := ta.call(t, "GET", "/route/versions?project_id=shop&route_id=books", "", v); !strings.Contains(body, `"amount":3`) {
		t.Fatalf("after refusals: %d %s", status, body)
	}

	// Restore version 2: version 4, equal to it, noted.
	status, body := ta.call(t, "POST", "/route/restore", `{"project_id":"shop","route_id":"books","version":2}`, h)
	if status != 200 || !strings.Contains(body, `"version":4`) || !strings.Contains(body, `"type":"FILTER"`) || strings.Contains(body, `"type":"VAULT"`) {
		t.Fatalf("restore: %d %s", status, body)
	}
	_, v2 := ta.call(t, "GET", "/route/version?project_id=shop&route_id=books&version=2", "", v)
	_, v4 := ta.call(t, "GET", "/route/version?project_id=shop&route_id=books&version=4", "", v)
	if document(t, v2) != document(t, v4) || !strings.Contains(v4, `"note":"Restored version 2"`) {
		t.Fatalf("version 4 is not version 2:\n%s\n%s", v2, v4)
	}
	// The live route answers as version 2 did, at once.
	if status, body := ta.call(t, "GET", "/x/shop/books", "", nil); status != 200 || strings.Contains(body, "Emma") {
		t.Fatalf("the live route after the restore: %d %s", status, body)
	}
	// Version 1's GET /books is free; make another route take it, then
	// restoring version 1 is refused and changes nothing.
	other.method = "GET"
	other.path = "/books"
	if status, body := ta.call(t, "PATCH", "/route/update", `{"project_id":"shop","route_id":"other","route":`+runnable{id: "other", method: "GET", path: "/all", blocks: first.blocks}.JSON()+`}`, h); status != 200 {
		t.Fatalf("%d %s", status, body)
	}
	if status, body := ta.call(t, "PATCH", "/route/update", `{"project_id":"shop","route_id":"books","route":`+runnable{id: "books", method: "GET", path: "/b", blocks: first.blocks}.JSON()+`}`, h); status != 200 {
		t.Fatalf("%d %s", status, body)
	}
	if status, body := ta.call(t, "PATCH", "/route/update", `{"project_id":"shop","route_id":"other","route":`+runnable{id: "other", method: "GET", path: "/books", blocks: first.blocks}.JSON()+`}`, h); status != 200 {
		t.Fatalf("%d %s", status, body)
	}
	if status, body := ta.call(t, "POST", "/route/restore", `{"project_id":"shop","route_id":"books","version":1}`, h); status != 422 {
		t.Fatalf("restore onto a taken path: %d %s", status, body)
	}
	if _, body := ta.call(t, "GET", "/route/versions?project_id=shop&route_id=books&limit=1", "", v); !strings.Contains(body, `"amount":5`) {
		t.Fatalf("a refused restore made a version: %s", body)
	}
}

// document cuts the route document out of a version's answer.
func document(t *testing.T, body string) string {
	t.Helper()
	i := strings.Index(body, `"route":`)
	if i < 0 {
		t.Fatalf("no route in %s", body)
	}
	return body[i:]
}

// TestRestoresAtOnce: sixteen restores of one route at once make sixteen
// versions, numbered without a gap, through HTTP on real PostgreSQL.
func TestRestoresAtOnce(t *testing.T) {
	t.Parallel()
	ta, h := runApp(t)
	r := runnable{id: "books", method: "GET", path: "/books", blocks: []string{fetchBooks}}
	r.save(t, ta, h)
	r.blocks = append(r.blocks, sfOnly)
	if status, body := ta.call(t, "PATCH", "/route/update", `{"project_id":"shop","route_id":"books","route":`+r.JSON()+`}`, h); status != 200 {
		t.Fatalf("%d %s", status, body)
	}
	var wg sync.WaitGroup
	statuses := make(chan int, 16)
	for range 16 {
		wg.Go(func() {
			status, _ := ta.call(t, "POST", "/route/restore", `{"project_id":"shop","route_id":"books","version":1}`, h)
			statuses <- status
		})
	}
	wg.Wait()
	close(statuses)
	for s := range statuses {
		if s != 200 {
			t.Fatalf("a restore answered %d", s)
		}
	}
	list, total, err := ta.h.store.RouteVersions(context.Background(), "shop", "books", store.Page{Limit: 100})
	if err != nil || total != 18 {
		t.Fatalf("%d versions, %v", total, err)
	}
	for i, v := range list {
		if v.Version != int64(18-i) {
			t.Fatalf("version %d at place %d", v.Version, i)
		}
	}
}

// TestHistoryPage: the route's History compares the newest version with
// the one before by default, block by block and as a JSON diff; a version
// that does not exist is named.
func TestHistoryPage(t *testing.T) {
	t.Parallel()
	ta, h := runApp(t)
	r := runnable{id: "books", method: "GET", path: "/books", blocks: []string{fetchBooks}}
	r.save(t, ta, h)
	r.blocks = append(r.blocks, sfOnly)
	if status, body := ta.call(t, "PATCH", "/route/update", `{"project_id":"shop","route_id":"books","note":"sf only","route":`+r.JSON()+`}`, h); status != 200 {
		t.Fatalf("%d %s", status, body)
	}
	b := browser(ta.signIn(t, "author"))
	ta.run(t, []scenario{
		{name: "the newest against the one before", method: "GET", path: "/web/routes/history?project_id=shop&route_id=books", headers: b, status: 200,
			want: []string{"From version 1 to version 2", `data-kind="added"`, "FILTER", "sf only", `text-emerald-900">&#43;        &#34;type&#34;: &#34;FILTER&#34;,`, "Restore version 1", "live"}},
		{name: "any two", method: "GET", path: "/web/routes/history?project_id=shop&route_id=books&from=2&to=1", headers: b, status: 200,
			want: []string{"From version 2 to version 1", `data-kind="removed"`}},
		{name: "a version that does not exist", method: "GET", path: "/web/routes/history?project_id=shop&route_id=books&from=5", headers: b, status: 422,
			want: []string{"version 5 does not exist"}},
		{name: "the route page links its history", method: "GET", path: "/web/routes/view?project_id=shop&route_id=books", headers: b, status: 200,
			want: []string{`href="/web/routes/history?project_id=shop&amp;route_id=books"`, "(version 2)"}},
		{name: "the playground tries a kept version", method: "GET", path: "/web/routes/try?project_id=shop&route_id=books&version=1", headers: b, status: 200,
			want: []string{"You are trying version 1", `data-version="1"`}},
	})
}

// TestTemplateVersions: template saves keep versions with notes; one
// version reads whole; restore makes a new version equal to an old one; a
// route made from a template records the version applied and the values.
func TestTemplateVersions(t *testing.T) {
	t.Parallel()
	ta, h := templateApp(t)
	shop := "shop"
	status, body := ta.call(t, "POST", "/route/template/create", strings.Replace(fetchByID("fetch_by_id", &shop), `{"name"`, `{"note":"first","name"`, 1), h)
	if status != 201 || !strings.Contains(body, `"version":1`) {
		t.Fatalf("create: %d %s", status, body)
	}
	id := dataID(t, body)
	edited := strings.Replace(fetchByID("fetch_by_id", &shop), `{"name"`, fmt.Sprintf(`{"id":%d,"note":"renamed the list","version":7,"name"`, id), 1)
	edited = strings.Replace(edited, `"local_name":"items"`, `"local_name":"found"`, 1)
	edited = strings.ReplaceAll(edited, `"data":"items"`, `"data":"found"`)
	if status, body := ta.call(t, "POST", "/route/template/create", edited, h); status != 200 || !strings.Contains(body, `"version":2`) {
		t.Fatalf("edit: %d %s", status, body)
	}
	q := fmt.Sprint(id)
	ta.run(t, []scenario{
		{name: "the versions, newest first", method: "GET", path: "/route/template/versions?id=" + q, headers: h, status: 200,
			want: []string{`"amount":2`, `"version":2,"note":"renamed the list"`, `"version":1,"note":"first"`, `"created_by_name":"author"`}},
		{name: "one kept version whole", method: "GET", path: "/route/template/fetch/one?id=" + q + "&version=1", headers: h, status: 200,
			want: []string{`"version":1`, `"local_name":"items"`}},
		{name: "a version it does not have", method: "GET", path: "/route/template/fetch/one?id=" + q + "&version=3", headers: h, status: 404,
			want: []string{"has no version 3"}},
		{name: "a note that is no string", method: "POST", path: "/route/template/create", headers: h,
			body: strings.Replace(edited, `"note":"renamed the list"`, `"note":5`, 1), status: 422, want: []string{`"note":"must be a string"`}},
		{name: "a template that does not exist", method: "GET", path: "/route/template/versions?id=999", headers: h, status: 404},
		{name: "apply records the version and the values", method: "POST", path: "/route/template/apply", headers: h,
			body: `{"id":` + q + `,"project_id":"shop","values":{"id_param":"pid"}}`, status: 200,
			want: []string{`"template":{"id":` + q + `,"name":"fetch_by_id","version":2,"values":{"id_param":"pid"}}`}},
		{name: "a version from the future", method: "POST", path: "/route/create", headers: h,
			body:   `{"project_id":"shop","route":` + strings.Replace(runnable{id: "r", method: "GET", path: "/r"}.JSON(), `"flow"`, `"template":{"id":`+q+`,"name":"x","version":9},"flow"`, 1) + `}`,
			status: 422, want: []string{`"route.template.version":"must be a version of template`}},
	})
	status, body = ta.call(t, "POST", "/route/template/restore", `{"id":`+q+`,"version":1}`, h)
	if status != 200 || !strings.Contains(body, `"version":3`) || !strings.Contains(body, `"local_name":"items"`) {
		t.Fatalf("restore: %d %s", status, body)
	}
	if _, body := ta.call(t, "GET", "/route/template/versions?id="+q+"&limit=1", "", h); !strings.Contains(body, `"note":"Restored version 1"`) {
		t.Fatalf("after the restore: %s", body)
	}
	b := browser(ta.signIn(t, "author"))
	ta.run(t, []scenario{
		{name: "the template's history page", method: "GET", path: "/web/routes/templates/history?id=" + q, headers: b, status: 200,
			want: []string{"From version 2 to version 3", "Restore version 2", `data-kind="changed"`}},
		{name: "the template page links it", method: "GET", path: "/web/routes/templates/view?id=" + q, headers: b, status: 200,
			want: []string{"Version 3", `/web/routes/templates/history?id=` + q}},
	})
}
