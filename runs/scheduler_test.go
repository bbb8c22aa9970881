package runs

import (
	"context"
	"net/http"
	"testing"
	"time"

	"stencil/store"
)

// Runs no request waits for (a schedule's, a job's) take a background slot
// first, and there are half as many of those as run slots: with them all
// taken, a scheduled run waits and is then BUSY, while a request's run of
// the same route still runs (docs/schedules.md).
func TestBackgroundRunsHoldHalfTheSlots(t *testing.T) {
	rt := newTestRuntime(t)
	rt.route(t, routeDoc("ping", "GET", "/ping", "", `{"type":"RETURN","depth":0,"pairs":`+pairsOf("ok", lit("BOOLEAN", "true"))+`,"conditions":[]}`))
	if got := cap(rt.background.taken); got != cap(rt.slots.taken)/2 {
		t.Fatalf("%d background slots of %d run slots", got, cap(rt.slots.taken))
	}
	rt.background.Wait = 50 * time.Millisecond
	var held []func()
	for range cap(rt.background.taken) {
		release, err := rt.background.Enter(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, release)
	}
	ctx := context.Background()
	plan, err := rt.Plan(ctx, "shop", "ping")
	if err != nil || plan == nil {
		t.Fatal(plan, err)
	}
	scheduled := Request{Plan: plan, ProjectID: "shop", Method: "GET", Path: "/x/shop/ping", Trigger: store.TriggerSchedule}
	if a, err := rt.Serve(ctx, scheduled); err != nil || a.Status != http.StatusServiceUnavailable || a.Ended != "BUSY" {
		t.Fatalf("a scheduled run with every background slot taken: %+v %v", a, err)
	}
	if a, err := rt.Serve(ctx, Request{Method: "GET", Path: "/x/shop/ping"}); err != nil || a.Status != http.StatusOK {
		t.Fatalf("a request's run beside them: %+v %v", a, err)
	}
	for _, release := range held {
		release()
	}
	if a, err := rt.Serve(ctx, scheduled); err != nil || a.Status != http.StatusOK {
		t.Fatalf("a scheduled run with a slot free: %+v %v", a, err)
	}
}

// While requests' runs hold more than a quarter of the run slots,
// background runs also take one of yield's slots, a sixteenth of the run
// slots, and give it back; with those held, a scheduled run waits and is
// then BUSY; with the requests gone, it runs though yield's slots are
// still held (docs/jobs.md).
func TestBackgroundRunsYieldToBusyRequests(t *testing.T) {
	rt := newTestRuntime(t)
	rt.route(t, routeDoc("ping", "GET", "/ping", "", `{"type":"RETURN","depth":0,"pairs":`+pairsOf("ok", lit("BOOLEAN", "true"))+`,"conditions":[]}`))
	if got := cap(rt.yield.taken); got != max(1, cap(rt.slots.taken)/16) {
		t.Fatalf("%d yield slots of %d run slots", got, cap(rt.slots.taken))
	}
	ctx := context.Background()
	plan, err := rt.Plan(ctx, "shop", "ping")
	if err != nil || plan == nil {
		t.Fatal(plan, err)
	}
	scheduled := Request{Plan: plan, ProjectID: "shop", Method: "GET", Path: "/x/shop/ping", Trigger: store.TriggerSchedule}
	busy := int64(cap(rt.slots.taken)/4 + 1)
	rt.requests.Add(busy)
	// A yield slot free: the run takes it and gives both back.
	if a, err := rt.Serve(ctx, scheduled); err != nil || a.Status != http.StatusOK {
		t.Fatalf("a scheduled run beside %d requests' runs, a yield slot free: %+v %v", busy, a, err)
	}
	if len(rt.yield.taken) != 0 || len(rt.background.taken) != 0 {
		t.Fatalf("after the run: %d yield and %d background slots taken", len(rt.yield.taken), len(rt.background.taken))
	}
	rt.yield.Wait = 50 * time.Millisecond
	var held []func()
	for range cap(rt.yield.taken) {
		release, err := rt.yield.Enter(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, release)
	}
	defer func() {
		for _, release := range held {
			release()
		}
	}()
	if a, err := rt.Serve(ctx, scheduled); err != nil || a.Status != http.StatusServiceUnavailable || a.Ended != "BUSY" {
		t.Fatalf("a scheduled run beside %d requests' runs, every yield slot taken: %+v %v", busy, a, err)
	}
	if a, err := rt.Serve(ctx, Request{Method: "GET", Path: "/x/shop/ping"}); err != nil || a.Status != http.StatusOK {
		t.Fatalf("a request's run beside them: %+v %v", a, err)
	}
	if got := rt.requests.Load(); got != busy {
		t.Fatalf("requests' runs counted after one ended: %d, want %d", got, busy)
	}
	rt.requests.Add(-busy)
	if a, err := rt.Serve(ctx, scheduled); err != nil || a.Status != http.StatusOK {
		t.Fatalf("a scheduled run once the requests are gone: %+v %v", a, err)
	}
	if got := len(rt.background.taken); got != 0 {
		t.Fatalf("%d background slots still taken after the runs", got)
	}
}

// A request's run with LogLater is logged by Finish, not by Serve, and
// its time counts from the request's arrival (docs/routes.md, Latency).
func TestRunTimeIsTheRequests(t *testing.T) {
	rt := newTestRuntime(t)
	rt.route(t, routeDoc("ping", "GET", "/ping", "", `{"type":"RETURN","depth":0,"pairs":`+pairsOf("ok", lit("BOOLEAN", "true"))+`,"conditions":[]}`))
	pending := func() []store.Run {
		rt.log.mu.Lock()
		defer rt.log.mu.Unlock()
		return append([]store.Run(nil), rt.log.pending...)
	}
	before := len(pending())
	arrived := time.Now().Add(-50 * time.Millisecond)
	a, err := rt.Serve(context.Background(), Request{Method: "GET", Path: "/x/shop/ping", Arrived: arrived, LogLater: true})
	if err != nil || a.Status != http.StatusOK {
		t.Fatalf("%+v %v", a, err)
	}
	if got := len(pending()); got != before {
		t.Fatalf("Serve logged the run itself: %d rows, %d before", got, before)
	}
	rt.Finish(a)
	rows := pending()
	if len(rows) != before+1 {
		t.Fatalf("Finish logged %d rows", len(rows)-before)
	}
	if r := rows[len(rows)-1]; !r.At.Equal(arrived) || r.Duration < 50*time.Millisecond || r.RouteID != "ping" {
		t.Fatalf("the run logged: at %s (arrived %s), took %s", r.At, arrived, r.Duration)
	}
	rt.Finish(Answer{Status: 404}) // an answer without a run: nothing
	if len(pending()) != before+1 {
		t.Fatal("Finish of an answer without a run logged a row")
	}
}
