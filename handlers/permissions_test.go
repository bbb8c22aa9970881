package handlers

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"stencil/auth"
	"stencil/flow"
	"stencil/store"
)

// cellFixture is what one cell of a permission table acts on: a project
// (with the caller as member or not), another user, a token of the caller
// and a config.
type cellFixture struct {
	n        int
	caller   store.User
	project  string
	target   store.User
	owner    store.User
	patID    int64
	config   string
	secret   string // a vault entry of the project
	template int64  // a template of the project
	global   int64  // a global template
	record   int64  // a record of the project's collection "items"
}

func (ta *testApp) cellFixture(t *testing.T, n int, role string, member bool) cellFixture {
	t.Helper()
	ctx := context.Background()
	f := cellFixture{n: n, project: fmt.Sprintf("proj_%d", n), config: fmt.Sprintf("cfg.%d", n), secret: fmt.Sprintf("SECRET_%d", n)}
	f.caller = ta.newUser(t, fmt.Sprintf("caller%d", n), role)
	f.owner = ta.newUser(t, fmt.Sprintf("owner%d", n), store.RoleAdmin)
	f.target = ta.newUser(t, fmt.Sprintf("target%d", n), store.RoleViewer)
	p := store.Project{ID: f.project, Name: "Project", APIPath: fmt.Sprintf("/p%d", n)}
	if err := ta.h.store.CreateProject(ctx, &p, f.owner.ID); err != nil {
		t.Fatal(err)
	}
	if member {
		if err := ta.h.store.AddMember(ctx, f.project, f.caller.ID); err != nil {
			t.Fatal(err)
		}
	}
	pat := store.PAT{UserID: f.caller.ID, Name: "t", Hash: auth.HashPAT(auth.NewPAT()), Hint: "stp_"}
	if err := ta.h.store.CreatePAT(ctx, &pat); err != nil {
		t.Fatal(err)
	}
	f.patID = pat.ID
	if err := ta.h.store.CreateConfig(ctx, &store.Config{Key: f.config, Value: "v"}); err != nil {
		t.Fatal(err)
	}
	ta.putSecret(t, f.project, f.secret, "value", f.owner)
	f.template = ta.putTemplate(t, fetchByID(fmt.Sprintf("t%d", n), &f.project), f.owner)
	f.global = ta.putTemplate(t, fetchByID(fmt.Sprintf("g%d", n), nil), f.owner)
	sr := store.StoredRoute{Route: flow.Route{ProjectID: f.project, RouteID: "existing", RoutePath: "/existing", Method: "GET"}}
	sr.Normalize()
	if err := ta.h.store.CreateRoute(ctx, &sr); err != nil {
		t.Fatal(err)
	}
	if err := ta.h.store.CreateCollection(ctx, &store.Collection{ProjectID: f.project, ID: "items", Name: "Items"}, f.owner.ID); err != nil {
		t.Fatal(err)
	}
	rec := store.Record{ProjectID: f.project, CollectionID: "items", Data: []byte(`{"n":1}`)}
	if err := ta.h.store.CreateRecord(ctx, &rec); err != nil {
		t.Fatal(err)
	}
	f.record = rec.ID
	return f
}

// putTemplate stores a template document directly.
func (ta *testApp) putTemplate(t testing.TB, doc string, by store.User) int64 {
	t.Helper()
	tmpl, p := flow.DecodeTemplate([]byte(doc), "")
	if len(p) > 0 {
		t.Fatal(p)
	}
	tmpl.Normalize()
	st := store.RouteTemplate{Template: tmpl, CreatedBy: &by.ID}
	if err := ta.h.store.SaveTemplate(context.Background(), &st); err != nil {
		t.Fatal(err)
	}
	return st.ID
}

// putSecret stores a vault entry directly, through the app's vault.
func (ta *testApp) putSecret(t testing.TB, project, key, value string, by store.User) {
	t.Helper()
	ev := store.VaultAccess{UserID: &by.ID, Username: by.Username, ProjectID: project, Key: key, Channel: "api"}
	if _, err := ta.h.vault.Create(context.Background(), project, key, value, ev); err != nil {
		t.Fatal(err)
	}
}

// permCase is one endpoint of a permission table: the request it makes in a
// cell, and the status wanted of an anonymous caller and of each role as a
// member and as a non-member of the cell's project.
type permCase struct {
	name      string
	request   func(f cellFixture) (method, path, body string)
	anon      int
	member    map[string]int
	nonMember map[string]int // nil: same as member
}

// byRole maps the four roles, highest first, to statuses.
func byRole(root, admin, author, viewer int) map[string]int {
	return map[string]int{store.RoleRoot: root, store.RoleAdmin: admin, store.RoleAuthor: author, store.RoleViewer: viewer}
}

// runPermissionTable sends every case as every kind of caller and checks
// the exact status.
func runPermissionTable(t *testing.T, cases []permCase) {
	ta := newTestApp(t)
	n := 0
	for _, pc := range cases {
		t.Run(pc.name, func(t *testing.T) {
			n++
			f := ta.cellFixture(t, n, store.RoleViewer, false)
			method, path, body := pc.request(f)
			ta.expectStatus(t, "anonymous", method, path, body, nil, pc.anon)
			for _, member := range []bool{true, false} {
				want := pc.member
				if !member && pc.nonMember != nil {
					want = pc.nonMember
				}
				for _, role := range roles {
					n++
					f := ta.cellFixture(t, n, role, member)
					method, path, body := pc.request(f)
					who := fmt.Sprintf("%s member=%v", role, member)
					ta.expectStatus(t, who, method, path, body, as(ta.token(t, f.caller)), want[role])
				}
			}
		})
	}
}

func (ta *testApp) expectStatus(t *testing.T, who, method, path, body string, headers map[string]string, want int) {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Accept", "application/json")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, got := ta.do(t, req)
	if resp.StatusCode != want {
		t.Errorf("%s: %s %s = %d, want %d; body: %s", who, method, path, resp.StatusCode, want, got)
	}
}

func TestIdentityPermissionTable(t *testing.T) {
	t.Parallel()
	all := func(s int) map[string]int { return byRole(s, s, s, s) }
	rootOnly := func(ok int) map[string]int { return byRole(ok, 403, 403, 403) }
	adminUp := func(ok int) map[string]int { return byRole(ok, ok, 403, 403) }
	runPermissionTable(t, []permCase{
		{name: "register", anon: 401, member: rootOnly(201), request: func(f cellFixture) (string, string, string) {
			return "POST", "/user/register", fmt.Sprintf(`{"username":"new%d","email":"new%d@example.com","password":"long-enough-pw","role":"VIEWER"}`, f.n, f.n)
		}},
		{name: "user list", anon: 401, member: rootOnly(200), request: func(cellFixture) (string, string, string) {
			return "GET", "/user/fetch", ""
		}},
		{name: "user one", anon: 401, member: rootOnly(200), request: func(f cellFixture) (string, string, string) {
			return "GET", fmt.Sprintf("/user/fetch/one?target_uid=%d", f.target.ID), ""
		}},
		{name: "user role", anon: 401, member: rootOnly(200), request: func(f cellFixture) (string, string, string) {
			return "PATCH", "/user/update/role", fmt.Sprintf(`{"target_uid":%d,"role":"AUTHOR"}`, f.target.ID)
		}},
		{name: "user delete", anon: 401, member: rootOnly(200), request: func(f cellFixture) (string, string, string) {
			return "DELETE", fmt.Sprintf("/user/delete?target_uid=%d", f.target.ID), ""
		}},
		{name: "project create", anon: 401, member: adminUp(201), request: func(f cellFixture) (string, string, string) {
			return "POST", "/project/create", fmt.Sprintf(`{"id":"made_%d","name":"Made","api_path":"/made%d"}`, f.n, f.n)
		}},
		{name: "project list", anon: 401, member: all(200), request: func(cellFixture) (string, string, string) {
			return "GET", "/project/fetch", ""
		}},
		{name: "project one", anon: 401, member: all(200), nonMember: all(403), request: func(f cellFixture) (string, string, string) {
			return "GET", "/project/fetch/one?project_id=" + f.project, ""
		}},
		{name: "project update", anon: 401, member: adminUp(200), nonMember: all(403), request: func(f cellFixture) (string, string, string) {
			return "PATCH", "/project/update", fmt.Sprintf(`{"project_id":%q,"name":"Renamed"}`, f.project)
		}},
		{name: "project delete", anon: 401, member: adminUp(200), nonMember: all(403), request: func(f cellFixture) (string, string, string) {
			return "DELETE", "/project/delete?project_id=" + f.project, ""
		}},
		{name: "member add", anon: 401, member: adminUp(200), nonMember: all(403), request: func(f cellFixture) (string, string, string) {
			return "POST", "/project/member/add", fmt.Sprintf(`{"project_id":%q,"target_uid":%d}`, f.project, f.target.ID)
		}},
		{name: "member remove", anon: 401, member: adminUp(200), nonMember: all(403), request: func(f cellFixture) (string, string, string) {
			return "POST", "/project/member/remove", fmt.Sprintf(`{"project_id":%q,"target_uid":%d}`, f.project, f.owner.ID)
		}},
		{name: "pat create", anon: 401, member: all(201), request: func(cellFixture) (string, string, string) {
			return "POST", "/pat/create", `{"name":"ci"}`
		}},
		{name: "pat list", anon: 401, member: all(200), request: func(cellFixture) (string, string, string) {
			return "GET", "/pat/fetch", ""
		}},
		{name: "pat delete", anon: 401, member: all(200), request: func(f cellFixture) (string, string, string) {
			return "DELETE", fmt.Sprintf("/pat/delete?id=%d", f.patID), ""
		}},
		{name: "config list", anon: 401, member: rootOnly(200), request: func(cellFixture) (string, string, string) {
			return "GET", "/config/fetch/all", ""
		}},
		{name: "config one", anon: 401, member: rootOnly(200), request: func(f cellFixture) (string, string, string) {
			return "GET", "/config/fetch/one?key=" + f.config, ""
		}},
		{name: "config create", anon: 401, member: rootOnly(201), request: func(f cellFixture) (string, string, string) {
			return "POST", "/config/create", fmt.Sprintf(`{"key":"new.%d","value":"x"}`, f.n)
		}},
		{name: "config update", anon: 401, member: rootOnly(200), request: func(f cellFixture) (string, string, string) {
			return "PATCH", "/config/update", fmt.Sprintf(`{"key":%q,"value":"y"}`, f.config)
		}},
		{name: "config delete", anon: 401, member: rootOnly(200), request: func(f cellFixture) (string, string, string) {
			return "DELETE", "/config/delete?key=" + f.config, ""
		}},
	})
}

// TestDataPermissionTable: collections and records (docs/collections.md) by role and
// membership — members only, ROOT included; ADMIN and up manage
// collections, AUTHOR and up write records.
func TestDataPermissionTable(t *testing.T) {
	t.Parallel()
	all := func(s int) map[string]int { return byRole(s, s, s, s) }
	adminUp := func(ok int) map[string]int { return byRole(ok, ok, 403, 403) }
	authorUp := func(ok int) map[string]int { return byRole(ok, ok, ok, 403) }
	runPermissionTable(t, []permCase{
		{name: "collection create", anon: 401, member: adminUp(201), nonMember: all(403), request: func(f cellFixture) (string, string, string) {
			return "POST", "/collection/create", fmt.Sprintf(`{"project_id":%q,"id":"books","name":"Books"}`, f.project)
		}},
		{name: "collection list", anon: 401, member: all(200), nonMember: all(403), request: func(f cellFixture) (string, string, string) {
			return "GET", "/collection/fetch?project_id=" + f.project, ""
		}},
		{name: "collection one", anon: 401, member: all(200), nonMember: all(403), request: func(f cellFixture) (string, string, string) {
			return "GET", "/collection/fetch/one?id=items&project_id=" + f.project, ""
		}},
		{name: "collection update", anon: 401, member: adminUp(200), nonMember: all(403), request: func(f cellFixture) (string, string, string) {
			return "PATCH", "/collection/update", fmt.Sprintf(`{"project_id":%q,"id":"items","name":"Things"}`, f.project)
		}},
		{name: "collection delete", anon: 401, member: adminUp(200), nonMember: all(403), request: func(f cellFixture) (string, string, string) {
			return "DELETE", "/collection/delete?id=items&project_id=" + f.project, ""
		}},
		{name: "record create", anon: 401, member: authorUp(201), nonMember: all(403), request: func(f cellFixture) (string, string, string) {
			return "POST", "/data/create", fmt.Sprintf(`{"project_id":%q,"collection_id":"items","data":{"n":2}}`, f.project)
		}},
		{name: "record list", anon: 401, member: all(200), nonMember: all(403), request: func(f cellFixture) (string, string, string) {
			return "GET", "/data/fetch?collection_id=items&project_id=" + f.project, ""
		}},
		{name: "record one", anon: 401, member: all(200), nonMember: all(403), request: func(f cellFixture) (string, string, string) {
			return "GET", fmt.Sprintf("/data/fetch/one?collection_id=items&project_id=%s&id=%d", f.project, f.record), ""
		}},
		{name: "record update", anon: 401, member: authorUp(200), nonMember: all(403), request: func(f cellFixture) (string, string, string) {
			return "PATCH", "/data/update", fmt.Sprintf(`{"project_id":%q,"collection_id":"items","id":%d,"data":{"n":3}}`, f.project, f.record)
		}},
		{name: "record delete", anon: 401, member: authorUp(200), nonMember: all(403), request: func(f cellFixture) (string, string, string) {
			return "DELETE", fmt.Sprintf("/data/delete?collection_id=items&project_id=%s&id=%d", f.project, f.record), ""
		}},
	})
}
