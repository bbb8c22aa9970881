package runs

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
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
				got := tb.projects["big"].routes[route].Version
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

// TestTableKeepsRecentPlans: the table keeps the plans of the routes run
// most recently, up to its bound, and compiles the others again when they
// run; a route deleted and made again under its id (at version 1 again)
// runs as made again, even when both changes reach one reload; a route
// whose plan is not kept and that changed before its notice runs as
// changed, and that plan is not kept for the version the table holds.
func TestTableKeepsRecentPlans(t *testing.T) {
	ctx := context.Background()
	pool := bigProject(t, 20)
	tb := newTableKeeping(store.New(pool), slog.New(slog.NewTextHandler(io.Discard, nil)), 5)
	pathOf := func(route string) string {
		t.Helper()
		plan, err := tb.plan(ctx, "big", route)
		if err != nil || plan == nil {
			t.Fatalf("plan of %s: %v %v", route, plan, err)
		}
		return plan.Route.RoutePath
	}
	kept := func() (n int) {
		for _, r := range tb.projects["big"].routes {
			if r.plan.Load() != nil {
				n++
			}
		}
		return n
	}
	for round := range 2 {
		for i := range 20 {
			if got, want := pathOf(fmt.Sprintf("r%d", i+1)), fmt.Sprintf("/r%d", i+1); got != want {
				t.Fatalf("round %d: r%d runs %s", round, i+1, got)
			}
		}
		if n := kept(); n != 5 {
			t.Fatalf("round %d: %d plans kept, want 5", round, n)
		}
	}
	exec := func(sql string) {
		t.Helper()
		if _, err := pool.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	remake := func(route, path string) {
		exec(`DELETE FROM routes WHERE project_id = 'big' AND route_id = '` + route + `'`)
		exec(`INSERT INTO routes (project_id, route_id, method, route_path, document)
			SELECT 'big', '` + route + `', 'GET', '` + path + `', document || jsonb_build_object('route_path', '` + path + `')
			FROM routes WHERE project_id = 'big' AND route_id = 'r1'`)
	}
	pathOf("r20")
	remake("r20", "/again")
	if err := tb.reload(ctx, "big", "r20"); err != nil {
		t.Fatal(err)
	}
	if got := pathOf("r20"); got != "/again" {
		t.Fatalf("r20 made again runs %s", got)
	}
	if e, _, _ := tb.projects["big"].router.Match("GET", []string{"r20"}); e != nil {
		t.Fatalf("the old path of r20 still matches")
	}
	exec(`UPDATE routes SET route_path = '/later', document = document || '{"route_path":"/later"}', version = version + 1 WHERE project_id = 'big' AND route_id = 'r3'`)
	if got := pathOf("r3"); got != "/later" {
		t.Fatalf("r3 changed before its notice runs %s", got)
	}
	if tb.projects["big"].routes["r3"].plan.Load() != nil {
		t.Fatalf("the plan of a version newer than the table's was kept as its")
	}
	if err := tb.reload(ctx, "big", "r3"); err != nil {
		t.Fatal(err)
	}
	if got := pathOf("r3"); got != "/later" || tb.projects["big"].routes["r3"].plan.Load() == nil {
		t.Fatalf("r3 after its notice runs %s", got)
	}
}

// TestDocumentKeptWithItsRouting: a project's OpenAPI document is made
// once and kept while its routes stand, and made again after one changes.
func TestDocumentKeptWithItsRouting(t *testing.T) {
	ctx := context.Background()
	pool := bigProject(t, 3)
	tb := newTable(store.New(pool), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err := tb.ensure(ctx); err != nil {
		t.Fatal(err)
	}
	document := func() []byte {
		t.Helper()
		doc, err := tb.document(ctx, tb.projects["big"])
		if err != nil {
			t.Fatal(err)
		}
		return doc
	}
	first := document()
	if again := document(); &again[0] != &first[0] || !strings.Contains(string(first), `"/r2"`) {
		t.Fatalf("the document was made again, or lacks /r2: %s", first)
	}
	if _, err := pool.Exec(ctx, `UPDATE routes SET route_path = '/moved', document = document || '{"route_path":"/moved"}', version = version + 1
		WHERE project_id = 'big' AND route_id = 'r2'`); err != nil {
		t.Fatal(err)
	}
	if err := tb.reload(ctx, "big", "r2"); err != nil {
		t.Fatal(err)
	}
	if doc := string(document()); !strings.Contains(doc, `"/moved"`) || strings.Contains(doc, `"/r2"`) {
		t.Fatalf("after r2 moved: %s", doc)
	}
}
