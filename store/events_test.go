package store_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"stencil/flow"
	"stencil/store"
	"stencil/store/storetest"
)

// eventStore is a store with user uuu (id 1) and project shop, and the
// context of a request uuu made with token 7.
func eventStore(t testing.TB) (*store.Store, *pgxpool.Pool, context.Context) {
	t.Helper()
	ctx := context.Background()
	pool := storetest.Pool(t)
	if _, err := pool.Exec(ctx, `INSERT INTO users (username, email, password_hash, role) VALUES ('uuu', 'u@example.com', 'x', 'ADMIN');
		INSERT INTO projects (id, name, api_path) VALUES ('shop', 'Shop', '/shop')`); err != nil {
		t.Fatal(err)
	}
	token := int64(7)
	return store.New(pool), pool, store.WithActor(ctx, store.Actor{UserID: 1, Username: "uuu", TokenID: &token})
}

type eventRow struct {
	Type, Object, Summary string
	UID, TokenID          *int64
}

func events(t testing.TB, pool *pgxpool.Pool, kind string) []eventRow {
	t.Helper()
	rows, err := pool.Query(context.Background(), "SELECT type, object, summary, uid, token_id FROM events WHERE type LIKE $1 ORDER BY id", kind)
	if err != nil {
		t.Fatal(err)
	}
	list, err := pgx.CollectRows(rows, pgx.RowToStructByPos[eventRow])
	if err != nil {
		t.Fatal(err)
	}
	return list
}

// TestEventsCommitWithTheirChange: a change writes its event with the
// request's user and token; a change that fails writes none; concurrent
// saves of one route write one event each; a summary keeps a % as it is
// and is cut at 300 characters.
func TestEventsCommitWithTheirChange(t *testing.T) {
	t.Parallel()
	st, pool, ctx := eventStore(t)
	r := store.StoredRoute{Route: flow.Route{ProjectID: "shop", RouteID: "books", RoutePath: "/books", Method: "GET"}, Note: "100% " + strings.Repeat("é", 400)}
	r.Normalize()
	if err := st.CreateRoute(ctx, &r); err != nil {
		t.Fatal(err)
	}
	got := events(t, pool, "route_%")
	if len(got) != 1 || got[0].Type != "route_create" || got[0].Object != "books" || *got[0].UID != 1 || *got[0].TokenID != 7 {
		t.Fatalf("create: %+v", got)
	}
	s := got[0].Summary
	if !strings.HasPrefix(s, "GET /books created, version 1: 100% éé") || utf8.RuneCountInString(s) != 300 || !strings.HasSuffix(s, "…") {
		t.Fatalf("summary %q (%d characters)", s, utf8.RuneCountInString(s))
	}
	// Refused: the route is taken; nothing is written.
	if err := st.CreateRoute(ctx, &r); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("twice: %v", err)
	}
	if err := st.DeleteRoute(ctx, "shop", "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("delete: %v", err)
	}
	if got := events(t, pool, "route_%"); len(got) != 1 {
		t.Fatalf("refusals wrote events: %+v", got)
	}
	// Twenty saves at once: twenty versions, twenty events.
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mine := r
			mine.Note = "at once"
			errs <- st.UpdateRoute(ctx, "books", &mine)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	updates := events(t, pool, "route_update")
	seen := map[string]bool{}
	for _, e := range updates {
		seen[e.Summary] = true
	}
	if len(updates) != 20 || len(seen) != 20 {
		t.Fatalf("%d update events, %d distinct (each names its version)", len(updates), len(seen))
	}
	// A change inside a transaction that rolls back takes its event with it.
	err := st.InTx(ctx, func(tx *store.Store) error {
		if err := tx.DeleteRoute(ctx, "shop", "books"); err != nil {
			return err
		}
		return errors.New("changed my mind")
	})
	if err == nil || len(events(t, pool, "route_delete")) != 0 {
		t.Fatalf("rolled back: %v, %+v", err, events(t, pool, "route_delete"))
	}
}

// TestEventsSweptAfterTheirRetention: Sweep removes the events older than
// the retention it is given and keeps the others.
func TestEventsSweptAfterTheirRetention(t *testing.T) {
	t.Parallel()
	st, pool, ctx := eventStore(t)
	if _, err := pool.Exec(ctx, `INSERT INTO events (at, type, object, summary) VALUES
		(now() - interval '100 days', 'config_create', 'old', 'x'), (now() - interval '10 days', 'config_create', 'recent', 'x'),
		(now(), 'config_create', 'new', 'x')`); err != nil {
		t.Fatal(err)
	}
	left := func() []string {
		var objects []string
		for _, e := range events(t, pool, "config_%") {
			objects = append(objects, e.Object)
		}
		return objects
	}
	if err := st.Sweep(ctx, store.EventsKept); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(left(), ","); got != "recent,new" {
		t.Fatalf("after 90 days: %s", got)
	}
	if err := st.Sweep(ctx, 24*time.Hour); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(left(), ","); got != "new" {
		t.Fatalf("after a day: %s", got)
	}
}

// BenchmarkRouteSave saves one route of 20 blocks over and over,
// alternating the store's save — the route, its version and its event, one
// statement — and the save before history (its statement as it was: the
// UPDATE of the route alone, its columns returned), the document encoded
// the same way for both. It reports
// both per save and their ratio, whose goal is at most 1.5
// (docs/performance.md).
func BenchmarkRouteSave(b *testing.B) {
	st, pool, ctx := eventStore(b)
	r := store.StoredRoute{Route: flow.Route{ProjectID: "shop", RouteID: "books", RoutePath: "/books", Method: "GET"}}
	r.Normalize()
	for i := range 20 {
		r.Flow.Blocks = append(r.Flow.Blocks, flow.Block{Type: "FETCH", LocalName: "rows" + string(rune('a'+i)), RefCol: "books"})
	}
	if err := st.CreateRoute(ctx, &r); err != nil {
		b.Fatal(err)
	}
	var with, without time.Duration
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		if err := st.UpdateRoute(ctx, "books", &r); err != nil {
			b.Fatal(err)
		}
		mid := time.Now()
		doc, err := store.DocumentOf(r.Route)
		if err != nil {
			b.Fatal(err)
		}
		// The save as it was before history, statement and all.
		var tid *int64
		var tname *string
		var by *int64
		var created, updated time.Time
		var version int64
		if err := pool.QueryRow(ctx, `UPDATE routes SET route_id = $3, method = $4, route_path = $5, document = $6, updated_at = now(), version = version + 1
			WHERE project_id = $1 AND route_id = $2 RETURNING template_id, template_name, created_by, created_at, updated_at, version`,
			"shop", "books", "books", "GET", "/books", doc).Scan(&tid, &tname, &by, &created, &updated, &version); err != nil {
			b.Fatal(err)
		}
		with, without = with+mid.Sub(start), without+time.Since(mid)
	}
	b.ReportMetric(float64(with.Nanoseconds())/float64(b.N), "ns/save")
	b.ReportMetric(float64(without.Nanoseconds())/float64(b.N), "ns/save-without-history")
	b.ReportMetric(float64(with)/float64(without), "with/without")
}

// TestEventsOfSeveralProjects: an ADMIN's log of their projects pages
// through them newest first, as one list, whatever the page.
func TestEventsOfSeveralProjects(t *testing.T) {
	t.Parallel()
	st, pool, ctx := eventStore(t)
	if _, err := pool.Exec(ctx, `INSERT INTO projects (id, name, api_path) VALUES ('p_a', 'A', '/pa'), ('p_b', 'B', '/pb'), ('p_c', 'C', '/pc');
		INSERT INTO events (type, project_id, object, summary)
			SELECT CASE WHEN i % 4 = 0 THEN 'route_delete' ELSE 'route_update' END, (ARRAY['p_a', 'p_b', 'p_c'])[1 + i % 3], 'o' || i, 's' FROM generate_series(1, 60) i`); err != nil {
		t.Fatal(err)
	}
	for _, q := range []store.EventQuery{
		{Projects: []string{"p_a", "p_b"}, Offset: 0, Limit: 7},
		{Projects: []string{"p_a", "p_b"}, Offset: 13, Limit: 9},
		{Projects: []string{"p_a", "p_b"}, Offset: 35, Limit: 10},
		{Projects: []string{"p_c", "p_a"}, Type: "route_delete", Offset: 3, Limit: 4},
		{Projects: []string{}, Limit: 5},
		{Projects: []string{"p_a", "p_b"}, Offset: math.MaxInt64, Limit: 1000},
	} {
		got, total, err := st.Events(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := pool.Query(ctx, `SELECT object FROM events WHERE project_id = ANY($1) AND ($2 = '' OR type = $2) ORDER BY id DESC`, q.Projects, q.Type)
		if err != nil {
			t.Fatal(err)
		}
		var all []string
		for rows.Next() {
			var o string
			_ = rows.Scan(&o)
			all = append(all, o)
		}
		want := all[min(q.Offset, len(all)) : min(q.Offset, len(all)-q.Limit)+q.Limit]
		var objects []string
		for _, e := range got {
			objects = append(objects, e.Object)
		}
		if strings.Join(objects, ",") != strings.Join(want, ",") || total != len(all) {
			t.Fatalf("%+v: %v of %d, want %v of %d", q, objects, total, want, len(all))
		}
	}
}
