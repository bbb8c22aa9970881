// Package storetest gives tests fresh, migrated databases on real PostgreSQL:
// on TEST_DATABASE_URL's server when it is set, otherwise on one throwaway
// private cluster per test binary.
package storetest

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"stencil/store"
	"stencil/store/localpg"
)

var (
	// templateDB is per process: packages' test binaries run in parallel and
	// may share TEST_DATABASE_URL's server.
	templateDB = fmt.Sprintf("stencil_test_template_%d", os.Getpid())

	once    sync.Once
	cluster *localpg.Cluster
	admin   string // URL of a maintenance database on the test server
	initErr error
	counter atomic.Int64
)

// Main runs the tests of a package and stops the private cluster, if one was
// started. Use it from TestMain: os.Exit(storetest.Main(m)).
func Main(m *testing.M) int {
	code := m.Run()
	if admin != "" {
		_ = exec(context.Background(), "DROP DATABASE IF EXISTS "+templateDB+" WITH (FORCE)")
	}
	if cluster != nil {
		if err := cluster.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stop test cluster:", err)
		}
	}
	return code
}

// URL returns the URL of a new database with every migration applied, dropped
// when the test ends.
func URL(tb testing.TB) string {
	tb.Helper()
	return newDatabase(tb, templateDB)
}

func newDatabase(tb testing.TB, template string) string {
	tb.Helper()
	once.Do(setup)
	if initErr != nil {
		tb.Fatalf("test database: %v", initErr)
	}
	ctx := context.Background()
	name := fmt.Sprintf("stencil_test_%d_%d", os.Getpid(), counter.Add(1))
	if err := exec(ctx, "CREATE DATABASE "+name+" TEMPLATE "+template); err != nil {
		tb.Fatalf("create test database: %v", err)
	}
	tb.Cleanup(func() {
		if err := exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			tb.Errorf("drop test database: %v", err)
		}
	})
	return withDatabase(admin, name)
}

// EmptyURL returns the URL of a new database with no migrations applied,
// dropped when the test ends.
func EmptyURL(tb testing.TB) string {
	tb.Helper()
	return newDatabase(tb, "template0")
}

// Pool returns a pool on a new migrated database (see URL), closed when the
// test ends.
func Pool(tb testing.TB) *pgxpool.Pool {
	tb.Helper()
	return PoolOn(tb, URL(tb))
}

// PoolOfSize returns a pool of at most n connections on a new migrated
// database: for tests that hold connections on purpose.
func PoolOfSize(tb testing.TB, n int) *pgxpool.Pool {
	tb.Helper()
	u := URL(tb)
	sep := "?"
	if strings.Contains(u, "?") {
		sep = "&"
	}
	return PoolOn(tb, u+sep+"pool_max_conns="+strconv.Itoa(n))
}

// PoolOn returns a pool on url, closed when the test ends.
func PoolOn(tb testing.TB, url string) *pgxpool.Pool {
	tb.Helper()
	pool, err := pgxpool.New(context.Background(), url)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(pool.Close)
	return pool
}

func setup() {
	ctx := context.Background()
	if u := os.Getenv("TEST_DATABASE_URL"); u != "" {
		admin = u
	} else {
		cluster, initErr = localpg.Start(ctx, "")
		if initErr != nil {
			return
		}
		admin = cluster.URL("postgres")
	}
	// A template database migrated once makes each test's database a cheap copy.
	if initErr = exec(ctx, "CREATE DATABASE "+templateDB); initErr != nil {
		return
	}
	if initErr = store.Migrate(ctx, withDatabase(admin, templateDB)); initErr != nil {
		return
	}
	// The logs' partitions of the next days too, as a service makes them
	// at start: each copy then has them, and a service started on one
	// makes none.
	pool, err := pgxpool.New(ctx, withDatabase(admin, templateDB))
	if initErr = err; err != nil {
		return
	}
	initErr = store.New(pool).EnsurePartitions(ctx)
	pool.Close()
	if initErr != nil {
		return
	}
	// The template written out once: a copy of it while its pages were
	// still dirty in shared buffers was about ten times slower
	// (docs/testing.md). Only a matter of speed: where the tests may not
	// checkpoint (neither superuser nor pg_checkpoint), copies are slower.
	_ = exec(ctx, "CHECKPOINT")
}

func exec(ctx context.Context, sql string) error {
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}

func withDatabase(rawURL, name string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		panic(err)
	}
	u.Path = "/" + name
	return u.String()
}

// Querier is what Explain reads with: a pool, a connection or a
// transaction.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// Explain is PostgreSQL's plan of "EXPLAIN " + stmt with args, as text
// (stmt may begin with EXPLAIN's options: "(ANALYZE, COSTS OFF) SELECT …").
func Explain(tb testing.TB, db Querier, stmt string, args ...any) string {
	tb.Helper()
	rows, err := db.Query(context.Background(), "EXPLAIN "+stmt, args...)
	if err != nil {
		tb.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		tb.Fatal(err)
	}
	return strings.Join(lines, "\n")
}

// AtOnce runs each(0) … each(n-1) in goroutines of their own and fails tb
// with the first error any returned, once all have returned.
func AtOnce(tb testing.TB, n int, each func(i int) error) {
	tb.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			if err := each(i); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		tb.Fatal(err)
	}
}
