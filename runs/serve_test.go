package runs

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"stencil/engine"
)

// TestBatchesCountEveryRun: 32 callers increment one counter 160 times
// at once through a route that reads it, adds 1 and writes it back. Once
// its runs collide they are committed in batches; every answer 200 is one
// increment, the counter ends at exactly 160, and the run log holds 160
// runs.
func TestBatchesCountEveryRun(t *testing.T) {
	rt := newTestRuntime(t)
	rt.log.keepAll = math.MaxInt // every run in the log, not a sample past 100 a second
	rt.collection(t, "counters", `{"name":"c","n":0}`)
	rt.route(t, routeDoc("inc", "POST", "/inc", `[{"id":"spin","bdtype":"INTEGER"}]`, counterBlocks...))
	statuses := rt.concurrently(t, 32, 160, func(int) (string, string, string) { return "POST", "/x/shop/inc", `{"spin":0}` })
	if n := rt.records(t, "counters")[0]["n"]; statuses[200] != 160 || n != 160.0 {
		t.Fatalf("answers %v; the counter is %v", statuses, n)
	}
	if rt.batches.Led.Load() == 0 {
		t.Error("no batch was led: the runs never collided")
	}
	if err := rt.FlushLog(context.Background()); err != nil {
		t.Fatal(err)
	}
	var logged int
	if err := rt.pool.QueryRow(context.Background(), "SELECT count(*) FROM route_runs WHERE route_id = 'inc' AND status = 200").Scan(&logged); err != nil || logged != 160 {
		t.Fatalf("the run log holds %d runs (%v)", logged, err)
	}
	t.Logf("160 runs in %d batches", rt.batches.Led.Load())
}

// TestSlowRunLeavesItsBatch: a run that takes longer than a batch gives
// one (RunTime) leaves the batch — its writes taken back — and runs alone,
// so that the runs queued behind it are not held up by it; every run still
// counts once (docs/engine.md).
func TestSlowRunLeavesItsBatch(t *testing.T) {
	rt := newTestRuntime(t)
	rt.batches.RunTime = 2 * time.Millisecond
	rt.collection(t, "counters", `{"name":"c","n":0}`)
	rt.route(t, routeDoc("inc", "POST", "/inc", `[{"id":"spin","bdtype":"INTEGER"}]`, counterBlocks...))
	rt.batches.Collided("shop/inc") // the route's runs queue for batches
	// Every 20th run reads the counters again 100 times, one statement
	// after the other (far past 2 ms on any machine: each is a round
	// trip), yet short enough to commit alone between batches on a busy
	// machine — with 300 a fresh clone's CI, its two cores shared with the
	// journeys, saw three of them pass their 5 s and answer 503 — the
	// others run at once.
	statuses := rt.concurrently(t, 32, 120, func(i int) (string, string, string) {
		if i%20 == 0 {
			return "POST", "/x/shop/inc", `{"spin":100}`
		}
		return "POST", "/x/shop/inc", `{"spin":0}`
	})
	if n := rt.records(t, "counters")[0]["n"]; statuses[200] != 120 || n != 120.0 {
		t.Fatalf("answers %v; the counter is %v", statuses, n)
	}
	if left := rt.batches.Left.Load(); left < 6 {
		t.Fatalf("%d runs left their batch; the 6 slow ones must", left)
	}
	if b := rt.batches.Led.Load(); b == 0 || b >= 120 {
		t.Fatalf("%d batches for 120 runs", b)
	}
	t.Logf("120 runs in %d batches; %d left theirs", rt.batches.Led.Load(), rt.batches.Left.Load())
}

// TestBusyRunsDoNothing: with every run slot taken, or the memory runs
// share spent, a run answers 503 with Retry-After (and its project's CORS
// headers), ends BUSY in the run log, and writes nothing.
func TestBusyRunsDoNothing(t *testing.T) {
	rt := newTestRuntime(t)
	rt.collection(t, "books")
	rt.route(t, routeDoc("add", "POST", "/add", "",
		`{"type":"OBJECT","depth":0,"local_name":"o","pairs":`+pairsOf("title", lit("STRING", "busy"))+`}`,
		`{"type":"CREATE","depth":0,"ref_col":"books","ref_object":"o","save":true,"conditions":[]}`))
	// A browser of a listed origin reads the busy answer too (CORS).
	if _, err := rt.pool.Exec(context.Background(), `UPDATE projects SET x_cors_origins = '{https://app.example.com}' WHERE id = 'shop'`); err != nil {
		t.Fatal(err)
	}
	if err := rt.RoutesChanged(context.Background(), "shop"); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		a, err := rt.Serve(context.Background(), Request{Method: "POST", Path: "/x/shop/add", Client: "127.0.0.1", Origin: "https://app.example.com"})
		if err != nil {
			t.Fatal(err)
		}
		if a.Status != 503 || a.Header.Get("Retry-After") == "" || a.Ended != "BUSY" || !strings.Contains(string(a.Body), "Error: the service is busy") ||
			a.Header.Get("Access-Control-Allow-Origin") != "https://app.example.com" || a.Header.Get("Vary") != "Origin" {
			t.Fatalf("%s: %d %v %s %s", when, a.Status, a.Header, a.Ended, a.Body)
		}
	}
	rt.slots = NewSlots(1)
	rt.slots.Wait = 10 * time.Millisecond
	release, err := rt.slots.Enter(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	check("every slot taken")
	release()
	rt.Limits.Shared = engine.NewBudget(0)
	check("no memory left")
	if recs := rt.records(t, "books"); len(recs) != 0 {
		t.Fatalf("a busy run wrote %v", recs)
	}
	if err := rt.FlushLog(context.Background()); err != nil {
		t.Fatal(err)
	}
	var busy int
	if err := rt.pool.QueryRow(context.Background(), "SELECT count(*) FROM route_runs WHERE ended = 'BUSY' AND status = 503").Scan(&busy); err != nil || busy != 2 {
		t.Fatalf("the run log holds %d BUSY runs (%v)", busy, err)
	}
}

// TestTracedRunMasksVaultValues: a traced run of a route that answers a
// vault value shows it masked in its answer and in its trace, and the run
// log keeps the trace and the request masked too; the read is logged on
// channel route, naming the route.
func TestTracedRunMasksVaultValues(t *testing.T) {
	rt := newTestRuntime(t)
	const secret = "sk-live-4f1c9e2b7a"
	rt.vault(t, "API_KEY", secret)
	rt.route(t, routeDoc("key", "POST", "/key", `[{"id":"sent","bdtype":"STRING"}]`,
		`{"type":"VAULT","depth":0,"local_name":"k","key":"API_KEY"}`,
		`{"type":"RETURN","depth":0,"pairs":`+pairsOf("key", ref("k"), "sent", ref("sent"))+`,"conditions":[]}`))
	ctx := context.Background()
	plan, err := rt.Plan(ctx, "shop", "key")
	if err != nil || plan == nil {
		t.Fatalf("plan: %v %v", plan, err)
	}
	body := `{"sent":"` + secret + `"}`
	a, err := rt.Serve(ctx, Request{Plan: plan, ProjectID: "shop", Path: "/x/shop/key", Body: []byte(body), KeepBody: true, Trace: true, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if a.Status != 200 || strings.Contains(string(a.Body), secret) || !strings.Contains(string(a.Body), engine.Mask) {
		t.Fatalf("the answer: %d %s", a.Status, a.Body)
	}
	var traced string
	for _, row := range a.Trace {
		traced += row.String() + "\n"
	}
	if strings.Contains(traced, secret) || !strings.Contains(traced, "k="+engine.Mask) {
		t.Fatalf("the trace:\n%s", traced)
	}
	if err := rt.FlushLog(ctx); err != nil {
		t.Fatal(err)
	}
	var logTrace, logBody, channel, route string
	if err := rt.pool.QueryRow(ctx, "SELECT trace::text, body FROM route_runs WHERE route_id = 'key'").Scan(&logTrace, &logBody); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(logTrace, secret) || strings.Contains(logBody, secret) || !strings.Contains(logBody, engine.Mask) {
		t.Fatalf("the run log keeps: trace %s, body %s", logTrace, logBody)
	}
	if err := rt.pool.QueryRow(ctx, "SELECT channel, route_id FROM vault_access_log WHERE action = 'read'").Scan(&channel, &route); err != nil || channel != "route" || route != "key" {
		t.Fatalf("the read's log row: %q %q %v", channel, route, err)
	}
}

// TestBodyNumberPastFloat: a body field holding a number no 64-bit float
// can carry (1e400) is refused 400 naming the field, and writes nothing;
// the other fields of such a body are not read.
func TestBodyNumberPastFloat(t *testing.T) {
	rt := newTestRuntime(t)
	rt.collection(t, "nums")
	rt.route(t, routeDoc("add", "POST", "/add", `[{"id":"n","bdtype":"FLOAT"}]`,
		`{"type":"OBJECT","depth":0,"local_name":"o","pairs":`+pairsOf("n", ref("n"))+`}`,
		`{"type":"CREATE","depth":0,"ref_col":"nums","ref_object":"o","save":true,"conditions":[]}`,
		`{"type":"RETURN","depth":0,"pairs":`+pairsOf("n", ref("n"))+`,"conditions":[]}`))
	for _, body := range []string{`{"n":1e400}`, `{"n":-1e309,"other":1}`} {
		a := rt.serve(t, Request{Method: "POST", Path: "/x/shop/add", Body: []byte(body)})
		if a.Status != 400 || !strings.Contains(string(a.Body), "Error: body field n ") {
			t.Errorf("%s: %d %s", body, a.Status, a.Body)
		}
	}
	if recs := rt.records(t, "nums"); len(recs) != 0 {
		t.Fatalf("written: %v", recs)
	}
	if a := rt.serve(t, Request{Method: "POST", Path: "/x/shop/add", Body: []byte(`{"n":1e308}`)}); a.Status != 200 {
		t.Fatalf("1e308: %d %s", a.Status, a.Body)
	}
}
