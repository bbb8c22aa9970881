package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"stencil/store"
	"stencil/store/storetest"
)

// groupWorkers is how many statements of one group run at once while
// fewer than a batch (256) wait.
const groupWorkers = 1

// groupedStore is a store on a new database whose pool has room for the
// lock's connection, every worker's and the test's own.
func groupedStore(t *testing.T) (context.Context, *pgxpool.Pool, *store.Store) {
	t.Helper()
	pool := storetest.PoolOfSize(t, 8)
	return context.Background(), pool, store.New(pool)
}

// holdLock takes lock (a LOCK TABLE statement) in a transaction of its
// own and returns its release; the test's end releases it too.
func holdLock(t *testing.T, ctx context.Context, pool *pgxpool.Pool, lock string) (release func()) {
	t.Helper()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	if _, err := tx.Exec(ctx, lock); err != nil {
		t.Fatal(err)
	}
	return func() {
		if err := tx.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// until waits up to ten seconds for done.
func until(t *testing.T, what string, done func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !done(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited too long for %s", what)
		}
	}
}

// busyWorkers starts one request at a time, each once the one before
// waits on a held lock, until all n workers of a group wait.
func busyWorkers(t *testing.T, ctx context.Context, pool *pgxpool.Pool, n int, start func(i int)) {
	t.Helper()
	for i := range n {
		start(i)
		until(t, "a worker to wait on the lock", func() bool {
			var n int
			_ = pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&n)
			return n == i+1
		})
	}
}
