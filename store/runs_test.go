package store_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"stencil/flow"
	"stencil/store"
)

func TestRunRecords(t *testing.T) {
	t.Parallel()
	st, ctx := collectionStore(t)
	if _, err := st.RunRecords(ctx, "shop", "nope", store.RecordQuery{Limit: 10, Lock: false}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a missing collection: %v", err)
	}
	if recs, err := st.RunRecords(ctx, "shop", "books", store.RecordQuery{Limit: 10, Lock: false}); err != nil || len(recs) != 0 {
		t.Fatalf("an empty collection: %v %v", recs, err)
	}
	var want []int64
	for i := range 5 {
		want = append(want, putRecord(t, st, "shop", "books", fmt.Sprintf(`{"n":%d,"odd":%t}`, i, i%2 == 1)).ID)
	}
	putRecord(t, st, "blog", "books", `{"n":0}`)
	recs, err := st.RunRecords(ctx, "shop", "books", store.RecordQuery{Limit: 3, Lock: false})
	if err != nil || fmt.Sprint(ids(recs)) != fmt.Sprint(want[:3]) || string(recs[0].Data) != `{"n": 0, "odd": false}` {
		t.Fatalf("the first three in id order: %v %v", recs, err)
	}
	recs, err = st.RunRecords(ctx, "shop", "books", store.RecordQuery{Where: []byte(`{"odd":true}`), Limit: 10, Lock: false})
	if err != nil || fmt.Sprint(ids(recs)) != fmt.Sprint([]int64{want[1], want[3]}) {
		t.Fatalf("containing odd: %v %v", ids(recs), err)
	}
	if recs, err := st.RunRecords(ctx, "shop", "books", store.RecordQuery{Where: []byte(`{"n":99}`), Limit: 10, Lock: false}); err != nil || len(recs) != 0 {
		t.Fatalf("containing nothing: %v %v", recs, err)
	}

	// Locked records wait for the transaction that locked them.
	tx, err := st.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if recs, err := tx.RunRecords(ctx, "shop", "books", store.RecordQuery{Where: []byte(`{"n":1}`), Limit: 10, Lock: true}); err != nil || len(recs) != 1 {
		t.Fatalf("locked read: %v %v", recs, err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := st.UpdateRecords(ctx, "shop", "books", []store.Record{{ID: want[1], Data: []byte(`{"n":1,"other":true}`)}})
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("an update of a locked record did not wait: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	if _, err := tx.UpdateRecords(ctx, "shop", "books", []store.Record{{ID: want[1], Data: []byte(`{"n":1,"mine":true}`)}}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if r, err := st.Record(ctx, "shop", "books", want[1]); err != nil || string(r.Data) != `{"n": 1, "other": true}` {
		t.Fatalf("the waiting update came second: %s %v", r.Data, err)
	}
}

func TestRunLogAndOutbox(t *testing.T) {
	t.Parallel()
	st, ctx := collectionStore(t)
	uid := int64(1)
	now := time.Now()
	runs := []store.Run{
		{At: now.Add(-8 * 24 * time.Hour), ProjectID: "shop", RouteID: "old", Method: "GET", Path: "/x/shop/old", Status: 200, Ended: "RETURN", Duration: time.Millisecond},
		{At: now, ProjectID: "shop", RouteID: "books", Method: "GET", Path: "/x/shop/books", Status: 200, Ended: "RETURN", Duration: 1500 * time.Microsecond, UserID: &uid, Username: "root"},
		{At: now, ProjectID: "shop", RouteID: "books", Method: "GET", Path: "/x/shop/books/9", Status: 404, Ended: "FAIL", Duration: time.Millisecond},
		{At: now, ProjectID: "shop", RouteID: "orders", Method: "POST", Path: "/x/shop/orders", Status: 500, Ended: "FAULT", Duration: time.Millisecond, Fault: "flow.blocks[0] (FETCH): collection x does not exist"},
		{At: now, ProjectID: "blog", RouteID: "books", Method: "GET", Path: "/x/blog/books", Status: 200, Ended: "END", Duration: time.Millisecond},
	}
	if err := logRuns(ctx, st, runs, true); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		q    store.RunQuery
		want string
	}{
		{store.RunQuery{Page: store.Page{Limit: 25}}, "orders books books old"},
		{store.RunQuery{Page: store.Page{Limit: 25}, RouteID: "books"}, "books books"},
		{store.RunQuery{Page: store.Page{Limit: 25}, Status: "4xx"}, "books"},
		{store.RunQuery{Page: store.Page{Limit: 25}, Status: "500"}, "orders"},
		{store.RunQuery{Page: store.Page{Limit: 1, Offset: 1}}, "books"},
	} {
		list, total, err := st.ListRuns(ctx, "shop", c.q)
		got := ""
		for i, r := range list {
			if i > 0 {
				got += " "
			}
			got += r.RouteID
		}
		if err != nil || got != c.want {
			t.Errorf("%+v: %q (%d, %v), want %q", c.q, got, total, err, c.want)
		}
	}
	list, _, _ := st.ListRuns(ctx, "shop", store.RunQuery{Page: store.Page{Limit: 25}, Status: "2xx", RouteID: "books"})
	if len(list) != 1 || list[0].Duration != 1500*time.Microsecond || list[0].Username != "root" || *list[0].UserID != 1 {
		t.Fatalf("a run read back: %+v", list)
	}
	if err := st.Sweep(ctx, store.EventsKept); err != nil {
		t.Fatal(err)
	}
	if _, total, _ := st.ListRuns(ctx, "shop", store.RunQuery{Page: store.Page{Limit: 25}}); total != 3 {
		t.Fatalf("after the sweep %d runs, want 3 (the 8-day-old one gone)", total)
	}

	// Runs of a project deleted before they were written are left out.
	if err := logRuns(ctx, st, []store.Run{{At: now, ProjectID: "gone", RouteID: "r", Method: "GET", Path: "/", Ended: "END"},
		{At: now, ProjectID: "blog", RouteID: "kept", Method: "GET", Path: "/", Ended: "END"}}, true); err != nil {
		t.Fatal(err)
	}
	if list, _, _ := st.ListRuns(ctx, "blog", store.RunQuery{Page: store.Page{Limit: 25}, RouteID: "kept"}); len(list) != 1 {
		t.Fatalf("the other run was not written: %v", list)
	}
	// A caller deleted before its run was written is none; deleted after,
	// its runs keep its name.
	gone := int64(1 << 40)
	if err := logRuns(ctx, st, []store.Run{{At: now, ProjectID: "blog", RouteID: "lost", Method: "GET", Path: "/", Ended: "END", UserID: &gone, Username: "ghost"}}, true); err != nil {
		t.Fatal(err)
	}
	if list, _, _ := st.ListRuns(ctx, "blog", store.RunQuery{Page: store.Page{Limit: 25}, RouteID: "lost"}); len(list) != 1 || list[0].UserID != nil || list[0].Username != "ghost" {
		t.Fatalf("a run of a caller already gone: %+v", list)
	}
	if err := st.ExecForTest(ctx, "DELETE FROM users WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	if list, _, _ := st.ListRuns(ctx, "shop", store.RunQuery{Page: store.Page{Limit: 25}, Status: "2xx", RouteID: "books"}); len(list) != 1 || list[0].UserID != nil || list[0].Username != "root" {
		t.Fatalf("a run of a caller deleted since: %+v", list)
	}
	// A project's runs go with it: a new project of the same id has none.
	if err := st.DeleteProject(ctx, "blog"); err != nil {
		t.Fatal(err)
	}
	if err := st.ExecForTest(ctx, "INSERT INTO projects (id, name, api_path) VALUES ('blog', 'Blog again', '/blog')"); err != nil {
		t.Fatal(err)
	}
	if _, total, _ := st.ListRuns(ctx, "blog", store.RunQuery{Page: store.Page{Limit: 25}}); total != 0 {
		t.Fatalf("a new project of a deleted one's id shows %d of its runs", total)
	}

	shop := "shop"
	m := store.Email{ProjectID: &shop, RouteID: "signup", Template: "welcome", Recipients: []string{"a@example.com"}, Pairs: []byte(`{"name":"Ada"}`)}
	if err := st.QueueEmail(ctx, &m); err != nil {
		t.Fatal(err)
	}
	out, _, err := st.Outbox(ctx, "shop", "", store.Page{Limit: 10})
	if err != nil || len(out) != 1 || out[0].Template != "welcome" || out[0].Recipients[0] != "a@example.com" || string(out[0].Pairs) != `{"name": "Ada"}` || out[0].QueuedAt.IsZero() || out[0].Status != store.EmailQueued {
		t.Fatalf("outbox: %+v %v", out, err)
	}
}

func TestRouteVersionsAndRouting(t *testing.T) {
	t.Parallel()
	st, ctx := collectionStore(t)
	r := store.StoredRoute{Route: flow.Route{ProjectID: "shop", RouteID: "books", RoutePath: "/books", Method: "GET"}}
	r.Normalize()
	if err := st.CreateRoute(ctx, &r); err != nil || r.Version != 1 {
		t.Fatalf("created: version %d, %v", r.Version, err)
	}
	r.RoutePath = "/books/:id"
	if err := st.UpdateRoute(ctx, "books", &r); err != nil || r.Version != 2 {
		t.Fatalf("updated: version %d, %v", r.Version, err)
	}
	p, keys, err := st.ProjectRouting(ctx, "shop")
	if err != nil || p.APIPath != "/shop" || len(keys) != 1 || keys[0] != (store.RouteKey{ID: "books", Method: "GET", Path: "/books/:id", Version: 2, Updated: r.UpdatedAt}) {
		t.Fatalf("routing of shop: %+v %+v %v", p, keys, err)
	}
	keys, err = st.RoutingKeys(ctx, "shop", []string{"books", "gone"})
	if err != nil || len(keys) != 1 || keys[0].ID != "books" || keys[0].Version != 2 {
		t.Fatalf("routing keys of books and a route that is not: %+v %v", keys, err)
	}
	routes, err := st.RoutingRoutes(ctx, "shop", []string{"books", "gone"})
	if err != nil || len(routes) != 1 || routes[0].RouteID != "books" || routes[0].Version != 2 || routes[0].RoutePath != "/books/:id" {
		t.Fatalf("routing routes of books and a route that is not: %+v %v", routes, err)
	}
	if _, _, err := st.ProjectRouting(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("routing of a missing project: %v", err)
	}
	all, err := st.RoutingProjects(ctx)
	if err != nil || len(all) < 2 {
		t.Fatalf("routing projects: %v %v", all, err)
	}
}

// TestFlushRunLogs: a backup's ask reaches every instance listening for
// route notices, and counts those that answer within the wait; with none
// listening it asks nobody.
func TestFlushRunLogs(t *testing.T) {
	t.Parallel()
	st, ctx := collectionStore(t)
	if asked, answered, err := st.FlushRunLogs(ctx, time.Second); err != nil || asked != 0 || answered != 0 {
		t.Fatalf("none listening: asked %d, answered %d, %v", asked, answered, err)
	}
	listen := func(answer bool) (stop func()) {
		lctx, cancel := context.WithCancel(ctx)
		ready := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = st.Listen(lctx, "stencil_routes", func() error { close(ready); return nil }, func(payload string) error {
				if nonce, ok := strings.CutPrefix(payload, store.RunLogFlushPrefix); ok && answer {
					return st.RunLogFlushed(lctx, nonce)
				}
				return nil
			})
		}()
		<-ready
		return func() { cancel(); <-done }
	}
	defer listen(true)()
	if asked, answered, err := st.FlushRunLogs(ctx, 5*time.Second); err != nil || asked != 1 || answered != 1 {
		t.Fatalf("one answering: asked %d, answered %d, %v", asked, answered, err)
	}
	defer listen(false)()
	start := time.Now()
	asked, answered, err := st.FlushRunLogs(ctx, 300*time.Millisecond)
	if err != nil || asked != 2 || answered != 1 || time.Since(start) < 300*time.Millisecond {
		t.Fatalf("one of two answering: asked %d, answered %d, %v after %s", asked, answered, err, time.Since(start))
	}
}

// TestTestsPerRouteUnderConcurrency: a route holds at most 100 tests
// however many are saved at once: of 120 saved side by side, 100 are
// kept and 20 refused, each refusal ErrTooManyTests; a name saved twice at
// once is kept once.
func TestTestsPerRouteUnderConcurrency(t *testing.T) {
	t.Parallel()
	st, _, ctx := eventStore(t)
	r := store.StoredRoute{Route: flow.Route{ProjectID: "shop", RouteID: "books", RoutePath: "/books", Method: "GET"}}
	r.Normalize()
	if err := st.CreateRoute(ctx, &r); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	outcomes := map[string]int{}
	var wg sync.WaitGroup
	for i := range 120 {
		wg.Go(func() {
			name := fmt.Sprintf("t%d", i%110) // t0–t9 twice
			tt := store.StoredTest{ProjectID: "shop", RouteID: "books", RouteTest: flow.RouteTest{Name: name, Request: flow.TestRequest{Caller: flow.TestAnonymous}}}
			err := st.CreateTest(ctx, &tt, 1)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				outcomes["kept"]++
			case errors.Is(err, store.ErrTooManyTests):
				outcomes["too many"]++
			case errors.Is(err, store.ErrConflict):
				outcomes["name taken"]++
			default:
				outcomes[err.Error()]++
			}
		})
	}
	wg.Wait()
	tests, err := st.Tests(ctx, "shop", "books")
	if err != nil || len(tests) != 100 || outcomes["kept"] != 100 || outcomes["kept"]+outcomes["too many"]+outcomes["name taken"] != 120 {
		t.Fatalf("%d tests kept (%v), outcomes %v", len(tests), err, outcomes)
	}
}
