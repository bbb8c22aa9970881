package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"stencil/store/storetest"
)

// TestJourneyIdentity: first run to sign-out, as a person does it — set up
// the ROOT account, sign out and in again, create a user and a project, add
// the user as a member, create a personal access token and see it once,
// revoke it, sign out.
func TestJourneyIdentity(t *testing.T) {
	t.Parallel()
	app := startServer(t, map[string]string{"DATABASE_URL": storetest.URL(t)})
	b := newBrowser(t)

	b.do(chromedp.Navigate(app.URL + "/web/projects"))
	b.waitText("Set up Stencil")
	// The fields come in the order an invitation's acceptance asks them.
	if got := eval[string](b, `Array.from(document.querySelectorAll("#setup-form input:not([type=hidden])")).map(e => e.name).join(",")`); got != "username,email,password,first_name,last_name" {
		t.Fatalf("the setup form asks %s", got)
	}
	b.fill("#f-username", "founder")
	b.fill("#f-email", "founder@example.com")
	b.fill("#f-password", "short")
	b.click("#setup-form button[type=submit]")
	b.waitText("must be at least 10 characters")
	b.screenshot("identity-01-setup-error")
	b.fill("#f-password", "founder-password")
	b.click("#setup-form button[type=submit]")
	b.waitText("Your ROOT account is ready")
	b.waitText("founder")

	b.click(`nav form[action="/web/logout"] button`)
	b.waitText("You are signed out.")
	b.fill("#f-auth_data", "founder")
	b.fill("#f-password", "wrong-password")
	b.click("#login-form button[type=submit]")
	b.waitText("Invalid username, email or password")
	b.fill("#f-password", "founder-password")
	b.click("#login-form button[type=submit]")
	b.waitText("Welcome, founder")

	b.do(chromedp.Navigate(app.URL + "/web/users"))
	b.fill("#user-form #f-username", "grace")
	b.fill("#user-form #f-email", "grace@example.com")
	b.fill("#user-form #f-password", "grace-password")
	b.choose("#f-role", "AUTHOR")
	b.click("#user-form button[type=submit]")
	b.waitText("User grace created.")
	b.screenshot("identity-02-users")

	// Roles change on Save, after a confirmation; the last ROOT's refusal
	// shows beside the role it keeps.
	roleOf := func(username string) string {
		return "#" + eval[string](b, fmt.Sprintf(`Array.from(document.querySelectorAll("label")).find(l => l.textContent === "Role of %s").htmlFor`, username))
	}
	// saveRole picks role for username, saves, waits for said and checks
	// the role then shown; it returns the role field's selector.
	saveRole := func(username, role, said, shown string) string {
		sel := roleOf(username)
		b.choose(sel, role)
		b.click(sel + " ~ button[type=submit]")
		b.confirm()
		b.waitText(said)
		if got := eval[string](b, fmt.Sprintf(`document.querySelector(%q).value`, sel)); got != shown {
			t.Fatalf("after saving %s for %s the role shows %q, want %q", role, username, got, shown)
		}
		return sel
	}
	b.focusOn(saveRole("founder", "VIEWER", "The last ROOT account must stay ROOT", "ROOT"))
	saveRole("grace", "ADMIN", "Role of grace is now ADMIN.", "ADMIN")
	b.mu.Lock()
	asked := strings.Join(b.dialogs, " | ")
	b.mu.Unlock()
	if !strings.Contains(asked, "Change the role of founder?") || !strings.Contains(asked, "Change the role of grace?") {
		t.Fatalf("role changes were not confirmed: %s", asked)
	}
	b.screenshot("identity-02-roles")

	b.click(`nav a[href="/web/projects"]`)
	b.waitText("No projects yet.")
	b.fill("#project-form #f-name", "Shop")
	b.fill("#project-form #f-id", "shop")
	b.fill("#project-form #f-api_path", "/shop")
	b.click("#project-form button[type=submit]")
	b.waitText("Project Shop created.")
	b.fill("#add-member-form #f-username", "nobody")
	b.click("#add-member-form button[type=submit]")
	b.waitText("is not a user")
	b.fill("#add-member-form #f-username", "grace")
	b.click("#add-member-form button[type=submit]")
	b.waitText("grace is now a member as ADMIN.")
	if !strings.Contains(b.text(), "ADMIN") {
		t.Fatal("the members list does not show grace's role")
	}
	b.screenshot("identity-03-project")

	// At 1280 px a ROOT's navigation keeps to one line: the rarer links
	// (tokens, events, users, configs) are under More.
	b.resize(1280, 900)
	if got := eval[float64](b, `Math.max(...Array.from(document.querySelectorAll('nav[aria-label="Main"] .lg\\:flex > *')).map(e => e.getBoundingClientRect().top)) - Math.min(...Array.from(document.querySelectorAll('nav[aria-label="Main"] .lg\\:flex > *')).map(e => e.getBoundingClientRect().top))`); got > 8 {
		t.Fatalf("at 1280 px the navigation takes more than one line (its items' tops differ by %.0f px)", got)
	}
	b.click(`nav [data-nav-more] summary`)
	b.click(`nav [data-nav-more] a[href="/web/pats"]`)
	b.waitText("No tokens yet.")
	b.fill("#pat-form #f-name", "deploy script")
	b.click("#pat-form button[type=submit]")
	b.waitText("Copy it now: it will not be shown again.")
	token := eval[string](b, `document.querySelector("#new-token").value`)
	if !strings.HasPrefix(token, "stp_") {
		t.Fatalf("shown token %q", token)
	}
	b.screenshot("identity-04-token-once")
	b.do(chromedp.Navigate(app.URL + "/web/pats"))
	b.waitText("deploy script")
	if strings.Contains(b.html(), token) {
		t.Fatal("the token is shown a second time")
	}
	b.click(`button[hx-delete^="/pat/delete"]`)
	b.confirm()
	b.waitText("Token revoked.")
	b.waitText("revoked")
	b.screenshot("identity-05-revoked")

	// The username in the navigation leads to the account page. With the
	// keyboard alone: a wrong current password is refused beside its
	// field, the right one changes the password.
	b.click(`[data-testid="signed-in-as"] a`)
	b.waitText("Change password")
	changePassword := func(current string) {
		b.tabTo("f-current_password")
		b.do(chromedp.KeyEvent(current), chromedp.KeyEvent("\t"))
		b.focused("f-new_password")
		b.do(chromedp.KeyEvent("founder-password-2"), chromedp.KeyEvent("\t"))
		if got := eval[string](b, `document.activeElement.textContent.trim()`); got != "Change password" {
			t.Fatalf("Tab after the new password reached %q, not the submit button", got)
		}
		b.do(chromedp.KeyEvent("\r"))
	}
	changePassword("not-my-password")
	b.waitText("is not your current password")
	changePassword("founder-password")
	b.waitText("Password changed.")
	b.screenshot("identity-06-password-changed")
	// At a phone's width the form fits the screen.
	b.do(chromedp.EmulateViewport(390, 844))
	b.do(chromedp.Navigate(app.URL + "/web/account"))
	b.waitText("Change password")
	if right := eval[float64](b, `document.querySelector("#password-form").getBoundingClientRect().right`); right > 390 {
		t.Fatalf("the password form ends at %.0f px on a 390 px screen", right)
	}
	b.screenshot("identity-06-account-390")
	b.do(chromedp.EmulateViewport(1280, 900))

	b.click(`nav form[action="/web/logout"] button`)
	b.waitText("You are signed out.")
	b.waitText("Sign in to Stencil")
	b.screenshot("identity-07-signed-out")
}
