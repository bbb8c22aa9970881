package runs

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"

	"stencil/store"
	"stencil/store/storetest"
)

// TestConcurrentReloadsShareRounds: saves of one project at once, each
// followed by its reload as a save is, share reloads; and when each
// caller's reload returns, the table holds that caller's change.
func TestConcurrentReloadsShareRounds(t *testing.T) {
	ctx := context.Background()
	pool := storetest.Pool(t)
	for _, sql := range []string{
		`INSERT INTO projects (id, name, api_path) VALUES ('big', 'Big', '/big')`,
		`INSERT INTO routes (project_id, route_id, method, route_path, document)
			SELECT 'big', 'r' || i, 'GET', '/r' || i, jsonb_build_object('route_id', 'r' || i, 'route_path', '/r' || i, 'method', 'GET',
				'auth_jwt', jsonb_build_object('active', false, 'field', '', 'ref_col', ''), 'params', jsonb_build_object('delimiter', '&', 'pairs', '[]'::jsonb),
				'body', '[]'::jsonb, 'flow', jsonb_build_object('blocks', jsonb_build_array(
					jsonb_build_object('type', 'RETURN', 'depth', 0, 'pairs', '[]'::jsonb, 'conditions', '[]'::jsonb))))
			FROM generate_series(1, 2000) i`,
	} {
		if _, err := pool.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	tb := newTable(store.New(pool), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err := tb.ensure(ctx); err != nil {
		t.Fatal(err)
	}
	for round := range 3 {
		var wg sync.WaitGroup
		errs := make(chan error, 32)
		for i := range 32 {
			wg.Go(func() {
				route := fmt.Sprintf("r%d", 1+i*50+round)
				var version int64
				if err := pool.QueryRow(ctx, `UPDATE routes SET version = version + 1 WHERE project_id = 'big' AND route_id = $1 RETURNING version`, route).Scan(&version); err != nil {
					errs <- err
					return
				}
				if err := tb.reload(ctx, "big"); err != nil {
					errs <- err
					return
				}
				tb.mu.RLock()
				got := tb.projects["big"].plans[route].Version
				tb.mu.RUnlock()
				if got < version {
					errs <- fmt.Errorf("%s: version %d saved, %d loaded when its reload returned", route, version, got)
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
	}
	tb.nextMu.Lock()
	defer tb.nextMu.Unlock()
	if len(tb.next) != 0 {
		t.Fatalf("rounds left waiting: %v", tb.next)
	}
}
