package e2e

import (
	"fmt"
	"net"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"stencil/mail/smtptest"
	"stencil/store/storetest"
)

// mailInstance is an instance delivering mail to a real SMTP server, its
// links leading to where it listens, with a ROOT account "root" and a
// project "shop".
func mailInstance(t *testing.T) (*instance, *smtptest.Server) {
	t.Helper()
	srv := smtptest.Start(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	app := startServer(t, map[string]string{"DATABASE_URL": storetest.URL(t), "PORT": fmt.Sprint(port),
		"ROOT_USERNAME": "root", "ROOT_PASSWORD": "root-password-1", "ROOT_EMAIL": "root@example.com",
		"SMTP_URL": srv.URL(), "SMTP_CA_FILE": srv.CAFile, "MAIL_FROM": "Stencil <noreply@example.com>",
		"PUBLIC_URL": fmt.Sprintf("http://127.0.0.1:%d", port)})
	root := apiLogin(t, app.URL, "root", "root-password-1")
	if status, body := api(t, "POST", app.URL+"/project/create", root, `{"id":"shop","name":"Shop","api_path":"/shop"}`); status != 201 {
		t.Fatalf("project: %d %s", status, body)
	}
	return app, srv
}

var mailedLink = regexp.MustCompile(`http://127\.0\.0\.1:\d+/web/(invite|reset)\?token=[A-Za-z0-9_-]+`)

// mailTo waits for the next message to addr and returns it with the link
// it holds.
func mailTo(t *testing.T, srv *smtptest.Server, addr string, seen int) (smtptest.Message, string) {
	t.Helper()
	for _, m := range srv.Wait(t, seen+1, 15*time.Second)[seen:] {
		if m.To[0] == addr {
			link := mailedLink.FindString(m.Text)
			if link == "" {
				t.Fatalf("no link in the message to %s: %q", addr, m.Text)
			}
			return m, link
		}
	}
	t.Fatalf("no message to %s", addr)
	return smtptest.Message{}, ""
}

// TestJourneyInvitationAndReset: an ADMIN invites a teammate by email; the
// mail arrives on the SMTP server; its link makes the account, which lands
// in the project. The teammate forgets the password, asks for a link,
// sets a new password; the session signed in before ends, and the link
// works once. At 390 px, with the keyboard.
func TestJourneyInvitationAndReset(t *testing.T) {
	t.Parallel()
	app, srv := mailInstance(t)
	admin := newBrowser(t)
	admin.resize(390, 844)
	admin.signIn(app, "root", "root-password-1")
	admin.do(chromedp.Navigate(app.URL + "/web/project?id=shop"))
	admin.waitText("Invite by email")
	admin.fill("#invite-form #f-email", "kim@example.com")
	admin.choose("#f-invite-role", "AUTHOR")
	admin.press("\r")
	admin.waitText("Invitation mailed to kim@example.com.")
	admin.waitText("Pending invitations")
	admin.focusOn("#invite-section #f-email") // ready for the next one
	if bad := admin.smallTargets(); len(bad) > 0 {
		t.Errorf("small targets on the project page: %v", bad)
	}
	admin.screenshot("invite-390")
	msg, link := mailTo(t, srv, "kim@example.com", 0)
	if msg.Subject != "root invites you to Shop on Stencil" || !strings.Contains(msg.HTML, `href="`+link+`"`) {
		t.Fatalf("the invitation: %q %q", msg.Subject, msg.HTML)
	}

	kim := newBrowser(t)
	kim.resize(390, 844)
	kim.do(chromedp.Navigate(link))
	kim.waitText("Join Shop")
	kim.waitText("kim@example.com")
	kim.fill("#f-username", "kim")
	kim.fill("#f-password", "short")
	kim.press("\r")
	kim.waitText("must be at least 10 characters")
	kim.focusOn("#f-password")
	kim.fill("#f-password", "kims-first-password")
	kim.press("\r")
	kim.waitText("Welcome, kim: you are a member of this project.")
	kim.waitText("Members")
	if bad := kim.smallTargets(); len(bad) > 0 {
		t.Errorf("small targets: %v", bad)
	}
	kim.screenshot("invite-accepted-390")
	// The link again: refused, and saying why.
	other := newBrowser(t)
	other.do(chromedp.Navigate(link))
	other.waitText("This invitation link was used, revoked or has expired: ask for a new one")

	// Forgot: from the sign-in page, by keyboard.
	other.resize(390, 844)
	other.do(chromedp.Navigate(app.URL + "/web/login"))
	other.tabToMatch(`a[href="/web/forgot"]`)
	other.press("\r")
	other.waitText("Give your account’s email address")
	other.fill("#f-email", "kim@example.com")
	other.press("\r")
	other.waitText("If an account has kim@example.com, a link to choose a new password is on its way.")
	other.screenshot("forgot-390")
	msg, link = mailTo(t, srv, "kim@example.com", 1)
	if msg.Subject != "Choose a new Stencil password" {
		t.Fatalf("the reset message: %q", msg.Subject)
	}
	other.do(chromedp.Navigate(link))
	other.waitText("Choose a new password")
	if bad := other.smallTargets(); len(bad) > 0 {
		t.Errorf("small targets on the reset page: %v", bad)
	}
	other.fill("#f-new_password", "kims-second-password")
	other.press("\r")
	other.waitText("Password changed, and every session of the account signed out.")
	other.waitText("Sign in to Stencil")
	other.screenshot("reset-done-390")
	// Kim's browser, signed in before the reset, is signed out.
	kim.do(chromedp.Navigate(app.URL + "/web/projects"))
	kim.waitText("Sign in to Stencil")
	// The new password signs in; the link does not work twice.
	other.signIn(app, "kim", "kims-second-password")
	other.do(chromedp.Navigate(link))
	other.waitText("This password reset link was used, revoked or has expired: ask for a new one")
}

// invitationHeld: with no mail server, an ADMIN invites by keyboard; the
// focus lands on the invitation's link, which the project's page keeps
// showing (copyable, clickable) until it is used. The roles offered are a
// project member's. At 1280 and 390 px. It runs on the instance of
// TestJourneyImportAndEvents, whose ADMIN it is.
func invitationHeld(t *testing.T, app *instance, b *browser) {
	t.Helper()
	b.resize(1280, 844)
	b.do(chromedp.Navigate(app.URL + "/web/project?id=shop"))
	b.waitText("Invite by email")
	if got := eval[string](b, `[...document.querySelectorAll("#f-invite-role option")].map(o => o.value).join(" ")`); got != "AUTHOR VIEWER" {
		t.Errorf("an ADMIN is offered the roles %q", got)
	}
	b.loaded()
	b.tabToMatch("#invite-form #f-email")
	b.typeKeys("#invite-form #f-email", "kim@example.com\r")
	b.waitText("copy its link and send it yourself")
	b.focusOn(`[id^="invite-link-"]`)
	link := eval[string](b, `document.activeElement.getAttribute("href") || ""`)
	if !strings.Contains(link, "/web/invite?token=") || !strings.HasPrefix(eval[string](b, `document.activeElement.id`), "invite-link-") {
		t.Fatalf("the focus is not on the new invitation's link: %q", link)
	}
	for _, width := range []int64{1280, 390} {
		b.resize(width, 844)
		b.do(chromedp.Navigate(app.URL + "/web/project?id=shop"))
		b.waitText("Pending invitations")
		if got := eval[string](b, `document.querySelector('[data-testid="invite-link"] a').getAttribute("href")`); got != link {
			t.Fatalf("the page at %d shows the link %q, want %q", width, got, link)
		}
		b.audit(fmt.Sprintf("a held invitation at %d", width))
		if bad := b.smallTargets(); width == 390 && len(bad) > 0 {
			t.Errorf("small targets at %d: %v", width, bad)
		}
		b.screenshot(fmt.Sprintf("invite-held-%d", width))
	}
	// The link's host is PUBLIC_URL's; the instance listens elsewhere.
	token := link[strings.Index(link, "/web/invite?"):]
	kim := newBrowser(t)
	kim.do(chromedp.Navigate(app.URL + token))
	kim.waitText("Join Shop")
}
