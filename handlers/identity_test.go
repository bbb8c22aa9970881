package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"stencil/accounts"
	"stencil/auth"
	"stencil/store"
)

func TestLoginResponseShape(t *testing.T) {
	t.Parallel()
	ta := newTestApp(t)
	for _, login := range []string{"root", "ROOT", "Root@Example.com"} {
		req := httptest.NewRequest("POST", "/user/login", strings.NewReader(fmt.Sprintf(`{"auth_data":%q,"password":%q}`, login, testPassword)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json")
		resp, body := ta.do(t, req)
		if resp.StatusCode != 200 {
			t.Fatalf("login as %q: %d %s", login, resp.StatusCode, body)
		}
		var got map[string]json.RawMessage
		if err := json.Unmarshal([]byte(body), &got); err != nil {
			t.Fatal(err)
		}
		if len(got) != 5 || string(got["status"]) != "200" || string(got["message"]) != `"Login successful"` ||
			string(got["uid"]) != strconv.FormatInt(ta.root.ID, 10) {
			t.Fatalf("top level: %s", body)
		}
		var user map[string]any
		_ = json.Unmarshal(got["user"], &user)
		for _, f := range []string{"id", "first_name", "last_name", "username", "email", "password", "role", "reset_token", "bio", "profile_picture", "is_public", "links"} {
			if _, ok := user[f]; !ok {
				t.Errorf("user lacks %s", f)
			}
		}
		if len(user) != 12 || user["password"] != "" || user["reset_token"] != "" || user["role"] != "ROOT" {
			t.Errorf("user: %v", user)
		}
		var jwtText string
		_ = json.Unmarshal(got["jwt"], &jwtText)
		claims := jwt.MapClaims{}
		if _, _, err := jwt.NewParser().ParseUnverified(jwtText, claims); err != nil {
			t.Fatal(err)
		}
		for _, c := range []string{"sub", "iat", "exp", "iss"} {
			if _, ok := claims[c]; !ok {
				t.Errorf("JWT lacks claim %s", c)
			}
		}
		ta.expectStatus(t, "with the new JWT", "GET", "/project/fetch", "", as(jwtText), 200)
	}
}

func TestLoginFailuresLookAlike(t *testing.T) {
	t.Parallel()
	ta := newTestApp(t)
	post := func(body string) (int, string) {
		req := httptest.NewRequest("POST", "/user/login", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json")
		resp, b := ta.do(t, req)
		return resp.StatusCode, b
	}
	s1, wrongPW := post(`{"auth_data":"root","password":"not-it"}`)
	s2, unknown := post(`{"auth_data":"nobody","password":"not-it"}`)
	if s1 != 401 || s2 != 401 || wrongPW != unknown {
		t.Fatalf("wrong password %d %s / unknown account %d %s must be the same 401", s1, wrongPW, s2, unknown)
	}
	for name, tc := range map[string]struct {
		body   string
		status int
	}{
		"missing password": {`{"auth_data":"root"}`, 400},
		"missing both":     {`{}`, 400},
		"not JSON":         {`auth_data=root`, 400},
		"wrong type":       {`{"auth_data":1,"password":"x"}`, 400},
		"empty password":   {`{"auth_data":"root","password":""}`, 422},
	} {
		if got, body := post(tc.body); got != tc.status {
			t.Errorf("%s: %d %s, want %d", name, got, body, tc.status)
		}
	}
}

func TestLoginThrottle(t *testing.T) {
	t.Parallel()
	ta := newTestApp(t)
	// app.Test serves every request from one client address.
	attempt := func(login, pw string) (int, string, string) {
		req := httptest.NewRequest("POST", "/user/login", strings.NewReader(fmt.Sprintf(`{"auth_data":%q,"password":%q}`, login, pw)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json")
		resp, body := ta.do(t, req)
		return resp.StatusCode, resp.Header.Get("Retry-After"), body
	}
	for i := 0; i < accounts.LoginAccountLimit; i++ {
		if status, _, _ := attempt("root", "wrong"); status != 401 {
			t.Fatalf("failure %d answered %d", i+1, status)
		}
	}
	status, retry, body := attempt("root", testPassword)
	if status != 429 || retry == "" || !strings.Contains(body, "Error: too many failed sign-ins") {
		t.Fatalf("after %d failures even the right password must wait: %d Retry-After=%q %s", accounts.LoginAccountLimit, status, retry, body)
	}
	if secs, err := strconv.Atoi(retry); err != nil || secs < 1 || secs > int(accounts.Window.Seconds()) {
		t.Fatalf("Retry-After = %q", retry)
	}
	var rows int
	if err := ta.pool.QueryRow(context.Background(), "SELECT count(*) FROM login_attempts WHERE scope LIKE 'login:root|%'").Scan(&rows); err != nil || rows != accounts.LoginAccountLimit {
		t.Fatalf("failures are counted in PostgreSQL: %d rows (%v)", rows, err)
	}
	// Another account is not affected; an address failing with many accounts is.
	other := ta.newUser(t, "other", store.RoleViewer)
	if status, _, _ := attempt(other.Username, testPassword); status != 200 {
		t.Fatalf("another account: %d", status)
	}
	for i := 0; i < accounts.LoginAddressLimit; i++ {
		attempt(fmt.Sprintf("ghost%d", i), "x")
	}
	if status, _, _ := attempt(other.Username, testPassword); status != 429 {
		t.Fatalf("address past its limit: %d, want 429", status)
	}
	// A success clears the account's failures (the address's are cleared here
	// by hand).
	if _, err := ta.pool.Exec(context.Background(), "DELETE FROM login_attempts WHERE scope LIKE 'addr:%'"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < accounts.LoginAccountLimit-1; i++ {
		attempt(other.Username, "wrong")
	}
	attempt(other.Username, testPassword)
	if status, _, _ := attempt(other.Username, "wrong"); status != 401 {
		t.Fatalf("after a success the count starts again: %d", status)
	}
}

func TestBearerTokens(t *testing.T) {
	t.Parallel()
	ta := newTestApp(t)
	secret := ta.h.cfg.JWTSecret
	expired, _ := auth.IssueJWT(secret, ta.root.ID, 1, time.Now().Add(-2*time.Hour), time.Hour)
	foreign, _ := auth.IssueJWT([]byte(strings.Repeat("z", 32)), ta.root.ID, 1, time.Now(), time.Hour)
	gone := ta.newUser(t, "gone", store.RoleViewer)
	goneToken := ta.token(t, gone)
	if err := ta.h.store.DeleteUser(context.Background(), gone.ID); err != nil {
		t.Fatal(err)
	}
	for name, tok := range map[string]string{
		"expired": expired, "other secret": foreign, "malformed": "abc.def", "deleted user": goneToken,
		"unknown PAT": auth.NewPAT(), "empty": "",
	} {
		ta.expectStatus(t, name, "GET", "/project/fetch", "", as(tok), 401)
	}
	ta.expectStatus(t, "basic auth is no bearer", "GET", "/project/fetch", "", map[string]string{"Authorization": "Basic cm9vdDpx"}, 401)
}

func TestPersonalAccessTokens(t *testing.T) {
	t.Parallel()
	ta := newTestApp(t)
	ctx := context.Background()
	jwtHeaders := as(ta.token(t, ta.root))
	create := func(headers map[string]string, body string) (int, map[string]any) {
		req := httptest.NewRequest("POST", "/pat/create", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		resp, raw := ta.do(t, req)
		var env struct{ Data map[string]any }
		_ = json.Unmarshal([]byte(raw), &env)
		return resp.StatusCode, env.Data
	}
	status, data := create(jwtHeaders, `{"name":"deploy"}`)
	token, _ := data["token"].(string)
	if status != 201 || !strings.HasPrefix(token, "stp_") {
		t.Fatalf("create: %d %v", status, data)
	}

	// Only the hash is stored: no column of the table holds the token.
	var dump string
	if err := ta.pool.QueryRow(ctx, "SELECT string_agg(t::text, ' ') FROM personal_access_tokens t").Scan(&dump); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(dump, token) || strings.Contains(dump, token[4:]) {
		t.Fatalf("the token is stored in the clear: %s", dump)
	}
	var stored []byte
	if err := ta.pool.QueryRow(ctx, "SELECT token_hash FROM personal_access_tokens WHERE name = 'deploy'").Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(stored, auth.HashPAT(token)) {
		t.Fatal("the stored hash is not the SHA-256 of the token")
	}

	patHeaders := as(token)
	ta.expectStatus(t, "PAT works", "GET", "/project/fetch", "", patHeaders, 200)
	var used *time.Time
	_ = ta.pool.QueryRow(ctx, "SELECT last_used_at FROM personal_access_tokens WHERE name = 'deploy'").Scan(&used)
	if used == nil {
		t.Error("last_used_at not recorded")
	}
	if status, _ := create(patHeaders, `{"name":"child"}`); status != 403 {
		t.Fatalf("a PAT created a PAT: %d", status)
	}
	// The list never shows tokens.
	req := httptest.NewRequest("GET", "/pat/fetch", nil)
	for k, v := range jwtHeaders {
		req.Header.Set(k, v)
	}
	if _, body := ta.do(t, req); strings.Contains(body, token) || !strings.Contains(body, `"name":"deploy"`) {
		t.Fatalf("list: %s", body)
	}

	id := int64(data["id"].(float64))
	ta.expectStatus(t, "revoke", "DELETE", fmt.Sprintf("/pat/delete?id=%d", id), "", jwtHeaders, 200)
	ta.expectStatus(t, "revoked PAT", "GET", "/project/fetch", "", patHeaders, 401)
	ta.expectStatus(t, "revoke twice", "DELETE", fmt.Sprintf("/pat/delete?id=%d", id), "", jwtHeaders, 404)
	other := ta.newUser(t, "other", store.RoleAdmin)
	_, mine := create(jwtHeaders, `{"name":"mine"}`)
	ta.expectStatus(t, "another user's token", "DELETE", fmt.Sprintf("/pat/delete?id=%d", int64(mine["id"].(float64))), "", as(ta.token(t, other)), 404)

	// Validity window.
	_, past := create(jwtHeaders, `{"name":"past","valid_from":"2020-01-01","valid_to":"2020-01-02"}`)
	ta.expectStatus(t, "expired PAT", "GET", "/project/fetch", "", as(past["token"].(string)), 401)
	_, future := create(jwtHeaders, fmt.Sprintf(`{"name":"future","valid_from":%q}`, time.Now().Add(time.Hour).Format(time.RFC3339)))
	ta.expectStatus(t, "not yet valid PAT", "GET", "/project/fetch", "", as(future["token"].(string)), 401)

	for name, tc := range map[string]struct {
		body   string
		status int
	}{
		"missing name":     {`{}`, 400},
		"long name":        {fmt.Sprintf(`{"name":%q}`, strings.Repeat("n", 101)), 422},
		"bad date":         {`{"name":"x","valid_to":"next week"}`, 422},
		"end before start": {`{"name":"x","valid_from":"2030-01-02","valid_to":"2030-01-01"}`, 422},
	} {
		if status, _ := create(jwtHeaders, tc.body); status != tc.status {
			t.Errorf("%s: %d, want %d", name, status, tc.status)
		}
	}
	ta.expectStatus(t, "bad id", "DELETE", "/pat/delete?id=x", "", jwtHeaders, 400)
	ta.expectStatus(t, "missing id", "DELETE", "/pat/delete", "", jwtHeaders, 400)
}

func TestUIDParameter(t *testing.T) {
	t.Parallel()
	ta := newTestApp(t)
	h := as(ta.token(t, ta.root))
	id := strconv.FormatInt(ta.root.ID, 10)
	ta.run(t, []scenario{
		{name: "matching query uid", method: "GET", path: "/config/fetch/all?uid=" + id, headers: h, status: 200},
		{name: "other query uid", method: "GET", path: "/config/fetch/all?uid=999", headers: h, status: 403,
			want: []string{"Error: uid does not match the authenticated user"}},
		{name: "non-numeric uid", method: "GET", path: "/config/fetch/all?uid=me", headers: h, status: 400},
		{name: "matching body uid", method: "POST", path: "/config/create", headers: h, body: `{"key":"a","value":"b","uid":` + id + `}`, status: 201},
		{name: "body uid as string", method: "POST", path: "/config/create", headers: h, body: `{"key":"b","value":"b","uid":"` + id + `"}`, status: 201},
		{name: "other body uid", method: "POST", path: "/config/create", headers: h, body: `{"key":"c","value":"b","uid":999}`, status: 403},
		{name: "uid without credentials", method: "GET", path: "/config/fetch/all?uid=" + id, headers: asJSONHeaders, status: 401},
	})
}

func TestFirstRunSetup(t *testing.T) {
	t.Parallel()
	ta := newEmptyTestApp(t)
	ta.run(t, []scenario{
		{name: "pages lead to setup", method: "GET", path: "/web/projects", headers: asBrowserHeaders, status: 303,
			header: map[string]string{"Location": "/web/setup"}},
		{name: "start page too", method: "GET", path: "/", headers: asBrowserHeaders, status: 303,
			header: map[string]string{"Location": "/web/setup"}},
		{name: "API clients are not redirected", method: "GET", path: "/project/fetch", headers: asJSONHeaders, status: 401},
		{name: "setup form", method: "GET", path: "/web/setup", headers: asBrowserHeaders, status: 200,
			want: []string{"Create ROOT account", `name="csrf_token"`}, unwanted: []string{`href="/web/login"`}},
	})
	cookie, csrf := ta.browserSessionAt(t, "/web/setup")
	post := func(form string) (int, string) {
		req := httptest.NewRequest("POST", "/web/setup", strings.NewReader(form+"&csrf_token="+csrf))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Cookie", cookie)
		req.Header.Set("Accept", "text/html")
		resp, body := ta.do(t, req)
		return resp.StatusCode, body
	}
	if status, body := post("username=a&email=bad&password=short"); status != 422 ||
		!strings.Contains(body, "must be 3–50 letters") || !strings.Contains(body, "must be a valid email address") ||
		!strings.Contains(body, "must be at least 10 characters") || !strings.Contains(body, `value="a"`) || strings.Contains(body, "short") {
		t.Fatalf("invalid setup must re-render the form with errors and without the password: %d %s", status, body)
	}
	if has, _ := ta.h.store.HasUsers(context.Background()); has {
		t.Fatal("an invalid setup created a user")
	}
	if status, body := post("username=founder&email=f@example.com&password=a-long-password"); status != 303 {
		t.Fatalf("setup: %d %s", status, body)
	}
	u, err := ta.h.store.UserByUsername(context.Background(), "founder")
	if err != nil || u.Role != store.RoleRoot {
		t.Fatalf("setup made %+v (%v)", u, err)
	}
	if status, _ := post("username=second&email=s@example.com&password=a-long-password"); status != 403 {
		t.Fatalf("a second setup must be refused, got %d", status)
	}
	if _, err := ta.h.store.UserByUsername(context.Background(), "second"); err == nil {
		t.Fatal("the second setup created a user")
	}
	ta.run(t, []scenario{{name: "setup page now leads to sign-in", method: "GET", path: "/web/setup", headers: asBrowserHeaders,
		status: 303, header: map[string]string{"Location": "/web/login"}}})
}

// TestPATFormDates: the token form asks for ISO dates as text (a date input
// would show the browser's locale, mm/dd/yyyy, beside ISO dates everywhere
// else) and refuses another format in words a person reads.
func TestPATFormDates(t *testing.T) {
	t.Parallel()
	ta := newTestApp(t)
	b := browser(ta.signIn(t, "root"))
	form := merge(b, map[string]string{"Content-Type": "application/x-www-form-urlencoded", "HX-Request": "true"})
	ta.run(t, []scenario{
		{name: "the form", method: "GET", path: "/web/pats", headers: b, status: 200,
			want:     []string{`id="f-valid_to" name="valid_to" type="text"`, `placeholder="YYYY-MM-DD"`, `aria-describedby="h-valid_to"`},
			unwanted: []string{`type="date"`}},
		{name: "a US date is refused", method: "POST", path: "/pat/create", headers: form, body: "name=ci&valid_to=01/31/2030", status: 422,
			want: []string{"must be a date (YYYY-MM-DD) or an RFC 3339 time", `aria-invalid="true"`}},
		{name: "an ISO date is taken", method: "POST", path: "/pat/create", headers: form, body: "name=ci&valid_to=2030-01-31", status: 201,
			want: []string{"2030-01-31"}},
	})
}
