package store_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/tern/v2/migrate"

	"stencil/migrations"
	"stencil/store"
	"stencil/store/storetest"
)

// TestMigrationDestroysTheVaultTrash: entries deleted while a delete went
// to a trash are destroyed by migration 024 with every version they kept;
// live entries keep theirs, and a trashed key can be created again.
func TestMigrationDestroysTheVaultTrash(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url, conn := migratedTo(t, 23)
	if _, err := conn.Exec(ctx, `INSERT INTO projects (id, name, api_path) VALUES ('shop', 'Shop', '/shop');
		INSERT INTO vault_entries (project_id, key, key_id, sealed, version) VALUES ('shop', 'LIVE', 'k', 'x', 2);
		INSERT INTO vault_versions (project_id, key, version, key_id, sealed, set_at) VALUES ('shop', 'LIVE', 1, 'k', 'x', now()),
			('shop', 'GONE', 1, 'k', 'x', now()), ('shop', 'GONE', 2, 'k', 'x', now());
		INSERT INTO vault_trash (project_id, key, version, key_id, sealed, created_at, updated_at) VALUES ('shop', 'GONE', 3, 'k', 'x', now(), now())`); err != nil {
		t.Fatal(err)
	}
	if err := store.Migrate(ctx, url); err != nil {
		t.Fatal(err)
	}
	var trash bool
	var live, gone int
	if err := conn.QueryRow(ctx, `SELECT to_regclass('vault_trash') IS NOT NULL,
		(SELECT count(*) FROM vault_versions WHERE key = 'LIVE'), (SELECT count(*) FROM vault_versions WHERE key = 'GONE')`).Scan(&trash, &live, &gone); err != nil {
		t.Fatal(err)
	}
	if trash || live != 1 || gone != 0 {
		t.Fatalf("after the migration: trash table %v, LIVE keeps %d versions (want 1), GONE %d (want 0)", trash, live, gone)
	}
	if _, err := conn.Exec(ctx, "INSERT INTO vault_entries (project_id, key, key_id, sealed) VALUES ('shop', 'GONE', 'k', 'y')"); err != nil {
		t.Fatalf("a trashed key cannot be created again: %v", err)
	}
}

// migratedTo is an empty database migrated up to version (the job queue's
// tables first, as Migrate makes them), its URL and a connection to it,
// for a test of the migrations after it.
func migratedTo(t *testing.T, version int32) (string, *pgx.Conn) {
	t.Helper()
	ctx := context.Background()
	url := storetest.EmptyURL(t)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	m, err := migrate.NewMigrator(ctx, conn, "schema_version")
	if err != nil {
		t.Fatal(err)
	}
	if err := m.LoadMigrations(migrations.FS); err != nil {
		t.Fatal(err)
	}
	if err := store.MigrateJobsForTest(ctx, conn, url); err != nil {
		t.Fatal(err)
	}
	if err := m.MigrateTo(ctx, version); err != nil {
		t.Fatal(err)
	}
	return url, conn
}
