package runs

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"stencil/store"
	"stencil/store/storetest"
)

// bigProject is a database holding project "big" of n routes r1 … rn,
// each a FETCH of books and a RETURN of them.
func bigProject(tb testing.TB, n int) *pgxpool.Pool {
	tb.Helper()
	pool := storetest.Pool(tb)
	for _, sql := range []string{
		`INSERT INTO projects (id, name, api_path) VALUES ('big', 'Big', '/big')`,
		fmt.Sprintf(`INSERT INTO routes (project_id, route_id, method, route_path, document)
			SELECT 'big', 'r' || i, 'GET', '/r' || i, jsonb_build_object('route_id', 'r' || i, 'route_path', '/r' || i, 'method', 'GET',
				'auth_jwt', jsonb_build_object('active', false, 'field', '', 'ref_col', ''), 'params', jsonb_build_object('delimiter', '&', 'pairs', '[]'::jsonb),
				'body', '[]'::jsonb, 'flow', jsonb_build_object('blocks', jsonb_build_array(
					jsonb_build_object('type', 'FETCH', 'depth', 0, 'local_name', 'rows', 'ref_col', 'books', 'match', '[]'::jsonb),
					jsonb_build_object('type', 'RETURN', 'depth', 0, 'pairs', jsonb_build_array(jsonb_build_object('id', 'items',
						'data', jsonb_build_object('ref_var', true, 'rtype', 'OTHER', 'data', 'rows'))), 'conditions', '[]'::jsonb))))
			FROM generate_series(1, %d) i`, n),
		`ANALYZE routes`,
	} {
		if _, err := pool.Exec(context.Background(), sql); err != nil {
			tb.Fatal(err)
		}
	}
	return pool
}

// BenchmarkReloadOneChange: a project of 10,000 routes, one of which
// changes: reloading the route, as a save and its notice do, reads its key
// and edits the router (one change), against reading the whole project's
// keys and building its router, as a change of the project's settings does
// (whole project).
func BenchmarkReloadOneChange(b *testing.B) {
	ctx := context.Background()
	pool := bigProject(b, 10000)
	t := newTable(store.New(pool), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err := t.ensure(ctx); err != nil {
		b.Fatal(err)
	}
	if n := len(t.projects["big"].routes); n != 10000 {
		b.Fatalf("%d routes loaded", n)
	}
	b.Run("one change", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			if _, err := pool.Exec(ctx, `UPDATE routes SET version = version + 1 WHERE project_id = 'big' AND route_id = 'r7'`); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			if err := t.reload(ctx, "big", "r7"); err != nil {
				b.Fatal(err)
			}
		}
		if r := t.projects["big"].routes["r7"]; len(t.projects["big"].routes) != 10000 || r.Version < 2 {
			b.Fatalf("after the reloads: %d routes, r7 at version %d", len(t.projects["big"].routes), r.Version)
		}
	})
	b.Run("whole project", func(b *testing.B) {
		for b.Loop() {
			if err := t.reload(ctx, "big"); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkTableMemory: the heap the route table of a project of 10,000
// routes holds, by route, before any runs (the routes' keys and router)
// and after each has run once (plansKept of them keep a plan).
func BenchmarkTableMemory(b *testing.B) {
	ctx := context.Background()
	pool := bigProject(b, 10000)
	heap := func() uint64 {
		var m runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	for b.Loop() {
		b.StopTimer()
		base := heap()
		b.StartTimer()
		t := newTable(store.New(pool), slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err := t.ensure(ctx); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		loaded := heap()
		for i := range 10000 {
			if plan, err := t.plan(ctx, "big", fmt.Sprintf("r%d", i+1)); err != nil || plan == nil {
				b.Fatalf("r%d: %v %v", i+1, plan, err)
			}
		}
		ran := heap()
		b.ReportMetric(float64(loaded-base)/10000, "B/route-loaded")
		b.ReportMetric(float64(ran-base)/10000, "B/route-run")
		runtime.KeepAlive(t)
		b.StartTimer()
	}
}
