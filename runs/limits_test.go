package runs

import (
	"context"
	"strings"
	"testing"
	"time"

	"stencil/engine"
)

// serveGet runs GET path (under /x/shop) and gives its status and body.
func (rt *testRuntime) serveGet(t *testing.T, path string) (int, string) {
	t.Helper()
	a, err := rt.Serve(context.Background(), Request{Method: "GET", Path: "/x/shop" + path, Client: "127.0.0.1"})
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return a.Status, string(a.Body)
}

// loopOf is a LOOP from 0 to max with body's blocks under it.
func loopOf(max string, body ...string) []string {
	return append([]string{`{"type":"LOOP","depth":0,"local_name":"i","min":` + lit("INTEGER", "0") + `,"max":` + lit("INTEGER", max) + `,"step":` + lit("INTEGER", "1") + `}`}, body...)
}

// TestRunLimits: a run ends at each of its limits — block executions,
// records read, the answer's size, time — with a fault naming the block,
// and the next run answers.
func TestRunLimits(t *testing.T) {
	t.Parallel()
	rt := newTestRuntime(t)
	rt.Limits = engine.Limits{Steps: 1000, Time: 300 * time.Millisecond, Records: 3, Answer: 1 << 10}
	rt.collection(t, "books", `{"title":"Dune"}`)
	rt.collection(t, "many", `{"n":1}`, `{"n":2}`, `{"n":3}`, `{"n":4}`)
	rt.route(t, routeDoc("steps", "GET", "/steps", "", loopOf("1000000000")...))
	rt.route(t, routeDoc("records", "GET", "/records", "", `{"type":"FETCH","depth":0,"local_name":"rows","ref_col":"many"}`))
	rt.route(t, routeDoc("answer", "GET", "/answer", "", `{"type":"RETURN","depth":0,"pairs":`+pairsOf("big", lit("STRING", strings.Repeat("x", 2000)))+`,"conditions":[]}`))
	rt.route(t, routeDoc("time", "GET", "/time", "", loopOf("100000000", `{"type":"FETCH","depth":1,"local_name":"rows","ref_col":"books"}`,
		`{"type":"FILTER","depth":1,"local_name":"f","source":"rows","ref_property":"","filters":[]}`)...))
	for _, c := range []struct{ path, want string }{
		{"/steps", "Error: flow.blocks[0] (LOOP): the run passed its limit of 1000 block executions"},
		{"/records", "Error: flow.blocks[0] (FETCH): collection many has more than 3 records"},
		{"/answer", "Error: flow.blocks[0] (RETURN): the answer passes its limit"},
	} {
		if status, body := rt.serveGet(t, c.path); status != 500 || !strings.Contains(body, c.want) {
			t.Errorf("%s: %d %s", c.path, status, body)
		}
	}
	rt.Limits.Steps = 1 << 30
	if status, body := rt.serveGet(t, "/time"); status != 500 || !strings.Contains(body, "the run passed its time limit of 300ms") {
		t.Errorf("time: %d %s", status, body)
	}
	// The service is unharmed: the next run answers (with time to spare
	// for a connection made anew on a loaded machine: the run's time
	// counts from its start, waits included).
	rt.Limits.Time = 5 * time.Second
	if status, body := rt.serveGet(t, "/records"); status != 500 || !strings.Contains(body, "more than 3 records") {
		t.Errorf("after the limits: %d %s", status, body)
	}
}

// TestRunMemoryRoute: a route that makes a 2 MiB string, then in a LOOP a
// new one each turn, each kept in an object chain, faults at the run's
// memory limit (once it held 1.94 GB for one anonymous call).
func TestRunMemoryRoute(t *testing.T) {
	t.Parallel()
	rt := newTestRuntime(t)
	rt.route(t, routeDoc("hog", "GET", "/hog", "",
		`{"type":"ASSIGNMENT","depth":0,"local_name":"s","conditions":[],"operations":[{"left":`+lit("STRING", "x")+`,"right":`+lit("STRING", "")+`,"operation_type":"ADDITION","not":false,"next":"NONE"}]}`,
		`{"type":"LOOP","depth":0,"local_name":"d","min":`+lit("INTEGER", "0")+`,"max":`+lit("INTEGER", "21")+`,"step":`+lit("INTEGER", "1")+`}`,
		`{"type":"ASSIGNMENT","depth":1,"local_name":"s","conditions":[],"operations":[{"left":`+ref("s")+`,"right":`+ref("s")+`,"operation_type":"ADDITION","not":false,"next":"NONE"}]}`,
		`{"type":"OBJECT","depth":0,"local_name":"chain","pairs":[]}`,
		`{"type":"LOOP","depth":0,"local_name":"i","min":`+lit("INTEGER", "0")+`,"max":`+lit("INTEGER", "100000")+`,"step":`+lit("INTEGER", "1")+`}`,
		`{"type":"ASSIGNMENT","depth":1,"local_name":"t","conditions":[],"operations":[{"left":`+ref("s")+`,"right":`+ref("i")+`,"operation_type":"ADDITION","not":false,"next":"NONE"}]}`,
		`{"type":"OBJECT","depth":1,"local_name":"chain","pairs":`+pairsOf("next", ref("chain"), "text", ref("t"))+`}`,
		`{"type":"RETURN","depth":0,"pairs":`+pairsOf("n", lit("INTEGER", "1"))+`,"conditions":[]}`))
	if status, body := rt.serveGet(t, "/hog"); status != 500 || !strings.Contains(body, "the run passed its memory limit of 64 MiB") {
		t.Fatalf("%d %.300s", status, body)
	}
}

// TestRunTimeLimitInsideFilter: a LOOP of FILTERs over 10,000 records ends
// at the run's 5 s limit, not at the next check between blocks (13–22 s
// before: the limit was read every 256 blocks and never inside FILTER).
func TestRunTimeLimitInsideFilter(t *testing.T) {
	t.Parallel()
	rt := newTestRuntime(t)
	rt.Limits.Time = engine.DefaultLimits.Time
	rt.collection(t, "books", `{"title":"Dune","tags":["sf"]}`)
	if _, err := rt.pool.Exec(context.Background(), `INSERT INTO records (project_id, collection_id, data)
		SELECT 'shop', 'books', jsonb_build_object('n', i, 'tags', jsonb_build_array('a', 'b', i::text), 'pad', repeat('p', 200))
		FROM generate_series(1, 9999) i`); err != nil {
		t.Fatal(err)
	}
	rt.route(t, routeDoc("slow", "GET", "/slow", "", `{"type":"FETCH","depth":0,"local_name":"rows","ref_col":"books"}`,
		`{"type":"LOOP","depth":0,"local_name":"i","min":`+lit("INTEGER", "0")+`,"max":`+lit("INTEGER", "90000")+`,"step":`+lit("INTEGER", "1")+`}`,
		`{"type":"FILTER","depth":1,"local_name":"sf","source":"rows","ref_property":"tags","filters":[{"right":`+lit("STRING", "zz")+`,"operation_type":"INCLUDES","not":false,"next":"NONE"}]}`))
	start := time.Now()
	status, body := rt.serveGet(t, "/slow")
	took := time.Since(start)
	if status != 500 || !strings.Contains(body, "the run passed its time limit of 5s") {
		t.Fatalf("%d %s", status, body)
	}
	// Not a speed figure: the bound is the limit itself, read inside each
	// FILTER. Before, the same run went on for 13 s and more.
	if took > 9*time.Second {
		t.Fatalf("the run ended %s after it began, past its 5 s limit", took)
	}
}
