package store_test

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"stencil/store"
	"stencil/store/storetest"
)

// seedQuietAndBusy gives project "quiet" 100,000 older rows of table and
// project "busy" the 300,000 newest, with what else the rows need; its
// counts table (counts, filled by its trigger) gets, as a site's has, a
// month of daily counts of 2,000 other projects (a row each of
// otherCounts, over p and d). Then both are vacuumed and analyzed as
// autovacuum would: a plan must not depend on whether it has yet looked
// at a counts table of a few rows, where a scan of it is the cheaper.
func seedQuietAndBusy(t *testing.T, pool *pgxpool.Pool, table, columns, quiet, busy, counts, otherCounts string) {
	t.Helper()
	ctx := context.Background()
	for _, sql := range []string{
		`INSERT INTO projects (id, name, api_path) VALUES ('quiet', 'Quiet', '/quiet'), ('busy', 'Busy', '/busy')`,
		`INSERT INTO projects (id, name, api_path) SELECT 'other' || p, 'Other ' || p, '/other' || p FROM generate_series(1, 2000) p`,
		`INSERT INTO ` + table + ` (` + columns + `) SELECT ` + quiet + ` FROM generate_series(1, 100000) i`,
		`INSERT INTO ` + table + ` (` + columns + `) SELECT ` + busy + ` FROM generate_series(1, 300000) i`,
		`INSERT INTO ` + counts + ` SELECT ` + otherCounts + ` FROM generate_series(1, 2000) p, generate_series(1, 30) d`,
		`VACUUM ANALYZE ` + table,
		`VACUUM ANALYZE ` + counts,
	} {
		if _, err := pool.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
}

// checkPlans explains a list's count and page statements as prepared
// statements, custom and generic, and fails when one reads the table or
// walks its primary key instead of an index of the filter's (a count kept
// with the rows is read by its own key); with index, the page reads that
// one.
func checkPlans(t *testing.T, pool *pgxpool.Pool, what any, count, page string, countArgs, pageArgs []any, index ...string) {
	checkPlansOf(t, pool, what, count, page, countArgs, pageArgs, false, index...)
}

// checkPlansOf is checkPlans; with customCount the count, planned for its
// arguments each time it runs (store's listSQL.planCount), is explained
// as a custom plan only.
func checkPlansOf(t *testing.T, pool *pgxpool.Pool, what any, count, page string, countArgs, pageArgs []any, customCount bool, index ...string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	for i, sql := range []string{count, page} {
		stmtArgs := [][]any{countArgs, pageArgs}[i]
		var params []string
		for _, a := range stmtArgs {
			switch v := a.(type) {
			case string:
				params = append(params, "'"+v+"'")
			case []string:
				params = append(params, "ARRAY['"+strings.Join(v, "', '")+"']")
			default:
				params = append(params, fmt.Sprint(a))
			}
		}
		modes := []string{"force_custom_plan", "force_generic_plan"}
		if i == 0 && customCount {
			modes = modes[:1]
		}
		for _, mode := range modes {
			for _, stmt := range []string{"SET plan_cache_mode = " + mode, "PREPARE p AS " + sql} {
				if _, err := conn.Exec(ctx, stmt); err != nil {
					t.Fatal(err)
				}
			}
			text := storetest.Explain(t, conn, "(COSTS OFF) EXECUTE p("+strings.Join(params, ", ")+")")
			if seqScanOfData(text) || strings.Contains(text, "route_runs_pkey") || strings.Contains(text, "events_pkey") || !strings.Contains(text, "Index") ||
				i == 1 && len(index) > 0 && !strings.Contains(text, index[0]) {
				t.Errorf("%+v, %s, %s (want %v):\n%s\n%s", what, []string{"count", "page"}[i], mode, index, sql, text)
			}
			if _, err := conn.Exec(ctx, "DEALLOCATE p"); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// seqScanOfData says whether a plan reads a table that holds rows
// sequentially: a day's partition of a log made ahead (name_YYYYMMDD) is
// empty in these tests, and its scan reads nothing.
func seqScanOfData(plan string) bool {
	for _, m := range regexp.MustCompile(`Seq Scan on (\S+)`).FindAllStringSubmatch(plan, -1) {
		if !regexp.MustCompile(`_\d{8}$`).MatchString(m[1]) {
			return true
		}
	}
	return false
}

// checkPlannedOnce lists a log's page several times on one connection, as
// a pool's connection does, and fails unless the page's prepared
// statement has come to run its generic plan: planned once rather than at
// each execution (store's listSQL.pageStatement).
func checkPlannedOnce(t *testing.T, pool *pgxpool.Pool, what any, list func(*store.Store) error) {
	t.Helper()
	ctx := context.Background()
	cfg := pool.Config().Copy()
	cfg.MaxConns = 1
	one, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	st := store.New(one)
	for range 8 {
		if err := list(st); err != nil {
			t.Fatal(err)
		}
	}
	var generic, custom int64
	if err := one.QueryRow(ctx, `SELECT generic_plans, custom_plans FROM pg_prepared_statements
		WHERE statement LIKE 'SELECT id, at,%'`).Scan(&generic, &custom); err != nil {
		t.Fatal(err)
	}
	if generic == 0 {
		t.Errorf("%+v: the page's statement was planned for its values at each of %d executions, never run by its generic plan", what, custom)
	}
}

// TestRunLogPlans: the run log's statements, as the store sends them,
// read a quiet project's newest runs by its own indexes — filtered by
// route, by status class or by status — while another project holds the
// 300,000 newest rows of the table; never by reading the table or walking
// its primary key, as a custom plan or as the generic plan a prepared
// statement falls back to.
func TestRunLogPlans(t *testing.T) {
	t.Parallel()
	pool := storetest.Pool(t)
	const columns = "at, project_id, route_id, method, path, status, ended, duration_us"
	seedQuietAndBusy(t, pool, "route_runs", columns,
		`now() - interval '2 hours', 'quiet', 'r' || (i % 20), 'GET', '/x', CASE WHEN i % 100 = 0 THEN 503 ELSE 200 END, 'RETURN', 1000`,
		`now(), 'busy', 'r' || (i % 20), 'GET', '/x', 200, 'RETURN', 1000`,
		"route_run_counts (project_id, route_id, class, day, n)", `'other' || p, '*', -1, current_date - d, 10`)
	for _, q := range []store.RunQuery{{}, {RouteID: "r3"}, {Status: "5xx"}, {Status: "503"}, {RouteID: "r0", Status: "5xx"},
		{Keyset: store.Keyset{Before: 50_000}}, {Status: "5xx", Keyset: store.Keyset{After: 50_000}}, {RouteID: "r3", Keyset: store.Keyset{Before: 90_000}}} {
		q.Limit = 50
		count, page, countArgs, pageArgs := store.RunStatementsForTest("quiet", q)
		checkPlans(t, pool, q, count, page, countArgs, pageArgs)
	}
	// An exact status reads its own index, not its class's filtered: a
	// rare 500 among common 503s (migration 043).
	if _, err := pool.Exec(context.Background(), `UPDATE route_runs SET status = 500 WHERE project_id = 'quiet' AND id % 1000 = 0; ANALYZE route_runs`); err != nil {
		t.Fatal(err)
	}
	q := store.RunQuery{Status: "500", Page: store.Page{Limit: 50}}
	count, page, countArgs, pageArgs := store.RunStatementsForTest("quiet", q)
	checkPlans(t, pool, q, count, page, countArgs, pageArgs, "route_runs_status_idx")
	// The runs a schedule started, few among the requests': their partial
	// index (migration 054), alone or beside a route; each day's is
	// route_runs_<day>_trigger_idx.
	if _, err := pool.Exec(context.Background(), `UPDATE route_runs SET trigger = 'schedule' WHERE project_id = 'quiet' AND id % 500 = 0; ANALYZE route_runs`); err != nil {
		t.Fatal(err)
	}
	for _, q := range []store.RunQuery{{Trigger: "schedule"}, {RouteID: "r0", Trigger: "schedule"}, {Trigger: "job", Keyset: store.Keyset{Before: 90_000}}} {
		q.Limit = 50
		count, page, countArgs, pageArgs := store.RunStatementsForTest("quiet", q)
		checkPlansOf(t, pool, q, count, page, countArgs, pageArgs, true, "_trigger_idx")
	}
	// Listed as the service lists them, the pages of a status or a
	// class, first or further by keyset, run their generic plans, those
	// checked above: their limit written in, PostgreSQL finds them no
	// dearer than a plan for the values. (A project's newest, or a
	// route's, are planned for their values at each execution.)
	for _, q := range []store.RunQuery{{Status: "5xx"}, {Status: "500"}, {Status: "503", Keyset: store.Keyset{Before: 90_000}}} {
		q.Limit = 51
		checkPlannedOnce(t, pool, q, func(st *store.Store) error {
			_, _, err := st.ListRuns(context.Background(), "quiet", q)
			return err
		})
	}
}

// TestEventLogPlans: the same of the event log, by project (also with a
// type, and for an ADMIN whose projects bound the list), of an ADMIN's
// projects together, and by user.
func TestEventLogPlans(t *testing.T) {
	t.Parallel()
	pool := storetest.Pool(t)
	const columns = "at, uid, type, project_id, object, summary"
	seedQuietAndBusy(t, pool, "events", columns,
		`now() - interval '2 hours', 7, CASE WHEN i % 100 = 0 THEN 'route_delete' ELSE 'route_update' END, 'quiet', 'r', 'x'`,
		`now(), 8, 'route_update', 'busy', 'r', 'x'`,
		"event_counts (project_id, type, day, n)", `'other' || p, 'route_update', current_date - d, 10`)
	for _, q := range []store.EventQuery{
		{ProjectID: "quiet"},
		{ProjectID: "quiet", Type: "route_delete"},
		{ProjectID: "quiet", Projects: []string{"quiet", "busy"}},
		{Projects: []string{"quiet"}},
		{Projects: []string{"quiet", "busy"}, Type: "route_delete"},
		{UserID: 7},
		{ProjectID: "quiet", Keyset: store.Keyset{Before: 50_000}},
		{ProjectID: "quiet", Type: "route_delete", Keyset: store.Keyset{After: 50_000}},
		{Projects: []string{"quiet", "busy"}, Keyset: store.Keyset{Before: 50_000}},
		{UserID: 7, Keyset: store.Keyset{After: 20_000}},
	} {
		q.Limit = 50
		count, page, countArgs, pageArgs := store.EventStatementsForTest(q)
		checkPlans(t, pool, q, count, page, countArgs, pageArgs)
	}
	// A user's events in a project: their own index (migration 044); the
	// capped count is planned for its arguments (a generic plan sorted all
	// of a busy user's events: the empty partition of a day ahead,
	// scanned, gives no order to merge).
	for _, q := range []store.EventQuery{{ProjectID: "quiet", UserID: 7}, {ProjectID: "busy", UserID: 7}, {ProjectID: "quiet", UserID: 7, Keyset: store.Keyset{After: 50_000}}} {
		q.Limit = 50
		count, page, countArgs, pageArgs := store.EventStatementsForTest(q)
		checkPlansOf(t, pool, q, count, page, countArgs, pageArgs, true, "events_project_uid_idx")
	}
	for _, q := range []store.EventQuery{{ProjectID: "quiet", Type: "route_delete"}} {
		q.Limit = 51
		checkPlannedOnce(t, pool, q, func(st *store.Store) error {
			_, _, err := st.Events(context.Background(), q)
			return err
		})
	}
}

// TestRunCountsKept: the counts kept with the run log (migration 031)
// match a count of its rows after batches written at once by several
// writers, a sweep and a deleted project, for every filter the run log
// takes.
func TestRunCountsKept(t *testing.T) {
	t.Parallel()
	pool := storetest.Pool(t)
	ctx := context.Background()
	st := store.New(pool)
	if _, err := pool.Exec(ctx, `INSERT INTO projects (id, name, api_path) VALUES ('shop', 'Shop', '/shop'), ('blog', 'Blog', '/blog'), ('gone', 'Gone', '/gone')`); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	statuses := []int{200, 201, 404, 500, 503, 302}
	storetest.AtOnce(t, 8, func(w int) error {
		for b := range 10 {
			var batch []store.Run
			for i := range 50 {
				at := now
				if i%7 == 0 {
					at = now.Add(-store.RunsKept - time.Hour) // swept below
				}
				batch = append(batch, store.Run{At: at, ProjectID: []string{"shop", "blog", "gone"}[(w+i)%3], RouteID: fmt.Sprintf("r%d", (b+i)%4),
					Method: "GET", Path: "/", Status: statuses[(w*b+i)%len(statuses)], Ended: "RETURN"})
			}
			if err := st.LogRuns(ctx, batch); err != nil {
				return err
			}
		}
		return nil
	})
	check := func(when string, projects ...string) {
		t.Helper()
		for _, p := range projects {
			for _, q := range []store.RunQuery{{}, {RouteID: "r1"}, {Status: "5xx"}, {Status: "2xx", RouteID: "r3"}, {Status: "3xx"}, {RouteID: "none"},
				{Status: "404"}, {Status: "503", RouteID: "r1"}, {Status: "418"}} {
				_, got, err := st.ListRuns(ctx, p, q)
				if err != nil {
					t.Fatal(err)
				}
				class, _ := strconv.Atoi(strings.TrimSuffix(q.Status, "xx"))
				if class >= 100 {
					class *= 1000 // an exact status: status / 100 of it
				}
				var want int
				if err := pool.QueryRow(ctx, `SELECT count(*) FROM route_runs WHERE project_id = $1 AND ($2 = '' OR route_id = $2)
					AND ($3 = 0 OR $3 < 100000 AND status / 100 = $3 OR status = $3 / 1000)`,
					p, q.RouteID, class).Scan(&want); err != nil {
					t.Fatal(err)
				}
				if got != want {
					t.Errorf("%s, %s %+v: amount %d, the log holds %d", when, p, q, got, want)
				}
			}
		}
	}
	check("written by 8 writers at once", "shop", "blog", "gone")
	// More expired runs than one batch of the sweep removes.
	if _, err := pool.Exec(ctx, `INSERT INTO route_runs (at, project_id, route_id, method, path, status, ended, duration_us)
		SELECT now() - interval '8 days', 'shop', 'r' || (i % 4), 'GET', '/', 200 + (i % 3) * 100, 'RETURN', 1 FROM generate_series(1, 25000) i`); err != nil {
		t.Fatal(err)
	}
	check("with 25,000 more, expired", "shop")
	if err := st.Sweep(ctx, store.EventsKept); err != nil {
		t.Fatal(err)
	}
	var expired int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM route_runs WHERE at < now() - interval '7 days'`).Scan(&expired); err != nil || expired != 0 {
		t.Fatalf("expired runs left by the sweep: %d %v", expired, err)
	}
	check("after the sweep", "shop", "blog", "gone")
	if _, err := pool.Exec(ctx, `DELETE FROM projects WHERE id = 'gone'`); err != nil {
		t.Fatal(err)
	}
	check("after a project was deleted", "shop", "blog")
	var left int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM route_run_counts WHERE project_id = 'gone'`).Scan(&left); err != nil || left != 0 {
		t.Fatalf("counts of the deleted project: %d %v", left, err)
	}
}

// TestKeysetPages: walking a log by before= from its newest page, then
// back by after=, shows the pages offset and limit show, the same rows in
// the same order, with the count unchanged — for one project's runs (also
// of a status class), one project's events, an ADMIN's several projects
// and one user's events.
func TestKeysetPages(t *testing.T) {
	t.Parallel()
	pool := storetest.Pool(t)
	ctx := context.Background()
	st := store.New(pool)
	for _, sql := range []string{
		`INSERT INTO projects (id, name, api_path) VALUES ('shop', 'Shop', '/shop'), ('blog', 'Blog', '/blog'), ('wiki', 'Wiki', '/wiki')`,
		`INSERT INTO route_runs (at, project_id, route_id, method, path, status, ended, duration_us)
			SELECT now(), (ARRAY['shop', 'blog'])[1 + i % 2], 'r', 'GET', '/', CASE WHEN i % 3 = 0 THEN 500 ELSE 200 END, 'RETURN', 1 FROM generate_series(1, 230) i`,
		`INSERT INTO events (uid, type, project_id, object, summary)
			SELECT 1 + i % 2, 'route_update', (ARRAY['shop', 'blog', 'wiki'])[1 + i % 3], 'o' || i, 's' FROM generate_series(1, 230) i`,
	} {
		if _, err := pool.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	type page struct {
		ids   []int64
		total int
	}
	walk := func(what string, list func(k store.Keyset, offset int) (page, error)) {
		t.Helper()
		const limit = 20
		var byOffset []page
		for offset := 0; ; offset += limit {
			p, err := list(store.Keyset{}, offset)
			if err != nil {
				t.Fatal(err)
			}
			if len(p.ids) == 0 {
				break
			}
			byOffset = append(byOffset, p)
		}
		var k store.Keyset
		for i, want := range byOffset {
			got, err := list(k, 0)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("%s, page %d by %+v: %v, by offset %v", what, i, k, got, want)
			}
			k = store.Keyset{Before: got.ids[len(got.ids)-1]}
		}
		if p, _ := list(k, 0); len(p.ids) != 0 {
			t.Fatalf("%s: a page past the oldest: %v", what, p.ids)
		}
		// Both bounds: the rows between, newest first.
		if len(byOffset) > 2 {
			got, err := list(store.Keyset{Before: byOffset[0].ids[0], After: byOffset[2].ids[0]}, 0)
			want := append(slices.Clone(byOffset[0].ids[1:]), byOffset[1].ids[0])
			if err != nil || fmt.Sprint(got.ids) != fmt.Sprint(want) {
				t.Fatalf("%s, between %d and %d: %v %v, want %v", what, byOffset[2].ids[0], byOffset[0].ids[0], got.ids, err, want)
			}
		}
		for i := len(byOffset) - 2; i >= 0; i-- {
			k = store.Keyset{After: byOffset[i+1].ids[0]}
			got, err := list(k, 0)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(byOffset[i]) {
				t.Fatalf("%s, page %d by %+v: %v, want %v", what, i, k, got, byOffset[i])
			}
		}
	}
	runs := func(q store.RunQuery) func(store.Keyset, int) (page, error) {
		return func(k store.Keyset, offset int) (page, error) {
			q.Keyset, q.Offset, q.Limit = k, offset, 20
			list, total, err := st.ListRuns(ctx, "shop", q)
			p := page{total: total}
			for _, r := range list {
				p.ids = append(p.ids, r.ID)
			}
			return p, err
		}
	}
	events := func(q store.EventQuery) func(store.Keyset, int) (page, error) {
		return func(k store.Keyset, offset int) (page, error) {
			q.Keyset, q.Offset, q.Limit = k, offset, 20
			list, total, err := st.Events(ctx, q)
			p := page{total: total}
			for _, e := range list {
				p.ids = append(p.ids, e.ID)
			}
			return p, err
		}
	}
	walk("runs", runs(store.RunQuery{}))
	walk("runs of 5xx", runs(store.RunQuery{Status: "5xx"}))
	walk("events of a project", events(store.EventQuery{ProjectID: "shop"}))
	walk("events of several projects", events(store.EventQuery{Projects: []string{"shop", "wiki"}}))
	walk("events of a project's type", events(store.EventQuery{ProjectID: "shop", Type: "route_update"}))
	walk("events of a type in several projects", events(store.EventQuery{Projects: []string{"shop", "wiki"}, Type: "route_update"}))
	walk("events of a user", events(store.EventQuery{UserID: 2}))
	walk("every event", events(store.EventQuery{}))
}

// TestAPIPathClashesByPrefix: the clashes found by joining keys to their
// prefixes are the pairs migration 013's api_paths_overlap finds over
// every pair, among paths nested, equal but for case and slashes, and "/".
func TestAPIPathClashesByPrefix(t *testing.T) {
	t.Parallel()
	pool := storetest.Pool(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `ALTER TABLE projects DISABLE TRIGGER projects_api_path_exclusive;
		INSERT INTO projects (id, name, api_path, created_at)
			SELECT 'p_' || i, 'P', CASE
					WHEN i <= 12 THEN (ARRAY['/a', '/a/b', '/A/', '/ab', '/b/c/d', '/b', '/a//b/', '/B/C', '/c/x', '/c', '/cx', '/a/b/c'])[i]
					WHEN i % 3 = 0 THEN '/d/' || i WHEN i % 3 = 1 THEN '/d/' || (i - 1) || '/e' ELSE '/f' || i END,
				now() - i * interval '1 minute' FROM generate_series(1, 300) i;
		INSERT INTO projects (id, name, api_path) VALUES ('root_one', 'R', '/');
		ALTER TABLE projects ENABLE TRIGGER projects_api_path_exclusive`); err != nil {
		t.Fatal(err)
	}
	got, err := store.New(pool).APIPathClashes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := pool.Query(ctx, `SELECT a.id, a.api_path, b.id, b.api_path FROM projects a JOIN projects b
		ON (a.created_at, a.id) < (b.created_at, b.id) AND api_paths_overlap(api_path_key(a.api_path), api_path_key(b.api_path))
		ORDER BY a.id, b.id`)
	if err != nil {
		t.Fatal(err)
	}
	want, err := pgx.CollectRows(rows, pgx.RowToStructByPos[store.APIPathClash])
	if err != nil {
		t.Fatal(err)
	}
	if len(want) < 300 || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%d clashes, every pair compared finds %d:\n%.600v\n%.600v", len(got), len(want), got, want)
	}
}

// TestEventCountsKept: the event log's amount, kept in event_counts
// (migration 034), matches a count of the log after eight writers at once
// (two of them in repeatable-read transactions, which never fail on it),
// and after a sweep and its fold, for every filter it counts; one user's
// events keep the capped count.
func TestEventCountsKept(t *testing.T) {
	t.Parallel()
	pool := storetest.Pool(t)
	ctx := context.Background()
	st := store.New(pool)
	if _, err := pool.Exec(ctx, `INSERT INTO projects (id, name, api_path) VALUES ('shop', 'Shop', '/shop'), ('blog', 'Blog', '/blog')`); err != nil {
		t.Fatal(err)
	}
	const insert = `INSERT INTO events (at, uid, type, project_id, object, summary)
		SELECT now() - $1::int * interval '1 day', 7, CASE WHEN i % 3 = 0 THEN 'route_delete' ELSE 'route_update' END,
			CASE i % 4 WHEN 0 THEN NULL WHEN 1 THEN 'blog' ELSE 'shop' END, 'r', 'x' FROM generate_series(1, $2::int) i`
	storetest.AtOnce(t, 8, func(w int) error {
		for round := range 40 {
			if w < 2 {
				tx, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
				if err == nil {
					_, err = tx.Exec(ctx, insert, 0, 1+round%5)
				}
				if err == nil {
					err = tx.Commit(ctx)
				}
				if err != nil {
					return err
				}
				continue
			}
			if _, err := pool.Exec(ctx, insert, 0, 1+(w+round)%7); err != nil {
				return err
			}
		}
		return nil
	})
	check := func(when string) {
		t.Helper()
		for _, q := range []store.EventQuery{{}, {Type: "route_delete"}, {ProjectID: "shop"}, {ProjectID: "shop", Type: "route_delete"},
			{Projects: []string{"shop", "blog"}}, {Projects: []string{"blog"}, Type: "route_update"}, {ProjectID: "blog", Projects: []string{"shop", "blog"}}} {
			q.Limit = 1
			_, got, err := st.Events(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			cond, args := "true", []any{}
			if q.ProjectID != "" {
				args = append(args, q.ProjectID)
				cond += " AND project_id = $" + fmt.Sprint(len(args))
			} else if q.Projects != nil {
				args = append(args, q.Projects)
				cond += " AND project_id = ANY($" + fmt.Sprint(len(args)) + ")"
			}
			if q.Type != "" {
				args = append(args, q.Type)
				cond += " AND type = $" + fmt.Sprint(len(args))
			}
			var want int
			if err := pool.QueryRow(ctx, "SELECT count(*) FROM events WHERE "+cond, args...).Scan(&want); err != nil {
				t.Fatal(err)
			}
			if got != want || want == 0 || !store.EventsCounted(q) {
				t.Errorf("%s, %+v: amount %d, the log holds %d", when, q, got, want)
			}
		}
		q := store.EventQuery{UserID: 7, Limit: 1}
		if _, got, err := st.Events(ctx, q); err != nil || got != store.LogCountCap || store.EventsCounted(q) {
			t.Errorf("%s, one user's events: amount %d (%v), want the cap %d", when, got, err, store.LogCountCap)
		}
	}
	// Enough for one user's capped count, some of them past retention.
	if _, err := pool.Exec(ctx, insert, 0, store.LogCountCap); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, insert, 400, 2500); err != nil {
		t.Fatal(err)
	}
	check("written by 8 writers at once")
	if err := st.Sweep(ctx, store.EventsKept); err != nil {
		t.Fatal(err)
	}
	check("after the sweep")
	var rows, keys int
	if err := pool.QueryRow(ctx, "SELECT count(*), count(DISTINCT (project_id, type)) FROM event_counts").Scan(&rows, &keys); err != nil || rows != keys || rows != 6 {
		t.Fatalf("after the fold: %d rows for %d project and type pairs (%v), want 6", rows, keys, err)
	}
}
