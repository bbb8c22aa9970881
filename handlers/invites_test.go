package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"stencil/config"
	"stencil/mail/smtptest"
	"stencil/store"
	"stencil/store/localpg"
	"stencil/store/storetest"
)

// linkToken reads the token of a one-time link.
func linkToken(t *testing.T, link string) string {
	t.Helper()
	u, err := url.Parse(link)
	if err != nil || u.Query().Get("token") == "" {
		t.Fatalf("no token in %q", link)
	}
	return u.Query().Get("token")
}

func TestInvitationsHeld(t *testing.T) {
	t.Parallel()
	ta, h, a := mailApp(t)
	root := as(ta.token(t, ta.root))
	if err := ta.h.store.AddMember(context.Background(), "shop", ta.root.ID, store.MembershipRole(ta.root.Role)); err != nil {
		t.Fatal(err)
	}
	status, body := ta.call(t, "POST", "/project/invite", `{"project_id":"shop","email":"new@example.com","role":"AUTHOR"}`, a)
	if status != 201 || !strings.Contains(body, `"email":"new@example.com"`) || !strings.Contains(body, `"link":"http://localhost:`) {
		t.Fatalf("invite: %d %s", status, body)
	}
	var env struct{ Data invitationDTO }
	_ = json.Unmarshal([]byte(body), &env)
	first := linkToken(t, env.Data.Link)
	// Resend: a new link; the first stops working.
	_, body = ta.call(t, "POST", "/project/invite", `{"project_id":"shop","email":"NEW@example.com","role":"AUTHOR"}`, a)
	_ = json.Unmarshal([]byte(body), &env)
	token := linkToken(t, env.Data.Link)
	ta.run(t, []scenario{
		{name: "an ADMIN may not invite an ADMIN", method: "POST", path: "/project/invite", headers: a,
			body: `{"project_id":"shop","email":"x@example.com","role":"ADMIN"}`, status: 403, want: []string{"an ADMIN invites AUTHOR or VIEWER"}},
		{name: "a ROOT member may", method: "POST", path: "/project/invite", headers: root,
			body: `{"project_id":"shop","email":"lead@example.com","role":"ADMIN"}`, status: 201},
		{name: "an author may not invite", method: "POST", path: "/project/invite", headers: h,
			body: `{"project_id":"shop","email":"y@example.com","role":"VIEWER"}`, status: 403},
		{name: "an address that is none", method: "POST", path: "/project/invite", headers: a,
			body: `{"project_id":"shop","email":"not an address","role":"VIEWER"}`, status: 422, want: []string{`"email":`}},
		{name: "an address with a line break", method: "POST", path: "/project/invite", headers: a,
			body: `{"project_id":"shop","email":"a@example.com\r\nBcc: eve@example.com","role":"VIEWER"}`, status: 422},
		{name: "a role that is none", method: "POST", path: "/project/invite", headers: a,
			body: `{"project_id":"shop","email":"z@example.com","role":"OWNER"}`, status: 422},
		{name: "an existing account joins at once", method: "POST", path: "/project/invite", headers: a,
			body: `{"project_id":"shop","email":"root@example.com","role":"VIEWER"}`, status: 422, want: []string{"already a member"}},
		// While mail is held each pending invitation keeps its link (the
		// replaced one's is gone), on the list and on the project's page.
		{name: "pending ones", method: "GET", path: "/project/invitations?project_id=shop", headers: a, status: 200,
			want:     []string{`"amount":2`, `"email":"NEW@example.com"`, `"email":"lead@example.com"`, `"link":"http://localhost:8080/web/invite?token=` + token + `"`},
			unwanted: []string{first}},
		{name: "the page keeps the links", method: "GET", path: "/web/project?id=shop", headers: merge(a, map[string]string{"Accept": "text/html"}), status: 200,
			want: []string{`href="http://localhost:8080/web/invite?token=` + token + `"`, `data-copy="#invite-link-`}, unwanted: []string{first, `<option value="ROOT"`}},
		{name: "the first link is replaced", method: "POST", path: "/user/invite/accept", headers: asJSONHeaders,
			body: `{"token":"` + first + `","username":"newbie","password":"a-long-password"}`, status: 410, want: []string{"Error: this invitation link was used, revoked or has expired"}},
		{name: "a short password", method: "POST", path: "/user/invite/accept", headers: asJSONHeaders,
			body: `{"token":"` + token + `","username":"newbie","password":"short"}`, status: 422},
		{name: "a username taken", method: "POST", path: "/user/invite/accept", headers: asJSONHeaders,
			body: `{"token":"` + token + `","username":"boss","password":"a-long-password"}`, status: 422, want: []string{`"username":"is already taken"`}},
		{name: "accept", method: "POST", path: "/user/invite/accept", headers: asJSONHeaders,
			body: `{"token":"` + token + `","username":"newbie","password":"a-long-password","first_name":"Nia"}`, status: 201,
			want: []string{`"jwt":"`, `"username":"newbie"`, `"role":"AUTHOR"`, `"email":"NEW@example.com"`}},
		{name: "twice", method: "POST", path: "/user/invite/accept", headers: asJSONHeaders,
			body: `{"token":"` + token + `","username":"newbie2","password":"a-long-password"}`, status: 410},
		{name: "a token that never was", method: "POST", path: "/user/invite/accept", headers: asJSONHeaders,
			body: `{"token":"nope","username":"newbie3","password":"a-long-password"}`, status: 410},
	})
	newbie, err := ta.h.store.UserByUsername(context.Background(), "newbie")
	if err != nil {
		t.Fatal(err)
	}
	if status, _ := ta.call(t, "GET", "/project/fetch/one?project_id=shop", "", as(ta.token(t, newbie))); status != 200 {
		t.Errorf("the new account is no member: %d", status)
	}
	// Used and replaced invitations keep no sealed token.
	var sealed int
	if err := ta.pool.QueryRow(context.Background(), "SELECT count(*) FROM invitations WHERE link_sealed IS NOT NULL AND (accepted_at IS NOT NULL OR revoked_at IS NOT NULL)").Scan(&sealed); err != nil || sealed != 0 {
		t.Errorf("%d used or replaced invitations keep their token (%v)", sealed, err)
	}
	// Revoked and expired links.
	list, _ := ta.h.store.Invitations(context.Background(), "shop")
	if len(list) != 1 {
		t.Fatalf("pending: %+v", list)
	}
	_, body = ta.call(t, "POST", "/project/invite", `{"project_id":"shop","email":"late@example.com","role":"VIEWER"}`, a)
	_ = json.Unmarshal([]byte(body), &env)
	late, lateID := linkToken(t, env.Data.Link), env.Data.ID
	if _, err := ta.pool.Exec(context.Background(), "UPDATE invitations SET expires_at = now() - interval '1 second' WHERE id = $1", lateID); err != nil {
		t.Fatal(err)
	}
	ta.run(t, []scenario{
		{name: "an expired link", method: "POST", path: "/user/invite/accept", headers: asJSONHeaders,
			body: `{"token":"` + late + `","username":"late1","password":"a-long-password"}`, status: 410},
		{name: "its page says why", method: "GET", path: "/web/invite?token=" + late, headers: asBrowserHeaders, status: 410,
			want: []string{"invitation link was used, revoked or has expired"}},
		{name: "revoke", method: "DELETE", path: "/project/invitation/delete?project_id=shop&id=" + itoa(list[0].ID), headers: a, status: 200},
		{name: "revoke again", method: "DELETE", path: "/project/invitation/delete?project_id=shop&id=" + itoa(list[0].ID), headers: a, status: 404},
	})
	if err := ta.pool.QueryRow(context.Background(), "SELECT count(*) FROM invitations WHERE id = $1 AND link_sealed IS NOT NULL", list[0].ID).Scan(&sealed); err != nil || sealed != 0 {
		t.Errorf("a revoked invitation keeps its token (%v)", err)
	}
}

// mailedApp is the app delivering mail to a real SMTP server.
func mailedApp(t *testing.T) (*testApp, *smtptest.Server) {
	t.Helper()
	ta, srv, _ := mailingApp(t)
	ta.startMail(t)
	return ta, srv
}

// mailingApp is an app whose mail goes to a test SMTP server, its mailer
// not started yet, on the database at dbURL.
func mailingApp(t *testing.T) (_ *testApp, _ *smtptest.Server, dbURL string) {
	t.Helper()
	srv := smtptest.Start(t)
	cfg := testConfig(t)
	s, err := config.ParseSMTPURL(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	s.CAFile = srv.CAFile
	cfg.SMTP, cfg.MailFrom, cfg.PublicURL = s, "Stencil <noreply@example.com>", "https://stencil.example.com"
	dbURL = storetest.URL(t)
	ta := newTestAppWith(t, storetest.PoolOn(t, dbURL), cfg)
	ta.root = ta.newUser(t, "root", store.RoleRoot)
	return ta, srv, dbURL
}

// startMail runs the app's mailer until the test ends.
func (ta *testApp) startMail(t *testing.T) {
	ta.h.mail.Poll = 20 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go ta.h.mail.Run(ctx)
}

var linkInMail = regexp.MustCompile(`https://stencil\.example\.com/web/(reset|invite)\?token=[A-Za-z0-9_-]+`)

func TestPasswordResetMailed(t *testing.T) {
	t.Parallel()
	ta, srv := mailedApp(t)
	ada := ta.newUser(t, "ada", store.RoleAuthor)
	before := as(ta.token(t, ada))
	const answer = `"message":"If an account has this address, a link to choose a new password is on its way. It works once, for an hour."`
	ta.run(t, []scenario{
		{name: "an account's address", method: "POST", path: "/user/password/forgot", headers: asJSONHeaders, body: `{"email":"ADA@example.com"}`,
			status: 200, want: []string{answer}},
		{name: "no account's: the same answer", method: "POST", path: "/user/password/forgot", headers: asJSONHeaders, body: `{"email":"nobody@example.com"}`,
			status: 200, want: []string{answer}},
		{name: "not an address", method: "POST", path: "/user/password/forgot", headers: asJSONHeaders, body: `{"email":"ada"}`, status: 422},
	})
	got := srv.Wait(t, 1, 10*time.Second)
	time.Sleep(100 * time.Millisecond)
	if n := len(srv.Messages()); n != 1 || got[0].To[0] != "ada@example.com" || got[0].Subject != "Choose a new Stencil password" {
		t.Fatalf("mailed %d: %+v", n, got[0])
	}
	link := linkInMail.FindString(got[0].Text)
	if link == "" || !strings.Contains(got[0].HTML, link) {
		t.Fatalf("no link in %q / %q", got[0].Text, got[0].HTML)
	}
	token := linkToken(t, link)
	ta.run(t, []scenario{
		{name: "the page", method: "GET", path: "/web/reset?token=" + token, headers: asBrowserHeaders, status: 200, want: []string{"Choose a new password"}},
		{name: "too short", method: "POST", path: "/user/password/reset", headers: asJSONHeaders, body: `{"token":"` + token + `","new_password":"short"}`, status: 422},
		{name: "reset", method: "POST", path: "/user/password/reset", headers: asJSONHeaders, body: `{"token":"` + token + `","new_password":"a-brand-new-one"}`,
			status: 200, want: []string{`"message":"Password changed"`}},
		{name: "the old JWT has ended", method: "GET", path: "/project/fetch", headers: before, status: 401},
		{name: "the new password signs in", method: "POST", path: "/user/login", headers: asJSONHeaders, body: `{"auth_data":"ada","password":"a-brand-new-one"}`, status: 200},
		{name: "the link again", method: "POST", path: "/user/password/reset", headers: asJSONHeaders, body: `{"token":"` + token + `","new_password":"yet-another-one"}`,
			status: 410, want: []string{"Error: this password reset link was used, revoked or has expired"}},
		{name: "its page again", method: "GET", path: "/web/reset?token=" + token, headers: asBrowserHeaders, status: 410},
	})
	// The delivered message keeps no link.
	var text string
	if err := ta.pool.QueryRow(context.Background(), "SELECT coalesce(text, '') FROM outbox WHERE kind = 'reset'").Scan(&text); err != nil || strings.Contains(text, "token=") {
		t.Errorf("the sent reset message still holds its link: %q %v", text, err)
	}
	// An expired link.
	_, _ = ta.call(t, "POST", "/user/password/forgot", `{"email":"ada@example.com"}`, asJSONHeaders)
	got = srv.Wait(t, 2, 10*time.Second)
	expired := linkToken(t, linkInMail.FindString(got[1].Text))
	if _, err := ta.pool.Exec(context.Background(), "UPDATE password_resets SET expires_at = now() - interval '1 second' WHERE used_at IS NULL"); err != nil {
		t.Fatal(err)
	}
	if status, _ := ta.call(t, "POST", "/user/password/reset", `{"token":"`+expired+`","new_password":"yet-another-one"}`, asJSONHeaders); status != 410 {
		t.Errorf("an expired link: %d", status)
	}
	// Throttled like sign-in: five a quarter hour for one address from one client.
	for i := 0; i < 3; i++ {
		_, _ = ta.call(t, "POST", "/user/password/forgot", `{"email":"ada@example.com"}`, asJSONHeaders)
	}
	if status, body := ta.call(t, "POST", "/user/password/forgot", `{"email":"ada@example.com"}`, asJSONHeaders); status != 429 || !strings.Contains(body, "too many reset requests") {
		t.Errorf("the sixth request: %d %s", status, body)
	}
}

// An invitation mailed: the link in the message opens the page.
func TestInvitationMailed(t *testing.T) {
	t.Parallel()
	ta, srv := mailedApp(t)
	boss := ta.newUser(t, "boss", store.RoleAdmin)
	if err := ta.h.store.CreateProject(context.Background(), &store.Project{ID: "shop", Name: "Shop", APIPath: "/shop"}, boss.ID); err != nil {
		t.Fatal(err)
	}
	status, body := ta.call(t, "POST", "/project/invite", `{"project_id":"shop","email":"kim@example.com","role":"VIEWER"}`, as(ta.token(t, boss)))
	if status != 201 || strings.Contains(body, `"link"`) {
		t.Fatalf("invite: %d %s", status, body)
	}
	// Mail goes out: the token is kept only as its hash.
	var sealed int
	if err := ta.pool.QueryRow(context.Background(), "SELECT count(*) FROM invitations WHERE link_sealed IS NOT NULL OR link_key_id IS NOT NULL").Scan(&sealed); err != nil || sealed != 0 {
		t.Errorf("%d mailed invitations keep their token (%v)", sealed, err)
	}
	got := srv.Wait(t, 1, 10*time.Second)
	if got[0].Subject != "boss invites you to Shop on Stencil" || got[0].To[0] != "kim@example.com" {
		t.Fatalf("mailed: %+v", got[0])
	}
	token := linkToken(t, linkInMail.FindString(got[0].Text))
	if status, body := ta.call(t, "GET", "/web/invite?token="+token, "", asBrowserHeaders); status != 200 || !strings.Contains(body, "Join Shop") {
		t.Fatalf("the page: %d", status)
	}
}

// TestSignedOutBrowserUsesLinks: a browser that signed out keeps its
// session cookie; the invitation, reset and forgot pages it then opens
// carry a visitor's CSRF token, and their forms must be taken with it.
func TestSignedOutBrowserUsesLinks(t *testing.T) {
	t.Parallel()
	ta, _, a := mailApp(t)
	ada := ta.newUser(t, "ada", store.RoleAuthor)
	cookie, csrf := ta.signIn(t, "boss")
	post := func(path, cookie string, form url.Values) (*http.Response, string) {
		t.Helper()
		req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Accept", "text/html")
		req.Header.Set("Cookie", cookie)
		return ta.do(t, req)
	}
	resp, body := post("/web/logout", cookie, url.Values{"csrf_token": {csrf}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign out: %d %s", resp.StatusCode, body)
	}
	for _, c := range resp.Cookies() {
		if c.Name == "stencil_session" && c.Value != "" {
			cookie = c.Name + "=" + c.Value // the renewed session stays
		}
	}

	status, body := ta.call(t, "POST", "/project/invite", `{"project_id":"shop","email":"new@example.com","role":"AUTHOR"}`, a)
	var env struct{ Data invitationDTO }
	if err := json.Unmarshal([]byte(body), &env); err != nil || status != 201 {
		t.Fatalf("invite: %d %s", status, body)
	}
	jar, token := ta.pageToken(t, "/web/invite?token="+linkToken(t, env.Data.Link), cookie)
	resp, body = post("/user/invite/accept", jar, url.Values{"csrf_token": {token}, "token": {linkToken(t, env.Data.Link)},
		"username": {"newbie"}, "password": {"a-long-password"}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("accepting an invitation after signing out: %d %s", resp.StatusCode, body)
	}

	reset := "reset-token-for-the-signed-out-browser"
	if _, found, err := ta.h.store.RequestPasswordReset(context.Background(), nil, time.Now(), ada.Email, reset, time.Hour,
		store.ResetMail{Status: store.EmailHeld, Subject: "s", Text: "t"}); err != nil || !found {
		t.Fatal(found, err)
	}
	jar, token = ta.pageToken(t, "/web/reset?token="+reset, cookie)
	resp, body = post("/user/password/reset", jar, url.Values{"csrf_token": {token}, "token": {reset}, "new_password": {"another-long-password"}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("a reset after signing out: %d %s", resp.StatusCode, body)
	}
	jar, token = ta.pageToken(t, "/web/forgot", cookie)
	resp, body = post("/user/password/forgot", jar, url.Values{"csrf_token": {token}, "email": {"ada@example.com"}})
	if resp.StatusCode != http.StatusSeeOther && resp.StatusCode != http.StatusOK {
		t.Fatalf("forgot after signing out: %d %s", resp.StatusCode, body)
	}
	// A forged post with no token is still refused.
	if resp, _ := post("/user/password/forgot", jar, url.Values{"email": {"ada@example.com"}}); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a post without a token: %d", resp.StatusCode)
	}
}

// TestForgotTakesAsLong: a reset asked for an address with an account and
// for one without do the same work, so the answer's time does not tell
// which it was. It prints the medians of 40 requests of each, taken in
// turns through HTTP (`go test -run TestForgotTakesAsLong -v
// ./handlers`); the times are not asserted (a shared machine is noisy).
// That the two answers are alike is asserted.
func TestForgotTakesAsLong(t *testing.T) {
	t.Parallel()
	ta, _, _ := mailApp(t)
	ta.newUser(t, "ada", store.RoleAuthor)
	base := ta.listen(t)
	client := &http.Client{}
	forgot := func(email string) (time.Duration, string) {
		// The throttle's counts go, so that 40 requests from one address
		// are all answered.
		if _, err := ta.pool.Exec(context.Background(), "DELETE FROM login_attempts"); err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest("POST", base+"/user/password/forgot", strings.NewReader(`{"email":"`+email+`"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json")
		start := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		took := time.Since(start)
		if resp.StatusCode != 200 {
			t.Fatalf("forgot %s: %d %s", email, resp.StatusCode, body)
		}
		return took, string(body)
	}
	forgot("warm@example.com")
	var known, unknown []time.Duration
	for i := range 40 {
		d, a := forgot("ada@example.com")
		e, b := forgot(fmt.Sprintf("nobody%d@example.com", i))
		if a != b {
			t.Fatalf("the answers differ:\n%s\n%s", a, b)
		}
		known, unknown = append(known, d), append(unknown, e)
	}
	median := func(ds []time.Duration) time.Duration {
		slices.Sort(ds)
		return (ds[len(ds)/2-1] + ds[len(ds)/2]) / 2
	}
	mk, mu := median(known), median(unknown)
	t.Logf("forgot, median of 40: an account's address %v, no account's %v, difference %v", mk.Round(time.Microsecond), mu.Round(time.Microsecond), (mk - mu).Round(time.Microsecond))
	var resets int
	if err := ta.pool.QueryRow(context.Background(), "SELECT count(*) FROM password_resets").Scan(&resets); err != nil || resets != 40 {
		t.Fatalf("%d resets stored (%v), want 40", resets, err)
	}
}

// TestMessagesAtRestHoldNoToken: a reset and an invitation queued for
// delivery keep their links sealed — their stored text shows where the
// link goes, not the link — and once sent the mails carry working links
// while neither the database nor a dump of it (what a backup holds)
// contains either token.
func TestMessagesAtRestHoldNoToken(t *testing.T) {
	t.Parallel()
	ta, srv, dbURL := mailingApp(t)
	ta.newUser(t, "viewera", store.RoleViewer)
	boss := ta.newUser(t, "boss", store.RoleAdmin)
	ctx := context.Background()
	if err := ta.h.store.CreateProject(ctx, &store.Project{ID: "shop", Name: "Shop", APIPath: "/shop"}, boss.ID); err != nil {
		t.Fatal(err)
	}
	if status, body := ta.call(t, "POST", "/user/password/forgot", `{"email":"viewera@example.com"}`, asJSONHeaders); status != 200 {
		t.Fatalf("forgot: %d %s", status, body)
	}
	if status, body := ta.call(t, "POST", "/project/invite", `{"project_id":"shop","email":"kim@example.com","role":"VIEWER"}`, as(ta.token(t, boss))); status != 201 {
		t.Fatalf("invite: %d %s", status, body)
	}
	// Queued, not yet taken: no link at rest, a sealed one beside.
	rows, err := ta.pool.Query(ctx, "SELECT kind, coalesce(text, ''), coalesce(html, ''), link_sealed IS NOT NULL FROM outbox ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var kind, text, html string
		var sealed bool
		if err := rows.Scan(&kind, &text, &html, &sealed); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(text+html, "token=") || !sealed || !strings.Contains(text, store.LinkMarker) {
			t.Errorf("a queued %s message: sealed %v, %q %q", kind, sealed, text, html)
		}
	}
	rows.Close()
	var invite int64
	if err := ta.pool.QueryRow(ctx, "SELECT id FROM outbox WHERE kind = 'invite'").Scan(&invite); err != nil {
		t.Fatal(err)
	}
	if status, body := ta.call(t, "GET", fmt.Sprintf("/outbox/fetch/one?project_id=shop&id=%d", invite), "", as(ta.token(t, boss))); status != 200 ||
		strings.Contains(body, "token=") || !strings.Contains(body, store.LinkMarker) {
		t.Fatalf("the outbox: %d %s", status, body)
	}
	// Sent: the mails hold working links, the database and its dump none.
	ta.startMail(t)
	got := srv.Wait(t, 2, 10*time.Second)
	var tokens []string
	reset := ""
	for _, m := range got {
		link := linkInMail.FindString(m.Text)
		if link == "" || !strings.Contains(m.HTML, link) {
			t.Fatalf("no link in %q / %q", m.Text, m.HTML)
		}
		tokens = append(tokens, linkToken(t, link))
		if strings.Contains(link, "/web/reset") {
			reset = linkToken(t, link)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		var waiting int
		if err := ta.pool.QueryRow(ctx, "SELECT count(*) FROM outbox WHERE status <> 'sent' OR link_sealed IS NOT NULL").Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d messages not recorded as sent with their links cleared", waiting)
		}
		time.Sleep(20 * time.Millisecond)
	}
	pgDump, err := localpg.Tool("pg_dump")
	if err != nil {
		t.Fatal(err)
	}
	dump, err := exec.Command(pgDump, "--dbname", dbURL).Output()
	if err != nil {
		t.Fatalf("pg_dump: %v", err)
	}
	for _, token := range tokens {
		if strings.Contains(string(dump), token) {
			t.Errorf("the dump holds the token %s", token)
		}
	}
	if status, _ := ta.call(t, "GET", "/web/reset?token="+reset, "", asBrowserHeaders); status != 200 {
		t.Fatalf("the reset link: %d", status)
	}
}
