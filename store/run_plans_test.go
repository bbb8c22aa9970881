package store_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"stencil/store"
	"stencil/store/storetest"
)

// TestRunLogPlans: the run log's statements, as the store sends them,
// read a quiet project's newest runs by its own indexes — filtered by
// route, by status class or by status — while another project holds the
// 300,000 newest rows of the table; never by walking the table or its
// primary key. Each is explained as a custom plan and as the generic plan
// a prepared statement falls back to.
func TestRunLogPlans(t *testing.T) {
	ctx := context.Background()
	pool := storetest.Pool(t)
	for _, sql := range []string{
		`INSERT INTO projects (id, name, api_path) VALUES ('quiet', 'Quiet', '/quiet'), ('busy', 'Busy', '/busy')`,
		`INSERT INTO route_runs (at, project_id, route_id, method, path, status, ended, duration_us)
			SELECT now() - interval '2 hours', 'quiet', 'r' || (i % 20), 'GET', '/x', CASE WHEN i % 100 = 0 THEN 503 ELSE 200 END, 'RETURN', 1000
			FROM generate_series(1, 100000) i`,
		`INSERT INTO route_runs (at, project_id, route_id, method, path, status, ended, duration_us)
			SELECT now(), 'busy', 'r' || (i % 20), 'GET', '/x', 200, 'RETURN', 1000 FROM generate_series(1, 300000) i`,
		`VACUUM ANALYZE route_runs`, // autovacuum keeps an append-only table so
	} {
		if _, err := pool.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	for _, q := range []store.RunQuery{
		{},
		{RouteID: "r3"},
		{Status: "5xx"},
		{Status: "503"},
		{RouteID: "r0", Status: "5xx"},
	} {
		q.Limit = 50
		count, page, args := store.RunStatementsForTest("quiet", q)
		for i, sql := range []string{count, page} {
			stmtArgs := args
			if i == 0 {
				stmtArgs = args[:len(args)-2]
			}
			for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
				name := fmt.Sprintf("p_%d", i)
				if _, err := conn.Exec(ctx, "SET plan_cache_mode = "+mode); err != nil {
					t.Fatal(err)
				}
				if _, err := conn.Exec(ctx, "PREPARE "+name+" AS "+sql); err != nil {
					t.Fatal(err)
				}
				var params []string
				for _, a := range stmtArgs {
					switch s, ok := a.(string); {
					case a == nil:
						params = append(params, "NULL")
					case ok:
						params = append(params, "'"+s+"'")
					default:
						params = append(params, fmt.Sprint(a))
					}
				}
				rows, err := conn.Query(ctx, "EXPLAIN (COSTS OFF) EXECUTE "+name+"("+strings.Join(params, ", ")+")")
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
				if strings.Contains(text, "Seq Scan") || strings.Contains(text, "route_runs_pkey") || !strings.Contains(text, "Index") {
					t.Errorf("%+v, %s, %s:\n%s\n%s", q, []string{"count", "page"}[i], mode, sql, text)
				}
				if _, err := conn.Exec(ctx, "DEALLOCATE "+name); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}
