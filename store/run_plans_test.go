package store_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"stencil/store"
	"stencil/store/storetest"
)

// seedQuietAndBusy gives project "quiet" 100,000 older rows of table and
// project "busy" the 300,000 newest, with what else the rows need, then
// vacuums and analyzes the table as autovacuum would.
func seedQuietAndBusy(t *testing.T, pool *pgxpool.Pool, table, columns, quiet, busy string) {
	t.Helper()
	ctx := context.Background()
	for _, sql := range []string{
		`INSERT INTO projects (id, name, api_path) VALUES ('quiet', 'Quiet', '/quiet'), ('busy', 'Busy', '/busy')`,
		`INSERT INTO ` + table + ` (` + columns + `) SELECT ` + quiet + ` FROM generate_series(1, 100000) i`,
		`INSERT INTO ` + table + ` (` + columns + `) SELECT ` + busy + ` FROM generate_series(1, 300000) i`,
		`VACUUM ANALYZE ` + table,
	} {
		if _, err := pool.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
}

// checkPlans explains a list's count and page statements as prepared
// statements, custom and generic, and fails when one reads the table or
// walks its primary key instead of an index of the filter's.
func checkPlans(t *testing.T, pool *pgxpool.Pool, what any, count, page string, args []any) {
	t.Helper()
	ctx := context.Background()
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	for i, sql := range []string{count, page} {
		stmtArgs := args
		if i == 0 {
			stmtArgs = args[:len(args)-2] // the page's offset and limit
		}
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
		for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
			for _, stmt := range []string{"SET plan_cache_mode = " + mode, "PREPARE p AS " + sql} {
				if _, err := conn.Exec(ctx, stmt); err != nil {
					t.Fatal(err)
				}
			}
			rows, err := conn.Query(ctx, "EXPLAIN (COSTS OFF) EXECUTE p("+strings.Join(params, ", ")+")")
			if err != nil {
				t.Fatal(err)
			}
			var plan []string
			for rows.Next() {
				var line string
				if err := rows.Scan(&line); err != nil {
					t.Fatal(err)
				}
				plan = append(plan, line)
			}
			text := strings.Join(plan, "\n")
			if strings.Contains(text, "Seq Scan") || strings.Contains(text, "_pkey") || !strings.Contains(text, "Index") {
				t.Errorf("%+v, %s, %s:\n%s\n%s", what, []string{"count", "page"}[i], mode, sql, text)
			}
			if _, err := conn.Exec(ctx, "DEALLOCATE p"); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestRunLogPlans: the run log's statements, as the store sends them,
// read a quiet project's newest runs by its own indexes — filtered by
// route, by status class or by status — while another project holds the
// 300,000 newest rows of the table; never by reading the table or walking
// its primary key, as a custom plan or as the generic plan a prepared
// statement falls back to.
func TestRunLogPlans(t *testing.T) {
	pool := storetest.Pool(t)
	const columns = "at, project_id, route_id, method, path, status, ended, duration_us"
	seedQuietAndBusy(t, pool, "route_runs", columns,
		`now() - interval '2 hours', 'quiet', 'r' || (i % 20), 'GET', '/x', CASE WHEN i % 100 = 0 THEN 503 ELSE 200 END, 'RETURN', 1000`,
		`now(), 'busy', 'r' || (i % 20), 'GET', '/x', 200, 'RETURN', 1000`)
	for _, q := range []store.RunQuery{{}, {RouteID: "r3"}, {Status: "5xx"}, {Status: "503"}, {RouteID: "r0", Status: "5xx"}} {
		q.Limit = 50
		count, page, args := store.RunStatementsForTest("quiet", q)
		checkPlans(t, pool, q, count, page, args)
	}
}

// TestEventLogPlans: the same of the event log, by project (also with a
// type, and for an ADMIN whose projects bound the list), of an ADMIN's
// projects together, and by user.
func TestEventLogPlans(t *testing.T) {
	pool := storetest.Pool(t)
	const columns = "at, uid, type, project_id, object, summary"
	seedQuietAndBusy(t, pool, "events", columns,
		`now() - interval '2 hours', 7, CASE WHEN i % 100 = 0 THEN 'route_delete' ELSE 'route_update' END, 'quiet', 'r', 'x'`,
		`now(), 8, 'route_update', 'busy', 'r', 'x'`)
	for _, q := range []store.EventQuery{
		{ProjectID: "quiet"},
		{ProjectID: "quiet", Type: "route_delete"},
		{ProjectID: "quiet", Projects: []string{"quiet", "busy"}},
		{Projects: []string{"quiet"}},
		{Projects: []string{"quiet", "busy"}, Type: "route_delete"},
		{UserID: 7},
	} {
		q.Limit = 50
		count, page, args := store.EventStatementsForTest(q)
		checkPlans(t, pool, q, count, page, args)
	}
}
