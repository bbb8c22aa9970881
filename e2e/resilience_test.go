package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"stencil/server"
	"stencil/store/localpg"
	"stencil/store/storetest"
)

var (
	binaryOnce sync.Once
	binaryPath string
	binaryErr  error
)

// stencilBinary builds the service as `make build` does (no race detector:
// its memory and speed are the real ones) once per test run.
func stencilBinary(t *testing.T) string {
	t.Helper()
	binaryOnce.Do(func() {
		dir, err := os.MkdirTemp("", "stencil-bin-")
		if err != nil {
			binaryErr = err
			return
		}
		binaryPath = filepath.Join(dir, "stencil")
		out, err := exec.Command("go", "build", "-o", binaryPath, ".").CombinedOutput()
		if err != nil {
			binaryErr = fmt.Errorf("go build: %v: %s", err, out)
		}
	})
	if binaryErr != nil {
		t.Fatal(binaryErr)
	}
	return binaryPath
}

// child is the service running in a process of its own.
type child struct {
	URL  string
	cmd  *exec.Cmd
	logs *lockedBuffer
	// done is closed when the process has exited, with err its exit:
	// every reader sees it, the test that killed the process and the
	// cleanup after it alike.
	done chan struct{}
	err  error
}

var servingAddr = regexp.MustCompile(`msg=serving addr=(\S+)`)

// startChild starts the service binary in a process of its own with vars on
// top of a fresh DATA_DIR, under a limit of nofile open files when nofile
// is not 0, and waits until it listens.
func startChild(t *testing.T, vars map[string]string, nofile int) *child {
	t.Helper()
	// OWASP's argon2id parameters, a fifth of the default's work: the
	// package's services sign in hundreds of times (docs/testing.md).
	env := map[string]string{"HOST": "127.0.0.1", "PORT": "0", "DATA_DIR": t.TempDir(), "PASSWORD_HASH": "owasp"}
	for k, v := range vars {
		env[k] = v
	}
	cmd := exec.Command(stencilBinary(t), "serve")
	if nofile > 0 {
		cmd = exec.Command("prlimit", fmt.Sprintf("--nofile=%d:%d", nofile, nofile), "--", stencilBinary(t), "serve")
	}
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	c := &child{cmd: cmd, logs: &lockedBuffer{}, done: make(chan struct{})}
	cmd.Stderr = c.logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { c.err = cmd.Wait(); close(c.done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-c.done:
		case <-time.After(40 * time.Second):
			_ = cmd.Process.Kill()
		}
	})
	deadline := time.Now().Add(90 * time.Second)
	for {
		if m := servingAddr.FindStringSubmatch(c.logs.String()); m != nil {
			c.URL = "http://" + m[1]
			return c
		}
		select {
		case <-c.done:
			t.Fatalf("child exited: %v\n%s", c.err, c.logs)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("child not ready\n%s", c.logs)
		}
	}
}

// startServer is the service for a browser journey: the binary `make
// build` makes, in a process of its own as in production, with vars on
// top of a fresh DATA_DIR. The journeys exercise pages in a browser; the
// race detector watches the same code in-process in handlers/ and in the
// instances of this package's other tests (startInstance), and a binary
// without it serves a journey at its real cost.
func startServer(t *testing.T, vars map[string]string) *instance {
	t.Helper()
	c := startChild(t, vars, 0)
	return &instance{URL: c.URL, logs: c.logs, stop: func() {
		_ = c.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-c.done:
		case <-time.After(40 * time.Second):
			t.Error("the server did not stop")
		}
	}}
}

// peakRSS is the child's high-water mark of resident memory, in MiB.
func (c *child) peakRSS(t *testing.T) int {
	t.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", c.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return kb / 1024
		}
	}
	t.Fatal("no VmHWM")
	return 0
}

// fromAddress is an HTTP client whose connections come from a loopback
// address of their own, as separate clients would.
func fromAddress(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	return &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{DialContext: d.DialContext}}
}

// TestSignInBurstMemory: 60 sign-ins at once, each from its own address so
// that the throttle lets every one reach the password hash, with the
// production cost (64 MiB each). The bounded hashing pool keeps the
// process's peak memory far below 60 × 64 MiB; each request is answered
// (401 after its hash, or 503 with Retry-After when the pool stayed full).
// How many are hashed before the others' wait ends depends on the
// machine's speed; at least the pool's slots (two or more) are.
func TestSignInBurstMemory(t *testing.T) {
	c := startChild(t, map[string]string{"DATABASE_URL": storetest.URL(t), "PASSWORD_HASH": "rfc9106",
		"ROOT_USERNAME": "root", "ROOT_PASSWORD": "root-password-1", "ROOT_EMAIL": "root@example.com"}, 0)
	var wg sync.WaitGroup
	var mu sync.Mutex
	counts := map[int]int{}
	for i := range 60 {
		wg.Go(func() {
			client := fromAddress(fmt.Sprintf("127.0.1.%d", i+1))
			resp, err := client.Post(c.URL+"/user/login", "application/json",
				strings.NewReader(fmt.Sprintf(`{"auth_data":"nobody%d","password":"guess-%d"}`, i, i)))
			if err != nil {
				t.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 503 && resp.Header.Get("Retry-After") == "" {
				t.Error("503 without Retry-After")
			}
			mu.Lock()
			counts[resp.StatusCode]++
			mu.Unlock()
		})
	}
	wg.Wait()
	peak := c.peakRSS(t)
	t.Logf("answers %v; peak RSS %d MiB", counts, peak)
	if counts[401]+counts[503] != 60 || counts[401] < 2 {
		t.Fatalf("answers by status: %v\n%s", counts, c.logs)
	}
	if peak > 512 {
		t.Fatalf("peak RSS %d MiB for 60 concurrent sign-ins", peak)
	}
}

// TestSurvivesDescriptorExhaustion: with 256 descriptors and 400 half-open
// connections, the server keeps its process and its database and answers
// again once the connections are gone.
func TestSurvivesDescriptorExhaustion(t *testing.T) {
	c := startChild(t, map[string]string{"DATABASE_URL": storetest.URL(t)}, 256)
	addr := strings.TrimPrefix(c.URL, "http://")
	var conns []net.Conn
	for range 400 {
		conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err != nil {
			break // the backlog is full: that is as hostile as it gets
		}
		_, _ = io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: x\r\n") // never finished
		conns = append(conns, conn)
	}
	t.Logf("%d half-open connections", len(conns))
	time.Sleep(time.Second)
	for _, conn := range conns {
		conn.Close()
	}
	select {
	case <-c.done:
		t.Fatalf("the server exited: %v\n%s", c.err, c.logs)
	default:
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		status, _ := tryJSON(c.URL + "/readyz")
		if status == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not ready again after the connections closed: %d\n%s", status, c.logs)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func tryJSON(url string) (int, string) {
	client := &http.Client{Timeout: 3 * time.Second}
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(raw)
}

// reachableDataDir is a DATA_DIR the postgres user can enter when the tests
// run as root (t.TempDir's parent is private).
func reachableDataDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "stencil-datadir-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o711); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestPrivateClusterRecoversFromKill: kill -9 of the private postgres; the
// app restarts it and is ready again by itself.
func TestPrivateClusterRecoversFromKill(t *testing.T) {
	dataDir := reachableDataDir(t)
	c := startChild(t, map[string]string{"DATA_DIR": dataDir}, 0)
	if status, body := tryJSON(c.URL + "/readyz"); status != 200 {
		t.Fatalf("readyz = %d %s", status, body)
	}
	raw, err := os.ReadFile(filepath.Join(dataDir, "pg", "data", "postmaster.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.SplitN(string(raw), "\n", 2)[0])
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	sawDown := false
	for {
		status, _ := tryJSON(c.URL + "/readyz")
		sawDown = sawDown || status == 503
		if status == 200 && sawDown {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not ready again after kill -9 (saw down: %v)\n%s", sawDown, c.logs)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if status, body := tryJSON(c.URL + "/project/fetch"); status != 401 {
		t.Fatalf("a request through the pool after recovery: %d %s", status, body)
	}
	// The restart is logged just after the server accepts connections.
	for i := 0; !strings.Contains(c.logs.String(), "private PostgreSQL restarted"); i++ {
		if i == 50 {
			t.Fatalf("log: %s", c.logs)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestSubcommandsBesideALiveServer: `migrate` and `vault rotate` on the
// DATA_DIR of a running `serve` use its cluster and leave it running.
func TestSubcommandsBesideALiveServer(t *testing.T) {
	dataDir := reachableDataDir(t)
	c := startChild(t, map[string]string{"DATA_DIR": dataDir,
		"ROOT_USERNAME": "root", "ROOT_PASSWORD": "root-password-1", "ROOT_EMAIL": "root@example.com"}, 0)
	token := apiLogin(t, c.URL, "root", "root-password-1")
	if status, body := api(t, "POST", c.URL+"/project/create", token, `{"id":"shop","name":"Shop","api_path":"/shop"}`); status != 201 {
		t.Fatalf("project: %d %s", status, body)
	}
	if status, body := api(t, "POST", c.URL+"/vault/create", token, `{"project_id":"shop","key":"K","value":"v1"}`); status != 201 {
		t.Fatalf("vault: %d %s", status, body)
	}
	for _, args := range [][]string{{"migrate"}, {"vault", "rotate"}} {
		vars := map[string]string{"DATA_DIR": dataDir}
		logs := &lockedBuffer{}
		if err := server.Run(context.Background(), args, func(k string) string { return vars[k] }, logs, nil); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, logs)
		}
		if !strings.Contains(logs.String(), "another running process owns") {
			t.Fatalf("%v did not use the running cluster: %s", args, logs)
		}
		if status, body := tryJSON(c.URL + "/readyz"); status != 200 {
			t.Fatalf("after %v: readyz %d %s", args, status, body)
		}
		if status, body := api(t, "GET", c.URL+"/vault/fetch/one?project_id=shop&key=K", token, ""); status != 200 || !strings.Contains(body, `"value":"v1"`) {
			t.Fatalf("after %v: %d %s", args, status, body)
		}
	}
}

// TestAppRoleOwnsOnlyItsDatabase: the app's connection to its private
// cluster is no superuser and cannot make roles or databases, yet owns its
// database's tables.
func TestAppRoleOwnsOnlyItsDatabase(t *testing.T) {
	dataDir := reachableDataDir(t)
	vars := map[string]string{"DATA_DIR": dataDir}
	if err := server.Run(context.Background(), []string{"migrate"}, func(k string) string { return vars[k] }, io.Discard, nil); err != nil {
		t.Fatal(err)
	}
	cluster, err := localpg.Start(context.Background(), filepath.Join(dataDir, "pg"))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Stop()
	url, err := cluster.AppURL("stencil")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var super, createRole, createDB bool
	var tablesNotOwned int
	err = conn.QueryRow(context.Background(), `SELECT rolsuper, rolcreaterole, rolcreatedb,
		(SELECT count(*) FROM pg_tables WHERE schemaname = 'public' AND tableowner <> current_user)
		FROM pg_roles WHERE rolname = current_user`).Scan(&super, &createRole, &createDB, &tablesNotOwned)
	if err != nil || super || createRole || createDB || tablesNotOwned != 0 {
		t.Fatalf("super=%v createrole=%v createdb=%v tables not owned=%d err=%v", super, createRole, createDB, tablesNotOwned, err)
	}
	if _, err := conn.Exec(context.Background(), "CREATE ROLE intruder"); err == nil {
		t.Fatal("the app role could create a role")
	}
}

// TestDevelopmentKeysOfAnotherDataDir: two development instances with their
// own DATA_DIRs on one database hold different vault keys; the second is
// told at start which key it lacks instead of failing reads later.
func TestDevelopmentKeysOfAnotherDataDir(t *testing.T) {
	url := storetest.URL(t)
	root := map[string]string{"DATABASE_URL": url, "ROOT_USERNAME": "root", "ROOT_PASSWORD": "root-password-1", "ROOT_EMAIL": "root@example.com"}
	a := startInstance(t, root)
	token := apiLogin(t, a.URL, "root", "root-password-1")
	api(t, "POST", a.URL+"/project/create", token, `{"id":"shop","name":"Shop","api_path":"/shop"}`)
	if status, body := api(t, "POST", a.URL+"/vault/create", token, `{"project_id":"shop","key":"K","value":"v"}`); status != 201 {
		t.Fatalf("%d %s", status, body)
	}
	vars := map[string]string{"DATABASE_URL": url, "DATA_DIR": t.TempDir(), "HOST": "127.0.0.1", "PORT": "0"}
	err := server.Run(context.Background(), []string{"serve"}, func(k string) string { return vars[k] }, io.Discard, nil)
	if err == nil || !strings.Contains(err.Error(), `master key "dev-`) {
		t.Fatalf("the second instance started or did not name the key: %v", err)
	}
}

// TestProductionAsRootOnAFreshDataDir: production with the private cluster
// starts on a DATA_DIR that does not exist yet (as root, the postgres user
// must be able to reach the cluster below it).
func TestProductionAsRootOnAFreshDataDir(t *testing.T) {
	dataDir := filepath.Join(reachableDataDir(t), "fresh", "data")
	c := startChild(t, map[string]string{"DATA_DIR": dataDir, "APP_ENV": "production",
		"JWT_SECRET": strings.Repeat("s", 32), "VAULT_KEYS": "k1:" + b64key('k')}, 0)
	if status, body := tryJSON(c.URL + "/readyz"); status != 200 {
		t.Fatalf("readyz = %d %s", status, body)
	}
}

// TestSideListeners: METRICS_ADDR serves the metrics and DEBUG_ADDR the
// profiler, each on a listener of its own.
func TestSideListeners(t *testing.T) {
	in := startInstance(t, map[string]string{"DATABASE_URL": storetest.URL(t), "METRICS_ADDR": "127.0.0.1:0", "DEBUG_ADDR": "127.0.0.1:0"})
	for what, path := range map[string]string{"metrics": "/metrics", "profiler": "/debug/pprof/"} {
		m := regexp.MustCompile(`msg="serving ` + what + `" addr=(\S+)`).FindStringSubmatch(in.logs.String())
		if m == nil {
			t.Fatalf("no %s listener: %s", what, in.logs)
		}
		resp, err := http.Get("http://" + m[1] + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || what == "metrics" && !strings.Contains(string(body), "stencil_db_pool_max") {
			t.Fatalf("%s: %d %.200s", what, resp.StatusCode, body)
		}
	}
}
