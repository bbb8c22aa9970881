package runs

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// Runs that write under real concurrency on real PostgreSQL
// (docs/engine.md, Writes under concurrency): serializable transactions,
// runs begun again, batches of contended routes and what each run of a
// batch keeps.

// readCounter is the blocks that read counter c's record and compute its
// next value: rows, rec, next.
var readCounter = []string{
	`{"type":"FETCH","depth":0,"local_name":"rows","ref_col":"counters"}`,
	`{"type":"FILTER","depth":0,"local_name":"mine","source":"rows","ref_property":"name","filters":[{"right":` + lit("STRING", "c") + `,"operation_type":"EQUAL_TO","not":false,"next":"NONE"}]}`,
	`{"type":"PROPERTY","depth":0,"local_name":"rec","data":` + ref("mine") + `,"apply":"GET_FIRST","additional":""}`,
	`{"type":"ASSIGNMENT","depth":0,"local_name":"next","conditions":[],"operations":[{"left":` + ref("rec.n") + `,"right":` + lit("INTEGER", "1") + `,"operation_type":"ADDITION","not":false,"next":"NONE"}]}`,
}

// setCounter writes next into counter c.
var setCounter = `{"type":"SIMPLE_UPDATE","depth":0,"ref_col":"counters","ref_property":"n","save":true,"targets":[{"field":"name","value":` + lit("STRING", "c") + `}],"set":` + ref("next") + `}`

// TestCounterUnderConcurrency: 32 clients increment one counter 160 times
// in all, through a route that reads the record, adds 1 and writes it
// back. Each answer 200 is one increment, and the count ends at exactly
// 160 (16–27 before runs that write were serializable).
func TestCounterUnderConcurrency(t *testing.T) {
	t.Parallel()
	writes := map[string]string{
		"SIMPLE_UPDATE": setCounter,
		"UPDATE": `{"type":"UPDATE","depth":0,"ref_col":"counters","ref_property":"n","save":true,"targets":[{"field":"name","conditions":[` +
			cond(ref("item"), "EQUAL_TO", lit("STRING", "c")) + `]}],"set":` + ref("next") + `,"add":null,"filter":null,"conditions":[]}`,
	}
	for name, write := range writes {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rt := newTestRuntime(t)
			rt.log.keepAll = math.MaxInt // every run in the log, not a sample past 100 a second
			rt.collection(t, "counters", `{"name":"c","n":0}`, `{"name":"other","n":0}`)
			rt.route(t, routeDoc("inc", "POST", "/inc", "", append(append([]string{}, readCounter...), write,
				`{"type":"RETURN","depth":0,"pairs":`+pairsOf("n", ref("next"))+`,"conditions":[]}`)...))
			statuses := rt.concurrently(t, 32, 160, func(int) (string, string, string) { return "POST", "/x/shop/inc", "" })
			counters := rt.records(t, "counters")
			if statuses[200] != 160 || counters[0]["n"] != 160.0 || counters[1]["n"] != 0.0 {
				t.Fatalf("answers %v; counters %v", statuses, counters)
			}
			if err := rt.FlushLog(context.Background()); err != nil {
				t.Fatal(err)
			}
			var runs, retried int
			if err := rt.pool.QueryRow(context.Background(), `SELECT count(*), count(*) FILTER (WHERE attempts > 1) FROM route_runs WHERE route_id = 'inc'`).
				Scan(&runs, &retried); err != nil || runs != 160 {
				t.Fatalf("run log: %d rows (%d retried), %v", runs, retried, err)
			}
			t.Logf("%d of 160 runs began again at least once; %d batches", retried, rt.batches.Led.Load())
		})
	}
}

// TestTransferUnderConcurrency: each run moves 1 from one account to the
// other, chosen at random; under 32 clients the sum never changes, and
// each balance moved by exactly what the answered transfers moved.
func TestTransferUnderConcurrency(t *testing.T) {
	t.Parallel()
	rt := newTestRuntime(t)
	rt.collection(t, "accounts", `{"name":"a","balance":1000}`, `{"name":"b","balance":1000}`)
	pick := func(v string) []string {
		return []string{
			`{"type":"FILTER","depth":0,"local_name":"` + v + `s","source":"rows","ref_property":"name","filters":[{"right":` + ref(v) + `,"operation_type":"EQUAL_TO","not":false,"next":"NONE"}]}`,
			`{"type":"PROPERTY","depth":0,"local_name":"` + v + `_rec","data":` + ref(v+"s") + `,"apply":"GET_FIRST","additional":""}`,
		}
	}
	blocks := []string{`{"type":"FETCH","depth":0,"local_name":"rows","ref_col":"accounts"}`}
	blocks = append(blocks, pick("from")...)
	blocks = append(blocks, pick("to")...)
	blocks = append(blocks,
		`{"type":"ASSIGNMENT","depth":0,"local_name":"from_new","conditions":[],"operations":[{"left":`+ref("from_rec.balance")+`,"right":`+lit("INTEGER", "1")+`,"operation_type":"SUBTRACTION","not":false,"next":"NONE"}]}`,
		`{"type":"ASSIGNMENT","depth":0,"local_name":"to_new","conditions":[],"operations":[{"left":`+ref("to_rec.balance")+`,"right":`+lit("INTEGER", "1")+`,"operation_type":"ADDITION","not":false,"next":"NONE"}]}`,
		`{"type":"SIMPLE_UPDATE","depth":0,"ref_col":"accounts","ref_property":"balance","save":true,"targets":[{"field":"name","value":`+ref("from")+`}],"set":`+ref("from_new")+`}`,
		`{"type":"SIMPLE_UPDATE","depth":0,"ref_col":"accounts","ref_property":"balance","save":true,"targets":[{"field":"name","value":`+ref("to")+`}],"set":`+ref("to_new")+`}`,
		`{"type":"RETURN","depth":0,"pairs":`+pairsOf("ok", lit("BOOLEAN", "true"))+`,"conditions":[]}`)
	rt.route(t, routeDoc("move", "POST", "/move", `[{"id":"from","bdtype":"STRING"},{"id":"to","bdtype":"STRING"}]`, blocks...))
	directions := make([]bool, 200) // true: a → b
	for i := range directions {
		directions[i] = rand.IntN(2) == 0
	}
	moved := 0 // what a gave to b, by the answered transfers
	statuses := rt.concurrentlyTelling(t, 32, len(directions), func(i int) (string, string, string) {
		if directions[i] {
			return "POST", "/x/shop/move", `{"from":"a","to":"b"}`
		}
		return "POST", "/x/shop/move", `{"from":"b","to":"a"}`
	}, func(i, status int) {
		if status == 200 {
			moved += map[bool]int{true: 1, false: -1}[directions[i]]
		}
	})
	accounts := rt.records(t, "accounts")
	a, b := accounts[0]["balance"].(float64), accounts[1]["balance"].(float64)
	if statuses[200] != len(directions) || a+b != 2000 || a != float64(1000-moved) {
		t.Fatalf("answers %v; a %v, b %v (sum %v), a gave %d\n%s", statuses, a, b, a+b, moved, rt.logs)
	}
	t.Logf("a %v, b %v after %d transfers", a, b, len(directions))
}

// TestContentionAnswers503: a run that cannot get its rows within its
// time (another transaction holds them) is run again until its time is up,
// then answers 503 with Retry-After, writes nothing, and is logged once,
// BUSY, with its attempts.
func TestContentionAnswers503(t *testing.T) {
	t.Parallel()
	rt := newTestRuntime(t)
	rt.collection(t, "counters", `{"name":"c","n":0}`)
	rt.route(t, routeDoc("inc", "POST", "/inc", "", append(append([]string{}, readCounter...), setCounter)...))
	rt.Limits.Time = time.Second
	ctx := context.Background()
	holder, err := rt.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback(ctx)
	if _, err := holder.Exec(ctx, "SELECT id FROM records WHERE collection_id = 'counters' FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	a := rt.serve(t, Request{Method: "POST", Path: "/x/shop/inc"})
	if a.Status != 503 || a.Header.Get("Retry-After") == "" || !strings.Contains(string(a.Body), "Error: the route could not complete under contention") {
		t.Fatalf("%d %q %s", a.Status, a.Header.Get("Retry-After"), a.Body)
	}
	if err := holder.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if n := rt.records(t, "counters")[0]["n"]; n != 0.0 {
		t.Fatalf("the counter is %v", n)
	}
	if err := rt.FlushLog(ctx); err != nil {
		t.Fatal(err)
	}
	var ended string
	var attempts int
	if err := rt.pool.QueryRow(ctx, `SELECT ended, attempts FROM route_runs WHERE route_id = 'inc'`).Scan(&ended, &attempts); err != nil || ended != "BUSY" || attempts < 2 {
		t.Fatalf("run log: %s after %d attempts, %v", ended, attempts, err)
	}
}

// TestBatchKeepsEachRunsOutcome: runs of a route whose runs take turns
// are run in batches, one transaction each; a run of a batch that FAILs
// after its write takes back its write and its email alone, and the
// others of its batch commit. The count ends at exactly the runs answered
// 200, and the outbox holds one message per such run.
func TestBatchKeepsEachRunsOutcome(t *testing.T) {
	t.Parallel()
	t.Run("batches", func(t *testing.T) { t.Parallel(); batchKeepsEachRunsOutcome(t, false) })
	// A batch past its time leaves the runs it has not begun to the next.
	t.Run("one run a batch", func(t *testing.T) { t.Parallel(); batchKeepsEachRunsOutcome(t, true) })
}

func batchKeepsEachRunsOutcome(t *testing.T, oneByOne bool) {
	rt := newTestRuntime(t)
	if oneByOne {
		rt.batches.BatchTime = -1
	}
	rt.collection(t, "counters", `{"name":"c","n":0}`)
	rt.route(t, routeDoc("inc", "POST", "/inc", `[{"id":"fail","bdtype":"BOOLEAN"}]`, append(append([]string{}, readCounter...), setCounter,
		`{"type":"EMAIL","depth":0,"template":"counted","recipients":[`+lit("STRING", "ops@example.com")+`],"pairs":[],"conditions":[]}`,
		`{"type":"CONDITION","depth":0,"conditions":[`+cond(ref("fail"), "EQUAL_TO", lit("BOOLEAN", "true"))+`],"action":"FAIL","fail":{"status":409,"message":"refused after the write"}}`,
		`{"type":"RETURN","depth":0,"pairs":`+pairsOf("n", ref("next"))+`,"conditions":[]}`)...))
	rt.batches.Collided("shop/inc") // as after a first collision
	statuses := rt.concurrently(t, 32, 120, func(i int) (string, string, string) {
		return "POST", "/x/shop/inc", fmt.Sprintf(`{"fail":%t}`, i%3 == 0)
	})
	n := rt.records(t, "counters")[0]["n"]
	if statuses[200] != 80 || statuses[409] != 40 || n != 80.0 {
		t.Fatalf("answers %v; the counter is %v", statuses, n)
	}
	var queued int
	if err := rt.pool.QueryRow(context.Background(), `SELECT count(*) FROM outbox WHERE route_id = 'inc'`).Scan(&queued); err != nil || queued != 80 {
		t.Fatalf("%d messages queued, %v", queued, err)
	}
	if b := rt.batches.Led.Load(); b == 0 || b >= 120 && !oneByOne || b < 120 && oneByOne {
		t.Fatalf("%d batches for 120 runs", b)
	}
	t.Logf("120 runs in %d batches", rt.batches.Led.Load())
}

// boomCounter makes the counter route POST /x/shop/inc, which adds 1 and
// then writes the body's boom into the counter: a write held back (its
// last) that a trigger refuses when boom is true, after wait (PL/pgSQL).
// The route's runs are batched from the start.
func boomCounter(t *testing.T, rt *testRuntime, wait string) {
	t.Helper()
	rt.collection(t, "counters", `{"name":"c","n":0}`)
	if _, err := rt.pool.Exec(context.Background(), `CREATE FUNCTION refuse_boom() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN IF NEW.data->>'boom' = 'true' THEN `+wait+` RAISE EXCEPTION 'boom refused'; END IF; RETURN NEW; END $$;
		CREATE TRIGGER refuse_boom BEFORE UPDATE ON records FOR EACH ROW EXECUTE FUNCTION refuse_boom()`); err != nil {
		t.Fatal(err)
	}
	rt.route(t, routeDoc("inc", "POST", "/inc", `[{"id":"boom","bdtype":"BOOLEAN"}]`, append(append([]string{}, readCounter...), setCounter,
		`{"type":"SIMPLE_UPDATE","depth":0,"ref_col":"counters","ref_property":"boom","save":true,"targets":[{"field":"name","value":`+lit("STRING", "c")+`}],"set":`+ref("boom")+`}`,
		`{"type":"RETURN","depth":0,"pairs":`+pairsOf("n", ref("next"))+`,"conditions":[]}`)...))
	rt.batches.Collided("shop/inc")
}

// TestBatchWriteFailsLate: a batch sends a run's last write with the next
// run's first statement (or before the commit); when that write fails, the
// run it belongs to takes back its writes and answers 500, the next run
// begins again, and the other runs of the batch commit.
func TestBatchWriteFailsLate(t *testing.T) {
	t.Parallel()
	rt := newTestRuntime(t)
	boomCounter(t, rt, "")
	statuses := rt.concurrently(t, 32, 100, func(i int) (string, string, string) {
		return "POST", "/x/shop/inc", fmt.Sprintf(`{"boom":%t}`, i%10 == 9)
	})
	rec := rt.records(t, "counters")[0]
	if statuses[200] != 90 || statuses[500] != 10 || rec["n"] != 90.0 || rec["boom"] != false {
		t.Fatalf("answers %v; the counter %v", statuses, rec)
	}
	// Every run's last write was held back, so runs in batches are what
	// the late failures went through.
	if b := rt.batches.Led.Load(); b == 0 || b >= 100 {
		t.Fatalf("%d batches for 100 runs", b)
	}
	t.Logf("100 runs in %d batches", rt.batches.Led.Load())
}

// A held-back write that fails slowly, with the next run's first
// statement, is still its own run's failure when the next run's time is
// up by then (its route would answer that as a timeout): the failing run
// answers 500 with its writes taken back, and no other run's writes go
// with them.
func TestBatchLateFailureOutlastsTheNextRun(t *testing.T) {
	t.Parallel()
	rt := newTestRuntime(t)
	// The refusal takes longer than a run of a batch has (RunTime).
	boomCounter(t, rt, "PERFORM pg_sleep(0.15);")
	boom := func(i int) bool { return i%4 == 3 }
	var wrong []string
	statuses := rt.concurrentlyTelling(t, 8, 24, func(i int) (string, string, string) {
		return "POST", "/x/shop/inc", fmt.Sprintf(`{"boom":%t}`, boom(i))
	}, func(i, status int) {
		if want := map[bool]int{false: 200, true: 500}[boom(i)]; status != want {
			wrong = append(wrong, fmt.Sprintf("run %d (boom %t) answered %d", i, boom(i), status))
		}
	})
	rec := rt.records(t, "counters")[0]
	if len(wrong) > 0 || rec["n"] != 18.0 || rec["boom"] != false {
		t.Fatalf("answers %v %v; the counter %v", statuses, wrong, rec)
	}
	if b := rt.batches.Led.Load(); b == 0 || b >= 24 {
		t.Fatalf("%d batches for 24 runs", b)
	}
}
