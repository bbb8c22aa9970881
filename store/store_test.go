package store_test

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"

	"stencil/store"
	"stencil/store/storetest"
)

func TestMain(m *testing.M) { os.Exit(storetest.Main(m)) }

func TestMigrateIsIdempotent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := storetest.URL(t)
	if err := store.Migrate(ctx, url); err != nil {
		t.Fatalf("second Migrate on a migrated database: %v", err)
	}
	st := store.New(storetest.PoolOn(t, url))
	ok, err := st.MigrationsApplied(ctx)
	if err != nil || !ok {
		t.Fatalf("MigrationsApplied = %v, %v", ok, err)
	}
	// With the job queue's migrations applied, a start learns it on the
	// migrations' connection and opens no pool (the URL is not used).
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if err := store.MigrateJobsForTest(ctx, conn, "postgres://nowhere.invalid/none"); err != nil {
		t.Fatalf("the job queue's migrations, all applied: %v", err)
	}
}

func TestMigrateEmptyDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := storetest.EmptyURL(t)
	st := store.New(storetest.PoolOn(t, url))
	if ok, err := st.MigrationsApplied(ctx); ok || err != nil {
		t.Fatalf("MigrationsApplied before migrating = %v, %v", ok, err)
	}
	if err := store.Migrate(ctx, url); err != nil {
		t.Fatal(err)
	}
	if ok, err := st.MigrationsApplied(ctx); !ok || err != nil {
		t.Fatalf("MigrationsApplied after migrating = %v, %v", ok, err)
	}
}

func TestInTxRollsBackOnError(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := storetest.Pool(t)
	st := store.New(pool)
	if _, err := pool.Exec(ctx, "CREATE TABLE t (v text)"); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err := st.InTx(ctx, func(tx *store.Store) error {
		if err := tx.ExecForTest(ctx, "INSERT INTO t VALUES ('x')"); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("InTx error = %v", err)
	}
	var n int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM t").Scan(&n); err != nil || n != 0 {
		t.Fatalf("rows after rollback = %d (%v)", n, err)
	}
	if err := st.InTx(ctx, func(tx *store.Store) error { return tx.ExecForTest(ctx, "INSERT INTO t VALUES ('y')") }); err != nil {
		t.Fatal(err)
	}
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM t").Scan(&n); err != nil || n != 1 {
		t.Fatalf("rows after commit = %d (%v)", n, err)
	}
}

func TestErrorTranslation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := store.New(storetest.Pool(t))
	if err := st.ExecForTest(ctx, "CREATE TABLE u (v text CONSTRAINT u_v_key UNIQUE)"); err != nil {
		t.Fatal(err)
	}
	if err := st.ExecForTest(ctx, "INSERT INTO u VALUES ('a')"); err != nil {
		t.Fatal(err)
	}
	err := st.ExecForTest(ctx, "INSERT INTO u VALUES ('a')")
	var conflict *store.ConflictError
	if !errors.As(err, &conflict) || conflict.Constraint != "u_v_key" || !errors.Is(err, store.ErrConflict) {
		t.Fatalf("duplicate insert error = %#v", err)
	}
	if err := st.QueryRowForTest(ctx, "SELECT v FROM u WHERE v = 'zzz'"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("no rows error = %v, want ErrNotFound", err)
	}
}

// TestSweep: housekeeping deletes expired sessions and sign-in attempts
// past every window, and keeps the rest.
func TestSweep(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := storetest.Pool(t)
	st := store.New(pool)
	_, err := pool.Exec(ctx, `INSERT INTO sessions (token, data, expiry) VALUES
		('old', '\x00', now() - interval '1 minute'), ('live', '\x00', now() + interval '1 hour');
		INSERT INTO login_attempts (scope, attempted_at) VALUES ('stale', now() - interval '2 hours'), ('recent', now() - interval '10 minutes')`)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Sweep(ctx, store.EventsKept); err != nil {
		t.Fatal(err)
	}
	var sessions, attempts string
	if err := pool.QueryRow(ctx, "SELECT (SELECT string_agg(token, ',') FROM sessions), (SELECT string_agg(scope, ',') FROM login_attempts)").
		Scan(&sessions, &attempts); err != nil || sessions != "live" || attempts != "recent" {
		t.Fatalf("left: sessions %q, attempts %q (%v)", sessions, attempts, err)
	}
}
