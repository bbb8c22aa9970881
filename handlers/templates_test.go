package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"

	"stencil/flow"
	"stencil/store"
)

// fetchByID is a small template: one variable with a default, one without.
func fetchByID(name string, project *string) string {
	p := "null"
	if project != nil {
		p = fmt.Sprintf("%q", *project)
	}
	return fmt.Sprintf(`{"name":%q,"description":"Fetch one item","project_id":%s,"method":"GET",
		"route_id":"fetch_{collection}","route_path":"/{collection}/fetch",
		"auth_jwt":{"active":true,"field":"uid","ref_col":"users"},
		"params":{"delimiter":"&","pairs":[{"id":"{id_param}","bdtype":"INTEGER"}]},"body":[],
		"variables":[{"key":"collection","description":"Collection to read","default_value":"posts"},
		             {"key":"id_param","description":"Name of the id parameter"}],
		"flow":{"blocks":[
		  {"type":"FETCH","depth":0,"local_name":"items","ref_col":"{collection}"},
		  {"type":"CONDITION","depth":0,"conditions":[{"left":{"ref_var":true,"rtype":"ARRAY","data":"items"},"right":{"ref_var":false,"rtype":"INTEGER","data":"0"},"condition_type":"GREATER_THAN","not":true,"next":"NONE"}],"action":"FAIL","fail":{"status":404,"message":"no {collection} found"}},
		  {"type":"RETURN","depth":0,"pairs":[{"id":"{collection}","data":{"ref_var":true,"rtype":"ARRAY","data":"items"}}],"conditions":[]}]}}`, name, p)
}

func TestTemplatePermissionTable(t *testing.T) {
	t.Parallel()
	authors := func(ok int) map[string]int { return byRole(ok, ok, ok, 403) }
	all := func(s int) map[string]int { return byRole(s, s, s, s) }
	none := all(403)
	runPermissionTable(t, []permCase{
		{name: "create global", anon: 401, member: authors(201), request: func(f cellFixture) (string, string, string) {
			return "POST", "/route/template/create", fetchByID(fmt.Sprintf("g_%d", f.n), nil)
		}},
		{name: "create in project", anon: 401, member: authors(201), nonMember: byRole(403, 403, 403, 403), request: func(f cellFixture) (string, string, string) {
			return "POST", "/route/template/create", fetchByID("t", &f.project)
		}},
		{name: "list", anon: 401, member: all(200), request: func(cellFixture) (string, string, string) {
			return "GET", "/route/template/fetch", ""
		}},
		{name: "list of a project", anon: 401, member: all(200), nonMember: none, request: func(f cellFixture) (string, string, string) {
			return "GET", "/route/template/fetch?project_id=" + f.project, ""
		}},
		{name: "one of a project", anon: 401, member: all(200), nonMember: none, request: func(f cellFixture) (string, string, string) {
			return "GET", fmt.Sprintf("/route/template/fetch/one?id=%d", f.template), ""
		}},
		{name: "one global", anon: 401, member: all(200), request: func(f cellFixture) (string, string, string) {
			return "GET", fmt.Sprintf("/route/template/fetch/one?id=%d", f.global), ""
		}},
		{name: "delete of a project", anon: 401, member: authors(200), nonMember: none, request: func(f cellFixture) (string, string, string) {
			return "DELETE", fmt.Sprintf("/route/template/delete?id=%d", f.template), ""
		}},
		{name: "apply", anon: 401, member: authors(200), nonMember: none, request: func(f cellFixture) (string, string, string) {
			return "POST", "/route/template/apply", fmt.Sprintf(`{"id":%d,"project_id":%q,"values":{"id_param":"id"}}`, f.template, f.project)
		}},
		{name: "route create", anon: 401, member: authors(201), nonMember: none, request: func(f cellFixture) (string, string, string) {
			return "POST", "/route/create", fmt.Sprintf(`{"project_id":%q,"route":%s}`, f.project, plainRoute("new_route"))
		}},
		{name: "route list", anon: 401, member: all(200), nonMember: none, request: func(f cellFixture) (string, string, string) {
			return "GET", "/route/fetch?project_id=" + f.project, ""
		}},
		{name: "route one", anon: 401, member: all(200), nonMember: none, request: func(f cellFixture) (string, string, string) {
			return "GET", "/route/fetch/one?project_id=" + f.project + "&route_id=existing", ""
		}},
		{name: "route update", anon: 401, member: authors(200), nonMember: none, request: func(f cellFixture) (string, string, string) {
			return "PATCH", "/route/update", fmt.Sprintf(`{"project_id":%q,"route_id":"existing","route":%s}`, f.project, plainRoute("renamed"))
		}},
		{name: "route delete", anon: 401, member: authors(200), nonMember: none, request: func(f cellFixture) (string, string, string) {
			return "DELETE", "/route/delete?project_id=" + f.project + "&route_id=existing", ""
		}},
	})
}

// plainRoute is a small valid route document.
func plainRoute(id string) string {
	return fmt.Sprintf(`{"route_id":%q,"route_path":"/%s","method":"GET","auth_jwt":{"active":false,"field":"","ref_col":""},
		"params":{"delimiter":"&","pairs":[]},"body":[],"flow":{"blocks":[{"type":"RETURN","depth":0,"pairs":[],"conditions":[]}]}}`, id, id)
}

// templateApp has project "shop" with member "author" (AUTHOR).
func templateApp(t *testing.T) (*testApp, map[string]string) {
	t.Helper()
	ta := newTestApp(t)
	author := ta.newUser(t, "author", store.RoleAuthor)
	p := store.Project{ID: "shop", Name: "Shop", APIPath: "/shop"}
	if err := ta.h.store.CreateProject(context.Background(), &p, author.ID); err != nil {
		t.Fatal(err)
	}
	return ta, as(ta.token(t, author))
}

func dataID(t *testing.T, body string) int64 {
	t.Helper()
	var env struct{ Data struct{ ID int64 } }
	if err := json.Unmarshal([]byte(body), &env); err != nil || env.Data.ID == 0 {
		t.Fatalf("no id in %s", body)
	}
	return env.Data.ID
}

func TestTemplateAPI(t *testing.T) {
	t.Parallel()
	ta, h := templateApp(t)
	shop := "shop"
	status, body := ta.call(t, "POST", "/route/template/create", fetchByID("fetch_by_id", nil), h)
	if status != 201 || !strings.Contains(body, `"warnings":[]`) || !strings.Contains(body, `"project_id":null`) {
		t.Fatalf("create: %d %s", status, body)
	}
	global := dataID(t, body)
	status, body = ta.call(t, "POST", "/route/template/create", fetchByID("fetch_by_id", &shop), h)
	if status != 201 {
		t.Fatalf("same name in a project scope: %d %s", status, body)
	}
	local := dataID(t, body)
	ta.run(t, []scenario{
		{name: "name taken globally", method: "POST", path: "/route/template/create", headers: h, body: fetchByID("fetch_by_id", nil), status: 422,
			want: []string{`"name":"is already taken in this scope"`}},
		{name: "lint warnings", method: "POST", path: "/route/template/create", headers: h,
			body: strings.Replace(fetchByID("linted", nil), `"local_name":"items"`, `"local_name":"{undeclared}"`, 1), status: 201,
			want: []string{`"warnings":["placeholder {undeclared} is used but not declared (flow.blocks[0].local_name)"]`}},
		{name: "fault named by path", method: "POST", path: "/route/template/create", headers: h,
			body: strings.Replace(fetchByID("broken", nil), `"ref_col":"{collection}"`, `"ref_col":""`, 1), status: 422,
			want: []string{`"message":"Error: flow.blocks[0].ref_col is required"`, `"flow.blocks[0].ref_col":"is required"`}},
		{name: "unknown block field", method: "POST", path: "/route/template/create", headers: h,
			body: strings.Replace(fetchByID("broken", nil), `"local_name":"items"`, `"local_name":"items","pairs":[]`, 1), status: 422,
			want: []string{`"flow.blocks[0].pairs":"is not a field of a FETCH block"`}},
		{name: "not JSON", method: "POST", path: "/route/template/create", headers: h, body: `{"name":`, status: 400},
		{name: "missing description", method: "POST", path: "/route/template/create", headers: h,
			body: strings.Replace(fetchByID("nodesc", nil), `"description":"Fetch one item",`, ``, 1), status: 422, want: []string{`"description":"is required"`}},
		{name: "unknown project", method: "POST", path: "/route/template/create", headers: h, body: fetchByID("x", ptr("nope")), status: 404},
		{name: "update by id", method: "POST", path: "/route/template/create", headers: h,
			body: strings.Replace(fetchByID("renamed", nil), `{"name"`, fmt.Sprintf(`{"id":%d,"name"`, global), 1), status: 200,
			want: []string{`"name":"renamed"`, fmt.Sprintf(`"id":%d`, global)}},
		{name: "update unknown id", method: "POST", path: "/route/template/create", headers: h,
			body: strings.Replace(fetchByID("x", nil), `{"name"`, `{"id":99999,"name"`, 1), status: 404},
		{name: "list of the project and global", method: "GET", path: "/route/template/fetch?project_id=shop", headers: h, status: 200,
			want: []string{`"amount":3`}},
		{name: "list without project_id: global and my projects'", method: "GET", path: "/route/template/fetch", headers: h, status: 200,
			want: []string{`"amount":3`, `"project_id":"shop"`, `"project_id":null`}},
		{name: "a non-member's list without project_id: global only", method: "GET", path: "/route/template/fetch", headers: as(ta.token(t, ta.root)), status: 200,
			want: []string{`"amount":2`}, unwanted: []string{`"project_id":"shop"`}},
		{name: "list filtered", method: "GET", path: "/route/template/fetch?filter=LINT", headers: h, status: 200, want: []string{`"amount":1`, `"name":"linted"`}},
		{name: "one by name, global", method: "GET", path: "/route/template/fetch/one?name=renamed", headers: h, status: 200, want: []string{`"project_id":null`}},
		{name: "one by name in a project", method: "GET", path: "/route/template/fetch/one?name=fetch_by_id&project_id=shop", headers: h, status: 200,
			want: []string{`"project_id":"shop"`}},
		{name: "one by name, no global of that name", method: "GET", path: "/route/template/fetch/one?name=fetch_by_id", headers: h, status: 404},
		{name: "one without id or name", method: "GET", path: "/route/template/fetch/one", headers: h, status: 400},
		{name: "apply", method: "POST", path: "/route/template/apply", headers: h,
			body: fmt.Sprintf(`{"id":%d,"project_id":"shop","values":{"id_param":"item_id"}}`, local), status: 200,
			want: []string{`"route_id":"fetch_posts"`, `"route_path":"/posts/fetch"`, `"id":"item_id"`, `"ref_col":"posts"`, `"message":"no posts found"`,
				`"template":{"id":` + fmt.Sprint(local) + `,"name":"fetch_by_id","version":1,"values":{"id_param":"item_id"}}`, `"project_id":"shop"`, `"data":"items"`}},
		{name: "apply, missing value", method: "POST", path: "/route/template/apply", headers: h,
			body: fmt.Sprintf(`{"id":%d,"project_id":"shop","values":{}}`, local), status: 422,
			want: []string{`"values.id_param":"has no value and the variable has no default"`}},
		{name: "apply, unknown key", method: "POST", path: "/route/template/apply", headers: h,
			body: fmt.Sprintf(`{"id":%d,"project_id":"shop","values":{"id_param":"x","color":"red"}}`, local), status: 422,
			want: []string{`"values.color":"is not a variable of this template"`}},
		{name: "apply, value not a string", method: "POST", path: "/route/template/apply", headers: h,
			body: fmt.Sprintf(`{"id":%d,"project_id":"shop","values":{"id_param":1}}`, local), status: 400},
		{name: "apply, value with quotes and braces", method: "POST", path: "/route/template/apply", headers: h,
			body: fmt.Sprintf(`{"id":%d,"project_id":"shop","values":{"id_param":"a\"}{collection}\\"}}`, local), status: 200,
			want: []string{`"id":"a\"}{collection}\\"`}},
		{name: "apply, unknown template", method: "POST", path: "/route/template/apply", headers: h, body: `{"id":99999,"project_id":"shop","values":{}}`, status: 404},
		{name: "apply, unknown project", method: "POST", path: "/route/template/apply", headers: h, body: fmt.Sprintf(`{"id":%d,"project_id":"nope"}`, local), status: 404},
		{name: "delete", method: "DELETE", path: fmt.Sprintf("/route/template/delete?id=%d", global), headers: h, status: 200},
		{name: "delete again", method: "DELETE", path: fmt.Sprintf("/route/template/delete?id=%d", global), headers: h, status: 404},
	})
}

func ptr(s string) *string { return &s }

func TestTemplateOfAnotherProjectIsNotApplied(t *testing.T) {
	t.Parallel()
	ta, h := templateApp(t)
	other := ta.newUser(t, "other", store.RoleAuthor)
	p := store.Project{ID: "blog", Name: "Blog", APIPath: "/blog"}
	if err := ta.h.store.CreateProject(context.Background(), &p, other.ID); err != nil {
		t.Fatal(err)
	}
	status, body := ta.call(t, "POST", "/route/template/create", fetchByID("blogs", ptr("blog")), as(ta.token(t, other)))
	if status != 201 {
		t.Fatal(body)
	}
	id := dataID(t, body)
	ta.expectStatus(t, "a non-member reads it", "GET", fmt.Sprintf("/route/template/fetch/one?id=%d", id), "", h, 403)
	ta.expectStatus(t, "apply it to my project", "POST", "/route/template/apply", fmt.Sprintf(`{"id":%d,"project_id":"shop","values":{"id_param":"x"}}`, id), h, 404)
	ta.expectStatus(t, "my list lacks it", "GET", "/route/template/fetch?filter=blogs", "", h, 200)
	_, list := ta.call(t, "GET", "/route/template/fetch?filter=blogs", "", h)
	if !strings.Contains(list, `"amount":0`) {
		t.Fatalf("a non-member sees another project's template: %s", list)
	}
}

// TestRouteSnapshot: a route made from a template keeps its copy when the
// template is edited and then deleted.
func TestRouteSnapshot(t *testing.T) {
	t.Parallel()
	ta, h := templateApp(t)
	_, body := ta.call(t, "POST", "/route/template/create", fetchByID("fetch_by_id", ptr("shop")), h)
	id := dataID(t, body)
	_, applied := ta.call(t, "POST", "/route/template/apply", fmt.Sprintf(`{"id":%d,"project_id":"shop","values":{"id_param":"pid"}}`, id), h)
	var env struct{ Data json.RawMessage }
	_ = json.Unmarshal([]byte(applied), &env)
	status, created := ta.call(t, "POST", "/route/create", fmt.Sprintf(`{"project_id":"shop","route":%s}`, env.Data), h)
	if status != 201 || !strings.Contains(created, fmt.Sprintf(`"template":{"id":%d,"name":"fetch_by_id","version":1,"values":{"id_param":"pid"}}`, id)) {
		t.Fatalf("create from the applied route: %d %s", status, created)
	}
	before := routeJSON(t, ta, h)
	edited := strings.Replace(fetchByID("changed_name", ptr("shop")), `{"name"`, fmt.Sprintf(`{"id":%d,"name"`, id), 1)
	edited = strings.Replace(edited, `"local_name":"items"`, `"local_name":"other"`, 1)
	if status, body := ta.call(t, "POST", "/route/template/create", edited, h); status != 200 {
		t.Fatalf("edit: %d %s", status, body)
	}
	if after := routeJSON(t, ta, h); after != before {
		t.Fatalf("editing the template changed the route:\n%s\n%s", before, after)
	}
	ta.expectStatus(t, "delete template", "DELETE", fmt.Sprintf("/route/template/delete?id=%d", id), "", h, 200)
	if after := routeJSON(t, ta, h); after != before {
		t.Fatalf("deleting the template changed the route:\n%s\n%s", before, after)
	}
}

func routeJSON(t *testing.T, ta *testApp, h map[string]string) string {
	t.Helper()
	status, body := ta.call(t, "GET", "/route/fetch/one?project_id=shop&route_id=fetch_posts", "", h)
	if status != 200 {
		t.Fatalf("route: %d %s", status, body)
	}
	var env struct {
		Data map[string]any
	}
	_ = json.Unmarshal([]byte(body), &env)
	delete(env.Data, "updated_at")
	raw, _ := json.Marshal(env.Data)
	return string(raw)
}

// runnableLiterals gives every literal operand of a route document a value
// its rtype converts, and every filter a comparison.
func runnableLiterals(t *testing.T, doc []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		t.Fatal(err)
	}
	values := map[string]string{"INTEGER": "1", "FLOAT": "1.5", "BOOLEAN": "true", "ARRAY": "[]", "OTHER": "{}", "STRING": "x"}
	var fix func(any)
	fix = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if rtype, ok := x["rtype"].(string); ok && x["ref_var"] == false {
				x["data"] = values[rtype]
			}
			if _, filter := x["right"]; filter && x["left"] == nil && x["operation_type"] != nil {
				x["operation_type"] = "EQUAL_TO"
			}
			for _, item := range x {
				fix(item)
			}
			if url, ok := x["url"].(map[string]any); ok && url["ref_var"] == false {
				url["data"] = "https://x.example.com/" // an HTTP block calls a URL
			}
		case []any:
			for _, item := range x {
				fix(item)
			}
		}
	}
	fix(v)
	out, _ := json.Marshal(v)
	return string(out)
}

func TestRouteAPI(t *testing.T) {
	t.Parallel()
	ta, h := templateApp(t)
	all, _ := os.ReadFile("../flow/testdata/all_blocks.json")
	tmpl, p := flow.DecodeTemplate(all, "")
	if len(p) > 0 {
		t.Fatal(p)
	}
	full, _ := flow.Apply(tmpl, "shop", map[string]string{"v": "x"})
	full.Template = nil
	fullJSON, _ := json.Marshal(full)
	create := func(route string) string { return fmt.Sprintf(`{"project_id":"shop","route":%s}`, route) }
	// Its literals are all "x": the save refuses those that are not text.
	// With literals that convert, an ADMIN member saves it (it reads the
	// vault).
	admin := ta.newUser(t, "admin", store.RoleAdmin)
	if err := ta.h.store.AddMember(context.Background(), "shop", admin.ID, store.MembershipRole(admin.Role)); err != nil {
		t.Fatal(err)
	}
	ta.run(t, []scenario{
		{name: "literals that do not convert", method: "POST", path: "/route/create", headers: as(ta.token(t, admin)), body: create(string(fullJSON)), status: 422,
			want: []string{`"route.flow.blocks[4].min.data":"\"x\" must be an integer`, `"route.flow.blocks[10].targets[0].value.data":"\"x\" must be true or false`}},
		{name: "every block type", method: "POST", path: "/route/create", headers: as(ta.token(t, admin)), body: create(runnableLiterals(t, fullJSON)), status: 201,
			want: []string{`"route_id":"r_x"`, `"type":"EMAIL"`, `"template":null`}},
		{name: "plain", method: "POST", path: "/route/create", headers: h, body: create(plainRoute("list_items")), status: 201},
		{name: "route_id taken", method: "POST", path: "/route/create", headers: h,
			body: create(strings.Replace(plainRoute("list_items"), `"/list_items"`, `"/other"`, 1)), status: 422,
			want: []string{`"route.route_id":"is already taken in this project"`}},
		{name: "method and path taken", method: "POST", path: "/route/create", headers: h,
			body: create(strings.Replace(plainRoute("other_id"), `"/other_id"`, `"/list_items"`, 1)), status: 422,
			want: []string{`"route.route_path":"is already used with this method by another route"`}},
		{name: "bad route_id", method: "POST", path: "/route/create", headers: h, body: create(plainRoute("has space")), status: 422,
			want: []string{`"route.route_id":"must be 1–100 letters`}},
		{name: "body on GET", method: "POST", path: "/route/create", headers: h,
			body: create(strings.Replace(plainRoute("b"), `"body":[]`, `"body":[{"id":"x","bdtype":"STRING"}]`, 1)), status: 422,
			want: []string{`"route.body":"is only for POST, PUT and PATCH"`}},
		{name: "block fault by path", method: "POST", path: "/route/create", headers: h,
			body:   create(strings.Replace(plainRoute("c"), `{"type":"RETURN","depth":0,"pairs":[],"conditions":[]}`, `{"type":"RETURN","depth":0,"pairs":[{"id":"","data":{"ref_var":false,"rtype":"STRING","data":""}}]}`, 1)),
			status: 422, want: []string{`"route.flow.blocks[0].pairs[0].id":"is required"`}},
		{name: "route missing", method: "POST", path: "/route/create", headers: h, body: `{"project_id":"shop"}`, status: 400},
		{name: "route not an object", method: "POST", path: "/route/create", headers: h, body: `{"project_id":"shop","route":[]}`, status: 422},
		{name: "unknown template_id", method: "POST", path: "/route/create", headers: h, body: `{"project_id":"shop","template_id":999,"route":` + plainRoute("d") + `}`, status: 422,
			want: []string{`"template_id":"is not a template available in this project"`}},
		{name: "other project in the document", method: "POST", path: "/route/create", headers: h,
			body: create(strings.Replace(plainRoute("e"), `{"route_id"`, `{"project_id":"blog","route_id"`, 1)), status: 422},
		{name: "list", method: "GET", path: "/route/fetch?project_id=shop", headers: h, status: 200, want: []string{`"amount":2`}},
		{name: "list filtered", method: "GET", path: "/route/fetch?project_id=shop&filter=LIST", headers: h, status: 200, want: []string{`"amount":1`}},
		{name: "one", method: "GET", path: "/route/fetch/one?project_id=shop&route_id=r_x", headers: h, status: 200, want: []string{`"type":"SIMPLE_UPDATE"`}},
		{name: "one unknown", method: "GET", path: "/route/fetch/one?project_id=shop&route_id=nope", headers: h, status: 404},
		{name: "update renames", method: "PATCH", path: "/route/update", headers: h,
			body: `{"project_id":"shop","route_id":"list_items","route":` + plainRoute("all_items") + `}`, status: 200, want: []string{`"route_id":"all_items"`}},
		{name: "update unknown", method: "PATCH", path: "/route/update", headers: h, body: `{"project_id":"shop","route_id":"nope","route":` + plainRoute("z") + `}`, status: 404},
		{name: "update without route_id", method: "PATCH", path: "/route/update", headers: h, body: `{"project_id":"shop","route":` + plainRoute("z") + `}`, status: 400},
		{name: "delete", method: "DELETE", path: "/route/delete?project_id=shop&route_id=all_items", headers: h, status: 200},
		{name: "delete unknown", method: "DELETE", path: "/route/delete?project_id=shop&route_id=all_items", headers: h, status: 404},
		{name: "unknown project", method: "GET", path: "/route/fetch?project_id=nope", headers: h, status: 404},
	})
}

// TestTemplateListsAtOnce: lists answered at once, each written in a
// buffer reused from list to list, each answer exactly the one it gets
// alone.
func TestTemplateListsAtOnce(t *testing.T) {
	t.Parallel()
	ta, h := templateApp(t)
	var paths []string
	for i := range 6 {
		name := fmt.Sprintf("list_%d", i)
		if status, body := ta.call(t, "POST", "/route/template/create", fetchByID(name, nil), h); status != 201 {
			t.Fatalf("%d %s", status, body)
		}
		paths = append(paths, fmt.Sprintf("/route/template/fetch?filter=%s&limit=%d", name[:len(name)-1], i+1))
	}
	want := map[string]string{}
	for _, p := range paths {
		status, body := ta.call(t, "GET", p, "", h)
		if status != 200 {
			t.Fatalf("%s: %d %s", p, status, body)
		}
		want[p] = body
	}
	base := ta.listen(t)
	var wg sync.WaitGroup
	for i := range 400 {
		wg.Go(func() {
			p := paths[i%len(paths)]
			req, _ := http.NewRequest("GET", base+p, nil)
			for k, v := range h {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			raw, _ := io.ReadAll(resp.Body)
			if string(raw) != want[p] {
				t.Errorf("%s at once:\n%s\nalone:\n%s", p, raw, want[p])
			}
		})
	}
	wg.Wait()
}

// TestUnknownFieldsRefused: one rule for a template's body and a route's
// (docs/routes.md and the API document say it): a field neither knows is
// refused with 422 naming it, an empty name as "", and nothing is saved.
func TestUnknownFieldsRefused(t *testing.T) {
	t.Parallel()
	ta, h := templateApp(t)
	route := runnable{id: "r", method: "GET", path: "/r", blocks: []string{`{"type":"RETURN","depth":0,"pairs":[],"conditions":[]}`}}.JSON()
	ta.run(t, []scenario{
		{name: "a route's body with a field it does not know", method: "POST", path: "/route/create", headers: h,
			body: `{"project_id":"shop","route":` + route + `,"colour":"red"}`, status: 422, want: []string{`"colour":"is not a known field"`}},
		{name: "a route's body with an empty name", method: "POST", path: "/route/create", headers: h,
			body: `{"project_id":"shop","route":` + route + `,"":1}`, status: 422, want: []string{`"\"\"":"is not a known field"`}},
		{name: "an update likewise", method: "PATCH", path: "/route/update", headers: h,
			body: `{"project_id":"shop","route_id":"r","route":` + route + `,"colour":"red"}`, status: 422, want: []string{`"colour":"is not a known field"`}},
		{name: "a route document likewise", method: "POST", path: "/route/create", headers: h,
			body: `{"project_id":"shop","route":` + strings.Replace(route, `{"route_id"`, `{"colour":"red","route_id"`, 1) + `}`, status: 422,
			want: []string{`"route.colour":"is not a known field"`}},
		{name: "a template's body likewise", method: "POST", path: "/route/template/create", headers: h,
			body: `{"name":"t","description":"d","method":"GET","route_id":"r","route_path":"/r","":1}`, status: 422,
			want: []string{`"\"\"":"is not a known field"`}, unwanted: []string{`"Error: is not a known field"`}},
		{name: "nothing was saved", method: "GET", path: "/route/fetch?project_id=shop", headers: h, status: 200, want: []string{`"amount":0`}},
		{name: "the known fields save", method: "POST", path: "/route/create", headers: h,
			body: `{"project_id":"shop","route":` + route + `,"note":"first"}`, status: 201},
	})
}
