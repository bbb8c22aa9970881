package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5/pgxpool"

	"stencil/apidoc"
	"stencil/auth"
	"stencil/config"
	"stencil/mail"
	"stencil/metrics"
	"stencil/runs"
	"stencil/store"
	"stencil/store/storetest"
	"stencil/vault"
	"stencil/vaultcrypt"
)

func TestMain(m *testing.M) { os.Exit(storetest.Main(m)) }

// testApp is the real application on a fresh database.
type testApp struct {
	app  *fiber.App
	h    *Handlers
	pool *pgxpool.Pool
	logs *syncBuffer
	root store.User
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func testConfig(t testing.TB) config.Config {
	t.Helper()
	dir := t.TempDir()
	cfg, err := config.Load(func(k string) string {
		return map[string]string{"DATA_DIR": dir}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// newTestApp is the app on a fresh database holding one ROOT user, "root".
func newTestApp(t testing.TB) *testApp {
	t.Helper()
	ta := newTestAppOn(t, storetest.Pool(t))
	ta.root = ta.newUser(t, "root", store.RoleRoot)
	return ta
}

// newEmptyTestApp is the app on a fresh database with no user: first run.
func newEmptyTestApp(t testing.TB) *testApp {
	t.Helper()
	return newTestAppOn(t, storetest.Pool(t))
}

func newTestAppOn(t testing.TB, pool *pgxpool.Pool) *testApp {
	t.Helper()
	return newTestAppWith(t, pool, testConfig(t))
}

func newTestAppWith(t testing.TB, pool *pgxpool.Pool, cfg config.Config) *testApp {
	t.Helper()
	return newTestAppPools(t, testPools{main: pool}, cfg)
}

// testPools are the pools of a test app: the main one, and those of
// readiness and of the runs' transactions when they are apart from it.
type testPools struct{ main, probe, runTx *pgxpool.Pool }

func newTestAppPools(t testing.TB, pools testPools, cfg config.Config) *testApp {
	t.Helper()
	pool := pools.main
	probe, runTx, txConns := store.New(pool), store.New(pool), cfg.RunTxMaxConns
	if pools.probe != nil {
		probe = store.New(pools.probe)
	}
	if pools.runTx != nil {
		runTx, txConns = store.New(pools.runTx), int(pools.runTx.Config().MaxConns)
	}
	logs := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	// As main builds them, on one pool; the tests write the run log and
	// deliver mail when they need to.
	st := store.New(pool)
	keyring, err := vaultcrypt.NewKeyring(cfg.VaultKeys)
	if err != nil {
		t.Fatal(err)
	}
	metrics := metrics.New(st)
	secrets := vault.New(vault.Config{Store: st, Keyring: keyring, Versions: cfg.VaultVersions, Reads: metrics.VaultReads})
	mailer, err := mail.New(st, cfg, secrets, log)
	if err != nil {
		t.Fatal(err)
	}
	runner := runs.New(runs.Config{Store: st, Reads: st, Tx: runTx, TxConns: txConns, Vault: secrets, MailStatus: mailer.Status,
		MailBacklog: cfg.MailBacklog, Concurrency: cfg.RunConcurrency, Memory: cfg.RunMemory, Counted: metrics.RunsCounted, Log: log})
	// Real argon2id at a test-sized cost; production uses DefaultPasswordParams.
	hasher := auth.NewHasher(testPasswordParams, 2, 5*time.Second)
	h, err := New(cfg, Parts{Store: st, Probe: probe, Metrics: metrics, Runs: runner, Mail: mailer, Vault: secrets, Hasher: hasher}, log)
	if err != nil {
		t.Fatal(err)
	}
	return &testApp{app: h.App(), h: h, pool: pool, logs: logs}
}

var testPasswordParams = auth.PasswordParams{Memory: 1024, Time: 1, Threads: 1}

// testPassword is the password of every user newUser creates.
const testPassword = "correct-horse-battery"

// newUser creates a user with role through the store.
func (ta *testApp) newUser(t testing.TB, username, role string) store.User {
	t.Helper()
	u := store.User{Username: username, Email: username + "@example.com", Role: role, FirstName: "Test", LastName: username,
		PasswordHash: auth.HashPassword(testPassword, testPasswordParams)}
	if err := ta.h.store.CreateUser(context.Background(), &u); err != nil {
		t.Fatal(err)
	}
	return u
}

// listen serves the app on a free loopback port until the test ends and
// returns its base URL, for what app.Test cannot show: transport errors.
func (ta *testApp) listen(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = ta.app.Listener(ln) }()
	// Clients' idle keep-alive connections are closed first: the server
	// would otherwise wait for them until its read timeout (30 s).
	t.Cleanup(func() {
		http.DefaultClient.CloseIdleConnections()
		_ = ta.app.Shutdown()
	})
	return "http://" + ln.Addr().String()
}

// token returns a session token (JWT) of u.
func (ta *testApp) token(t testing.TB, u store.User) string {
	t.Helper()
	tok, err := auth.IssueJWT(ta.h.cfg.JWTSecret, u.ID, u.CredentialVersion, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// as returns JSON request headers that authenticate with token.
func as(token string) map[string]string {
	return map[string]string{"Accept": "application/json", "Authorization": "Bearer " + token}
}

// Ways of asking for the same resource (docs/architecture.md).
var (
	asBrowserHeaders = map[string]string{"Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}
	asHTMXHeaders    = map[string]string{"Accept": "*/*", "HX-Request": "true"}
	asJSONHeaders    = map[string]string{"Accept": "application/json"}
)

// scenario is one request through the real app and what its answer must hold.
type scenario struct {
	name     string
	method   string
	path     string
	headers  map[string]string
	body     string
	status   int
	want     []string          // substrings of the body
	unwanted []string          // substrings that must not be in the body
	header   map[string]string // response headers, exact
}

func (ta *testApp) run(t *testing.T, scenarios []scenario) {
	t.Helper()
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			req := httptest.NewRequest(sc.method, sc.path, strings.NewReader(sc.body))
			if sc.body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			for k, v := range sc.headers {
				req.Header.Set(k, v)
			}
			resp, body := ta.do(t, req)
			if resp.StatusCode != sc.status {
				t.Fatalf("status = %d, want %d; body: %s", resp.StatusCode, sc.status, body)
			}
			for _, w := range sc.want {
				if !strings.Contains(body, w) {
					t.Errorf("body lacks %q; body: %s", w, body)
				}
			}
			for _, u := range sc.unwanted {
				if strings.Contains(body, u) {
					t.Errorf("body contains %q; body: %s", u, body)
				}
			}
			for k, v := range sc.header {
				if got := resp.Header.Get(k); got != v {
					t.Errorf("header %s = %q, want %q", k, got, v)
				}
			}
		})
	}
}

// do sends req through the app. Every JSON answer is checked against the
// envelope rules and, where the document has the operation, against the
// OpenAPI document.
func (ta *testApp) do(t testing.TB, req *http.Request) (*http.Response, string) {
	t.Helper()
	var reqBody []byte
	if req.Body != nil {
		reqBody, _ = io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(reqBody))
	}
	resp, err := ta.app.Test(req, -1)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if strings.HasPrefix(req.URL.Path, "/x/") {
		// A route's own answers: its RETURN bodies are what the route
		// says; its errors are envelopes.
		if resp.StatusCode >= 400 && req.Method != http.MethodHead {
			checkEnvelope(t, resp.StatusCode, raw)
		}
		return resp, string(raw)
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") && req.URL.Path != "/openapi.json" && req.Method != http.MethodHead {
		// A project's file is the file itself (SPEC 15); its errors are
		// envelopes.
		if req.URL.Path != "/project/export" || resp.StatusCode >= 400 {
			checkEnvelope(t, resp.StatusCode, raw)
		}
		req.Body = io.NopCloser(bytes.NewReader(reqBody))
		checkAgainstDoc(t, ta.h.api, req, resp, raw)
	}
	return resp, string(raw)
}

func checkEnvelope(t testing.TB, status int, raw []byte) {
	t.Helper()
	var env map[string]json.RawMessage
	if err := json.Unmarshal(raw, &env); err != nil {
		t.Fatalf("JSON answer is not an object: %v: %s", err, raw)
	}
	var gotStatus int
	var msg string
	if err := json.Unmarshal(env["status"], &gotStatus); err != nil || gotStatus != status {
		t.Errorf("envelope status = %s, HTTP status %d", env["status"], status)
	}
	if err := json.Unmarshal(env["message"], &msg); err != nil {
		t.Errorf("envelope message missing: %s", raw)
	}
	if status >= 400 && !strings.HasPrefix(msg, "Error: ") {
		t.Errorf("error message %q must start with \"Error: \"", msg)
	}
	// A success's data may hold anything a user or a random token spells;
	// an error's whole answer, and every message, must not.
	text := msg
	if status >= 400 {
		text = string(raw)
	}
	for _, leak := range []string{"goroutine ", "SQLSTATE", "pgx", ".go:"} {
		if strings.Contains(text, leak) {
			t.Errorf("answer leaks internals (%q): %s", leak, raw)
		}
	}
}

var (
	docRouterOnce sync.Once
	docRouter     routers.Router
)

// checkAgainstDoc validates a JSON answer against the OpenAPI document. An
// answer of a path the document does not describe is an error unless the path
// is unknown to the app too (404) or only exists in tests.
func checkAgainstDoc(t testing.TB, api *apidoc.Document, req *http.Request, resp *http.Response, raw []byte) {
	t.Helper()
	docRouterOnce.Do(func() {
		var err error
		docRouter, err = gorillamux.NewRouter(api.Doc)
		if err != nil {
			t.Fatalf("openapi router: %v", err)
		}
	})
	if strings.HasPrefix(req.URL.Path, "/test/") || browserOnly(req.URL.Path) {
		return
	}
	// The document's servers entry is "/"; match on a full URL.
	probe := req.Clone(context.Background())
	probe.URL.Scheme, probe.URL.Host = "http", "example.com"
	probe.Host = "example.com"
	route, params, err := docRouter.FindRoute(probe)
	if err != nil {
		if resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusMethodNotAllowed {
			return
		}
		t.Fatalf("%s %s answered %d but the OpenAPI document has no such operation", req.Method, req.URL.Path, resp.StatusCode)
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: probe, PathParams: params, Route: route},
		Status:                 resp.StatusCode,
		Header:                 resp.Header,
		Body:                   io.NopCloser(bytes.NewReader(raw)),
		Options:                &openapi3filter.Options{IncludeResponseStatus: true},
	}
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		t.Errorf("answer of %s %s does not match the OpenAPI document: %v\nbody: %s", req.Method, req.URL.Path, err, raw)
	}
}

// browserSession opens the sign-in page like a browser and returns the
// session cookie and the page's CSRF token.
func (ta *testApp) browserSession(t testing.TB) (cookie, csrf string) {
	t.Helper()
	return ta.browserSessionAt(t, "/web/login")
}

// browserSessionAt opens page like a browser that is not signed in and
// returns its cookies (the visitor's CSRF cookie) and the page's CSRF token.
func (ta *testApp) browserSessionAt(t testing.TB, page string) (cookie, csrf string) {
	t.Helper()
	return ta.pageToken(t, page, "")
}

// pageToken opens page with cookie and returns the cookies the browser then
// holds and the page's CSRF token.
func (ta *testApp) pageToken(t testing.TB, page, cookie string) (string, string) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, page, nil)
	req.Header.Set("Accept", "text/html")
	if cookie != "" {
		req.Header.Set("Cookie", cookie)
	}
	resp, body := ta.do(t, req)
	jar := map[string]string{}
	for _, part := range strings.Split(cookie, "; ") {
		if k, v, ok := strings.Cut(part, "="); ok {
			jar[k] = v
		}
	}
	for _, c := range resp.Cookies() {
		jar[c.Name] = c.Value
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(jar)) {
		parts = append(parts, k+"="+jar[k])
	}
	m := csrfMeta.FindStringSubmatch(body)
	if len(parts) == 0 || m == nil {
		t.Fatalf("%s gave no cookie or CSRF token: %d %s", page, resp.StatusCode, body)
	}
	return strings.Join(parts, "; "), m[1]
}

var csrfMeta = regexp.MustCompile(`<meta name="csrf-token" content="([^"]+)">`)

// signIn signs a browser in as username through the sign-in form and
// returns the session cookie and CSRF token.
func (ta *testApp) signIn(t testing.TB, username string) (cookie, csrf string) {
	t.Helper()
	cookie, csrf = ta.browserSession(t)
	form := url.Values{"auth_data": {username}, "password": {testPassword}, "csrf_token": {csrf}}
	req := httptest.NewRequest(http.MethodPost, "/web/login", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Cookie", cookie)
	resp, body := ta.do(t, req)
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-in as %s: %d %s", username, resp.StatusCode, body)
	}
	for _, c := range resp.Cookies() {
		if c.Name == "stencil_session" {
			cookie = c.Name + "=" + c.Value
		}
	}
	// Signed in, the session has a CSRF token of its own.
	return ta.pageToken(t, "/", cookie)
}

// browser returns headers of a signed-in browser session.
func browser(cookie, csrf string) map[string]string {
	return map[string]string{"Accept": "text/html", "Cookie": cookie, "X-CSRF-Token": csrf}
}

// browserOnly reports whether path is a page for people rather than an API
// operation: such paths answer JSON too, but the document does not list them.
func browserOnly(path string) bool {
	return path == "/" || path == "/scalar" || path == "/openapi.json" ||
		strings.HasPrefix(path, "/web/") || strings.HasPrefix(path, "/static/")
}

func merge(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}
