package handlers

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"stencil/store"
)

// membersApp has projects shop and blog made by ana (ADMIN); vic (an ADMIN
// account) is ADMIN in blog and VIEWER in shop; cyd (a VIEWER account) is
// a member of shop. Each project has a vault entry.
func membersApp(t *testing.T) (ta *testApp, users map[string]store.User, heads map[string]map[string]string) {
	t.Helper()
	ta = newTestApp(t)
	ctx := context.Background()
	users, heads = map[string]store.User{}, map[string]map[string]string{}
	for name, role := range map[string]string{"ana": store.RoleAdmin, "vic": store.RoleAdmin, "cyd": store.RoleViewer, "dot": store.RoleAuthor} {
		users[name] = ta.newUser(t, name, role)
		heads[name] = as(ta.token(t, users[name]))
	}
	for _, id := range []string{"shop", "blog"} {
		p := store.Project{ID: id, Name: strings.ToUpper(id[:1]) + id[1:], APIPath: "/" + id}
		if err := ta.h.store.CreateProject(ctx, &p, users["ana"].ID); err != nil {
			t.Fatal(err)
		}
		ta.putSecret(t, id, "API_KEY", "secret of "+id, users["ana"])
	}
	for _, m := range []struct {
		project, user, role string
	}{{"shop", "vic", store.RoleViewer}, {"blog", "vic", store.RoleAdmin}, {"shop", "cyd", store.RoleViewer}} {
		if err := ta.h.store.AddMember(ctx, m.project, users[m.user].ID, m.role); err != nil {
			t.Fatal(err)
		}
	}
	return ta, users, heads
}

// TestRolesPerProject: one user is ADMIN in one project and VIEWER in
// another; raising the membership's role gives them the project's vault
// there, and nowhere else (docs/roles.md).
func TestRolesPerProject(t *testing.T) {
	t.Parallel()
	ta, users, heads := membersApp(t)
	vic := users["vic"]
	ta.run(t, []scenario{
		{name: "ADMIN in blog reads its vault", method: "GET", path: "/vault/fetch/one?project_id=blog&key=API_KEY", headers: heads["vic"], status: 200, want: []string{"secret of blog"}},
		{name: "VIEWER in shop does not", method: "GET", path: "/vault/fetch/one?project_id=shop&key=API_KEY", headers: heads["vic"], status: 403,
			want: []string{`your role in project \"shop\" (VIEWER) may not do this; it needs ADMIN or higher`}, unwanted: []string{"secret of shop"}},
		{name: "nor writes its routes", method: "POST", path: "/route/create", headers: heads["vic"], body: `{"project_id":"shop","route":` + plainRoute("r1") + `}`, status: 403},
		{name: "nor manages its members", method: "PATCH", path: "/project/member/role", headers: heads["vic"],
			body: fmt.Sprintf(`{"project_id":"shop","target_uid":%d,"role":"ADMIN"}`, vic.ID), status: 403},
		{name: "the project says the caller's role", method: "GET", path: "/project/fetch/one?project_id=shop", headers: heads["vic"], status: 200,
			want: []string{`"role":"VIEWER","members":[`, fmt.Sprintf(`"id":%d,"username":"vic","first_name":"Test","last_name":"vic","role":"VIEWER","effective_role":"VIEWER"`, vic.ID)}},
		{name: "vic's projects with their roles", method: "GET", path: "/project/fetch", headers: heads["vic"], status: 200,
			want: []string{`"id":"blog"`, `"is_member":true,"role":"ADMIN"`, `"is_member":true,"role":"VIEWER"`}},
		{name: "ana makes vic ADMIN in shop", method: "PATCH", path: "/project/member/role", headers: heads["ana"],
			body: fmt.Sprintf(`{"project_id":"shop","target_uid":%d,"role":"ADMIN"}`, vic.ID), status: 200,
			want: []string{`"message":"Role updated"`, `"role":"ADMIN","effective_role":"ADMIN"`}},
		{name: "now vic reads shop's vault", method: "GET", path: "/vault/fetch/one?project_id=shop&key=API_KEY", headers: heads["vic"], status: 200, want: []string{"secret of shop"}},
		{name: "vic lowers himself in blog", method: "PATCH", path: "/project/member/role", headers: heads["vic"],
			body: fmt.Sprintf(`{"project_id":"blog","target_uid":%d,"role":"AUTHOR"}`, vic.ID), status: 200, want: []string{`"effective_role":"AUTHOR"`}},
		{name: "and no longer reads blog's vault", method: "GET", path: "/vault/fetch?project_id=blog", headers: heads["vic"], status: 403},
		{name: "but writes its routes", method: "POST", path: "/route/create", headers: heads["vic"], body: `{"project_id":"blog","route":` + plainRoute("r1") + `}`, status: 201},
	})
	events := ta.call
	_, body := events(t, "GET", "/event/fetch?project_id=shop&type=member_role", "", heads["ana"])
	if !strings.Contains(body, "vic's role in the project: VIEWER → ADMIN") {
		t.Errorf("no member_role event for vic in shop: %s", body)
	}
}

// TestMemberRoleRules: the account's role caps the membership's (said in
// the answer and the list), the last ADMIN is kept, and each bad request
// is refused with its reason and changes nothing.
func TestMemberRoleRules(t *testing.T) {
	t.Parallel()
	ta, users, heads := membersApp(t)
	ana, cyd, dot := users["ana"], users["cyd"], users["dot"]
	set := func(uid int64, role string) string {
		return fmt.Sprintf(`{"project_id":"shop","target_uid":%d,"role":%q}`, uid, role)
	}
	ta.run(t, []scenario{
		{name: "a VIEWER account as ADMIN works as VIEWER", method: "PATCH", path: "/project/member/role", headers: heads["ana"], body: set(cyd.ID, "ADMIN"), status: 200,
			want: []string{`"role":"ADMIN","effective_role":"VIEWER"`}},
		{name: "the list says both", method: "GET", path: "/project/fetch/one?project_id=shop", headers: heads["ana"], status: 200,
			want: []string{`"username":"cyd","first_name":"Test","last_name":"cyd","role":"ADMIN","effective_role":"VIEWER"`}},
		{name: "cyd still cannot read the vault", method: "GET", path: "/vault/fetch?project_id=shop", headers: heads["cyd"], status: 403},
		{name: "ana is the last ADMIN", method: "PATCH", path: "/project/member/role", headers: heads["ana"], body: set(ana.ID, "AUTHOR"), status: 422,
			want: []string{`"target_uid":"is the project's last ADMIN: make another member ADMIN first"`}},
		{name: "nor can she leave", method: "POST", path: "/project/member/remove", headers: heads["ana"], body: fmt.Sprintf(`{"project_id":"shop","target_uid":%d}`, ana.ID), status: 422},
		{name: "no role", method: "PATCH", path: "/project/member/role", headers: heads["ana"], body: fmt.Sprintf(`{"project_id":"shop","target_uid":%d}`, cyd.ID), status: 400,
			want: []string{"role is required"}},
		{name: "ROOT is no membership role", method: "PATCH", path: "/project/member/role", headers: heads["ana"], body: set(cyd.ID, "ROOT"), status: 422, want: []string{`"role":`}},
		{name: "an unknown role", method: "PATCH", path: "/project/member/role", headers: heads["ana"], body: set(cyd.ID, "boss"), status: 422, want: []string{`"role":`}},
		{name: "not a member", method: "PATCH", path: "/project/member/role", headers: heads["ana"], body: set(dot.ID, "AUTHOR"), status: 404,
			want: []string{fmt.Sprintf(`user %d is not a member of project \"shop\"`, dot.ID)}},
		{name: "an unknown project", method: "PATCH", path: "/project/member/role", headers: heads["ana"],
			body: fmt.Sprintf(`{"project_id":"nope","target_uid":%d,"role":"AUTHOR"}`, cyd.ID), status: 404},
		{name: "an unknown field", method: "PATCH", path: "/project/member/role", headers: heads["ana"],
			body: fmt.Sprintf(`{"project_id":"shop","target_uid":%d,"role":"AUTHOR","scope":"all"}`, cyd.ID), status: 422, want: []string{"scope is not a known field"}},
		{name: "add with a role", method: "POST", path: "/project/member/add", headers: heads["ana"],
			body: fmt.Sprintf(`{"project_id":"shop","target_uid":%d,"role":"VIEWER"}`, dot.ID), status: 200, want: []string{`"role":"VIEWER","effective_role":"VIEWER"`}},
		{name: "add without one: the account's", method: "POST", path: "/project/member/add", headers: heads["ana"],
			body: fmt.Sprintf(`{"project_id":"blog","target_uid":%d}`, dot.ID), status: 200, want: []string{`"role":"AUTHOR","effective_role":"AUTHOR"`}},
		{name: "an existing account invited as VIEWER", method: "POST", path: "/project/invite", headers: heads["ana"],
			body: `{"project_id":"blog","email":"cyd@example.com","role":"VIEWER"}`, status: 200, want: []string{`"role":"VIEWER","effective_role":"VIEWER"`}},
	})
	members, err := ta.h.store.Members(context.Background(), "shop")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range members {
		if m.UserID == ana.ID && m.Role != store.RoleAdmin || m.UserID == cyd.ID && m.Role != store.RoleAdmin {
			t.Errorf("%s is %s after the refusals", m.Username, m.Role)
		}
	}
}

// TestMembersTableRoleSelect: the Members table offers ADMIN members a
// role form per member, as the users page does; a change comes back as the
// form with the cap said and the focus kept on its select, a refusal
// beside it; a VIEWER sees roles as text.
func TestMembersTableRoleSelect(t *testing.T) {
	t.Parallel()
	ta, users, _ := membersApp(t)
	cookie, csrf := ta.signIn(t, "ana")
	fragment := merge(browser(cookie, csrf), asHTMXHeaders, map[string]string{"Content-Type": "application/x-www-form-urlencoded"})
	form := func(uid int64, role string) string {
		return url.Values{"project_id": {"shop"}, "target_uid": {fmt.Sprint(uid)}, "role": {role}}.Encode()
	}
	cyd, ana := users["cyd"], users["ana"]
	_, page := ta.call(t, "GET", "/web/project?id=shop", "", browser(cookie, csrf))
	for _, w := range []string{fmt.Sprintf(`id="member-role-%d"`, cyd.ID), `hx-patch="/project/member/role"`,
		"Change your own role in Shop? Below ADMIN you can no longer manage it.", "Change the role of cyd in Shop?"} {
		if !strings.Contains(page, w) {
			t.Errorf("the project page lacks %q", w)
		}
	}
	status, body := ta.call(t, "PATCH", "/project/member/role", form(cyd.ID, "ADMIN"), fragment)
	for _, w := range []string{fmt.Sprintf(`id="member-role-form-%d"`, cyd.ID), `<option value="ADMIN" selected>`,
		fmt.Sprintf(`data-focus-after="#member-role-%d"`, cyd.ID), "Works as VIEWER: their account's role caps it."} {
		if status != 200 || !strings.Contains(body, w) {
			t.Errorf("the form after a change lacks %q: %d %s", w, status, body)
		}
	}
	status, body = ta.call(t, "PATCH", "/project/member/role", form(ana.ID, "VIEWER"), fragment)
	if status != 422 || !strings.Contains(body, "The project&#39;s last ADMIN must stay ADMIN") || !strings.Contains(body, `<option value="ADMIN" selected>`) {
		t.Errorf("lowering the last ADMIN from the table: %d %s", status, body)
	}
	viewer, vcsrf := ta.signIn(t, "cyd")
	_, page = ta.call(t, "GET", "/web/project?id=shop", "", browser(viewer, vcsrf))
	if strings.Contains(page, `hx-patch="/project/member/role"`) || !strings.Contains(page, "ADMIN here; your account's role caps it.") {
		t.Errorf("a VIEWER's Members table: %s", page)
	}
}

// TestFirstDayCountsOwnSteps: the start page's checklist ticks only what
// its viewer did (docs/roles.md): an AUTHOR in a project whose vault and routes
// others filled sees the secret as another role's step and the route to
// build, until they build one.
func TestFirstDayCountsOwnSteps(t *testing.T) {
	t.Parallel()
	ta, users, heads := membersApp(t)
	if err := ta.h.store.AddMember(context.Background(), "shop", users["dot"].ID, store.RoleAuthor); err != nil {
		t.Fatal(err)
	}
	if status, body := ta.call(t, "POST", "/route/create", `{"project_id":"shop","route":`+plainRoute("anas")+`}`, heads["ana"]); status != 201 {
		t.Fatalf("ana's route: %d %s", status, body)
	}
	cookie, csrf := ta.signIn(t, "dot")
	step := func(i int) string {
		_, page := ta.call(t, "GET", "/", "", browser(cookie, csrf))
		at := strings.Index(page, fmt.Sprintf(`data-step="%d"`, i))
		if at < 0 {
			t.Fatalf("no step %d on the start page: %s", i, page)
		}
		return page[at : at+strings.Index(page[at:], "</li>")]
	}
	if s := step(1); !strings.Contains(s, `data-done="false"`) || !strings.Contains(s, "(another role's step)") {
		t.Errorf("an AUTHOR's secret step, with ana's entry in the vault: %s", s)
	}
	if s := step(2); !strings.Contains(s, `data-done="false"`) {
		t.Errorf("dot's build step is done by ana's route: %s", s)
	}
	if status, body := ta.call(t, "POST", "/route/create", `{"project_id":"shop","route":`+plainRoute("dots")+`}`, heads["dot"]); status != 201 {
		t.Fatalf("dot's route: %d %s", status, body)
	}
	if s := step(2); !strings.Contains(s, `data-done="true"`) {
		t.Errorf("dot built a route and the step is not done: %s", s)
	}
}
