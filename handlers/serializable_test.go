package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"stencil/store"
)

// concurrently sends n requests made by req over clients goroutines to
// the app listening at base, tells answered (when not nil) of each answer,
// and counts the answers by status.
func concurrently(t *testing.T, base string, clients, n int, req func(i int) (string, string), answered func(i, status int)) map[int]int {
	t.Helper()
	var mu sync.Mutex
	statuses := map[int]int{}
	next := make(chan int)
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for i := range next {
				path, body := req(i)
				resp, err := http.Post(base+path, "application/json", strings.NewReader(body))
				if err != nil {
					t.Error(err)
					continue
				}
				raw, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					t.Logf("%d %s", resp.StatusCode, raw)
				}
				mu.Lock()
				statuses[resp.StatusCode]++
				if answered != nil {
					answered(i, resp.StatusCode)
				}
				mu.Unlock()
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return statuses
}

// recordsOf returns the data of a collection's records of project shop.
func recordsOf(t *testing.T, ta *testApp, col string) []map[string]any {
	t.Helper()
	recs, err := ta.h.store.Records(context.Background(), "shop", col, nil, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, r := range recs {
		var m map[string]any
		if err := json.Unmarshal(r.Data, &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

// newCollection makes a collection of project shop with records.
func newCollection(t *testing.T, ta *testApp, id string, records ...string) {
	t.Helper()
	ctx := context.Background()
	if err := ta.h.store.CreateCollection(ctx, &store.Collection{ProjectID: "shop", ID: id, Name: id}, ta.root.ID); err != nil {
		t.Fatal(err)
	}
	for _, rec := range records {
		r := store.Record{ProjectID: "shop", CollectionID: id, Data: []byte(rec)}
		if err := ta.h.store.CreateRecord(ctx, &r); err != nil {
			t.Fatal(err)
		}
	}
}

// readCounter is the blocks that read counter c's record and compute its
// next value: rows, rec, next.
var readCounter = []string{
	`{"type":"FETCH","depth":0,"local_name":"rows","ref_col":"counters"}`,
	`{"type":"FILTER","depth":0,"local_name":"mine","source":"rows","ref_property":"name","filters":[{"right":` + lit("STRING", "c") + `,"operation_type":"EQUAL_TO","not":false,"next":"NONE"}]}`,
	`{"type":"PROPERTY","depth":0,"local_name":"rec","data":` + ref("mine") + `,"apply":"GET_FIRST","additional":""}`,
	`{"type":"ASSIGNMENT","depth":0,"local_name":"next","conditions":[],"operations":[{"left":` + ref("rec.n") + `,"right":` + lit("INTEGER", "1") + `,"operation_type":"ADDITION","not":false,"next":"NONE"}]}`,
}

// TestCounterUnderConcurrency: 32 clients increment one counter 160 times
// in all, through a route that reads the record, adds 1 and writes it
// back. Each answer 200 is one increment, and the count ends at exactly
// 160 (16–27 before runs that write were serializable).
func TestCounterUnderConcurrency(t *testing.T) {
	t.Parallel()
	writes := map[string]string{
		"SIMPLE_UPDATE": `{"type":"SIMPLE_UPDATE","depth":0,"ref_col":"counters","ref_property":"n","save":true,"targets":[{"field":"name","value":` + lit("STRING", "c") + `}],"set":` + ref("next") + `}`,
		"UPDATE": `{"type":"UPDATE","depth":0,"ref_col":"counters","ref_property":"n","save":true,"targets":[{"field":"name","conditions":[` +
			cond(ref("item"), "EQUAL_TO", lit("STRING", "c")) + `]}],"set":` + ref("next") + `,"add":null,"filter":null,"conditions":[]}`,
	}
	for name, write := range writes {
		t.Run(name, func(t *testing.T) {
			ta, h := runApp(t)
			newCollection(t, ta, "counters", `{"name":"c","n":0}`, `{"name":"other","n":0}`)
			runnable{id: "inc", method: "POST", path: "/inc", blocks: append(append([]string{}, readCounter...), write,
				`{"type":"RETURN","depth":0,"pairs":`+pairsOf("n", ref("next"))+`,"conditions":[]}`)}.save(t, ta, h)
			base := ta.listen(t)
			statuses := concurrently(t, base, 32, 160, func(int) (string, string) { return "/x/shop/inc", "" }, nil)
			counters := recordsOf(t, ta, "counters")
			if statuses[200] != 160 || counters[0]["n"] != 160.0 || counters[1]["n"] != 0.0 {
				t.Fatalf("answers %v; counters %v", statuses, counters)
			}
			if err := ta.h.runs.FlushLog(context.Background()); err != nil {
				t.Fatal(err)
			}
			var runs, retried int
			if err := ta.pool.QueryRow(context.Background(), `SELECT count(*), count(*) FILTER (WHERE attempts > 1) FROM route_runs WHERE route_id = 'inc'`).
				Scan(&runs, &retried); err != nil || runs != 160 {
				t.Fatalf("run log: %d rows (%d retried), %v", runs, retried, err)
			}
			t.Logf("%d of 160 runs began again at least once; %d batches", retried, ta.h.runs.Batches.Led.Load())
		})
	}
}

// TestTransferUnderConcurrency: each run moves 1 from one account to the
// other, chosen at random; under 32 clients the sum never changes, and
// each balance moved by exactly what the answered transfers moved.
func TestTransferUnderConcurrency(t *testing.T) {
	t.Parallel()
	ta, h := runApp(t)
	newCollection(t, ta, "accounts", `{"name":"a","balance":1000}`, `{"name":"b","balance":1000}`)
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
	runnable{id: "move", method: "POST", path: "/move", body: `[{"id":"from","bdtype":"STRING"},{"id":"to","bdtype":"STRING"}]`, blocks: blocks}.save(t, ta, h)
	base := ta.listen(t)
	directions := make([]bool, 200) // true: a → b
	for i := range directions {
		directions[i] = rand.IntN(2) == 0
	}
	moved := 0 // what a gave to b, by the answered transfers
	statuses := concurrently(t, base, 32, len(directions), func(i int) (string, string) {
		if directions[i] {
			return "/x/shop/move", `{"from":"a","to":"b"}`
		}
		return "/x/shop/move", `{"from":"b","to":"a"}`
	}, func(i, status int) {
		if status == 200 {
			moved += map[bool]int{true: 1, false: -1}[directions[i]]
		}
	})
	accounts := recordsOf(t, ta, "accounts")
	a, b := accounts[0]["balance"].(float64), accounts[1]["balance"].(float64)
	if statuses[200] != len(directions) || a+b != 2000 || a != float64(1000-moved) {
		t.Fatalf("answers %v; a %v, b %v (sum %v), a gave %d\n%s", statuses, a, b, a+b, moved, ta.logs)
	}
	t.Logf("a %v, b %v after %d transfers", a, b, len(directions))
}

// TestContentionAnswers503: a run that cannot get its rows within its
// time (another transaction holds them) is run again until its time is up,
// then answers 503 with Retry-After, writes nothing, and is logged once,
// BUSY, with its attempts.
func TestContentionAnswers503(t *testing.T) {
	t.Parallel()
	ta, h := runApp(t)
	newCollection(t, ta, "counters", `{"name":"c","n":0}`)
	runnable{id: "inc", method: "POST", path: "/inc", blocks: append(append([]string{}, readCounter...),
		`{"type":"SIMPLE_UPDATE","depth":0,"ref_col":"counters","ref_property":"n","save":true,"targets":[{"field":"name","value":`+lit("STRING", "c")+`}],"set":`+ref("next")+`}`,
	)}.save(t, ta, h)
	ta.h.runs.Limits.Time = time.Second
	ctx := context.Background()
	holder, err := ta.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback(ctx)
	if _, err := holder.Exec(ctx, "SELECT id FROM records WHERE collection_id = 'counters' FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest("POST", "/x/shop/inc", nil)
	resp, body := ta.do(t, req)
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" || !strings.Contains(body, "Error: the route could not complete under contention") {
		t.Fatalf("%d %q %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	if err := holder.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if n := recordsOf(t, ta, "counters")[0]["n"]; n != 0.0 {
		t.Fatalf("the counter is %v", n)
	}
	if err := ta.h.runs.FlushLog(ctx); err != nil {
		t.Fatal(err)
	}
	var ended string
	var attempts int
	if err := ta.pool.QueryRow(ctx, `SELECT ended, attempts FROM route_runs WHERE route_id = 'inc'`).Scan(&ended, &attempts); err != nil || ended != "BUSY" || attempts < 2 {
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
	t.Run("batches", func(t *testing.T) { batchKeepsEachRunsOutcome(t, false) })
	// A batch past its time leaves the runs it has not begun to the next.
	t.Run("one run a batch", func(t *testing.T) { batchKeepsEachRunsOutcome(t, true) })
}

func batchKeepsEachRunsOutcome(t *testing.T, oneByOne bool) {
	ta, h := runApp(t)
	if oneByOne {
		ta.h.runs.Batches.BatchTime = -1
	}
	newCollection(t, ta, "counters", `{"name":"c","n":0}`)
	runnable{id: "inc", method: "POST", path: "/inc", body: `[{"id":"fail","bdtype":"BOOLEAN"}]`, blocks: append(append([]string{}, readCounter...),
		`{"type":"SIMPLE_UPDATE","depth":0,"ref_col":"counters","ref_property":"n","save":true,"targets":[{"field":"name","value":`+lit("STRING", "c")+`}],"set":`+ref("next")+`}`,
		`{"type":"EMAIL","depth":0,"template":"counted","recipients":[`+lit("STRING", "ops@example.com")+`],"pairs":[],"conditions":[]}`,
		`{"type":"CONDITION","depth":0,"conditions":[`+cond(ref("fail"), "EQUAL_TO", lit("BOOLEAN", "true"))+`],"action":"FAIL","fail":{"status":409,"message":"refused after the write"}}`,
		`{"type":"RETURN","depth":0,"pairs":`+pairsOf("n", ref("next"))+`,"conditions":[]}`)}.save(t, ta, h)
	ta.h.runs.Batches.Collided("shop/inc") // as after a first collision
	base := ta.listen(t)
	statuses := concurrently(t, base, 32, 120, func(i int) (string, string) {
		return "/x/shop/inc", fmt.Sprintf(`{"fail":%t}`, i%3 == 0)
	}, nil)
	n := recordsOf(t, ta, "counters")[0]["n"]
	if statuses[200] != 80 || statuses[409] != 40 || n != 80.0 {
		t.Fatalf("answers %v; the counter is %v", statuses, n)
	}
	var queued int
	if err := ta.pool.QueryRow(context.Background(), `SELECT count(*) FROM outbox WHERE route_id = 'inc'`).Scan(&queued); err != nil || queued != 80 {
		t.Fatalf("%d messages queued, %v", queued, err)
	}
	if b := ta.h.runs.Batches.Led.Load(); b == 0 || b >= 120 && !oneByOne || b < 120 && oneByOne {
		t.Fatalf("%d batches for 120 runs", b)
	}
	t.Logf("120 runs in %d batches", ta.h.runs.Batches.Led.Load())
}

// TestBatchWriteFailsLate: a batch sends a run's last write with the next
// run's first statement (or before the commit); when that write fails, the
// run it belongs to takes back its writes and answers 500, the next run
// begins again, and the other runs of the batch commit.
func TestBatchWriteFailsLate(t *testing.T) {
	t.Parallel()
	ta, h := runApp(t)
	newCollection(t, ta, "counters", `{"name":"c","n":0}`)
	ctx := context.Background()
	if _, err := ta.pool.Exec(ctx, `CREATE FUNCTION refuse_boom() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN IF NEW.data->>'boom' = 'true' THEN RAISE EXCEPTION 'boom refused'; END IF; RETURN NEW; END $$;
		CREATE TRIGGER refuse_boom BEFORE UPDATE ON records FOR EACH ROW EXECUTE FUNCTION refuse_boom()`); err != nil {
		t.Fatal(err)
	}
	runnable{id: "inc", method: "POST", path: "/inc", body: `[{"id":"boom","bdtype":"BOOLEAN"}]`, blocks: append(append([]string{}, readCounter...),
		`{"type":"SIMPLE_UPDATE","depth":0,"ref_col":"counters","ref_property":"n","save":true,"targets":[{"field":"name","value":`+lit("STRING", "c")+`}],"set":`+ref("next")+`}`,
		`{"type":"SIMPLE_UPDATE","depth":0,"ref_col":"counters","ref_property":"boom","save":true,"targets":[{"field":"name","value":`+lit("STRING", "c")+`}],"set":`+ref("boom")+`}`,
		`{"type":"RETURN","depth":0,"pairs":`+pairsOf("n", ref("next"))+`,"conditions":[]}`)}.save(t, ta, h)
	ta.h.runs.Batches.Collided("shop/inc")
	base := ta.listen(t)
	statuses := concurrently(t, base, 32, 100, func(i int) (string, string) {
		return "/x/shop/inc", fmt.Sprintf(`{"boom":%t}`, i%10 == 9)
	}, nil)
	rec := recordsOf(t, ta, "counters")[0]
	if statuses[200] != 90 || statuses[500] != 10 || rec["n"] != 90.0 || rec["boom"] != false {
		t.Fatalf("answers %v; the counter %v", statuses, rec)
	}
	// Every run's last write was held back, so runs in batches are what
	// the late failures went through.
	if b := ta.h.runs.Batches.Led.Load(); b == 0 || b >= 100 {
		t.Fatalf("%d batches for 100 runs", b)
	}
	t.Logf("100 runs in %d batches", ta.h.runs.Batches.Led.Load())
}
