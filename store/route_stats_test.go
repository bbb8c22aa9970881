package store_test

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"stencil/store"
)

// TestRouteStats: the runs of each flush are counted by route and for the
// project, per minute, hour and day, added to what earlier flushes
// counted (latencies merged bucket by bucket); dry runs are not counted;
// the routes' totals over a range add up the rows that tile it; the sweep
// keeps each resolution as long as it should.
func TestRouteStats(t *testing.T) {
	t.Parallel()
	st, ctx := collectionStore(t)
	at := time.Date(2026, 11, 20, 10, 5, 30, 0, time.UTC)
	run := func(route string, status int, ended string, d time.Duration, dry bool) store.Run {
		return store.Run{At: at, ProjectID: "shop", RouteID: route, Method: "GET", Path: "/x/shop/" + route, Status: status, Ended: ended, Duration: d, DryRun: dry}
	}
	first := []store.Run{run("books", 200, "RETURN", time.Millisecond, false), run("books", 404, "FAIL", 2*time.Millisecond, false),
		run("orders", 500, "FAULT", 3*time.Millisecond, false), run("books", 200, "RETURN", time.Hour, true)}
	second := []store.Run{run("books", 429, "LIMITED", time.Microsecond, false), run("books", 503, "BUSY", 5*time.Second, false),
		run("books", 201, "RETURN", 100*time.Millisecond, false)}
	for _, batch := range [][]store.Run{first, second} {
		if err := logRuns(ctx, st, batch, true); err != nil {
			t.Fatal(err)
		}
	}
	for _, res := range []byte{store.Minute, store.Hour, store.Day} {
		rows, err := st.StatsSeries(ctx, "shop", "books", res, at.Add(-48*time.Hour), at.Add(48*time.Hour))
		if err != nil || len(rows) != 1 {
			t.Fatalf("%c: %v %v", res, rows, err)
		}
		c := rows[0].Counts
		if c.N2xx != 2 || c.N4xx != 1 || c.Limited != 1 || c.Busy != 1 || c.N5xx != 0 || rows[0].Latency.Total() != 4 {
			t.Fatalf("%c: %+v, %d latencies", res, c, rows[0].Latency.Total())
		}
		if p99 := rows[0].Latency.Quantile(0.99); p99 < 4750*time.Millisecond || p99 > 5250*time.Millisecond {
			t.Fatalf("%c: p99 %v", res, p99)
		}
		all, _ := st.StatsSeries(ctx, "shop", "", res, at.Add(-48*time.Hour), at.Add(48*time.Hour))
		if len(all) != 1 || all[0].Counts.Requests() != 6 || all[0].Counts.N5xx != 1 {
			t.Fatalf("%c: the project: %+v", res, all)
		}
	}
	routes, err := st.StatsByRoute(ctx, "shop", at.Add(-36*time.Hour).Truncate(time.Minute), at.Add(time.Minute).Truncate(time.Minute))
	if err != nil || len(routes) != 2 {
		t.Fatalf("by route: %+v %v", routes, err)
	}
	for _, r := range routes {
		if r.RouteID == "books" && r.Counts.Requests() != 5 || r.RouteID == "orders" && r.Counts.N5xx != 1 {
			t.Fatalf("by route: %+v", routes)
		}
	}
	if err := st.ExecForTest(ctx, `UPDATE route_stats SET at = at - interval '49 hours' WHERE resolution = 'm'`); err != nil {
		t.Fatal(err)
	}
	if err := st.Sweep(ctx, store.EventsKept); err != nil {
		t.Fatal(err)
	}
	if rows, _ := st.StatsSeries(ctx, "shop", "books", store.Minute, at.Add(-100*time.Hour), at); len(rows) != 0 {
		t.Fatalf("minutes past 48 hours kept: %+v", rows)
	}
	if rows, _ := st.StatsSeries(ctx, "shop", "books", store.Hour, at.Add(-48*time.Hour), at.Add(time.Hour)); len(rows) != 1 {
		t.Fatal("the sweep took an hour row")
	}
}

// TestStatsSpans: a range is read by the fewest rows: whole days by day
// rows, the hours at their edges by hour rows, the minutes at theirs by
// minute rows.
func TestStatsSpans(t *testing.T) {
	t.Parallel()
	d := func(s string) time.Time { v, _ := time.Parse("2006-01-02T15:04", s); return v }
	for _, c := range []struct{ from, to, want string }{
		{"2026-11-20T10:05", "2026-11-20T10:40", "m 11-20T10:05–11-20T10:40"},
		{"2026-11-20T10:05", "2026-11-20T12:40", "m 11-20T10:05–11-20T11:00 h 11-20T11:00–11-20T12:00 m 11-20T12:00–11-20T12:40"},
		{"2026-11-20T10:05", "2026-11-23T02:30", "m 11-20T10:05–11-20T11:00 h 11-20T11:00–11-21T00:00 d 11-21T00:00–11-23T00:00 h 11-23T00:00–11-23T02:00 m 11-23T02:00–11-23T02:30"},
		{"2026-11-20T00:00", "2026-11-22T00:00", "d 11-20T00:00–11-22T00:00"},
		{"2026-11-20T23:00", "2026-11-21T01:00", "h 11-20T23:00–11-21T01:00"},
	} {
		if got := store.SpansForTest(d(c.from), d(c.to)); got != c.want {
			t.Errorf("%s–%s:\n%s\nwant\n%s", c.from, c.to, got, c.want)
		}
	}
}

// TestStatsPercentilesMatchTheRunLog: over 10,000 runs with latencies
// spread from 100 µs to 4 s, logged in batches as the writer does, the
// percentiles read from the rollups are within 5 % of the exact ones of
// the run log's durations.
func TestStatsPercentilesMatchTheRunLog(t *testing.T) {
	t.Parallel()
	st, ctx := collectionStore(t)
	at := time.Now().UTC().Truncate(time.Minute)
	r := rand.New(rand.NewPCG(3, 4))
	var batch []store.Run
	for i := range 10_000 {
		d := time.Duration(math.Exp(math.Log(100e3) + r.Float64()*math.Log(4e9/100e3)))
		batch = append(batch, store.Run{At: at, ProjectID: "shop", RouteID: "spread", Method: "GET", Path: "/x/shop/spread", Status: 200, Ended: "RETURN", Duration: d})
		if len(batch) == 1000 || i == 9_999 {
			if err := logRuns(ctx, st, batch, true); err != nil {
				t.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	list, total, err := st.ListRuns(ctx, "shop", store.RunQuery{Page: store.Page{Limit: 10_000}, RouteID: "spread"})
	if err != nil || total != 10_000 || len(list) != 10_000 {
		t.Fatalf("the run log: %d runs, %v", len(list), err)
	}
	durations := make([]time.Duration, len(list))
	for i, run := range list {
		durations[i] = run.Duration
	}
	slices.Sort(durations)
	rows, err := st.StatsSeries(ctx, "shop", "spread", store.Hour, at.Add(-time.Hour), at.Add(time.Hour))
	if err != nil || len(rows) != 1 || rows[0].Latency.Total() != 10_000 {
		t.Fatalf("rollups: %+v %v", rows, err)
	}
	for _, q := range []float64{0.5, 0.95, 0.99} {
		exact := durations[int(math.Ceil(q*10_000))-1]
		got := rows[0].Latency.Quantile(q)
		if rel := math.Abs(float64(got-exact)) / float64(exact); rel > 0.05 {
			t.Errorf("p%.0f: %v from the rollups, %v in the run log (%.1f %% off)", q*100, got, exact, rel*100)
		}
	}
}

// TestStatsByRouteOverDays: over WholeDays or more, the routes' figures
// add whole days — the closed ones read once and kept — to today's.
func TestStatsByRouteOverDays(t *testing.T) {
	t.Parallel()
	st, ctx := collectionStore(t)
	now := time.Now().UTC()
	run := func(at time.Time, status int) store.Run {
		return store.Run{At: at, ProjectID: "shop", RouteID: "books", Method: "GET", Path: "/x/shop/books", Status: status, Ended: "RETURN", Duration: time.Millisecond}
	}
	if err := logRuns(ctx, st, []store.Run{run(now.Add(-72*time.Hour), 200), run(now.Add(-71*time.Hour), 500), run(now, 200)}, true); err != nil {
		t.Fatal(err)
	}
	from, to := now.Add(-5*24*time.Hour).Truncate(time.Minute), now.Add(time.Minute).Truncate(time.Minute)
	for range 2 { // the second time, the closed days come from memory
		routes, err := st.StatsByRoute(ctx, "shop", from, to)
		if err != nil || len(routes) != 1 || routes[0].Counts.Requests() != 3 || routes[0].Counts.N5xx != 1 || routes[0].Latency.Total() != 3 {
			t.Fatalf("%+v %v", routes, err)
		}
	}
}

// TestRouteStatsUnderConcurrentWriters: instances flush their run logs
// at once, each batch adding to the same rows; every run is counted
// once, no batch fails (the upserts take the rows in one order).
func TestRouteStatsUnderConcurrentWriters(t *testing.T) {
	t.Parallel()
	st, ctx := collectionStore(t)
	at := time.Now().UTC()
	const writers, batches, size = 8, 5, 200
	var wg sync.WaitGroup
	errs := make(chan error, writers*batches)
	for w := range writers {
		wg.Go(func() {
			for range batches {
				batch := make([]store.Run, size)
				for i := range batch {
					route := []string{"books", "orders"}[(w+i)%2]
					batch[i] = store.Run{At: at, ProjectID: "shop", RouteID: route, Method: "GET", Path: "/x/shop/" + route, Status: 200 + 300*(i%2),
						Ended: "RETURN", Duration: time.Duration(i+1) * time.Millisecond}
				}
				errs <- logRuns(ctx, st, batch, true)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, res := range []byte{store.Minute, store.Hour, store.Day} {
		rows, err := st.StatsSeries(ctx, "shop", "", res, at.Add(-48*time.Hour), at.Add(48*time.Hour))
		if err != nil || len(rows) != 1 {
			t.Fatalf("%c: %+v %v", res, rows, err)
		}
		if c := rows[0].Counts; c.Requests() != writers*batches*size || c.N5xx != writers*batches*size/2 || rows[0].Latency.Total() != writers*batches*size {
			t.Fatalf("%c: %+v, %d latencies", res, c, rows[0].Latency.Total())
		}
	}
}

// logRuns writes runs to the run log and, with count, counts them in
// route analytics as the runtime does: a tally of the runs, added apart.
func logRuns(ctx context.Context, st *store.Store, runs []store.Run, count bool) error {
	if err := st.LogRuns(ctx, runs); err != nil || !count {
		return err
	}
	var t store.Tally
	for _, r := range runs {
		t.Count(r, math.MaxInt)
	}
	return st.CountTally(ctx, t)
}
