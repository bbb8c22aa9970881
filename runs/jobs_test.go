package runs

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"stencil/store"
)

func enqueueBlock(route, extra string) string {
	if extra != "" {
		extra = "," + extra
	}
	return `{"type":"ENQUEUE","depth":0,"route_id":"` + route + `","query":[],"body":null,"delay_ms":null,"max_attempts":5,"conditions":[],"local_name":"job"` + extra + `}`
}

// jobsOf lists project shop's jobs in state ("" any).
func (rt *testRuntime) jobsOf(t *testing.T, state string) []store.Job {
	t.Helper()
	jobs, _, _, err := rt.st.Jobs(context.Background(), store.JobQuery{Project: "shop", State: state, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return jobs
}

// TestEnqueueInTheRunsTransaction: a job is written in its run's
// transaction. A write route that enqueues and then FAILs leaves neither
// its record nor its job; one that commits leaves exactly one of each;
// many at once, batched, leave as many jobs as records.
func TestEnqueueInTheRunsTransaction(t *testing.T) {
	rt := newTestRuntime(t)
	rt.collection(t, "users")
	rt.route(t, routeDoc("remind", "POST", "/remind", "", `{"type":"RETURN","depth":0,"pairs":[],"conditions":[]}`))
	rt.route(t, routeDoc("signup", "POST", "/signup", `[{"id":"name","bdtype":"STRING"},{"id":"fail","bdtype":"BOOLEAN"}]`,
		`{"type":"OBJECT","depth":0,"local_name":"user","pairs":`+pairsOf("name", ref("name"))+`}`,
		`{"type":"CREATE","depth":0,"ref_col":"users","ref_object":"user","save":true,"conditions":[]}`,
		enqueueBlock("remind", `"body":`+ref("user")+`,"delay_ms":`+lit("INTEGER", "3600000")),
		`{"type":"CONDITION","depth":0,"conditions":[`+cond(ref("fail"), "EQUAL_TO", lit("BOOLEAN", "true"))+`],"action":"FAIL","fail":{"status":409,"message":"refused"}}`,
		`{"type":"RETURN","depth":0,"pairs":`+pairsOf("job", ref("job"))+`,"conditions":[]}`))

	if a := rt.serve(t, Request{Method: "POST", Path: "/x/shop/signup", Body: []byte(`{"name":"ann","fail":true}`)}); a.Status != 409 {
		t.Fatalf("FAIL: %d %s", a.Status, a.Body)
	}
	if jobs, recs := rt.jobsOf(t, ""), rt.records(t, "users"); len(jobs) != 0 || len(recs) != 0 {
		t.Fatalf("after a FAIL: %d jobs, %d records", len(jobs), len(recs))
	}
	a := rt.serve(t, Request{Method: "POST", Path: "/x/shop/signup", Body: []byte(`{"name":"bob","fail":false}`)})
	jobs := rt.jobsOf(t, "")
	if a.Status != 200 || len(jobs) != 1 || string(a.Body) != fmt.Sprintf(`{"job":%d}`, jobs[0].ID) {
		t.Fatalf("commit: %d %s, jobs %+v", a.Status, a.Body, jobs)
	}
	if j := jobs[0]; j.State != store.JobScheduled || j.RouteID != "remind" || j.MaxAttempts != 5 || j.Attempts != 0 ||
		time.Until(j.RunAt) < 59*time.Minute || j.FinishedAt != nil {
		t.Fatalf("job %+v", j)
	}

	// 64 at once, a third of them FAILing: batched, each job goes with
	// its run's savepoint.
	statuses := rt.concurrently(t, 16, 64, func(i int) (string, string, string) {
		return "POST", "/x/shop/signup", fmt.Sprintf(`{"name":"u%d","fail":%v}`, i, i%3 == 0)
	})
	if statuses[200]+statuses[409] != 64 || statuses[409] != 22 {
		t.Fatalf("statuses %v", statuses)
	}
	recs, err := rt.st.Records(context.Background(), "shop", "users", nil, 0, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if jobs := rt.jobsOf(t, ""); len(jobs) != len(recs) || len(recs) != 1+42 {
		t.Fatalf("%d jobs for %d records", len(jobs), len(recs))
	}

	// A project with as many jobs waiting as it may: the ENQUEUE faults
	// with 429 and its run writes nothing.
	rt.JobBacklog = 43
	time.Sleep(backlogAge)
	a = rt.serve(t, Request{Method: "POST", Path: "/x/shop/signup", Body: []byte(`{"name":"late","fail":false}`)})
	if a.Status != 429 || a.Header.Get("Retry-After") != "60" || len(rt.jobsOf(t, "")) != 43 || len(rt.records(t, "users")) != 43 {
		t.Fatalf("over the bound: %d %v %s", a.Status, a.Header, a.Body)
	}
}

// TestJobRetriesWithOneKey: a job whose route's upstream answers 500
// twice and then 200 completes on its third attempt, every attempt with
// the same Idempotency-Key; each attempt is in the run log with trigger
// job. A job of a route that answers 500 every time is discarded after
// its attempts with the last error; retried, it runs again.
func TestJobRetriesWithOneKey(t *testing.T) {
	rt := newTestRuntime(t)
	var calls atomic.Int32
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) <= 2 {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	rt.allow(t, up)
	rt.route(t, routeDoc("charge", "POST", "/charge", "",
		httpBlock("res", "POST", lit("STRING", up.URL+"/charge"), ""),
		`{"type":"CONDITION","depth":0,"conditions":[`+cond(ref("res.status"), "GREATER_THAN_OR_EQUAL_TO", lit("INTEGER", "500"))+`],"action":"FAIL","fail":{"status":502,"message":"the upstream failed"}}`,
		`{"type":"RETURN","depth":0,"pairs":[],"conditions":[]}`))
	rt.route(t, routeDoc("broken", "POST", "/broken", "",
		`{"type":"CONDITION","depth":0,"conditions":[],"action":"FAIL","fail":{"status":503,"message":"always down"}}`))
	rt.route(t, routeDoc("start", "POST", "/start", "", enqueueBlock("charge", ""),
		enqueueBlock("broken", `"max_attempts":2`), `{"type":"RETURN","depth":0,"pairs":[],"conditions":[]}`))

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { rt.Jobs(nil).Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	if a := rt.serve(t, Request{Method: "POST", Path: "/x/shop/start"}); a.Status != 200 {
		t.Fatalf("%d %s", a.Status, a.Body)
	}
	var jobs []store.Job
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		jobs = rt.jobsOf(t, "")
		if len(jobs) == 2 && jobs[0].FinishedAt != nil && jobs[1].FinishedAt != nil {
			break
		}
	}
	broken, charge := jobs[0], jobs[1]
	if charge.State != store.JobCompleted || charge.Attempts != 3 || charge.LastError == nil {
		t.Fatalf("charge %+v", charge)
	}
	if *charge.LastError != "the route answered 502: the upstream failed" {
		t.Fatalf("charge's last error %q", *charge.LastError)
	}
	sent := up.requests()
	if len(sent) != 3 {
		t.Fatalf("%d requests upstream", len(sent))
	}
	for _, r := range sent {
		if key := r.Header.Get("Idempotency-Key"); key != fmt.Sprintf("job-%d-0-0", charge.ID) {
			t.Fatalf("Idempotency-Key %q", key)
		}
	}
	if broken.State != store.JobDiscarded || broken.Attempts != 2 || broken.LastError == nil || *broken.LastError != "the route answered 503: always down" {
		t.Fatalf("broken %+v (%v)", broken, *broken.LastError)
	}
	if err := rt.FlushLog(context.Background()); err != nil {
		t.Fatal(err)
	}
	runs, _, err := rt.st.ListRuns(context.Background(), "shop", store.RunQuery{Page: store.Page{Limit: 10}, RouteID: "charge"})
	if err != nil || len(runs) != 3 {
		t.Fatalf("%d runs of charge: %v", len(runs), err)
	}
	for _, r := range runs {
		if r.Trigger != store.TriggerJob {
			t.Fatalf("run %+v", r)
		}
	}

	if _, err := rt.RetryJob(context.Background(), "shop", charge.ID); !errors.Is(err, ErrJobNotRetried) {
		t.Fatalf("a completed job retried: %v", err)
	}
	j, err := rt.RetryJob(context.Background(), "shop", broken.ID)
	if err != nil || j.State != store.JobScheduled || j.MaxAttempts != 3 {
		t.Fatalf("retry: %+v %v", j, err)
	}
	if _, err := rt.RetryJob(context.Background(), "other", broken.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("another project's job: %v", err)
	}
}

// TestJobWritesOnce: a job's run that committed its writes marks the job
// in the same transaction; an attempt after it (its instance stopped
// before the job was marked completed, and the job was taken back) finds
// the mark and writes nothing again.
func TestJobWritesOnce(t *testing.T) {
	rt := newTestRuntime(t)
	rt.collection(t, "charges")
	rt.route(t, routeDoc("charge", "POST", "/charge", "",
		`{"type":"OBJECT","depth":0,"local_name":"c","pairs":`+pairsOf("amount", lit("INTEGER", "5"))+`}`,
		`{"type":"CREATE","depth":0,"ref_col":"charges","ref_object":"c","save":true,"conditions":[]}`,
		`{"type":"RETURN","depth":0,"pairs":[],"conditions":[]}`))
	rt.route(t, routeDoc("start", "POST", "/start", "", enqueueBlock("charge", "")))
	if a := rt.serve(t, Request{Method: "POST", Path: "/x/shop/start"}); a.Status != 200 {
		t.Fatalf("%d %s", a.Status, a.Body)
	}
	id := rt.jobsOf(t, "")[0].ID
	args := store.JobArgs{Project: "shop", Route: "charge"}
	for attempt := range 2 {
		if err := rt.runJob(context.Background(), id, attempt+1, args); err != nil {
			t.Fatalf("attempt %d: %v", attempt+1, err)
		}
	}
	if recs := rt.records(t, "charges"); len(recs) != 1 {
		t.Fatalf("%d records after two attempts", len(recs))
	}
	if err := rt.FlushLog(context.Background()); err != nil {
		t.Fatal(err)
	}
	if runs, _, err := rt.st.ListRuns(context.Background(), "shop", store.RunQuery{Page: store.Page{Limit: 10}, RouteID: "charge"}); err != nil || len(runs) != 1 {
		t.Fatalf("%d runs of charge: %v", len(runs), err)
	}
}

// TestJobsInBatchesWriteOnce: jobs of a contended route (a counter read,
// added to and written back) run at once, so that their runs commit in
// batches, each marking its job in its savepoint; every job's second
// attempt then writes nothing: the counter counts each job once.
func TestJobsInBatchesWriteOnce(t *testing.T) {
	rt := newTestRuntime(t)
	rt.collection(t, "counters", `{"name":"c","n":0}`)
	rt.route(t, routeDoc("inc", "POST", "/inc", "", append(append([]string{}, readCounter...), setCounter,
		`{"type":"RETURN","depth":0,"pairs":[],"conditions":[]}`)...))
	const n = 48
	args := store.JobArgs{Project: "shop", Route: "inc"}
	led := rt.batches.Led.Load()
	for attempt := 1; attempt <= 2; attempt++ {
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for id := int64(1); id <= n; id++ {
			wg.Go(func() { errs <- rt.runJob(context.Background(), id, attempt, args) })
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("attempt %d: %v", attempt, err)
			}
		}
	}
	if got := rt.records(t, "counters")[0]["n"]; got != float64(n) {
		t.Fatalf("the counter is %v after %d jobs run twice each", got, n)
	}
	if rt.batches.Led.Load() == led {
		t.Fatal("no batch was led: the jobs' runs never met")
	}
}
