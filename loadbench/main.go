// Command loadbench measures Stencil's hot paths beside PostgreSQL's own
// ceiling: it starts a private cluster and the service binary, seeds them,
// then loads each endpoint and pgbench running the same SQL in turn (three
// rounds each by default), and prints the medians of requests per second,
// p50 and p99 and each endpoint's ratio to its anchor. Everything runs on 127.0.0.1 and stops by itself.
//
// With -lighthouse, it audits twelve pages with that Lighthouse binary
// instead of loading anything.
//
// With -scale, it measures each hot path at 1×, 10× and 100× its data
// instead, then retention's cost and a sustained load of /x against the
// run log, and writes the table and charts into docs/performance.md.
//
// Usage: go run ./loadbench -bin bin/stencil [-duration 5s] [-conns 64] [-rounds 3] [-lighthouse path] [-scale [-scale-factor 1] [-sustain 10m] [-retention-rows 1000000,100000000]]
package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"stencil/mail/smtptest"
	"stencil/store/localpg"
)

// onlyLoads are the loads -only can name (measure runs them by name).
var onlyLoads = []string{"route", "return", "create", "vault", "page", "counter", "match", "mail", "upstream", "stats", "typed", "jobs", "peer"}

func main() {
	bin := flag.String("bin", "bin/stencil", "the service binary")
	peer := flag.String("peer", "bin/peer", "the peer's binary (PocketBase, built by make peer)")
	duration := flag.Duration("duration", 5*time.Second, "how long each load runs")
	conns := flag.Int("conns", 64, "concurrent connections of each load")
	rounds := flag.Int("rounds", 3, "rounds of each load and its anchor, in turn; the table shows medians")
	lighthouse := flag.String("lighthouse", "", "a Lighthouse binary: audit pages instead of loading them")
	only := flag.String("only", "", `run only one load and its anchor: "route" (GET /x/… beside its SQL), "return" (a route of one RETURN beside a bare Fiber handler), "create" (a route creating one record beside its INSERT at 16 and 64 connections), "vault" (the reads by JWT and PAT beside their SQL), "page" (/web/vault beside the JWT read), "counter" (a serializable counter route beside its transaction), "match" (a FETCH with match and limit in 100,000 records beside its SQL), "typed" (a FETCH by an indexed field at 1,000,000 records beside 10,000, a create with a unique field beside one without, a field check of 1,000,000 records) "mail" (1,000 queued messages delivered beside a plain loop of the same library) "jobs" (10,000 jobs enqueued by a route and drained beside the same route at /x, and /x while they drain beside /x alone) or "peer" (reads one at a time of a collection with an indexed field and a create, beside PocketBase's)`)
	scale := flag.Bool("scale", false, "measure each hot path at 1×, 10× and 100× its data instead (docs/performance.md, about an hour)")
	scaleFactor := flag.Float64("scale-factor", 1, "with -scale: multiply every size by this (0.01 for a quick trial)")
	scaleDoc := flag.String("scale-doc", "docs/performance.md", `with -scale: the document whose table and charts to write ("": none)`)
	scaleOnly := flag.String("scale-only", "", `with -scale: only this dataset ("routes", "records", "runs", "events", "templates" or "vault"), no sweep, nothing written; "sustain": only the sustained load and retention's cost`)
	sustain := flag.Duration("sustain", 10*time.Minute, "with -scale: how long the sustained load of /x runs")
	retentionRows := flag.String("retention-rows", "1000000,100000000", "with -scale: the sizes in rows of the past days whose drop retention's cost times, comma-separated")
	mailLoop := flag.String("mail-loop", "", "internal: send the mail anchor's messages to the SMTP server at this address (the loop runs in a process of its own, as the service does)")
	flag.Parse()
	if *mailLoop != "" {
		if err := sendLoop(*mailLoop); err != nil {
			fmt.Fprintln(os.Stderr, "Error:", err)
			os.Exit(1)
		}
		return
	}
	opts := options{bin: *bin, peer: *peer, duration: *duration, conns: *conns, rounds: max(1, *rounds), lighthouse: *lighthouse, only: *only}
	if *scale {
		opts.scale, opts.scaleDoc, opts.scaleOnly = *scaleFactor, *scaleDoc, *scaleOnly
		opts.sustain.load = *sustain
		for _, f := range strings.Split(*retentionRows, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 {
				fmt.Fprintf(os.Stderr, "Error: -retention-rows: %q is not a number of rows\n", f)
				os.Exit(2)
			}
			opts.sustain.retention = append(opts.sustain.retention, n)
		}
		if *scaleFactor != 1 || *scaleOnly != "" {
			opts.scaleDoc = "" // a trial's figures are not the document's
		}
	}
	if err := run(opts); err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(1)
	}
}

// result is one load's figures.
type result struct {
	name          string
	rps, p50, p99 float64 // requests (or transactions) per second; milliseconds
	errors        int
	done          int // answers of 2xx, warm-up included (wrk)
}

// row is one line of the table: an endpoint and its anchor.
type row struct {
	what   result
	anchor *result
	goal   string
	ok     bool
}

// options are the command's flags.
type options struct {
	bin, peer, lighthouse, only string
	duration                    time.Duration
	conns, rounds               int
	// scale, when not 0, runs the scale harness with sizes multiplied by
	// it, writing its figures into scaleDoc ("": nowhere).
	scale               float64
	scaleDoc, scaleOnly string
	sustain             sustainOptions
}

// sustainOptions are the scale run's last rows: how long /x is loaded
// without a pause, and the days of rows retention drops.
type sustainOptions struct {
	load      time.Duration
	retention []int
}

func run(o options) error {
	bin, duration, conns, rounds, lighthouse, only := o.bin, o.duration, o.conns, o.rounds, o.lighthouse, o.only
	if only != "" && !slices.Contains(onlyLoads, only) {
		return fmt.Errorf("-only takes one of %s, not %q", strings.Join(onlyLoads, ", "), only)
	}
	ctx := context.Background()
	work, err := os.MkdirTemp("", "stencil-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	if err := os.Chmod(work, 0o711); err != nil {
		return err
	}
	fmt.Println("starting a private PostgreSQL cluster and the service…")
	cluster, err := localpg.Start(ctx, filepath.Join(work, "pg"))
	if err != nil {
		return err
	}
	defer cluster.Stop()
	if err := cluster.EnsureDatabase(ctx, "stencil"); err != nil {
		return err
	}
	appURL, err := cluster.AppURL("stencil")
	if err != nil {
		return err
	}
	b := &bench{cluster: cluster, appURL: appURL, duration: duration, conns: conns, rounds: rounds, bin: bin, peer: o.peer, work: work}
	b.only = only
	if b.smtp, err = smtptest.New(); err != nil {
		return err
	}
	defer b.smtp.Close()
	var stopUpstream func()
	if b.upstream, stopUpstream, err = startUpstream(); err != nil {
		return err
	}
	defer stopUpstream()
	var stopBare func()
	if b.bare, stopBare, err = startBare(); err != nil {
		return err
	}
	defer stopBare()
	if err := b.startService(ctx); err != nil {
		return err
	}
	defer b.stopService()
	if o.scale != 0 {
		return b.scale(ctx, o.scale, o.scaleDoc, o.scaleOnly, o.sustain)
	}
	fmt.Println("seeding…")
	if err := b.seed(ctx); err != nil {
		return err
	}
	// The sign-ins of the seeding hash passwords (64 MiB each, by design);
	// the peak that counts is the loads', once the seeding's memory has
	// settled.
	fmt.Printf("resident memory after the seeding: %.0f MiB\n", b.settleRSS())
	if err := b.resetPeakRSS(); err != nil {
		return err
	}
	if lighthouse != "" {
		return b.lighthouse(lighthouse)
	}
	return b.measure(ctx)
}

type bench struct {
	cluster  *localpg.Cluster
	appURL   string
	bin      string
	peer     string // the peer's binary (see peerLoads)
	work     string
	duration time.Duration
	conns    int
	rounds   int

	cmd     *exec.Cmd
	logs    *bytes.Buffer
	base    string
	startMs float64 // start to ready, on an existing cluster with ROOT_* set
	// peakBefore is the peak RSS of the service's processes that restarts
	// ended since the last reset, in MiB.
	peakBefore float64
	jwt, pat   string
	cookie     string
	uid        int64
	apply      []byte // the body of a 5,000-block apply
	only       string // the one load to run ("": all)
	smtp       *smtptest.Server
	upstream   string // the HTTP block's upstream, host:port
	bare       string // the bare handler of the one-block route's row, host:port
	// routeStats is the service's ROUTE_STATS ("": its default, on).
	routeStats string
	// wrkTimeout is how long wrk waits for an answer (0: its 2 s).
	wrkTimeout time.Duration
}

var vaultKeys = "bench:" + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))

// startService starts the binary on a free port and waits until /readyz is
// 200; it returns how long that took.
func (b *bench) startService(ctx context.Context) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	b.base = fmt.Sprintf("http://127.0.0.1:%d", port)
	cmd := exec.Command(b.bin, "serve")
	// The service runs with its defaults (DB_MAX_CONNS: 8 per core, at
	// least 32).
	cmd.Env = append(os.Environ(), "APP_ENV=production", "HOST=127.0.0.1", "PORT="+strconv.Itoa(port),
		"DATABASE_URL="+b.appURL, "DATA_DIR="+filepath.Join(b.work, "data"), "JWT_SECRET="+strings.Repeat("j", 48),
		"VAULT_KEYS="+vaultKeys, "ROOT_USERNAME=root", "ROOT_PASSWORD=root-password-1", "ROOT_EMAIL=root@example.com")
	cmd.Env = append(cmd.Env, b.mailVars()...)
	cmd.Env = append(cmd.Env, "EGRESS_ALLOW="+b.upstream)
	if b.routeStats != "" {
		cmd.Env = append(cmd.Env, "ROUTE_STATS="+b.routeStats)
	}
	b.logs = &bytes.Buffer{}
	cmd.Stderr = b.logs
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return err
	}
	b.cmd = cmd
	if !answersOK(b.base+"/readyz", 60*time.Second, 2*time.Millisecond) {
		return fmt.Errorf("the service did not become ready:\n%s", b.logs)
	}
	b.startMs = float64(time.Since(start).Microseconds()) / 1000
	return nil
}

// answersOK asks url every interval until it answers 200 (true) or within
// has passed (false).
func answersOK(url string, within, every time.Duration) bool {
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(every) {
		if res, err := http.Get(url); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return true
			}
		}
	}
	return false
}

func (b *bench) stopService() {
	if b.cmd != nil {
		b.peakBefore = b.peakRSS()
		_ = b.cmd.Process.Signal(os.Interrupt)
		_ = b.cmd.Wait()
	}
}

// resetPeakRSS starts the service's high-water mark of resident memory
// over from its present size.
func (b *bench) resetPeakRSS() error {
	b.peakBefore = 0
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", b.cmd.Process.Pid), []byte("5"), 0)
}

// peakRSS is the service's high-water mark of resident memory, in MiB,
// since the last reset, over the processes a restart ended too.
func (b *bench) peakRSS() float64 { return max(b.peakBefore, b.procStatus("VmHWM")) }

// rss is the service's resident memory now, in MiB.
func (b *bench) rss() float64 { return b.procStatus("VmRSS") }

// procStatus is a field of the service's /proc status, in MiB.
func (b *bench) procStatus(field string) float64 {
	raw, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", b.cmd.Process.Pid))
	m := regexp.MustCompile(field + `:\s+(\d+) kB`).FindSubmatch(raw)
	if m == nil {
		return 0
	}
	kb, _ := strconv.Atoi(string(m[1]))
	return float64(kb) / 1024
}

// settleRSS waits, up to 10 s, until the service's resident memory moved
// by less than 1 MiB over a second: what a start or a seeding left behind
// (its route table read, pages the runtime has not given back yet) is not
// counted as the next loads' peak.
func (b *bench) settleRSS() float64 {
	last := b.rss()
	for range 10 {
		time.Sleep(time.Second)
		now := b.rss()
		if math.Abs(now-last) < 1 {
			return now
		}
		last = now
	}
	return last
}

func (b *bench) call(method, path, token, body string) (int, []byte, error) {
	req, _ := http.NewRequest(method, b.base+path, strings.NewReader(body))
	req.Header.Set("Accept", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	return resp.StatusCode, raw, err
}

// must calls and insists on want.
func (b *bench) must(want int, method, path, token, body string) ([]byte, error) {
	status, raw, err := b.call(method, path, token, body)
	if err == nil && status != want {
		err = fmt.Errorf("%s %s: %d %.300s", method, path, status, raw)
	}
	return raw, err
}

// account signs ROOT in (b.jwt, b.uid) and makes its personal access
// token "bench" (b.pat).
func (b *bench) account() error {
	raw, err := b.must(200, "POST", "/user/login", "", `{"auth_data":"root","password":"root-password-1"}`)
	if err != nil {
		return err
	}
	var login struct {
		UID int64
		JWT string
	}
	if err := json.Unmarshal(raw, &login); err != nil {
		return err
	}
	b.jwt, b.uid = login.JWT, login.UID
	if raw, err = b.must(201, "POST", "/pat/create", b.jwt, `{"name":"bench"}`); err != nil {
		return err
	}
	var pat struct{ Data struct{ Token string } }
	if err := json.Unmarshal(raw, &pat); err != nil {
		return err
	}
	b.pat = pat.Data.Token
	return nil
}

// seed makes what the loads read: a project "bench" of 1,000 vault entries
// whose access log holds 2 million rows, a project "big" of 100,000 entries,
// 50 templates of 15 blocks, a personal access token, a browser session and
// a template of 5,000 blocks to apply.
func (b *bench) seed(ctx context.Context) error {
	if err := b.account(); err != nil {
		return err
	}
	// Every load comes from one address: the projects' rate limits at /x
	// are off, so that the route's row measures the engine.
	for _, p := range []string{"bench", "big"} {
		if _, err := b.must(201, "POST", "/project/create", b.jwt, fmt.Sprintf(`{"id":%q,"name":%q,"api_path":"/%s","x_rate_limit":0}`, p, p, p)); err != nil {
			return err
		}
	}
	// 1,000 entries in "bench", through the API (sealed by the service).
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	var firstErr error
	var mu sync.Mutex
	for i := range 1000 {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			if _, err := b.must(201, "POST", "/vault/create", b.jwt, fmt.Sprintf(`{"project_id":"bench","key":"SERVICE_%04d_TOKEN","value":"secret-%d"}`, i, i)); err != nil {
				mu.Lock()
				firstErr = errors.Join(firstErr, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	for i := range 50 {
		if _, err := b.must(201, "POST", "/route/template/create", b.jwt, templateDoc(fmt.Sprintf("tmpl_%02d", i), 15)); err != nil {
			return err
		}
	}
	// The 5,000-block template belongs to project "big", out of the list.
	big5000 := strings.Replace(templateDoc("big_5000", 5000), `{"name"`, `{"project_id":"big","name"`, 1)
	raw, err := b.must(201, "POST", "/route/template/create", b.jwt, big5000)
	if err != nil {
		return err
	}
	var big struct{ Data struct{ ID int64 } }
	_ = json.Unmarshal(raw, &big)
	b.apply = fmt.Appendf(nil, `{"id":%d,"project_id":"big","values":{"col":"books"}}`, big.Data.ID)
	// A collection of 100 books, half of them "sf", and a route that
	// fetches them, keeps the sf ones and answers the first 10.
	if _, err := b.must(201, "POST", "/collection/create", b.jwt, `{"project_id":"bench","id":"books","name":"Books"}`); err != nil {
		return err
	}
	for i := range 100 {
		genre := [...]string{"sf", "classic"}[i%2]
		if _, err := b.must(201, "POST", "/data/create", b.jwt, fmt.Sprintf(`{"project_id":"bench","collection_id":"books","data":{"title":"Book %d","genre":%q,"year":%d,"tags":["t%d"]}}`, i, genre, 1900+i, i%7)); err != nil {
			return err
		}
	}
	operand := func(ref bool, rtype, data string) string {
		return fmt.Sprintf(`{"ref_var":%t,"rtype":%q,"data":%q}`, ref, rtype, data)
	}
	route := `{"project_id":"bench","route":{"route_id":"sf_books","route_path":"/books/sf","method":"GET","auth_jwt":{"active":false,"field":"","ref_col":""},
		"params":{"delimiter":"&","pairs":[]},"body":[],"flow":{"blocks":[
		{"type":"FETCH","depth":0,"local_name":"rows","ref_col":"books"},
		{"type":"FILTER","depth":0,"local_name":"sf","source":"rows","ref_property":"genre","filters":[{"right":` + operand(false, "STRING", "sf") + `,"operation_type":"EQUAL_TO","not":false,"next":"NONE"}]},
		{"type":"FUNCTION","depth":0,"local_name":"page","func":"PAGINATE","params":[` + operand(true, "ARRAY", "sf") + `,` + operand(false, "INTEGER", "10") + `]},
		{"type":"RETURN","depth":0,"pairs":[{"id":"items","data":` + operand(true, "ARRAY", "page") + `}],"conditions":[]}]}}}`
	if _, err := b.must(201, "POST", "/route/create", b.jwt, route); err != nil {
		return err
	}
	if err := b.seedWrites(ctx, operand); err != nil {
		return err
	}
	if err := b.seedUpstream(operand); err != nil {
		return err
	}
	if err := b.seedReturn(operand); err != nil {
		return err
	}
	if err := b.seedCreate(operand); err != nil {
		return err
	}
	if err := b.seedTyped(ctx, operand); err != nil {
		return err
	}
	if err := b.seedPeerTwin(ctx, operand); err != nil {
		return err
	}
	// The large project and the long log go in by SQL: they are only
	// counted and filtered, never opened.
	conn, err := pgx.Connect(ctx, b.appURL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	for _, sql := range []string{
		`INSERT INTO vault_entries (project_id, key, key_id, sealed)
			SELECT 'big', 'SERVICE_' || upper(md5(i::text)) || '_' || i, 'bench', '\x00'::bytea FROM generate_series(1, 100000) AS i`,
		`INSERT INTO vault_access_log (user_id, username, project_id, key, action, channel)
			SELECT 1, 'root', 'bench', 'SERVICE_' || lpad((i % 1000)::text, 4, '0') || '_TOKEN', 'read', 'api' FROM generate_series(1, 2000000) AS i`,
		"VACUUM ANALYZE vault_entries", "VACUUM ANALYZE vault_access_log",
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			return err
		}
	}
	if err := b.seedStats(ctx, conn); err != nil {
		return err
	}
	return b.browserSignIn()
}

// seedWrites makes the counter (one record) and its route, which reads
// the counter, adds 1 and writes it back, serializable (slowly, on
// demand); and 100,000
// tickets, one in 25 open and one in 5,000 rare, with routes reading the
// 20 newest open ones, the 20 newest rare ones and the 20 open ones of
// the latest property created.
func (b *bench) seedWrites(ctx context.Context, operand func(bool, string, string) string) error {
	for _, call := range [][2]string{
		{"/collection/create", `{"project_id":"bench","id":"counters","name":"Counters"}`},
		{"/data/create", `{"project_id":"bench","collection_id":"counters","data":{"name":"c","n":0}}`},
		{"/collection/create", `{"project_id":"bench","id":"tickets","name":"Tickets"}`},
		// ?spin=N makes a run slow: N reads of 10,000 tickets before the
		// write (the slow caller of the counter's second row); without it
		// the run passes the LOOP once, at once.
		{"/route/create", `{"project_id":"bench","route":{"route_id":"inc","route_path":"/inc","method":"POST","auth_jwt":{"active":false,"field":"","ref_col":""},
		"params":{"delimiter":"&","pairs":[{"id":"spin","bdtype":"INTEGER"}]},"body":[],"flow":{"blocks":[
		{"type":"FETCH","depth":0,"local_name":"rows","ref_col":"counters","match":[{"id":"name","data":` + operand(false, "STRING", "c") + `}],"sort":null,"limit":` + operand(false, "INTEGER", "1") + `},
		{"type":"ASSIGNMENT","depth":0,"local_name":"next","conditions":[],"operations":[{"left":` + operand(true, "OTHER", "rows.0.n") + `,"right":` + operand(false, "INTEGER", "1") + `,"operation_type":"ADDITION","not":false,"next":"NONE"}]},
		{"type":"LOOP","depth":0,"local_name":"once","min":` + operand(false, "INTEGER", "0") + `,"max":` + operand(false, "INTEGER", "1") + `},
		{"type":"CONDITION","depth":1,"conditions":[{"left":` + operand(true, "OTHER", "spin") + `,"right":` + operand(false, "OTHER", "null") + `,"condition_type":"EQUAL_TO","not":false,"next":"NONE"}],"action":"BREAK","fail":null},
		{"type":"LOOP","depth":1,"local_name":"i","min":` + operand(false, "INTEGER", "0") + `,"max":` + operand(true, "OTHER", "spin") + `},
		{"type":"FETCH","depth":2,"local_name":"burn","ref_col":"tickets","limit":` + operand(false, "INTEGER", "10000") + `},
		{"type":"SIMPLE_UPDATE","depth":0,"ref_col":"counters","ref_property":"n","save":true,"targets":[{"field":"name","value":` + operand(false, "STRING", "c") + `}],"set":` + operand(true, "OTHER", "next") + `},
		{"type":"RETURN","depth":0,"pairs":[{"id":"n","data":` + operand(true, "OTHER", "next") + `}],"conditions":[]}]}}}`},
		// The slow caller's work on a route of its own that only reads:
		// the control of the counter's slow-caller row.
		{"/route/create", `{"project_id":"bench","route":{"route_id":"burn","route_path":"/burn","method":"GET","auth_jwt":{"active":false,"field":"","ref_col":""},
		"params":{"delimiter":"&","pairs":[{"id":"spin","bdtype":"INTEGER"}]},"body":[],"flow":{"blocks":[
		{"type":"LOOP","depth":0,"local_name":"i","min":` + operand(false, "INTEGER", "0") + `,"max":` + operand(true, "OTHER", "spin") + `},
		{"type":"FETCH","depth":1,"local_name":"burn","ref_col":"tickets","limit":` + operand(false, "INTEGER", "10000") + `}]}}}`},
		{"/route/create", `{"project_id":"bench","route":{"route_id":"open_tickets","route_path":"/tickets/open","method":"GET","auth_jwt":{"active":false,"field":"","ref_col":""},
		"params":{"delimiter":"&","pairs":[]},"body":[],"flow":{"blocks":[
		{"type":"FETCH","depth":0,"local_name":"rows","ref_col":"tickets","match":[{"id":"status","data":` + operand(false, "STRING", "open") + `}],"sort":{"property":"_id","descending":true},"limit":` + operand(false, "INTEGER", "20") + `},
		{"type":"RETURN","depth":0,"pairs":[{"id":"items","data":` + operand(true, "ARRAY", "rows") + `}],"conditions":[]}]}}}`},
		{"/route/create", `{"project_id":"bench","route":{"route_id":"rare_tickets","route_path":"/tickets/rare","method":"GET","auth_jwt":{"active":false,"field":"","ref_col":""},
		"params":{"delimiter":"&","pairs":[]},"body":[],"flow":{"blocks":[
		{"type":"FETCH","depth":0,"local_name":"rows","ref_col":"tickets","match":[{"id":"status","data":` + operand(false, "STRING", "rare") + `}],"sort":{"property":"_id","descending":true},"limit":` + operand(false, "INTEGER", "20") + `},
		{"type":"RETURN","depth":0,"pairs":[{"id":"items","data":` + operand(true, "ARRAY", "rows") + `}],"conditions":[]}]}}}`},
		{"/route/create", `{"project_id":"bench","route":{"route_id":"open_tickets_by_created","route_path":"/tickets/open/by-created","method":"GET","auth_jwt":{"active":false,"field":"","ref_col":""},
		"params":{"delimiter":"&","pairs":[]},"body":[],"flow":{"blocks":[
		{"type":"FETCH","depth":0,"local_name":"rows","ref_col":"tickets","match":[{"id":"status","data":` + operand(false, "STRING", "open") + `}],"sort":{"property":"created","descending":true},"limit":` + operand(false, "INTEGER", "20") + `},
		{"type":"RETURN","depth":0,"pairs":[{"id":"items","data":` + operand(true, "ARRAY", "rows") + `}],"conditions":[]}]}}}`},
	} {
		if _, err := b.must(201, "POST", call[0], b.jwt, call[1]); err != nil {
			return err
		}
	}
	return b.seedRecords(ctx, `INSERT INTO records (project_id, collection_id, data)
		SELECT 'bench', 'tickets', jsonb_build_object('n', i, 'status', CASE WHEN i % 25 = 0 THEN 'open' WHEN i % 5000 = 1 THEN 'rare' ELSE 'closed' END,
			'created', to_char(timestamp '2026-01-01' + i * interval '1 minute', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'))
		FROM generate_series(1, 100000) i`)
}

// counterValue reads the bench counter.
func (b *bench) counterValue(ctx context.Context) (int, error) {
	conn, err := pgx.Connect(ctx, b.appURL)
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	var n int
	err = conn.QueryRow(ctx, `SELECT (data->>'n')::int FROM records WHERE project_id = 'bench' AND collection_id = 'counters'`).Scan(&n)
	return n, err
}

// settle writes every dirty page out (CHECKPOINT) before a load, so that
// each load, and each anchor, starts from the same state instead of one of
// them paying for the writes of the one before.
func (b *bench) settle() error {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, b.cluster.URL("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "CHECKPOINT")
	return err
}

// templateDoc is a template of n blocks (FETCH, FILTER, CONDITION, OBJECT
// and RETURN in turn) with one variable.
func templateDoc(name string, n int) string {
	kinds := []string{
		`{"type":"FETCH","depth":0,"local_name":"rows_%d","ref_col":"{col}"}`,
		`{"type":"FILTER","depth":0,"local_name":"f_%d","source":"rows","ref_property":"price","filters":[{"right":{"ref_var":false,"rtype":"INTEGER","data":"10"},"operation_type":"GREATER_THAN","not":false,"next":"NONE"}]}`,
		`{"type":"CONDITION","depth":0,"conditions":[{"left":{"ref_var":true,"rtype":"INTEGER","data":"n"},"right":{"ref_var":false,"rtype":"INTEGER","data":"%d"},"condition_type":"EQUAL_TO","not":false,"next":"NONE"}],"action":"FAIL","fail":{"status":404,"message":"no {col}"}}`,
		`{"type":"OBJECT","depth":0,"local_name":"o_%d","pairs":[{"id":"{col}","data":{"ref_var":true,"rtype":"ARRAY","data":"rows"}}]}`,
		`{"type":"RETURN","depth":0,"pairs":[{"id":"n%d","data":{"ref_var":true,"rtype":"OTHER","data":"o"}}],"conditions":[]}`,
	}
	blocks := make([]string, n)
	for i := range blocks {
		k := kinds[i%len(kinds)]
		if strings.Contains(k, "%d") {
			k = fmt.Sprintf(k, i)
		}
		blocks[i] = k
	}
	return fmt.Sprintf(`{"name":%q,"description":"benchmark template","method":"GET","route_id":"read_{col}","route_path":"/{col}",
		"variables":[{"key":"col","description":"collection","default_value":"books"}],"flow":{"blocks":[%s]}}`, name, strings.Join(blocks, ","))
}

// browserSignIn signs a browser in through the form, for the page loads.
func (b *bench) browserSignIn() error {
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Get(b.base + "/web/login")
	if err != nil {
		return err
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := regexp.MustCompile(`<meta name="csrf-token" content="([^"]+)">`).FindSubmatch(page)
	if m == nil || len(resp.Cookies()) == 0 {
		return errors.New("sign-in page without a CSRF token")
	}
	form := url.Values{"auth_data": {"root"}, "password": {"root-password-1"}, "csrf_token": {string(m[1])}}
	req, _ := http.NewRequest("POST", b.base+"/web/login", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(resp.Cookies()[0])
	if resp, err = client.Do(req); err != nil {
		return err
	}
	resp.Body.Close()
	for _, c := range resp.Cookies() {
		if c.Name == "stencil_session" {
			b.cookie = c.Name + "=" + c.Value
			return nil
		}
	}
	return fmt.Errorf("browser sign-in answered %d", resp.StatusCode)
}

// wrk loads path with wrk (a C load generator, so that the generator takes
// as little of the machine as pgbench does) over the run's connections and
// returns the figures; non-2xx answers and socket errors count as errors.
// A second of the same load goes first, unmeasured: the service's pool
// opens its connections and prepares its statements there, as a running
// service has long done.
func (b *bench) wrk(name, path string, headers ...string) (result, error) {
	return b.wrkMethod(name, "GET", path, headers...)
}

// wrkMethod is wrk with requests of method (with an empty body).
func (b *bench) wrkMethod(name, method, path string, headers ...string) (result, error) {
	return b.wrkBody(name, method, path, "", headers...)
}

// wrkBody is wrk with requests of method carrying body ("": none).
func (b *bench) wrkBody(name, method, path, body string, headers ...string) (result, error) {
	var hs []string
	for _, h := range headers {
		hs = append(hs, "-H", h)
	}
	if method != "GET" || body != "" {
		lua := fmt.Sprintf("wrk.method = %q\n", method)
		if body != "" {
			// A long bracket: the body as it is, no escapes.
			lua += "wrk.body = [==[" + body + "]==]\nwrk.headers[\"Content-Type\"] = \"application/json\"\n"
		}
		script := filepath.Join(b.work, "method.lua")
		if err := os.WriteFile(script, []byte(lua), 0o644); err != nil {
			return result{}, err
		}
		hs = append(hs, "-s", script)
	}
	conns := "-c" + strconv.Itoa(b.conns)
	if b.wrkTimeout > 0 {
		hs = append(hs, "--timeout", strconv.Itoa(int(b.wrkTimeout.Seconds()))+"s")
	}
	target := b.base + path
	if strings.HasPrefix(path, "http://") {
		target = path // another service than ours
	}
	threads := "-t" + strconv.Itoa(min(2, b.conns)) // wrk wants a connection a thread at least
	warm, err := exec.Command("wrk", append(append([]string{threads, conns, "-d1s"}, hs...), target)...).CombinedOutput()
	if err != nil {
		return result{}, fmt.Errorf("wrk: %v: %s", err, warm)
	}
	if err := b.settle(); err != nil {
		return result{}, err
	}
	args := append([]string{threads, conns, "-d" + strconv.Itoa(int(b.duration.Seconds())) + "s", "--latency"}, hs...)
	out, err := exec.Command("wrk", append(args, target)...).CombinedOutput()
	if err != nil {
		return result{}, fmt.Errorf("wrk: %v: %s", err, out)
	}
	r := result{name: name, done: wrkDone(string(warm)) + wrkDone(string(out))}
	text := string(out)
	if m := regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`).FindStringSubmatch(text); m != nil {
		r.rps, _ = strconv.ParseFloat(m[1], 64)
	}
	r.p50, r.p99 = wrkLatency(text, "50%"), wrkLatency(text, "99%")
	for _, re := range []string{`Non-2xx or 3xx responses: (\d+)`, `Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)`} {
		if m := regexp.MustCompile(re).FindStringSubmatch(text); m != nil {
			for _, n := range m[1:] {
				v, _ := strconv.Atoi(n)
				r.errors += v
			}
		}
	}
	return r, nil
}

// wrkDone reads how many answers of 2xx a wrk run counted.
func wrkDone(out string) int {
	total, bad := 0, 0
	if m := regexp.MustCompile(`(\d+) requests in`).FindStringSubmatch(out); m != nil {
		total, _ = strconv.Atoi(m[1])
	}
	if m := regexp.MustCompile(`Non-2xx or 3xx responses: (\d+)`).FindStringSubmatch(out); m != nil {
		bad, _ = strconv.Atoi(m[1])
	}
	return total - bad
}

// wrkLatency reads one percentile of wrk's latency distribution, in ms.
func wrkLatency(out, pct string) float64 {
	m := regexp.MustCompile(`\s` + regexp.QuoteMeta(pct) + `\s+([0-9.]+)(us|ms|s)`).FindStringSubmatch(out)
	if m == nil {
		return 0
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	switch m[2] {
	case "us":
		return v / 1000
	case "s":
		return v * 1000
	}
	return v
}

// load sends requests made by req over conns connections for the run's
// duration and returns the figures; an answer other than want counts as an
// error.
func (b *bench) load(name string, conns int, want int, req func() *http.Request) result {
	transport := &http.Transport{MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns, DisableCompression: true}
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport, Timeout: 30 * time.Second}
	deadline := time.Now().Add(b.duration)
	lat := make([][]time.Duration, conns)
	errs := make([]int, conns)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range conns {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				t := time.Now()
				resp, err := client.Do(req())
				if err != nil {
					errs[i]++
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				lat[i] = append(lat[i], time.Since(t))
				if resp.StatusCode != want {
					errs[i]++
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	var all []time.Duration
	r := result{name: name}
	for i := range lat {
		all = append(all, lat[i]...)
		r.errors += errs[i]
	}
	r.rps = float64(len(all)) / elapsed.Seconds()
	r.p50, r.p99 = percentile(all, 50), percentile(all, 99)
	return r
}

func percentile(d []time.Duration, p int) float64 {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	return float64(d[(len(d)-1)*p/100].Microseconds()) / 1000
}

func (b *bench) get(path, token string) func() *http.Request {
	return func() *http.Request {
		req, _ := http.NewRequest("GET", b.base+path, nil)
		req.Header.Set("Accept", "application/json")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		return req
	}
}

// pgbench runs pgbench on the service's database (or, with builtin, its own
// pgbench tables) and returns its transactions per second and latencies.
func (b *bench) pgbench(ctx context.Context, name, script string, builtin bool, extra ...string) (result, error) {
	if err := b.settle(); err != nil {
		return result{}, err
	}
	bin, err := pgbenchPath()
	if err != nil {
		return result{}, err
	}
	u, _ := url.Parse(b.appURL)
	pw, _ := u.User.Password()
	db := "stencil"
	logPrefix := filepath.Join(b.work, "pgblog")
	args := []string{"-n", "-c", strconv.Itoa(b.conns), "-j", strconv.Itoa(min(2, b.conns)), "-T", strconv.Itoa(int(b.duration.Seconds())),
		"-M", "prepared", "-l", "--log-prefix", logPrefix,
		"-h", u.Hostname(), "-p", u.Port(), "-U", u.User.Username()}
	args = append(args, extra...)
	if builtin {
		db = "pgbench"
		args = append(args, "-S")
	} else {
		file := filepath.Join(b.work, "script.sql")
		if err := os.WriteFile(file, []byte(script), 0o644); err != nil {
			return result{}, err
		}
		args = append(args, "-f", file)
	}
	old, _ := filepath.Glob(logPrefix + ".*")
	for _, m := range old {
		_ = os.Remove(m)
	}
	cmd := exec.CommandContext(ctx, bin, append(args, db)...)
	cmd.Env = append(os.Environ(), "PGPASSWORD="+pw)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return result{}, fmt.Errorf("pgbench %s: %v: %s", name, err, out)
	}
	r := result{name: name}
	if m := regexp.MustCompile(`tps = ([0-9.]+) \(without initial connection time\)`).FindSubmatch(out); m != nil {
		r.rps, _ = strconv.ParseFloat(string(m[1]), 64)
	}
	// Per-transaction latencies from the logs: the third field, in µs.
	var lat []time.Duration
	logs, _ := filepath.Glob(logPrefix + ".*")
	for _, l := range logs {
		raw, _ := os.ReadFile(l)
		for _, line := range strings.Split(string(raw), "\n") {
			if f := strings.Fields(line); len(f) > 2 {
				us, _ := strconv.Atoi(f[2])
				lat = append(lat, time.Duration(us)*time.Microsecond)
			}
		}
	}
	r.p50, r.p99 = percentile(lat, 50), percentile(lat, 99)
	return r, nil
}

func pgbenchPath() (string, error) {
	if p, err := exec.LookPath("pgbench"); err == nil {
		return p, nil
	}
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pgbench")
	if len(found) == 0 {
		return "", errors.New("pgbench not found (Debian: apt-get install postgresql)")
	}
	slices.Sort(found)
	return found[len(found)-1], nil
}

// pgbenchSQL turns one of the store's statements into pgbench's syntax:
// numbered parameters become the script's variables or literals.
func pgbenchSQL(sql string, params ...string) string {
	var pairs []string
	for i := len(params); i >= 1; i-- { // $10 before $1
		pairs = append(pairs, "$"+strconv.Itoa(i), params[i-1])
	}
	one := strings.Join(strings.Fields(strings.NewReplacer(pairs...).Replace(sql)), " ")
	return one + ";\n"
}
