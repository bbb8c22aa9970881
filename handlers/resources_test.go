package handlers

import (
	"context"
	"fmt"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"stencil/store"
)

func TestUsers(t *testing.T) {
	t.Parallel()
	ta := newTestApp(t)
	h := as(ta.token(t, ta.root))
	viewer := ta.newUser(t, "viewer", store.RoleViewer)
	reg := func(username, email, pw, role string) string {
		return fmt.Sprintf(`{"first_name":"F","last_name":"L","username":%q,"email":%q,"password":%q,"role":%q}`, username, email, pw, role)
	}
	ta.run(t, []scenario{
		{name: "register", method: "POST", path: "/user/register", headers: h, body: reg("ada", "ada@example.com", "long-password", "AUTHOR"),
			status: 201, want: []string{`"username":"ada"`, `"role":"AUTHOR"`, `"password":""`}},
		{name: "username taken, other case", method: "POST", path: "/user/register", headers: h, body: reg("ADA", "x@example.com", "long-password", "AUTHOR"),
			status: 422, want: []string{`"username":"is already taken"`}},
		{name: "email taken, other case", method: "POST", path: "/user/register", headers: h, body: reg("bob", "ADA@example.com", "long-password", "AUTHOR"),
			status: 422, want: []string{`"email":"is already registered"`}},
		{name: "bad username", method: "POST", path: "/user/register", headers: h, body: reg("a b", "ab@example.com", "long-password", "AUTHOR"),
			status: 422, want: []string{`"username":"must be 3–50`}},
		{name: "bad email", method: "POST", path: "/user/register", headers: h, body: reg("carl", "carl", "long-password", "AUTHOR"),
			status: 422, want: []string{`"email":"must be a valid email address"`}},
		{name: "short password", method: "POST", path: "/user/register", headers: h, body: reg("carl", "carl@example.com", "short", "AUTHOR"),
			status: 422, want: []string{`"password":"must be at least 10 characters"`}},
		{name: "unknown role", method: "POST", path: "/user/register", headers: h, body: reg("carl", "carl@example.com", "long-password", "KING"),
			status: 422, want: []string{`"role":"must be one of: ROOT, ADMIN, AUTHOR, VIEWER"`}},
		{name: "missing role", method: "POST", path: "/user/register", headers: h, body: `{"username":"carl","email":"carl@example.com","password":"long-password"}`,
			status: 400, want: []string{`"message":"Error: role is required"`}},
		{name: "list filtered", method: "GET", path: "/user/fetch?filter=VIEW", headers: h, status: 200,
			want: []string{`"amount":1`, `"username":"viewer"`}, unwanted: []string{`"username":"root"`}},
		{name: "list paged", method: "GET", path: "/user/fetch?offset=1&limit=1", headers: h, status: 200,
			want: []string{`"amount":3`, `"username":"root"`}},
		{name: "limit too big", method: "GET", path: "/user/fetch?limit=1001", headers: h, status: 422},
		{name: "limit zero", method: "GET", path: "/user/fetch?limit=0", headers: h, status: 422},
		{name: "negative offset", method: "GET", path: "/user/fetch?offset=-1", headers: h, status: 422},
		{name: "offset too deep", method: "GET", path: "/user/fetch?offset=10000001", headers: h, status: 422, want: []string{`"offset":"must be at most 10000000"`}},
		{name: "one", method: "GET", path: fmt.Sprintf("/user/fetch/one?target_uid=%d", viewer.ID), headers: h, status: 200, want: []string{`"username":"viewer"`}},
		{name: "one unknown", method: "GET", path: "/user/fetch/one?target_uid=9999", headers: h, status: 404},
		{name: "one missing id", method: "GET", path: "/user/fetch/one", headers: h, status: 400},
		{name: "one bad id", method: "GET", path: "/user/fetch/one?target_uid=abc", headers: h, status: 400},
		{name: "role change", method: "PATCH", path: "/user/update/role", headers: h, body: fmt.Sprintf(`{"target_uid":%d,"role":"ADMIN"}`, viewer.ID),
			status: 200, want: []string{`"role":"ADMIN"`}},
		{name: "role of unknown user", method: "PATCH", path: "/user/update/role", headers: h, body: `{"target_uid":9999,"role":"ADMIN"}`, status: 404},
		{name: "last ROOT cannot be demoted", method: "PATCH", path: "/user/update/role", headers: h, body: fmt.Sprintf(`{"target_uid":%d,"role":"ADMIN"}`, ta.root.ID),
			status: 422, want: []string{"last ROOT"}},
		{name: "last ROOT cannot be deleted", method: "DELETE", path: fmt.Sprintf("/user/delete?target_uid=%d", ta.root.ID), headers: h, status: 422},
		{name: "delete unknown", method: "DELETE", path: "/user/delete?target_uid=9999", headers: h, status: 404},
		{name: "delete", method: "DELETE", path: fmt.Sprintf("/user/delete?target_uid=%d", viewer.ID), headers: h, status: 200},
	})
	if u, _ := ta.h.store.UserByID(context.Background(), ta.root.ID); u.Role != store.RoleRoot {
		t.Fatal("the last ROOT was demoted")
	}
	// With a second ROOT, the first may step down.
	second := ta.newUser(t, "second", store.RoleRoot)
	ta.expectStatus(t, "demote with two ROOTs", "PATCH", "/user/update/role", fmt.Sprintf(`{"target_uid":%d,"role":"ADMIN"}`, second.ID), h, 200)
	ta.run(t, []scenario{
		{name: "page", method: "GET", path: "/web/users", headers: browser(ta.signIn(t, "root")), status: 200,
			want: []string{"<!DOCTYPE html>", "New user", "ada@example.com", `hx-patch="/user/update/role"`}},
	})
}

func TestProjects(t *testing.T) {
	t.Parallel()
	ta := newTestApp(t)
	admin := ta.newUser(t, "admin", store.RoleAdmin)
	outsider := ta.newUser(t, "outsider", store.RoleAdmin)
	h := as(ta.token(t, admin))
	create := func(id, path string) string {
		return fmt.Sprintf(`{"id":%q,"name":"Shop","api_path":%q,"description":"d"}`, id, path)
	}
	ta.run(t, []scenario{
		{name: "create", method: "POST", path: "/project/create", headers: h, body: create("shop", "/shop"), status: 201,
			want: []string{`"id":"shop"`, `"member_count":1`, `"is_member":true`}},
		{name: "id taken", method: "POST", path: "/project/create", headers: h, body: create("shop", "/other"), status: 422, want: []string{`"id":"is already taken"`}},
		{name: "api_path taken", method: "POST", path: "/project/create", headers: h, body: create("other", "/shop"), status: 422, want: []string{`"api_path":"is already used`}},
		{name: "id upper case", method: "POST", path: "/project/create", headers: h, body: create("Shop2", "/s2"), status: 422, want: []string{`"id":"must be 3–50 lowercase`}},
		{name: "id too short", method: "POST", path: "/project/create", headers: h, body: create("ab", "/s2"), status: 422},
		{name: "id leading digit", method: "POST", path: "/project/create", headers: h, body: create("1shop", "/s2"), status: 422},
		{name: "api_path without slash", method: "POST", path: "/project/create", headers: h, body: create("shop2", "shop2"), status: 422, want: []string{`"api_path":"must start with /`}},
		{name: "missing name", method: "POST", path: "/project/create", headers: h, body: `{"id":"shop3","api_path":"/s3"}`, status: 400},
		{name: "list", method: "GET", path: "/project/fetch", headers: h, status: 200, want: []string{`"amount":1`, `"id":"shop"`}},
		{name: "outsider sees none", method: "GET", path: "/project/fetch", headers: as(ta.token(t, outsider)), status: 200, want: []string{`"amount":0`, `"data":[]`}},
		{name: "all is ROOT only", method: "GET", path: "/project/fetch?all=true", headers: h, status: 403},
		{name: "ROOT lists all", method: "GET", path: "/project/fetch?all=true", headers: as(ta.token(t, ta.root)), status: 200,
			want: []string{`"id":"shop"`, `"is_member":false`}},
		{name: "one with members", method: "GET", path: "/project/fetch/one?project_id=shop", headers: h, status: 200, want: []string{`"members":[{`, `"username":"admin"`, `"member_count":1`,
			`"x_rate_limit":50,"x_rate_burst":100`}},
		{name: "one unknown", method: "GET", path: "/project/fetch/one?project_id=nope", headers: h, status: 404},
		{name: "one missing id", method: "GET", path: "/project/fetch/one", headers: h, status: 400},
		{name: "ROOT non-member cannot read", method: "GET", path: "/project/fetch/one?project_id=shop", headers: as(ta.token(t, ta.root)), status: 403},
		{name: "update", method: "PATCH", path: "/project/update", headers: h, body: `{"project_id":"shop","name":"Shop 2"}`, status: 200,
			want: []string{`"name":"Shop 2"`, `"api_path":"/shop"`, `"member_count":1`}},
		{name: "update bad api_path", method: "PATCH", path: "/project/update", headers: h, body: `{"project_id":"shop","api_path":"x"}`, status: 422},
		{name: "update empty name", method: "PATCH", path: "/project/update", headers: h, body: `{"project_id":"shop","name":""}`, status: 422},
		{name: "update unknown", method: "PATCH", path: "/project/update", headers: h, body: `{"project_id":"nope","name":"x"}`, status: 404},
		{name: "add member", method: "POST", path: "/project/member/add", headers: h, body: fmt.Sprintf(`{"project_id":"shop","target_uid":%d}`, outsider.ID), status: 200},
		{name: "add member twice", method: "POST", path: "/project/member/add", headers: h, body: fmt.Sprintf(`{"project_id":"shop","target_uid":%d}`, outsider.ID),
			status: 422, want: []string{`"target_uid":"is already a member of this project"`}},
		{name: "add by username", method: "POST", path: "/project/member/add", headers: h, body: `{"project_id":"shop","username":"ROOT"}`, status: 200},
		{name: "add unknown user", method: "POST", path: "/project/member/add", headers: h, body: `{"project_id":"shop","target_uid":9999}`, status: 422, want: []string{`"target_uid":"is not a user"`}},
		{name: "add nobody", method: "POST", path: "/project/member/add", headers: h, body: `{"project_id":"shop"}`, status: 400,
			want: []string{`"target_uid":"is required (or give username)"`}},
		{name: "add to unknown project", method: "POST", path: "/project/member/add", headers: h, body: fmt.Sprintf(`{"project_id":"nope","target_uid":%d}`, outsider.ID), status: 404},
		{name: "remove member", method: "POST", path: "/project/member/remove", headers: h, body: fmt.Sprintf(`{"project_id":"shop","target_uid":%d}`, outsider.ID), status: 200},
		{name: "remove non-member", method: "POST", path: "/project/member/remove", headers: h, body: fmt.Sprintf(`{"project_id":"shop","target_uid":%d}`, outsider.ID), status: 404},
	})

	// ROOT may add itself to any project, and nobody else.
	other := ta.newUser(t, "other", store.RoleRoot)
	rootH := as(ta.token(t, other))
	ta.expectStatus(t, "ROOT adds another to a project of others", "POST", "/project/member/add", fmt.Sprintf(`{"project_id":"shop","target_uid":%d}`, outsider.ID), rootH, 403)
	ta.expectStatus(t, "ROOT joins", "POST", "/project/member/add", fmt.Sprintf(`{"project_id":"shop","target_uid":%d}`, other.ID), rootH, 200)
	ta.expectStatus(t, "ROOT reads after joining", "GET", "/project/fetch/one?project_id=shop", "", rootH, 200)
	ta.expectStatus(t, "delete", "DELETE", "/project/delete?project_id=shop", "", h, 200)
	ta.expectStatus(t, "delete again", "DELETE", "/project/delete?project_id=shop", "", h, 404)
}

func TestProjectPages(t *testing.T) {
	t.Parallel()
	ta := newTestApp(t)
	ta.newUser(t, "admin", store.RoleAdmin)
	cookie, csrf := ta.signIn(t, "admin")
	b := browser(cookie, csrf)
	ta.run(t, []scenario{
		{name: "signed-out browser goes to sign-in", method: "GET", path: "/web/projects?filter=x", headers: asBrowserHeaders, status: 303,
			header: map[string]string{"Location": "/web/login?next=%2Fweb%2Fprojects%3Ffilter%3Dx"}},
		{name: "empty list", method: "GET", path: "/web/projects", headers: b, status: 200, want: []string{"No projects yet.", "New project"}},
	})
	form := func(v url.Values) (int, string, string) {
		v.Set("csrf_token", csrf)
		req := httptest.NewRequest("POST", "/project/create", strings.NewReader(v.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Cookie", cookie)
		req.Header.Set("HX-Request", "true")
		resp, body := ta.do(t, req)
		return resp.StatusCode, resp.Header.Get("HX-Location"), body
	}
	status, _, body := form(url.Values{"id": {"Bad Id"}, "name": {"Shop"}, "api_path": {"/shop"}})
	if status != 422 || !strings.Contains(body, `id="project-form"`) || !strings.Contains(body, "must be 3–50 lowercase") ||
		!strings.Contains(body, `value="Shop"`) || strings.Contains(body, "<nav") {
		t.Fatalf("htmx form error must re-render the form alone with the error beside the field: %d %s", status, body)
	}
	status, loc, _ := form(url.Values{"id": {"shop"}, "name": {"Shop"}, "api_path": {"/shop"}})
	if status != 200 || loc != "/web/project?id=shop" {
		t.Fatalf("created: %d HX-Location=%q", status, loc)
	}
	ta.run(t, []scenario{
		{name: "project page", method: "GET", path: "/web/project?id=shop", headers: b, status: 200,
			want: []string{"Project Shop created.", "Members", "admin", "Add member", "Delete project"}},
		{name: "project page as htmx navigation", method: "GET", path: "/web/project?id=shop", headers: merge(b, asHTMXHeaders), status: 200,
			want: []string{"Members", "<nav"}, unwanted: []string{"<!DOCTYPE html>"}},
		{name: "project as JSON", method: "GET", path: "/web/project?id=shop", headers: merge(b, asJSONHeaders), status: 200, want: []string{`"id":"shop"`}},
		{name: "unknown project page", method: "GET", path: "/web/project?id=nope", headers: b, status: 404, want: []string{"not found"}},
		{name: "list filter", method: "GET", path: "/web/projects?filter=sho", headers: b, status: 200, want: []string{"1–1 of 1", "/shop"}},
		{name: "list filter no match", method: "GET", path: "/web/projects?filter=zzz", headers: b, status: 200, want: []string{"No projects match “zzz”."}},
		// One's own row offers no Remove: leaving is not a slip of the finger.
		{name: "no Remove on one's own row", method: "GET", path: "/web/project?id=shop", headers: b, status: 200,
			unwanted: []string{"Remove admin from"}},
	})
	// A username no account has: the form says what to do next, by role.
	addMember := func(headers map[string]string) string {
		req := httptest.NewRequest("POST", "/project/member/add", strings.NewReader("project_id=shop&username=nobody_yet"))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for k, v := range merge(headers, asHTMXHeaders) {
			req.Header.Set(k, v)
		}
		_, body := ta.do(t, req)
		return body
	}
	if body := addMember(b); !strings.Contains(body, "ask a ROOT user to create the account") {
		t.Errorf("an ADMIN is not told the way on: %s", body)
	}
	rootCookie, rootCSRF := ta.signIn(t, "root")
	if status, body := ta.call(t, "POST", "/project/member/add", fmt.Sprintf(`{"project_id":"shop","target_uid":%d}`, ta.root.ID), as(ta.token(t, ta.root))); status >= 300 {
		t.Fatalf("ROOT joins: %d %s", status, body)
	}
	if body := addMember(browser(rootCookie, rootCSRF)); !strings.Contains(body, `href="/web/users?new=nobody_yet#f-username"`) {
		t.Errorf("ROOT is not led to create the account: %s", body)
	}
	ta.run(t, []scenario{{name: "users page starts the new account's form with the name", method: "GET", path: "/web/users?new=nobody_yet",
		headers: browser(rootCookie, rootCSRF), status: 200, want: []string{`value="nobody_yet"`}}})
}

func TestConfigs(t *testing.T) {
	t.Parallel()
	ta := newTestApp(t)
	h := as(ta.token(t, ta.root))
	ta.run(t, []scenario{
		{name: "create", method: "POST", path: "/config/create", headers: h, body: `{"key":"site.name","value":"Stencil"}`, status: 201,
			want: []string{`"data":{"key":"site.name","value":"Stencil"}`}},
		{name: "create existing", method: "POST", path: "/config/create", headers: h, body: `{"key":"site.name","value":"x"}`, status: 422, want: []string{`"key":"already exists"`}},
		{name: "bad key", method: "POST", path: "/config/create", headers: h, body: `{"key":"1 bad","value":"x"}`, status: 422},
		{name: "value too long", method: "POST", path: "/config/create", headers: h, body: fmt.Sprintf(`{"key":"big","value":%q}`, strings.Repeat("v", 10001)), status: 422},
		{name: "missing key", method: "POST", path: "/config/create", headers: h, body: `{"value":"x"}`, status: 400},
		{name: "fetch all", method: "GET", path: "/config/fetch/all?offset=0&limit=10", headers: h, status: 200,
			want: []string{`"data":[{"key":"site.name","value":"Stencil"}]`, `"amount":1`}},
		{name: "fetch one", method: "GET", path: "/config/fetch/one?key=site.name", headers: h, status: 200},
		{name: "fetch unknown", method: "GET", path: "/config/fetch/one?key=nope", headers: h, status: 404},
		{name: "fetch missing key", method: "GET", path: "/config/fetch/one", headers: h, status: 400},
		{name: "update", method: "PATCH", path: "/config/update", headers: h, body: `{"key":"site.name","value":"New"}`, status: 200, want: []string{`"value":"New"`}},
		{name: "update unknown", method: "PATCH", path: "/config/update", headers: h, body: `{"key":"nope","value":"x"}`, status: 404},
		{name: "delete", method: "DELETE", path: "/config/delete?key=site.name", headers: h, status: 200},
		{name: "delete unknown", method: "DELETE", path: "/config/delete?key=site.name", headers: h, status: 404},
		{name: "page", method: "GET", path: "/web/configs", headers: browser(ta.signIn(t, "root")), status: 200, want: []string{"New config", "No configs."}},
	})
}

func TestSignInAndOut(t *testing.T) {
	t.Parallel()
	ta := newTestApp(t)
	cookie, csrf := ta.browserSession(t)
	post := func(path, form, cookie string) (int, string, string, string) {
		req := httptest.NewRequest("POST", path, strings.NewReader(form+"&csrf_token="+csrf))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Cookie", cookie)
		resp, body := ta.do(t, req)
		newCookie := cookie
		for _, c := range resp.Cookies() {
			if c.Name == "stencil_session" {
				newCookie = c.Name + "=" + c.Value
			}
		}
		return resp.StatusCode, resp.Header.Get("Location"), newCookie, body
	}
	visitor := cookie // the visitor's CSRF cookie, for the sign-in form
	status, _, _, body := post("/web/login", "auth_data=root&password=wrong", cookie)
	// A page speaks to people: no API "Error: " prefix.
	if status != 401 || !strings.Contains(body, "Invalid username, email or password") || strings.Contains(body, "Error: ") || !strings.Contains(body, `value="root"`) {
		t.Fatalf("failed sign-in: %d %s", status, body)
	}
	status, loc, signedIn, _ := post("/web/login", "auth_data=root&password="+testPassword+"&next=/web/pats", cookie)
	if status != 303 || loc != "/web/pats" || signedIn == cookie {
		t.Fatalf("sign-in must redirect to next and renew the session token: %d %q renewed=%v", status, loc, signedIn != cookie)
	}
	ta.expectStatus(t, "old session token is dead", "GET", "/pat/fetch", "", map[string]string{"Cookie": cookie}, 401)
	ta.expectStatus(t, "new session token works", "GET", "/pat/fetch", "", map[string]string{"Cookie": signedIn}, 200)
	_, loc, signedIn, _ = post("/web/login", "auth_data=root&password="+testPassword+"&next=//evil.example", signedIn+"; "+visitor)
	if loc != "/" {
		t.Fatalf("next must stay on this site, got %q", loc)
	}
	signedIn, csrf = ta.pageToken(t, "/", strings.Split(signedIn, "; ")[0])
	status, loc, out, body := post("/web/logout", "", signedIn)
	if status != 303 || loc != "/web/login" || out == signedIn {
		t.Fatalf("sign-out: %d %q renewed=%v %s", status, loc, out != signedIn, body)
	}
	ta.expectStatus(t, "signed out", "GET", "/pat/fetch", "", map[string]string{"Cookie": out}, 401)
	ta.expectStatus(t, "token before sign-out", "GET", "/pat/fetch", "", map[string]string{"Cookie": signedIn}, 401)
}
