package store

import (
	"context"
	"fmt"
	"io/fs"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/tern/v2/migrate"

	"stencil/migrations"
)

const versionTable = "schema_version"

// ternLock is the advisory lock tern holds while it migrates (its
// lockNum).
const ternLock = int64(9628173550095224)

// Migrate applies every pending migration. Tern holds a PostgreSQL advisory
// lock while it works, so instances starting together apply each migration
// once and the others wait. They wait by trying the lock every 50 ms
// rather than in tern's pg_advisory_lock: a statement waiting on the lock
// holds a snapshot, which CREATE INDEX CONCURRENTLY in the migrating
// instance would wait for in turn (a deadlock). Session locks nest, so
// tern then takes the lock this session already holds.
func Migrate(ctx context.Context, databaseURL string) (err error) {
	defer wrap(&err, "migrate")
	conn, err := pgx.Connect(ctx, databaseURL)
	if err != nil {
		return fmt.Errorf("connect for migrations: %w", err)
	}
	defer conn.Close(ctx)
	for {
		var mine bool
		if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", ternLock).Scan(&mine); err != nil {
			return fmt.Errorf("migrations: %w", err)
		}
		if mine {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	defer func() { _, _ = conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", ternLock) }()
	// River's tables first: the project's migrations index them.
	if err := migrateJobs(ctx, conn, databaseURL); err != nil {
		return fmt.Errorf("apply the job queue's migrations: %w", err)
	}
	m, err := migrate.NewMigrator(ctx, conn, versionTable)
	if err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	if err := m.LoadMigrations(migrations.FS); err != nil {
		return fmt.Errorf("load migrations: %w", err)
	}
	if err := m.Migrate(ctx); err != nil {
		return fmt.Errorf("apply migrations: %w", err)
	}
	if err := buildPartitionIndexes(ctx, conn); err != nil {
		return fmt.Errorf("build the log's indexes: %w", err)
	}
	return nil
}

// MigrationsApplied reports whether the database is at the newest migration.
func (s *Store) MigrationsApplied(ctx context.Context) (_ bool, err error) {
	defer wrap(&err, "migrations applied")
	want, err := migrationCount()
	if err != nil {
		return false, err
	}
	// Before the first migration the version table does not exist yet.
	var exists bool
	if err := s.db.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", versionTable).Scan(&exists); err != nil || !exists {
		return false, err
	}
	var have int32
	if err := s.db.QueryRow(ctx, "SELECT version FROM "+versionTable).Scan(&have); err != nil {
		return false, translate(err)
	}
	return int(have) == want, nil
}

func migrationCount() (int, error) {
	files, err := fs.Glob(migrations.FS, "*.sql")
	return len(files), err
}
