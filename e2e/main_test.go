package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	neturl "net/url"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"stencil/server"
	"stencil/store/storetest"
)

// journeysAtOnce is how many of the package's tests run at once unless
// -test.parallel says: a journey mostly waits on its browser and its
// service, so the default (as many as there are cores) left a core idle
// while the package ran alone, the longest of `make test`
// (docs/testing.md).
const journeysAtOnce = 4

// TestMain runs the tests from the repository's root, where the service
// in development reads views/ and static/ and the binary is built from.
func TestMain(m *testing.M) {
	if err := os.Chdir(".."); err != nil {
		panic(err)
	}
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		if err := flag.Set("test.parallel", strconv.Itoa(max(journeysAtOnce, runtime.GOMAXPROCS(0)))); err != nil {
			panic(err)
		}
	}
	code := storetest.Main(m)
	stopChromium()
	if binaryPath != "" {
		os.RemoveAll(filepath.Dir(binaryPath))
	}
	os.Exit(code)
}

// instance is the real service started through run, as `stencil serve` does.
type instance struct {
	URL  string
	logs *lockedBuffer
	stop func()
}

type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startInstance runs the service on 127.0.0.1 and a free port, as `stencil
// serve` does, with vars on top of a fresh DATA_DIR; an empty DATABASE_URL
// means the private cluster. It is stopped (as by SIGTERM) at the latest when
// the test ends.
func startInstance(t testing.TB, vars map[string]string) *instance {
	t.Helper()
	// OWASP's argon2id parameters, a fifth of the default's work: the
	// package's services sign in hundreds of times (docs/testing.md).
	env := map[string]string{"HOST": "127.0.0.1", "PORT": "0", "DATA_DIR": t.TempDir(), "PASSWORD_HASH": "owasp"}
	for k, v := range vars {
		env[k] = v
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	in := &instance{logs: &lockedBuffer{}}
	go func() {
		done <- server.Run(ctx, []string{"serve"}, func(k string) string { return env[k] }, in.logs, ready)
	}()
	var once sync.Once
	in.stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("instance stopped with %v", err)
				}
			case <-time.After(40 * time.Second):
				t.Error("instance did not stop")
			}
		})
	}
	select {
	case addr := <-ready:
		in.URL = "http://" + addr
		t.Cleanup(func() {
			in.stop()
			if t.Failed() {
				t.Logf("the instance's log:\n%s", tail(in.logs.String(), 40))
			}
		})
		return in
	case err := <-done:
		cancel()
		t.Fatalf("instance did not start: %v\n%s", err, in.logs)
	case <-time.After(60 * time.Second):
		cancel()
		t.Fatalf("instance not ready after 60s\n%s", in.logs)
	}
	return nil
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

func getJSON(t testing.TB, url string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("%s: not JSON: %s", url, raw)
	}
	return resp.StatusCode, out
}

// TestTwoInstancesStartTogether: both instances migrate the same empty
// database at the same moment; the advisory lock makes one wait, and both
// become ready.
func TestTwoInstancesStartTogether(t *testing.T) {
	url := storetest.EmptyURL(t)
	var wg sync.WaitGroup
	instances := make([]*instance, 2)
	for i := range instances {
		wg.Add(1)
		go func() {
			defer wg.Done()
			instances[i] = startInstance(t, map[string]string{"DATABASE_URL": url})
		}()
	}
	wg.Wait()
	for i, in := range instances {
		if in == nil {
			t.Fatalf("instance %d did not start", i)
		}
		status, body := getJSON(t, in.URL+"/readyz")
		if status != 200 || body["message"] != "ready" {
			t.Fatalf("instance %d readyz = %d %v", i, status, body)
		}
	}
}

func TestMigrateSubcommand(t *testing.T) {
	url := storetest.EmptyURL(t)
	vars := map[string]string{"DATABASE_URL": url, "DATA_DIR": t.TempDir()}
	logs := &lockedBuffer{}
	if err := server.Run(context.Background(), []string{"migrate"}, func(k string) string { return vars[k] }, logs, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "migrations applied") {
		t.Fatalf("log: %s", logs)
	}
	in := startInstance(t, map[string]string{"DATABASE_URL": url})
	if status, _ := getJSON(t, in.URL+"/readyz"); status != 200 {
		t.Fatalf("readyz after migrate = %d", status)
	}
}

func TestRunRefusesBadStarts(t *testing.T) {
	for name, tc := range map[string]struct {
		args []string
		vars map[string]string
		want string
	}{
		"unknown subcommand":         {[]string{"dance"}, nil, `unknown command "dance": use serve, migrate, vault rotate, openapi, backup, restore, project (export, plan, apply, test) or help`},
		"backup without a file":      {[]string{"backup"}, nil, "usage: stencil backup <file>"},
		"production without secrets": {[]string{"serve"}, map[string]string{"APP_ENV": "production"}, "refusing to start"},
		"unreachable database":       {[]string{"migrate"}, map[string]string{"DATABASE_URL": "postgres://x:y@127.0.0.1:1/db?connect_timeout=2"}, "connect for migrations"},
	} {
		t.Run(name, func(t *testing.T) {
			vars := map[string]string{"DATA_DIR": t.TempDir()}
			for k, v := range tc.vars {
				vars[k] = v
			}
			err := server.Run(context.Background(), tc.args, func(k string) string { return vars[k] }, io.Discard, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

// TestPrivateClusterWithoutDatabaseURL starts the service the way `make run`
// does: no DATABASE_URL, so it runs its own cluster under DATA_DIR/pg, which a
// second start reuses.
func TestPrivateClusterWithoutDatabaseURL(t *testing.T) {
	dataDir := reachableDataDir(t)
	for i := 1; i <= 2; i++ {
		in := startInstance(t, map[string]string{"DATA_DIR": dataDir})
		status, body := getJSON(t, in.URL+"/readyz")
		in.stop()
		if status != 200 {
			t.Fatalf("start %d: readyz = %d %v", i, status, body)
		}
		if i == 1 && !strings.Contains(in.logs.String(), "started the private PostgreSQL cluster") {
			t.Fatalf("no private cluster started; log: %s", in.logs)
		}
	}
	if _, err := os.Stat(dataDir + "/pg/data/PG_VERSION"); err != nil {
		t.Fatalf("cluster not kept under DATA_DIR/pg: %v", err)
	}
}

// TestShutdownDrainsInFlightRequests: a request whose headers are still
// arriving when shutdown begins is answered in full before the process exits.
func TestShutdownDrainsInFlightRequests(t *testing.T) {
	in := startInstance(t, map[string]string{"DATABASE_URL": storetest.URL(t)})
	conn, err := net.Dial("tcp", strings.TrimPrefix(in.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: stencil\r\n"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // the server has read part of the request
	stopped := make(chan struct{})
	go func() { in.stop(); close(stopped) }()
	select {
	case <-stopped:
		t.Fatal("the server exited with a request in flight")
	case <-time.After(300 * time.Millisecond):
	}
	if _, err := io.WriteString(conn, "Accept: application/json\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("in-flight request not answered: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"message":"ok"`) {
		t.Fatalf("in-flight request got %d %s", resp.StatusCode, body)
	}
	select {
	case <-stopped:
	case <-time.After(30 * time.Second):
		t.Fatal("the server did not exit after draining")
	}
	if !strings.Contains(in.logs.String(), "draining in-flight requests") {
		t.Errorf("log: %s", in.logs)
	}
}

// TestSessionSharedAcrossInstancesAndRestarts: a browser session made on one
// instance is accepted by a second instance on the same database, and still
// after both restart.
func TestSessionSharedAcrossInstancesAndRestarts(t *testing.T) {
	url := storetest.URL(t)
	env := map[string]string{"DATABASE_URL": url, "ROOT_USERNAME": "root", "ROOT_PASSWORD": "root-password-1", "ROOT_EMAIL": "root@example.com"}
	a := startInstance(t, env)
	b := startInstance(t, env)
	cookie := browserSignIn(t, a.URL, "root", "root-password-1")
	for name, base := range map[string]string{"same instance": a.URL, "second instance": b.URL} {
		if who := signedInAs(t, base, cookie); who != "root" {
			t.Fatalf("%s: signed in as %q", name, who)
		}
	}
	a.stop()
	b.stop()
	c := startInstance(t, env)
	if who := signedInAs(t, c.URL, cookie); who != "root" {
		t.Fatalf("after restart: signed in as %q", who)
	}
}

var (
	csrfMeta    = regexp.MustCompile(`<meta name="csrf-token" content="([^"]+)">`)
	signedInTag = regexp.MustCompile(`data-testid="signed-in-as"><a href="/web/account"[^>]*>([^<]+)<`)
)

// browserSignIn signs in through the sign-in form and returns the session cookie.
func browserSignIn(t *testing.T, base, username, password string) *http.Cookie {
	t.Helper()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Get(base + "/web/login")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := csrfMeta.FindSubmatch(page)
	if m == nil || len(resp.Cookies()) == 0 {
		t.Fatalf("sign-in page: %d", resp.StatusCode)
	}
	form := neturl.Values{"auth_data": {username}, "password": {password}, "csrf_token": {string(m[1])}}
	req, _ := http.NewRequest("POST", base+"/web/login", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(resp.Cookies()[0])
	resp, err = client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || len(resp.Cookies()) == 0 {
		t.Fatalf("sign-in answered %d", resp.StatusCode)
	}
	return resp.Cookies()[0]
}

// signedInAs returns the username the start page greets, "" if none.
func signedInAs(t *testing.T, base string, cookie *http.Cookie) string {
	t.Helper()
	req, _ := http.NewRequest("GET", base+"/", nil)
	req.AddCookie(cookie)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	page, _ := io.ReadAll(resp.Body)
	if m := signedInTag.FindSubmatch(page); m != nil {
		return string(m[1])
	}
	return ""
}

// TestShutdownKeepsTheRunLog: the runs a service answered just before it
// stopped are in the run log after it stopped: the log's writer ends after
// the requests have drained and before the pools close.
func TestShutdownKeepsTheRunLog(t *testing.T) {
	t.Parallel()
	url := storetest.URL(t)
	vars := map[string]string{"DATABASE_URL": url, "ROOT_USERNAME": "root", "ROOT_PASSWORD": "root-password-1", "ROOT_EMAIL": "root@example.com"}
	in := startInstance(t, vars)
	root := apiLogin(t, in.URL, "root", "root-password-1")
	for _, call := range [][2]string{
		{"/project/create", `{"id":"shop","name":"Shop","api_path":"/shop"}`},
		{"/route/create", `{"project_id":"shop","route":{"route_id":"ping","route_path":"/ping","method":"GET","auth_jwt":{"active":false,"field":"","ref_col":""},
			"params":{"delimiter":"&","pairs":[]},"body":[],"flow":{"blocks":[{"type":"RETURN","depth":0,"pairs":[],"conditions":[]}]}}}`},
	} {
		if status, body := api(t, "POST", in.URL+call[0], root, call[1]); status != 201 {
			t.Fatalf("%s: %d %s", call[0], status, body)
		}
	}
	const runs = 30
	for range runs {
		if status, _ := getJSON(t, in.URL+"/x/shop/ping"); status != 200 {
			t.Fatalf("ping: %d", status)
		}
	}
	in.stop()
	if strings.Contains(in.logs.String(), "run log: final write") {
		t.Fatalf("the run log's last write failed:\n%s", tail(in.logs.String(), 20))
	}
	again := startInstance(t, vars)
	status, body := api(t, "GET", again.URL+"/route/runs?project_id=shop&route_id=ping&limit=1", apiLogin(t, again.URL, "root", "root-password-1"), "")
	if status != 200 || !strings.Contains(body, fmt.Sprintf(`"amount":%d`, runs)) {
		t.Fatalf("the run log after a stop holds: %d %s", status, body)
	}
}
