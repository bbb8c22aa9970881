package store_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"stencil/store"
	"stencil/store/storetest"
)

// TestLogPartitionsDropWhole: after a week and more of days, each in its
// own partition (the rows from before the partitioning gone), the sweep
// drops the partitions whose every row is past retention — the run log's
// after 7 days, the event log's after its own — with the counts of their
// days, deleting no row one by one; the amounts then match the rows
// left. Partitions are made ahead, and swept, by instances at once
// without a clash; a day detached by a sweep that stopped before dropping
// it is dropped.
func TestLogPartitionsDropWhole(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := storetest.Pool(t)
	st := store.New(pool)
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := pool.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	// A service that has run for days: the legacy partitions gone, a
	// partition for each of the last 10 days.
	exec(`ALTER TABLE route_runs DETACH PARTITION route_runs_legacy; DROP TABLE route_runs_legacy;
		ALTER TABLE events DETACH PARTITION events_legacy; DROP TABLE events_legacy;
		INSERT INTO projects (id, name, api_path) VALUES ('shop', 'Shop', '/shop')`)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = st.EnsurePartitions(ctx)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatalf("instances making partitions at once: %v", err)
		}
	}
	today := store.Truncate(time.Now(), store.Day)
	for d := 1; d <= 10; d++ {
		day := today.AddDate(0, 0, -d)
		for _, table := range []string{"route_runs", "events"} {
			exec(fmt.Sprintf(`CREATE TABLE %s_%s PARTITION OF %s FOR VALUES FROM ('%s') TO ('%s')`, table, day.Format("20060102"), table,
				day.Format(time.RFC3339), day.AddDate(0, 0, 1).Format(time.RFC3339)))
		}
		// 100 runs and 10 events a day, at noon.
		exec(`INSERT INTO route_runs (at, project_id, route_id, method, path, status, ended, duration_us)
			SELECT $1, 'shop', 'r' || (i % 3), 'GET', '/', CASE WHEN i % 10 = 0 THEN 500 ELSE 200 END, 'RETURN', 1 FROM generate_series(1, 100) i`, day.Add(12*time.Hour))
		exec(`INSERT INTO events (at, type, project_id, object, summary) SELECT $1, 'route_update', 'shop', 'r', 'x' FROM generate_series(1, 10)`, day.Add(12*time.Hour))
	}
	exec(`INSERT INTO route_runs (at, project_id, route_id, method, path, status, ended, duration_us) VALUES (now(), 'shop', 'r0', 'GET', '/', 200, 'RETURN', 1)`)
	// A row deleted one by one fails the sweep.
	exec(`CREATE FUNCTION refuse_delete() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'a row deleted one by one'; END $$;
		CREATE TRIGGER refuse_delete BEFORE DELETE ON route_runs FOR EACH ROW EXECUTE FUNCTION refuse_delete();
		CREATE TRIGGER refuse_delete BEFORE DELETE ON events FOR EACH ROW EXECUTE FUNCTION refuse_delete()`)
	partitions := func(table string) (n int) {
		t.Helper()
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_inherits WHERE inhparent = $1::regclass`, table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := partitions("route_runs"); n != 13 {
		t.Fatalf("%d partitions of the run log, want 13 (10 days past, today and 2 ahead)", n)
	}
	// A day detached by a sweep that stopped before dropping it.
	exec(`CREATE TABLE route_runs_20000101 (LIKE route_runs); CREATE TABLE events_legacy (LIKE events)`)
	// Two instances sweep at once.
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = st.Sweep(ctx, 5*24*time.Hour)
		}()
	}
	wg.Wait()
	for _, err := range errs[:2] {
		if err != nil {
			t.Fatalf("instances sweeping at once: %v", err)
		}
	}
	var left int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_class WHERE relname IN ('route_runs_20000101', 'events_legacy')`).Scan(&left); err != nil || left != 0 {
		t.Fatalf("%d tables detached before and left (%v), want them dropped", left, err)
	}
	// Runs are kept 7 days: the partition of 7 days ago ends less than 7
	// days ago and stays (its rows go with it tomorrow), that of 8 days
	// ago goes. Events, kept 5 days here, likewise keep 5 days.
	var runs, events int64
	if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM route_runs), (SELECT count(*) FROM events)`).Scan(&runs, &events); err != nil {
		t.Fatal(err)
	}
	if runs != 701 || events != 50 {
		t.Fatalf("after the sweep %d runs and %d events; want 701 (7 days and today), 50 (5 days)", runs, events)
	}
	if n := partitions("route_runs"); n != 10 {
		t.Fatalf("%d partitions of the run log left, want 10", n)
	}
	for _, q := range []store.RunQuery{{}, {Status: "5xx"}, {Status: "500"}, {RouteID: "r1"}} {
		_, amount, err := st.ListRuns(ctx, "shop", q)
		var want int
		if err == nil {
			err = pool.QueryRow(ctx, `SELECT count(*) FROM route_runs WHERE ($1 = '' OR route_id = $1) AND ($2 = '' OR status / 100 = 5)`, q.RouteID, q.Status).Scan(&want)
		}
		if err != nil || amount != want {
			t.Fatalf("%+v: amount %d, the log holds %d (%v)", q, amount, want, err)
		}
	}
	if _, amount, err := st.Events(ctx, store.EventQuery{ProjectID: "shop", Limit: 10}); err != nil || amount != 50 {
		t.Fatalf("events' amount %d (%v), want 50", amount, err)
	}
}
