package server

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"stencil/store"
	"stencil/store/storetest"
)

func TestMain(m *testing.M) { os.Exit(storetest.Main(m)) }

// TestPoolPlansNoParallelWorkers: a FETCH with match, read through the
// service's pool, plans no parallel workers. Its fallback read
// (records_scope_idx) planned parallel at 1,000,000 records launched two
// worker processes for every request, though a condition checked first
// skips that read (docs/performance.md). The database here makes parallel
// plans cheap, so that a collection of 50,000 records would have one.
func TestPoolPlansNoParallelWorkers(t *testing.T) {
	ctx := context.Background()
	url := storetest.URL(t)
	seed := storetest.PoolOn(t, url)
	for _, sql := range []string{
		`DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET parallel_setup_cost = 0', current_database());
			EXECUTE format('ALTER DATABASE %I SET parallel_tuple_cost = 0', current_database());
			EXECUTE format('ALTER DATABASE %I SET min_parallel_table_scan_size = 0', current_database()); END $$`,
		`INSERT INTO projects (id, name, api_path) VALUES ('big', 'Big', '/big')`,
		`INSERT INTO collections (project_id, id, name) VALUES ('big', 'tickets', 'Tickets')`,
		`INSERT INTO records (project_id, collection_id, data)
			SELECT 'big', 'tickets', jsonb_build_object('n', i, 'status', CASE WHEN i % 25 = 0 THEN 'open' ELSE 'closed' END)
			FROM generate_series(1, 50000) AS i`,
		`VACUUM ANALYZE records`,
	} {
		if _, err := seed.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	pool, err := newPool(ctx, url, 2, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	sql := store.RunRecordsSQLFor(store.RecordQuery{Where: []byte(`{"status":"open"}`), Limit: 20, Descending: true})
	if text := storetest.Explain(t, pool, "(ANALYZE, COSTS OFF) "+sql, "big", "tickets", 20, `{"status":"open"}`); strings.Contains(text, "Gather") {
		t.Fatalf("the read plans parallel workers:\n%s", text)
	}
}
