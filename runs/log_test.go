package runs

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"stencil/store"
)

// TestLogCountsEveryRunKeepsASample: in one second a route answers 1,000
// successful runs, 50 failures and 5 dry runs, and another route 10
// runs. Analytics count every run that is traffic; the log keeps the
// first 100 successes, then 1 in 100 carrying its rate (so the rates add
// up to the successes), every failure and every dry run.
func TestLogCountsEveryRunKeepsASample(t *testing.T) {
	rt := newTestRuntime(t)
	ctx := context.Background()
	var counted int64
	rt.log.counted = func(t store.Tally) { counted += t.Runs() }
	at := time.Now().Truncate(time.Second)
	run := func(route string, status int, dry bool) store.Run {
		return store.Run{At: at, ProjectID: "shop", RouteID: route, Method: "GET", Path: "/x/shop/" + route, Status: status,
			Ended: "RETURN", Duration: time.Millisecond, DryRun: dry}
	}
	for i := range 1000 {
		rt.log.add(run("ok", http.StatusOK, false))
		if i%20 == 0 {
			rt.log.add(run("ok", http.StatusInternalServerError, false))
		}
		if i%200 == 0 {
			rt.log.add(run("ok", http.StatusOK, true))
		}
		if i%100 == 0 {
			rt.log.add(run("other", http.StatusCreated, false))
		}
	}
	if err := rt.FlushLog(ctx); err != nil {
		t.Fatal(err)
	}
	var n2xx, n5xx int64
	if err := rt.pool.QueryRow(ctx, `SELECT sum(n2xx), sum(n5xx) FROM route_stats WHERE project_id = 'shop' AND resolution = 'm' AND route_id <> ''`).Scan(&n2xx, &n5xx); err != nil {
		t.Fatal(err)
	}
	if n2xx != 1010 || n5xx != 50 || counted != 1060 {
		t.Fatalf("analytics counted %d successes and %d failures (metrics %d), want 1010, 50 (1060)", n2xx, n5xx, counted)
	}
	var kept, sampled, rates, failures, dry, other int
	if err := rt.pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE status = 200 AND NOT dry_run), count(*) FILTER (WHERE sample_rate > 1),
		coalesce(sum(sample_rate) FILTER (WHERE status = 200 AND NOT dry_run), 0), count(*) FILTER (WHERE status = 500),
		count(*) FILTER (WHERE dry_run), count(*) FILTER (WHERE route_id = 'other') FROM route_runs`).Scan(&kept, &sampled, &rates, &failures, &dry, &other); err != nil {
		t.Fatal(err)
	}
	if kept != 109 || sampled != 9 || rates != 1000 || failures != 50 || dry != 5 || other != 10 {
		t.Fatalf("the log kept %d successes (%d of a sample, standing for %d), %d failures, %d dry runs, %d of the other route; want 109 (9, 1000), 50, 5, 10",
			kept, sampled, rates, failures, dry, other)
	}
	if strings.Contains(rt.logs.String(), "dropped") {
		t.Fatalf("a warning of runs dropped: %s", rt.logs)
	}
	// The next second starts again.
	at = at.Add(time.Second)
	for range 100 {
		rt.log.add(run("ok", http.StatusOK, false))
	}
	if err := rt.FlushLog(ctx); err != nil {
		t.Fatal(err)
	}
	if err := rt.pool.QueryRow(ctx, `SELECT count(*) FROM route_runs WHERE at = $1 AND sample_rate = 1`, at).Scan(&kept); err != nil || kept != 100 {
		t.Fatalf("the next second kept %d runs as themselves (%v), want 100", kept, err)
	}
}

// TestLogDropsOnlyWhatItDrops: while the database refuses the log's rows,
// failures wait, up to the writer's bound; past it the oldest go, and the
// warning counts exactly those. Analytics, written apart, count every run
// all along; a tally that cannot be written is added to the next one and
// told to the metrics once.
func TestLogDropsOnlyWhatItDrops(t *testing.T) {
	rt := newTestRuntime(t)
	ctx := context.Background()
	rt.log.max = 300
	var counted int64
	rt.log.counted = func(t store.Tally) { counted += t.Runs() }
	if _, err := rt.pool.Exec(ctx, `CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused'; END $$;
		CREATE TRIGGER refuse BEFORE INSERT ON route_runs FOR EACH STATEMENT EXECUTE FUNCTION refuse();
		CREATE TRIGGER refuse BEFORE INSERT ON route_stats FOR EACH STATEMENT EXECUTE FUNCTION refuse();`); err != nil {
		t.Fatal(err)
	}
	at := time.Now()
	add := func(from, to int) {
		for i := from; i < to; i++ {
			rt.log.add(store.Run{At: at, ProjectID: "shop", RouteID: "r", Method: "GET", Path: "/x/shop/r", Status: 404, Ended: "FAIL", Attempts: i + 1})
		}
	}
	add(0, 250)
	if err := rt.FlushLog(ctx); err == nil {
		t.Fatal("a refused write succeeded")
	}
	add(250, 400) // 100 past the bound: the 100 oldest go
	if err := rt.FlushLog(ctx); err == nil {
		t.Fatal("a refused write succeeded")
	}
	if _, err := rt.pool.Exec(ctx, `DROP TRIGGER refuse ON route_runs; DROP TRIGGER refuse ON route_stats`); err != nil {
		t.Fatal(err)
	}
	if err := rt.FlushLog(ctx); err != nil {
		t.Fatal(err)
	}
	var logged, first int
	var n4xx int64
	if err := rt.pool.QueryRow(ctx, `SELECT count(*), min(attempts) FROM route_runs`).Scan(&logged, &first); err != nil {
		t.Fatal(err)
	}
	if err := rt.pool.QueryRow(ctx, `SELECT n4xx FROM route_stats WHERE project_id = 'shop' AND resolution = 'd' AND route_id = 'r'`).Scan(&n4xx); err != nil {
		t.Fatal(err)
	}
	if logged != 300 || first != 101 || n4xx != 400 || counted != 400 {
		t.Fatalf("logged %d runs from the %dth, analytics %d, metrics %d; want 300 from the 101st, 400, 400", logged, first, n4xx, counted)
	}
	if warned := strings.Count(rt.logs.String(), "runs dropped"); warned != 1 || !strings.Contains(rt.logs.String(), "runs=100") {
		t.Fatalf("warnings: %s", rt.logs)
	}
}
