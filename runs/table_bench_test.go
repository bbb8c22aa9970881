package runs

import (
	"context"
	"fmt"
	"io"
	"log/slog"
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
// changes: reloading the route, as a save and its notice do, reads and
// compiles that one and edits the router (one change), against reading
// every route's document (every document).
func BenchmarkReloadOneChange(b *testing.B) {
	ctx := context.Background()
	pool := bigProject(b, 10000)
	st := store.New(pool)
	t := newTable(st, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err := t.ensure(ctx); err != nil {
		b.Fatal(err)
	}
	if n := len(t.projects["big"].plans); n != 10000 {
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
		if p := t.projects["big"].plans["r7"]; len(t.projects["big"].plans) != 10000 || p.Version < 2 {
			b.Fatalf("after the reloads: %d routes, r7 at version %d", len(t.projects["big"].plans), p.Version)
		}
	})
	b.Run("every document", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := st.ProjectRouting(ctx, "big", nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}
