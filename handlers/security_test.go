package handlers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/common/expfmt"

	"stencil/accounts"
	"stencil/store"
	"stencil/store/storetest"
)

// TestSafeNext is the table of post-login destinations (docs/security.md).
func TestSafeNext(t *testing.T) {
	t.Parallel()
	for next, want := range map[string]string{
		"/":                                  "/",
		"/web/pats":                          "/web/pats",
		"/web/vault?project_id=shop&offset=": "/web/vault?project_id=shop&offset=",
		"":                                   "/",
		"web/pats":                           "/",
		"//evil.example/x":                   "/",
		"/\\evil.example/x":                  "/",
		"/web\\..\\x":                        "/",
		"https://evil.example/":              "/",
		"/\nSet-Cookie: x=1":                 "/",
		"/\r\nLocation: //evil.example":      "/",
		"/\t/evil.example/x":                 "/",
		"/ /evil.example":                    "/",
		"/\u00a0/evil.example":               "/",
		"/\u2028x":                           "/",
		"/\x00":                              "/",
		"/\x7f":                              "/",
		"/\xff":                              "/",
	} {
		if got := safeNext(next); got != want {
			t.Errorf("safeNext(%q) = %q, want %q", next, got, want)
		}
	}
}

// TestSignInRedirectWritesNoHeader: a next with a line break neither adds a
// header nor leaves the site, signing in or already signed in.
func TestSignInRedirectWritesNoHeader(t *testing.T) {
	t.Parallel()
	ta := newTestApp(t)
	visitor, csrf := ta.browserSession(t)
	evil := "/\nSet-Cookie: x=1"
	form := url.Values{"auth_data": {"root"}, "password": {testPassword}, "csrf_token": {csrf}, "next": {evil}}
	req := httptest.NewRequest("POST", "/web/login", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Cookie", visitor)
	resp, _ := ta.do(t, req)
	if resp.StatusCode != 303 || resp.Header.Get("Location") != "/" {
		t.Fatalf("sign-in: %d Location %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	session := ""
	for _, c := range resp.Cookies() {
		if c.Name == "x" {
			t.Fatal("a header was injected through next")
		}
		if c.Name == "stencil_session" {
			session = c.Name + "=" + c.Value
		}
	}
	for _, next := range []string{"/%0ASet-Cookie:%20stencil_session=stolen;%20Path=/web", "/%09/evil.example/x"} {
		req := httptest.NewRequest("GET", "/web/login?next="+next, nil)
		req.Header.Set("Cookie", session)
		resp, _ := ta.do(t, req)
		if resp.StatusCode != 303 || resp.Header.Get("Location") != "/" || strings.Contains(fmt.Sprint(resp.Header), "stolen") {
			t.Fatalf("signed in, next=%s: %d Location %q headers %v", next, resp.StatusCode, resp.Header.Get("Location"), resp.Header)
		}
	}
}

// TestLoginCSRF: the sign-in and setup forms need the visitor's token, bound
// to the visitor's cookie; a cross-site form has neither.
func TestLoginCSRF(t *testing.T) {
	t.Parallel()
	ta := newTestApp(t)
	visitor, token := ta.browserSession(t)
	other, otherToken := ta.browserSession(t)
	post := func(path, cookie, csrf string) int {
		form := url.Values{"auth_data": {"root"}, "password": {testPassword}, "csrf_token": {csrf}}
		req := httptest.NewRequest("POST", path, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if cookie != "" {
			req.Header.Set("Cookie", cookie)
		}
		resp, _ := ta.do(t, req)
		return resp.StatusCode
	}
	for _, tc := range []struct {
		name, path, cookie, csrf string
		want                     int
	}{
		{"cross-site form: no cookie, no token", "/web/login", "", "", 403},
		{"token without its cookie", "/web/login", "", token, 403},
		{"cookie without a token", "/web/login", visitor, "", 403},
		{"another visitor's token", "/web/login", visitor, otherToken, 403},
		{"a forged token", "/web/login", other, strings.Repeat("A", 43), 403},
		{"setup without a token", "/web/setup", "", "", 403},
		{"own cookie and token", "/web/login", visitor, token, 303},
	} {
		if got := post(tc.path, tc.cookie, tc.csrf); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
	// API clients sign in with JSON and get a token, no cookie: no token needed.
	ta.expectStatus(t, "API sign-in", "POST", "/user/login", `{"auth_data":"root","password":"`+testPassword+`"}`, nil, 200)
}

// TestSessionTableHoldsNoUsableToken: the sessions table keeps the SHA-256
// of each token; the stored value signs nobody in. Page views of visitors
// make no rows at all.
func TestSessionTableHoldsNoUsableToken(t *testing.T) {
	t.Parallel()
	ta := newTestApp(t)
	for range 20 {
		for _, page := range []string{"/web/login", "/", "/web/projects", "/nope", "/scalar"} {
			req := httptest.NewRequest("GET", page, nil)
			req.Header.Set("Accept", "text/html")
			ta.do(t, req)
		}
	}
	var n int
	if err := ta.pool.QueryRow(context.Background(), "SELECT count(*) FROM sessions").Scan(&n); err != nil || n != 0 {
		t.Fatalf("100 visitor page views made %d session rows (%v)", n, err)
	}
	cookie, _ := ta.signIn(t, "root")
	var stored string
	if err := ta.pool.QueryRow(context.Background(), "SELECT token FROM sessions").Scan(&stored); err != nil {
		t.Fatal(err)
	}
	token := strings.TrimPrefix(strings.Split(cookie, "; ")[0], "stencil_session=")
	sum := sha256.Sum256([]byte(token))
	if stored == token || stored != hex.EncodeToString(sum[:]) {
		t.Fatalf("stored %q for token %q", stored, token)
	}
	// Page views of a signed-in browser write nothing while the session's
	// data stays the same and its expiry moves by less than a minute.
	version := func() string {
		var xmin string
		if err := ta.pool.QueryRow(context.Background(), "SELECT xmin::text FROM sessions").Scan(&xmin); err != nil {
			t.Fatal(err)
		}
		return xmin
	}
	before := version()
	for range 5 {
		ta.pageToken(t, "/web/projects", cookie)
	}
	if after := version(); after != before {
		t.Fatalf("page views rewrote the session row (xmin %s → %s)", before, after)
	}
	ta.expectStatus(t, "the real cookie", "GET", "/pat/fetch", "", map[string]string{"Cookie": "stencil_session=" + token}, 200)
	ta.expectStatus(t, "the stored value", "GET", "/pat/fetch", "", map[string]string{"Cookie": "stencil_session=" + stored}, 401)
}

// TestThrottleHoldsUnderConcurrency: 30 wrong passwords at once for one
// account get at most 5 answers of 401; the rest are 429.
func TestThrottleHoldsUnderConcurrency(t *testing.T) {
	t.Parallel()
	ta := newTestApp(t)
	base := ta.listen(t)
	var mu sync.Mutex
	counts := map[int]int{}
	var wg sync.WaitGroup
	for range 30 {
		wg.Go(func() {
			req, _ := http.NewRequest("POST", base+"/user/login", strings.NewReader(`{"auth_data":"root","password":"wrong-guess"}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			mu.Lock()
			counts[resp.StatusCode]++
			mu.Unlock()
		})
	}
	wg.Wait()
	if counts[401] > accounts.LoginAccountLimit || counts[401]+counts[429] != 30 {
		t.Fatalf("answers by status: %v", counts)
	}
}

// TestPasswordChange: one's own with the current password, another's as
// ROOT; the change ends older JWTs and the user's other browser sessions.
func TestPasswordChange(t *testing.T) {
	t.Parallel()
	ta := newTestApp(t)
	alice := ta.newUser(t, "alice", store.RoleAuthor)
	oldJWT := ta.token(t, alice)
	otherBrowser, _ := ta.signIn(t, "alice")
	thisBrowser, csrf := ta.signIn(t, "alice")
	ta.run(t, []scenario{
		{name: "wrong current password", method: "POST", path: "/user/password", headers: as(oldJWT),
			body: `{"current_password":"nope","new_password":"a-new-password"}`, status: 422, want: []string{`"current_password":"is not your current password"`}},
		{name: "too short", method: "POST", path: "/user/password", headers: as(oldJWT),
			body: `{"current_password":"` + testPassword + `","new_password":"short"}`, status: 422, want: []string{`"new_password":"must be at least 10 characters"`}},
		{name: "missing new password", method: "POST", path: "/user/password", headers: as(oldJWT), body: `{"current_password":"x"}`, status: 400},
		{name: "another's as AUTHOR", method: "POST", path: "/user/password", headers: as(oldJWT),
			body: fmt.Sprintf(`{"target_uid":%d,"new_password":"a-new-password"}`, ta.root.ID), status: 403},
		{name: "anonymous", method: "POST", path: "/user/password", headers: asJSONHeaders, body: `{"new_password":"a-new-password"}`, status: 401},
	})
	ta.expectStatus(t, "old JWT still good before the change", "GET", "/pat/fetch", "", as(oldJWT), 200)

	form := url.Values{"current_password": {testPassword}, "new_password": {"a-new-password"}, "csrf_token": {csrf}}
	req := httptest.NewRequest("POST", "/user/password", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Cookie", thisBrowser)
	resp, body := ta.do(t, req)
	if resp.StatusCode != 303 || resp.Header.Get("Location") != "/web/account" {
		t.Fatalf("change from the browser: %d %s", resp.StatusCode, body)
	}
	for _, c := range resp.Cookies() {
		if c.Name == "stencil_session" {
			thisBrowser = c.Name + "=" + c.Value
		}
	}
	ta.expectStatus(t, "JWT from before the change", "GET", "/pat/fetch", "", as(oldJWT), 401)
	ta.expectStatus(t, "the other browser", "GET", "/pat/fetch", "", map[string]string{"Cookie": otherBrowser}, 401)
	ta.expectStatus(t, "the browser that changed it", "GET", "/pat/fetch", "", map[string]string{"Cookie": thisBrowser}, 200)
	ta.expectStatus(t, "old password", "POST", "/user/login", `{"auth_data":"alice","password":"`+testPassword+`"}`, nil, 401)
	ta.expectStatus(t, "new password", "POST", "/user/login", `{"auth_data":"alice","password":"a-new-password"}`, nil, 200)

	// ROOT sets alice's password without knowing the current one.
	ta.expectStatus(t, "ROOT sets another's", "POST", "/user/password",
		fmt.Sprintf(`{"target_uid":%d,"new_password":"root-chose-this"}`, alice.ID), as(ta.token(t, ta.root)), 200)
	ta.expectStatus(t, "ROOT, unknown user", "POST", "/user/password", `{"target_uid":99999,"new_password":"root-chose-this"}`, as(ta.token(t, ta.root)), 404)
	ta.expectStatus(t, "alice's browser after ROOT's change", "GET", "/pat/fetch", "", map[string]string{"Cookie": thisBrowser}, 401)
	ta.expectStatus(t, "password ROOT set", "POST", "/user/login", `{"auth_data":"alice","password":"root-chose-this"}`, nil, 200)
}

// TestSecretsAreNotCached: answers that carry a secret say no-store.
func TestSecretsAreNotCached(t *testing.T) {
	t.Parallel()
	ta, _, h := vaultApp(t)
	ta.run(t, []scenario{
		{name: "create", method: "POST", path: "/vault/create", headers: h, body: `{"project_id":"shop","key":"K","value":"v"}`, status: 201},
		{name: "value", method: "GET", path: "/vault/fetch/one?project_id=shop&key=K", headers: h, status: 200,
			header: map[string]string{"Cache-Control": "no-store"}},
		{name: "values", method: "GET", path: "/vault/fetch?project_id=shop", headers: h, status: 200,
			header: map[string]string{"Cache-Control": "no-store"}},
		{name: "new PAT", method: "POST", path: "/pat/create", headers: h, body: `{"name":"ci"}`, status: 201,
			header: map[string]string{"Cache-Control": "no-store"}},
		{name: "JWT", method: "POST", path: "/user/login", headers: asJSONHeaders, body: `{"auth_data":"root","password":"` + testPassword + `"}`, status: 200,
			header: map[string]string{"Cache-Control": "no-store"}},
	})
}

// TestHeadReadsNoVaultValue: HEAD returns no value and logs no read.
func TestHeadReadsNoVaultValue(t *testing.T) {
	t.Parallel()
	ta, _, h := vaultApp(t)
	ta.expectStatus(t, "create", "POST", "/vault/create", `{"project_id":"shop","key":"K","value":"v"}`, h, 201)
	ta.expectStatus(t, "HEAD one", "HEAD", "/vault/fetch/one?project_id=shop&key=K", "", h, 200)
	ta.expectStatus(t, "HEAD unknown", "HEAD", "/vault/fetch/one?project_id=shop&key=NOPE", "", h, 404)
	ta.expectStatus(t, "HEAD list", "HEAD", "/vault/fetch?project_id=shop", "", h, 200)
	var reads int
	if err := ta.pool.QueryRow(context.Background(), "SELECT count(*) FROM vault_access_log WHERE action = 'read'").Scan(&reads); err != nil || reads != 0 {
		t.Fatalf("%d read rows after HEAD requests (%v)", reads, err)
	}
}

// TestPoolUnderAHeldLock: while a table is locked, requests that need it
// wait until their deadline and answer 503 with Retry-After; an unrelated
// request still gets a connection, and /readyz, on connections of its own,
// stays 200 even when every pooled connection is taken.
func TestPoolUnderAHeldLock(t *testing.T) {
	t.Parallel()
	url := storetest.URL(t)
	cfg := testConfig(t)
	cfg.RequestTimeout = time.Second
	pc, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	pc.MaxConns = 10
	pool, err := pgxpool.NewWithConfig(context.Background(), pc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	ta := newTestAppPools(t, testPools{main: pool, probe: storetest.PoolOn(t, url)}, cfg)
	ta.root = ta.newUser(t, "root", store.RoleRoot)
	h := as(ta.token(t, ta.root))
	ta.expectStatus(t, "project", "POST", "/project/create", `{"id":"shop","name":"Shop","api_path":"/shop"}`, h, 201)
	base := ta.listen(t)

	// Another client holds the vault table.
	locker, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer locker.Close(context.Background())
	tx, err := locker.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(context.Background(), "LOCK TABLE vault_entries IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	get := func(path string) (int, http.Header) {
		req, _ := http.NewRequest("GET", base+path, nil)
		for k, v := range h {
			req.Header.Set(k, v)
		}
		client := &http.Client{Timeout: 10 * time.Second}
		resp, err := client.Do(req)
		if err != nil {
			t.Error(err)
			return 0, nil
		}
		resp.Body.Close()
		return resp.StatusCode, resp.Header
	}
	// A few blocked reads leave connections for everything else.
	var few sync.WaitGroup
	for range 5 {
		few.Go(func() { get("/vault/fetch?project_id=shop") })
	}
	time.Sleep(200 * time.Millisecond)
	if status, _ := get("/project/fetch"); status != 200 {
		t.Errorf("an unrelated request beside 5 blocked reads: %d", status)
	}
	few.Wait()

	var wg sync.WaitGroup
	blocked := make(chan int, 30)
	for range 30 {
		wg.Go(func() {
			status, header := get("/vault/fetch?project_id=shop")
			if status == 503 && header.Get("Retry-After") == "" {
				t.Error("503 without Retry-After")
			}
			blocked <- status
		})
	}
	time.Sleep(200 * time.Millisecond) // the reads hold every connection now
	if status, _ := get("/readyz"); status != 200 {
		t.Errorf("readyz with the pool taken: %d", status)
	}
	wg.Wait()
	close(blocked)
	for status := range blocked {
		if status != 503 {
			t.Errorf("a read of the locked table answered %d, want 503", status)
		}
	}
	// The lock is still held, but the deadlines freed the connections.
	if status, _ := get("/project/fetch"); status != 200 {
		t.Fatalf("an unrelated request: %d", status)
	}
}

// TestFullHashingPoolAnswers503: when every hashing slot stays taken, a
// sign-in waits its turn, then answers 503 with Retry-After.
func TestFullHashingPoolAnswers503(t *testing.T) {
	t.Parallel()
	ta := newTestApp(t)
	ta.h.hasher.Wait = 50 * time.Millisecond
	// Hashes that hold every slot until released.
	release := make(chan struct{})
	var holding sync.WaitGroup
	for range 2 {
		holding.Add(1)
		go func() {
			defer holding.Done()
			_ = ta.h.hasher.Do(context.Background(), func() { <-release })
		}()
	}
	for ta.h.hasher.InFlight() < 2 {
		time.Sleep(time.Millisecond)
	}
	ta.run(t, []scenario{{name: "sign-in", method: "POST", path: "/user/login", headers: asJSONHeaders,
		body: `{"auth_data":"root","password":"` + testPassword + `"}`, status: 503,
		want: []string{"Error: too many sign-ins at once"}, header: map[string]string{"Retry-After": "1"}}})
	close(release)
	holding.Wait()
	var attempts int
	if err := ta.pool.QueryRow(context.Background(), "SELECT count(*) FROM login_attempts").Scan(&attempts); err != nil || attempts != 0 {
		t.Fatalf("an attempt whose password was never checked counted: %d rows (%v)", attempts, err)
	}
	ta.expectStatus(t, "slots free again", "POST", "/user/login", `{"auth_data":"root","password":"`+testPassword+`"}`, nil, 200)
}

// statementCounter counts the statements sent to PostgreSQL.
type statementCounter struct {
	mu   sync.Mutex
	sqls []string
}

func (s *statementCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	s.mu.Lock()
	s.sqls = append(s.sqls, strings.Join(strings.Fields(data.SQL), " "))
	s.mu.Unlock()
	return ctx
}

func (s *statementCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (s *statementCounter) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.sqls
	s.sqls = nil
	return out
}

// TestVaultReadRoundTrips: an audited vault read by JWT costs one
// statement, which checks the caller, reads and logs (store.ReaderCheck);
// by personal access token two: the caller with the project's membership,
// then the read with its log row. Neither reads the password hash.
func TestVaultReadRoundTrips(t *testing.T) {
	t.Parallel()
	counter := &statementCounter{}
	pc, err := pgxpool.ParseConfig(storetest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	pc.ConnConfig.Tracer = counter
	pool, err := pgxpool.NewWithConfig(context.Background(), pc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	ta := newTestAppOn(t, pool)
	keeper := ta.newUser(t, "keeper", store.RoleAdmin)
	if err := ta.h.store.CreateProject(context.Background(), &store.Project{ID: "shop", Name: "Shop", APIPath: "/shop"}, keeper.ID); err != nil {
		t.Fatal(err)
	}
	jwt := as(ta.token(t, keeper))
	ta.expectStatus(t, "create", "POST", "/vault/create", `{"project_id":"shop","key":"K","value":"v"}`, jwt, 201)
	resp, body := ta.do(t, jsonRequest("POST", "/pat/create", `{"name":"reader"}`, jwt))
	var created struct{ Data struct{ Token string } }
	if err := json.Unmarshal([]byte(body), &created); err != nil || resp.StatusCode != 201 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	token := created.Data.Token
	for _, tc := range []struct {
		name       string
		headers    map[string]string
		statements int
	}{{"JWT", jwt, 1}, {"PAT", as(token), 2}, {"PAT used again within the minute", as(token), 2}} {
		counter.take()
		ta.expectStatus(t, tc.name, "GET", "/vault/fetch/one?project_id=shop&key=K", "", tc.headers, 200)
		sqls := counter.take()
		if len(sqls) != tc.statements {
			t.Errorf("%s: %d statements, want %d:\n%s", tc.name, len(sqls), tc.statements, strings.Join(sqls, "\n"))
		}
		all := strings.Join(sqls, "\n")
		if strings.Contains(all, "password_hash") {
			t.Errorf("%s: a read reads the password hash:\n%s", tc.name, all)
		}
		if tc.name == "JWT" && strings.Contains(all, "UPDATE") {
			t.Errorf("JWT: the read updates:\n%s", all)
		}
	}
}

// TestMetrics: /metrics is for ROOT, in the Prometheus text format, and
// counts requests by route pattern, vault reads and sign-in outcomes.
func TestMetrics(t *testing.T) {
	t.Parallel()
	ta, keeper, h := vaultApp(t)
	ta.expectStatus(t, "create", "POST", "/vault/create", `{"project_id":"shop","key":"K","value":"v"}`, h, 201)
	ta.expectStatus(t, "read", "GET", "/vault/fetch/one?project_id=shop&key=K", "", h, 200)
	ta.expectStatus(t, "bad sign-in", "POST", "/user/login", `{"auth_data":"keeper","password":"wrong"}`, nil, 401)
	ta.expectStatus(t, "unknown path", "GET", "/nope/123", "", nil, 404)
	ta.expectStatus(t, "as ADMIN", "GET", "/metrics", "", as(ta.token(t, keeper)), 403)
	req := httptest.NewRequest("GET", "/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+ta.token(t, ta.root))
	resp, body := ta.do(t, req)
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("%d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var parser expfmt.TextParser
	families, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	value := func(name string, labels map[string]string) float64 {
		f := families[name]
		if f == nil {
			t.Fatalf("no metric %s", name)
		}
		for _, m := range f.GetMetric() {
			match := true
			for _, l := range m.GetLabel() {
				if want, ok := labels[l.GetName()]; ok && want != l.GetValue() {
					match = false
				}
			}
			if match {
				if c := m.GetCounter(); c != nil {
					return c.GetValue()
				}
				if g := m.GetGauge(); g != nil {
					return g.GetValue()
				}
				return float64(m.GetHistogram().GetSampleCount())
			}
		}
		return 0
	}
	for _, c := range []struct {
		name   string
		labels map[string]string
		min    float64
	}{
		{"stencil_http_requests_total", map[string]string{"route": "/vault/fetch/one", "method": "GET", "status": "200"}, 1},
		{"stencil_http_requests_total", map[string]string{"route": "unmatched", "status": "404"}, 1},
		{"stencil_http_request_duration_seconds", map[string]string{"route": "/vault/create"}, 1},
		{"stencil_vault_reads_total", map[string]string{"channel": "api"}, 1},
		{"stencil_vault_read_statements_total", nil, 1},
		{"stencil_logins_total", map[string]string{"outcome": "failure"}, 1},
		{"stencil_db_pool_max", nil, 1},
	} {
		if got := value(c.name, c.labels); got < c.min {
			t.Errorf("%s%v = %v, want at least %v", c.name, c.labels, got, c.min)
		}
	}
	if strings.Contains(body, "/nope/123") {
		t.Error("a concrete path became a label")
	}
}

// TestUnreadableSessionStartsAfresh: a session row this release cannot
// decode signs nobody in and answers no error.
func TestUnreadableSessionStartsAfresh(t *testing.T) {
	t.Parallel()
	ta := newTestApp(t)
	sum := sha256.Sum256([]byte("old-token"))
	if _, err := ta.pool.Exec(context.Background(), "INSERT INTO sessions (token, data, expiry) VALUES ($1, '\\x00ff', now() + interval '1 hour')",
		hex.EncodeToString(sum[:])); err != nil {
		t.Fatal(err)
	}
	ta.expectStatus(t, "page", "GET", "/web/projects", "", map[string]string{"Cookie": "stencil_session=old-token", "Accept": "text/html"}, 303)
}

// TestThrottleScopes: failures lock the login name as typed from one
// address. The account's email is not locked by them (it answers as any
// unknown email would, so the lock tells nothing), and the right password
// from another address still signs in.
func TestThrottleScopes(t *testing.T) {
	t.Parallel()
	ta := newTestApp(t)
	base := ta.listen(t)
	login := func(from, name, password string) int {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
		client := &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
		resp, err := client.Post(base+"/user/login", "application/json",
			strings.NewReader(fmt.Sprintf(`{"auth_data":%q,"password":%q}`, name, password)))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for range accounts.LoginAccountLimit {
		login("127.0.0.2", "root", "wrong")
	}
	for _, c := range []struct {
		from, name, password string
		want                 int
	}{
		{"127.0.0.2", "root", testPassword, 429},
		{"127.0.0.2", "root@example.com", "wrong", 401},
		{"127.0.0.2", "nobody@example.com", "wrong", 401},
		{"127.0.0.3", "root", testPassword, 200},
	} {
		if got := login(c.from, c.name, c.password); got != c.want {
			t.Errorf("%s from %s: %d, want %d", c.name, c.from, got, c.want)
		}
	}
}

// TestMetricsCredentials: /metrics answers 401 to a scraper without
// credentials (Prometheus' Accept is no browser's), sends a browser to
// sign in, and serves a bearer of METRICS_TOKEN; a wrong token is 401.
func TestMetricsCredentials(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.MetricsToken = strings.Repeat("m", 40)
	ta := newTestAppWith(t, storetest.Pool(t), cfg)
	ta.root = ta.newUser(t, "root", store.RoleRoot)
	get := func(accept, bearer string) (*http.Response, string) {
		req := httptest.NewRequest("GET", "/metrics", nil)
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		return ta.do(t, req)
	}
	prometheus := "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"
	for _, accept := range []string{prometheus, "", "*/*", "text/plain"} {
		if resp, body := get(accept, ""); resp.StatusCode != 401 || !strings.Contains(body, "authentication required") {
			t.Errorf("Accept %q without credentials: %d %s", accept, resp.StatusCode, body)
		}
	}
	if resp, _ := get("text/html,application/xhtml+xml,*/*;q=0.8", ""); resp.StatusCode != 303 || !strings.HasPrefix(resp.Header.Get("Location"), "/web/login") {
		t.Errorf("a browser without a session: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	if resp, body := get(prometheus, cfg.MetricsToken); resp.StatusCode != 200 || !strings.Contains(body, "# TYPE") {
		t.Errorf("METRICS_TOKEN: %d %.200s", resp.StatusCode, body)
	}
	if resp, _ := get(prometheus, strings.Repeat("m", 39)+"n"); resp.StatusCode != 401 {
		t.Errorf("a wrong token: %d", resp.StatusCode)
	}
	if resp, _ := get(prometheus, ta.token(t, ta.root)); resp.StatusCode != 200 {
		t.Errorf("a ROOT's token: %d", resp.StatusCode)
	}
}
