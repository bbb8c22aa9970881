package runs

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"

	"stencil/store"
)

// TestConcurrentReloadsShareRounds: saves of one project at once, each
// followed by its reload as a save is, share reloads; and when each
// caller's reload returns, the table holds that caller's change.
func TestConcurrentReloadsShareRounds(t *testing.T) {
	ctx := context.Background()
	pool := bigProject(t, 2000)
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
				if err := tb.reload(ctx, "big", route); err != nil {
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
