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

// cellFixture makes a cell whose caller has role, and is a member of the
// cell's project with the membership role given ("": not a member).
func (ta *testApp) cellFixture(t *testing.T, n int, role, membership string) cellFixture {
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
	if membership != "" {
		if err := ta.h.store.AddMember(ctx, f.project, f.caller.ID, membership); err != nil {
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
// member and as a non-member of the cell's project. A case with nonMember
// acts inside the project: there a member works with their role in it.
type permCase struct {
	name      string
	request   func(f cellFixture) (method, path, body string)
	anon      int
	member    map[string]int
	nonMember map[string]int // nil: same as member, and the account's role applies
}

// mixedRoles are members whose membership role differs from their
// account's (docs/roles.md): inside the project each works as the lower
// of the two (ROOT as ROOT), outside it with the account's.
var mixedRoles = []struct{ account, membership string }{
	{store.RoleAdmin, store.RoleAuthor},
	{store.RoleAdmin, store.RoleViewer},
	{store.RoleAuthor, store.RoleViewer},
	{store.RoleViewer, store.RoleAdmin},
	{store.RoleRoot, store.RoleViewer},
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
			f := ta.cellFixture(t, n, store.RoleViewer, "")
			method, path, body := pc.request(f)
			ta.expectStatus(t, "anonymous", method, path, body, nil, pc.anon)
			for _, member := range []bool{true, false} {
				want := pc.member
				if !member && pc.nonMember != nil {
					want = pc.nonMember
				}
				for _, role := range roles {
					n++
					membership := ""
					if member {
						membership = store.MembershipRole(role)
					}
					f := ta.cellFixture(t, n, role, membership)
					method, path, body := pc.request(f)
					who := fmt.Sprintf("%s member=%v", role, member)
					ta.expectStatus(t, who, method, path, body, as(ta.token(t, f.caller)), want[role])
				}
			}
			for _, mix := range mixedRoles {
				n++
				works := mix.account
				if pc.nonMember != nil {
					works = store.EffectiveRole(mix.account, mix.membership)
				}
				f := ta.cellFixture(t, n, mix.account, mix.membership)
				method, path, body := pc.request(f)
				who := fmt.Sprintf("%s member as %s (works as %s)", mix.account, mix.membership, works)
				ta.expectStatus(t, who, method, path, body, as(ta.token(t, f.caller)), pc.member[works])
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
		{name: "member role", anon: 401, member: adminUp(200), nonMember: all(403), request: func(f cellFixture) (string, string, string) {
			return "PATCH", "/project/member/role", fmt.Sprintf(`{"project_id":%q,"target_uid":%d,"role":"AUTHOR"}`, f.project, f.owner.ID)
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

// TestProjectPermissionTable: the endpoint families inside a project that
// the other tables leave out — runs, analytics, tests, schedules, jobs,
// the playground, history, files, invitations, mail and the event log — by
// role, membership, and a membership role other than the account's
// (docs/roles.md).
func TestProjectPermissionTable(t *testing.T) {
	t.Parallel()
	all := func(s int) map[string]int { return byRole(s, s, s, s) }
	adminUp := func(ok int) map[string]int { return byRole(ok, ok, 403, 403) }
	authorUp := func(ok int) map[string]int { return byRole(ok, ok, ok, 403) }
	none := all(403)
	q := func(path string) func(f cellFixture) (string, string, string) {
		return func(f cellFixture) (string, string, string) {
			return "GET", path + "project_id=" + f.project, ""
		}
	}
	runPermissionTable(t, []permCase{
		{name: "runs", anon: 401, member: all(200), nonMember: none, request: q("/route/runs?")},
		{name: "analytics", anon: 401, member: all(200), nonMember: none, request: q("/route/stats?")},
		{name: "route versions", anon: 401, member: all(200), nonMember: none, request: q("/route/versions?route_id=existing&")},
		{name: "tests", anon: 401, member: all(200), nonMember: none, request: q("/route/test/fetch?route_id=existing&")},
		{name: "test create", anon: 401, member: authorUp(201), nonMember: none, request: func(f cellFixture) (string, string, string) {
			return "POST", "/route/test/create", fmt.Sprintf(`{"project_id":%q,"route_id":"existing","name":"ok","request":{"caller":"anonymous"},"expect":{}}`, f.project)
		}},
		{name: "test run", anon: 401, member: authorUp(200), nonMember: none, request: func(f cellFixture) (string, string, string) {
			return "POST", "/route/test/run", fmt.Sprintf(`{"project_id":%q}`, f.project)
		}},
		{name: "schedules", anon: 401, member: all(200), nonMember: none, request: q("/route/schedule/fetch?")},
		{name: "schedule create", anon: 401, member: authorUp(201), nonMember: none, request: func(f cellFixture) (string, string, string) {
			return "POST", "/route/schedule/create", fmt.Sprintf(`{"project_id":%q,"route_id":"existing","cron":"@daily"}`, f.project)
		}},
		{name: "jobs", anon: 401, member: all(200), nonMember: none, request: q("/route/job/fetch?")},
		{name: "playground run", anon: 401, member: authorUp(200), nonMember: none, request: func(f cellFixture) (string, string, string) {
			return "POST", "/route/run", fmt.Sprintf(`{"project_id":%q,"route":%s}`, f.project, plainRoute("draft"))
		}},
		{name: "export", anon: 401, member: adminUp(200), nonMember: none, request: q("/project/export?")},
		{name: "invite", anon: 401, member: adminUp(201), nonMember: none, request: func(f cellFixture) (string, string, string) {
			return "POST", "/project/invite", fmt.Sprintf(`{"project_id":%q,"email":"new%d@example.com","role":"VIEWER"}`, f.project, f.n)
		}},
		{name: "invitations", anon: 401, member: adminUp(200), nonMember: none, request: q("/project/invitations?")},
		{name: "email templates", anon: 401, member: all(200), nonMember: none, request: q("/email/template/fetch?")},
		{name: "email template create", anon: 401, member: adminUp(201), nonMember: none, request: func(f cellFixture) (string, string, string) {
			return "POST", "/email/template/create", fmt.Sprintf(`{"project_id":%q,"name":"hello","subject":"Hi","text":"Hello"}`, f.project)
		}},
		{name: "outbox", anon: 401, member: adminUp(200), nonMember: none, request: q("/outbox/fetch?")},
		// ROOT reads every project's events, a member or not.
		{name: "events", anon: 401, member: adminUp(200), nonMember: byRole(200, 403, 403, 403), request: q("/event/fetch?")},
	})
}
