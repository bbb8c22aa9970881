// Package store is Stencil's PostgreSQL access: one file per table, raw SQL,
// context first. It imports neither Fiber nor net/http.
package store

import (
	"context"
	"fmt"

	"github.com/hashicorp/golang-lru/v2/expirable"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DB is what both a pool and a transaction offer; store methods use it so
// that they run the same inside and outside InTx.
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Store is the data access layer.
type Store struct {
	db   DB
	pool *pgxpool.Pool
	// groups run the statements of requests that overlap in time
	// together (a transaction's run in it, alone); shared by the pool's
	// Store and its transactions'.
	groups *groups
	// listings are masked pages of vault entries (see VaultListing),
	// shared like groups; closedDays the routes' figures over days that
	// no longer change (see StatsByRoute).
	listings   *vaultListings
	closedDays *expirable.LRU[statsKey, []RouteStat]
	// schemas are collections' fields as last read (see schemaCache).
	schemas *schemaCache
}

// groups are a pool's statement groups (see group).
type groups struct {
	reads      *group[vaultRead, VaultEntry]
	callers    *group[callerQuery, Caller] // by user id
	patCallers *group[callerQuery, Caller] // by personal access token
	sessions   *group[string, storedSession]
	runReads   *flights
}

// New returns a Store on pool.
func New(pool *pgxpool.Pool) *Store {
	return &Store{db: pool, pool: pool, groups: &groups{
		reads:      newGroup(groupWorkers, readEntries),
		callers:    newGroup(groupWorkers, userCallers),
		patCallers: newGroup(groupWorkers, patCallers),
		sessions:   newGroup(groupWorkers, findSessions),
		runReads:   newFlights(),
	}, listings: newVaultListings(), closedDays: newClosedDays(), schemas: newSchemaCache()}
}

// on returns a Store like s that runs its statements on db (a transaction
// of s's pool).
func (s *Store) on(db DB) *Store {
	t := *s
	t.db = db
	return &t
}

// InTx runs fn with a Store bound to one transaction, committed when fn
// returns nil and rolled back otherwise. On a Store already in a
// transaction, fn runs in that one.
func (s *Store) InTx(ctx context.Context, fn func(tx *Store) error) (err error) {
	defer wrap(&err, "in tx")
	if inTransaction(s.db) {
		return fn(s)
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		return fn(s.on(tx))
	})
}

// InSnapshot is InTx at the repeatable-read level: fn reads one
// snapshot, and a row it writes that another transaction changed since
// that snapshot ends the transaction with a serialization failure
// (Retryable) instead of writing over the change.
func (s *Store) InSnapshot(ctx context.Context, fn func(tx *Store) error) (err error) {
	defer wrap(&err, "in snapshot")
	if inTransaction(s.db) {
		return fn(s)
	}
	return pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead}, func(tx pgx.Tx) error {
		return fn(s.on(tx))
	})
}

// inReadSnapshot runs fn's reads on one snapshot: a repeatable-read,
// read-only transaction, or the caller's own.
func (s *Store) inReadSnapshot(ctx context.Context, fn func(tx *Store) error) error {
	if inTransaction(s.db) {
		return fn(s)
	}
	return pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		return fn(s.on(tx))
	})
}

// WithSnapshot runs fn in a repeatable-read, read-only transaction whose
// snapshot it exports: another session (pg_dump --snapshot) sees the
// database exactly as fn's reads do, until fn returns.
func (s *Store) WithSnapshot(ctx context.Context, fn func(tx *Store, snapshot string) error) (err error) {
	defer wrap(&err, "with snapshot")
	return pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var id string
		if err := tx.QueryRow(ctx, "SELECT pg_export_snapshot()").Scan(&id); err != nil {
			return err
		}
		return fn(s.on(tx), id)
	})
}

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) (err error) {
	defer wrap(&err, "ping")
	return s.pool.Ping(ctx)
}

// Listen follows the notices on channel on a connection of its own (not
// one of the pool's) until ctx ends or the connection fails: connected is
// called once it listens, notice for each notice's payload.
func (s *Store) Listen(ctx context.Context, channel string, connected func() error, notice func(payload string) error) (err error) {
	defer wrap(&err, "listen")
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig.Copy())
	if err != nil {
		return fmt.Errorf("listen %s: %w", channel, err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize()); err != nil {
		return fmt.Errorf("listen %s: %w", channel, err)
	}
	if err := connected(); err != nil {
		return err
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return fmt.Errorf("listen %s: %w", channel, err)
		}
		if err := notice(n.Payload); err != nil {
			return err
		}
	}
}

// PoolStat is the statistics of s's pool, for the metrics.
func (s *Store) PoolStat() *pgxpool.Stat { return s.pool.Stat() }
