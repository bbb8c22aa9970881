package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestJourneyProjectRoles: ana, an ADMIN of shop and of blog, makes vic
// (an ADMIN account, VIEWER in both) ADMIN in shop from the Members table
// by keyboard alone — the role's select, a letter, Tab to Save, Enter, the
// confirmation — and the focus stays on the select; vic stays VIEWER in
// blog, and his token reads shop's vault and not blog's (docs/roles.md).
// A VIEWER account made ADMIN shows the cap. At 1280 and 390 px.
func TestJourneyProjectRoles(t *testing.T) {
	t.Parallel()
	app, b := memberBrowser(t, "ana", "ADMIN")
	root := apiLogin(t, app.URL, "root", "root-password-1")
	uids := map[string]int64{}
	for _, u := range []struct{ name, role string }{{"vic", "ADMIN"}, {"cyd", "VIEWER"}} {
		status, body := api(t, "POST", app.URL+"/user/register", root,
			fmt.Sprintf(`{"username":%q,"email":"%s@example.com","password":"%s-password-1","role":%q}`, u.name, u.name, u.name, u.role))
		var out struct{ Data struct{ ID int64 } }
		if status != 201 || json.Unmarshal([]byte(body), &out) != nil {
			t.Fatalf("register %s: %d %s", u.name, status, body)
		}
		uids[u.name] = out.Data.ID
	}
	for _, call := range [][2]string{
		{"/project/create", `{"id":"blog","name":"Blog","api_path":"/blog"}`},
		{"/project/member/add", `{"project_id":"blog","username":"ana","role":"ADMIN"}`},
		{"/project/member/add", `{"project_id":"blog","username":"vic","role":"VIEWER"}`},
		{"/project/member/add", `{"project_id":"shop","username":"vic","role":"VIEWER"}`},
		{"/project/member/add", `{"project_id":"shop","username":"cyd","role":"VIEWER"}`},
		{"/vault/create", `{"project_id":"shop","key":"API_KEY","value":"shop-secret"}`},
		{"/vault/create", `{"project_id":"blog","key":"API_KEY","value":"blog-secret"}`},
	} {
		if status, body := api(t, "POST", app.URL+call[0], root, call[1]); status >= 300 {
			t.Fatalf("POST %s: %d %s", call[0], status, body)
		}
	}
	vic := apiLogin(t, app.URL, "vic", "vic-password-1")
	if status, _ := api(t, "GET", app.URL+"/vault/fetch?project_id=shop", vic, ""); status != 403 {
		t.Fatalf("vic, VIEWER in shop, reads its vault: %d", status)
	}

	// setRole picks role in user's role select by typing its first letter,
	// saves with the keyboard and confirms; the focus stays on the select.
	setRole := func(user, role, said string) {
		sel := fmt.Sprintf("#member-role-%d", uids[user])
		b.tabToMatch(sel)
		b.press(role[:1])
		if got := eval[string](b, fmt.Sprintf(`document.querySelector(%q).value`, sel)); got != role {
			t.Fatalf("typing %q in %s's role chose %q", role[:1], user, got)
		}
		b.press("\t")
		b.focusOn(fmt.Sprintf("#member-role-form-%d button[type=submit]", uids[user]))
		b.press("\r")
		b.confirm()
		b.waitText(said)
		b.focusOn(sel)
	}
	for i, width := range []int64{1280, 390} {
		b.resize(width, 844)
		b.do(chromedp.Navigate(app.URL + "/web/project?id=shop"))
		b.waitText("Members")
		b.loaded()
		role := []string{"ADMIN", "AUTHOR"}[i]
		setRole("vic", role, "Role of vic in Shop is now "+role+".")
		setRole("cyd", role, "Role of cyd in Shop is now "+role+" (works as VIEWER: their account's role caps it).")
		b.waitText("Works as VIEWER: their account's role caps it.")
		b.audit(fmt.Sprintf("members at %d", width))
		if bad := b.smallTargets(); width == 390 && len(bad) > 0 {
			t.Errorf("small targets at %d: %v", width, bad)
		}
		b.screenshot(fmt.Sprintf("roles-%d", width))
	}
	b.resize(1280, 844)

	// vic is AUTHOR in shop now (the second pass), VIEWER in blog still.
	_, body := api(t, "GET", app.URL+"/project/fetch/one?project_id=blog", root, "")
	if !strings.Contains(body, `"username":"vic","first_name":"","last_name":"","role":"VIEWER","effective_role":"VIEWER"`) {
		t.Fatalf("vic's role in blog changed: %s", body)
	}
	status, body := api(t, "PATCH", app.URL+"/project/member/role", root, fmt.Sprintf(`{"project_id":"shop","target_uid":%d,"role":"ADMIN"}`, uids["vic"]))
	if status != 200 {
		t.Fatalf("root makes vic ADMIN in shop: %d %s", status, body)
	}
	if status, body := api(t, "GET", app.URL+"/vault/fetch/one?project_id=shop&key=API_KEY", vic, ""); status != 200 || !strings.Contains(body, "shop-secret") {
		t.Fatalf("vic, ADMIN in shop, reads its vault: %d %s", status, body)
	}
	if status, body := api(t, "GET", app.URL+"/vault/fetch/one?project_id=blog&key=API_KEY", vic, ""); status != 403 || strings.Contains(body, "blog-secret") {
		t.Fatalf("vic, VIEWER in blog, reads its vault: %d %s", status, body)
	}
	b.do(chromedp.Navigate(app.URL + "/web/project?id=blog"))
	b.waitText("Members")
	if got := eval[string](b, fmt.Sprintf(`document.querySelector("#member-role-%d").value`, uids["vic"])); got != "VIEWER" {
		t.Fatalf("blog's table shows vic as %s", got)
	}
}
