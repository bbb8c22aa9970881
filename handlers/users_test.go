package handlers

import (
	"fmt"
	"testing"

	"stencil/store"
)

// TestUsersPageRoles: the users page offers no Delete on one's own row; a
// role change from the page answers the row's form with the saved role, and
// a refused one (the last ROOT) answers it with the role unchanged and the
// reason in plain words beside it.
func TestUsersPageRoles(t *testing.T) {
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
