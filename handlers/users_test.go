package handlers

import (
	"fmt"
	"net/http/httptest"
	"regexp"
	"testing"

	"stencil/store"
)

// TestUsersPageRoles: the users page offers no Delete on one's own row; a
// role change from the page answers the row's form with the saved role, and
// a refused one (the last ROOT) answers it with the role unchanged and the
// reason in plain words beside it.
func TestUsersPageRoles(t *testing.T) {
	t.Parallel()
	ta := newTestApp(t)
	bob := ta.newUser(t, "bob", store.RoleViewer)
	cookie, csrf := ta.signIn(t, "root")
	hx := merge(browser(cookie, csrf), map[string]string{"HX-Request": "true"})
	ta.run(t, []scenario{
		{name: "own row has no Delete", method: "GET", path: "/web/users", headers: browser(cookie, csrf), status: 200,
			want: []string{`>You</span>`, `aria-label="Delete bob"`}, unwanted: []string{`aria-label="Delete root"`}},
		{name: "the last ROOT is refused in place", method: "PATCH", path: "/user/update/role", headers: hx,
			body: fmt.Sprintf(`{"target_uid":%d,"role":"VIEWER"}`, ta.root.ID), status: 422,
			want:     []string{"The last ROOT account must stay ROOT", `<option value="ROOT" selected>`, `aria-invalid="true"`},
			unwanted: []string{"is the last ROOT user", `<option value="VIEWER" selected>`}},
		{name: "a change answers the row's form", method: "PATCH", path: "/user/update/role", headers: hx,
			body: fmt.Sprintf(`{"target_uid":%d,"role":"AUTHOR"}`, bob.ID), status: 200,
			want: []string{fmt.Sprintf(`id="role-form-%d"`, bob.ID), `<option value="AUTHOR" selected>`}},
		{name: "the API keeps its field error", method: "PATCH", path: "/user/update/role", headers: map[string]string{"Accept": "application/json", "Authorization": "Bearer " + ta.token(t, ta.root)},
			body: fmt.Sprintf(`{"target_uid":%d,"role":"VIEWER"}`, ta.root.ID), status: 422, want: []string{`"target_uid":"is the last ROOT user`}},
	})
}

// TestNavigationMarksTheSection: a route's pages mark Routes, a template's
// mark Templates (though under /web/routes), once each.
func TestNavigationMarksTheSection(t *testing.T) {
	t.Parallel()
	ta := newTestApp(t)
	cookie, csrf := ta.signIn(t, "root")
	current := regexp.MustCompile(`href="([^"]+)" class="nav-link-active" aria-current="page"`)
	for path, want := range map[string]string{
		"/web/routes/templates":        "/web/routes/templates",
		"/web/routes/templates/create": "/web/routes/templates",
		"/web/routes?id=nope":          "/web/routes",
		"/web/routes":                  "/web/routes",
		"/web/projects":                "/web/projects",
		"/web/users":                   "/web/users",
	} {
		req := httptest.NewRequest("GET", path, nil)
		for k, v := range browser(cookie, csrf) {
			req.Header.Set(k, v)
		}
		_, body := ta.do(t, req)
		got := map[string]bool{}
		for _, m := range current.FindAllStringSubmatch(body, -1) {
			got[m[1]] = true
		}
		if len(got) != 1 || !got[want] {
			t.Errorf("%s marks %v as current, want %s", path, got, want)
		}
	}
}
