package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"stencil/store"
	"stencil/store/storetest"
)

// TestVaultReadsShareAStatement holds the access log locked so that the
// running statement waits, queues a hundred reads behind it, and
// releases: the queued reads run in one statement, each gets its
// own entry and its own log row, a key not found gets ErrNotFound and no
// row, and a read whose request ended while queued is neither read nor
// logged.
func TestVaultReadsShareAStatement(t *testing.T) {
	t.Parallel()
	ctx, pool, st := groupedStore(t)
	var uid int64
	if err := pool.QueryRow(ctx, `INSERT INTO users (username, email, password_hash, role) VALUES ('uuu', 'u@example.com', 'x', 'ADMIN') RETURNING id`).Scan(&uid); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO projects (id, name, api_path) VALUES ('shop', 'Shop', '/shop'), ('blog', 'Blog', '/blog');
		INSERT INTO vault_entries (project_id, key, key_id, sealed) VALUES ('shop', 'A', 'k1', '\x0a'), ('shop', 'B', 'k1', '\x0b'), ('blog', 'A', 'k1', '\x1a')`); err != nil {
		t.Fatal(err)
	}
	release := holdLock(t, ctx, pool, "LOCK TABLE vault_access_log IN EXCLUSIVE MODE")

	type outcome struct {
		project, key string
		entry        store.VaultEntry
		err          error
	}
	var wg sync.WaitGroup
	read := func(ctx context.Context, o *outcome) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o.entry, o.err = st.ReadVaultEntry(ctx, o.project, o.key, store.VaultAccess{UserID: &uid, Username: "uuu", Channel: "api"})
		}()
	}
	// Every worker busy, each with one read.
	blockers := make([]outcome, groupWorkers)
	busyWorkers(t, ctx, pool, groupWorkers, func(i int) {
		blockers[i] = outcome{project: "shop", key: "A"}
		read(ctx, &blockers[i])
	})
	queued := make([]outcome, 100)
	gone, cancel := context.WithCancel(ctx)
	for i := range queued {
		queued[i] = outcome{project: []string{"shop", "blog"}[i%2], key: []string{"A", "B"}[i%4/2]}
		switch i {
		case 50:
			queued[i].key = "NOPE"
		case 51:
			read(gone, &queued[i])
			continue
		}
		read(ctx, &queued[i])
	}
	until(t, "every read queued", func() bool { return st.QueuedVaultReadsForTest() == len(queued) })
	cancel()
	release()
	wg.Wait()

	if n := st.VaultReadStatements(); n > 2 {
		t.Errorf("%d statements for 101 reads, want the queued hundred in one", n)
	}
	found := 0
	for i, o := range append(blockers, queued...) {
		seal := map[string]byte{"shop/A": 0x0a, "shop/B": 0x0b, "blog/A": 0x1a}[o.project+"/"+o.key]
		switch {
		case i == groupWorkers+51:
			if !errors.Is(o.err, context.Canceled) {
				t.Errorf("read %d, its request gone: %v", i, o.err)
			}
		case seal == 0:
			if !errors.Is(o.err, store.ErrNotFound) {
				t.Errorf("read %d of %s/%s: %v, want not found", i, o.project, o.key, o.err)
			}
		case o.err != nil || o.entry.ProjectID != o.project || o.entry.Key != o.key || len(o.entry.Sealed) != 1 || o.entry.Sealed[0] != seal:
			t.Errorf("read %d of %s/%s = %s/%s %x (%v)", i, o.project, o.key, o.entry.ProjectID, o.entry.Key, o.entry.Sealed, o.err)
		default:
			found++
		}
	}
	var logged string
	if err := pool.QueryRow(ctx, `SELECT string_agg(project_id || '/' || key || ' ' || n, ', ' ORDER BY project_id, key)
		FROM (SELECT project_id, key, count(*) AS n FROM vault_access_log WHERE action = 'read' AND user_id = $1 AND channel = 'api' GROUP BY 1, 2) c`, uid).Scan(&logged); err != nil {
		t.Fatal(err)
	}
	// Blocker: shop/A. Queued: i%4 = 0 shop/A, 1 blog/A, 2 shop/B, 3
	// blog/B (not an entry); 50 (shop/NOPE) and 51 (blog/B, gone) are out.
	if want := "blog/A 25, shop/A 26, shop/B 24"; logged != want || found != 75 {
		t.Fatalf("log rows %q, want %q; %d reads found, want 75", logged, want, found)
	}
}

// TestVaultReadBacklogStartsAWorker: one statement runs at a time while
// fewer than a batch wait; a backlog of more than a batch behind a stuck
// statement starts a second one, and every read gets its value with its
// own log row.
func TestVaultReadBacklogStartsAWorker(t *testing.T) {
	t.Parallel()
	ctx, pool, st := shopOfOneEntry(t)
	release := holdLock(t, ctx, pool, "LOCK TABLE vault_access_log IN EXCLUSIVE MODE")
	waiting := func() (n int) {
		_ = pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&n)
		return n
	}
	var wg sync.WaitGroup
	errs := make([]error, 301)
	read := func(i int) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = st.ReadVaultEntry(ctx, "shop", "A", store.VaultAccess{Username: fmt.Sprint("b", i), Channel: "api"})
		}()
	}
	read(0)
	until(t, "the first statement to wait on the lock", func() bool { return waiting() == 1 })
	for i := 1; i <= 200; i++ {
		read(i)
	}
	until(t, "200 reads queued", func() bool { return st.QueuedVaultReadsForTest() == 200 })
	if n := waiting(); n != 1 {
		t.Fatalf("%d statements wait with 200 reads queued, want 1", n)
	}
	for i := 201; i < len(errs); i++ {
		read(i)
	}
	until(t, "a second statement past a batch queued", func() bool { return waiting() == 2 })
	release()
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("read %d: %v", i, err)
		}
	}
	var logged int
	if err := pool.QueryRow(ctx, "SELECT count(DISTINCT username) FROM vault_access_log WHERE username LIKE 'b%'").Scan(&logged); err != nil {
		t.Fatal(err)
	}
	if n := st.VaultReadStatements(); logged != len(errs) || n > 4 {
		t.Fatalf("%d reads logged in %d statements, want %d in at most 4", logged, n, len(errs))
	}
}

// TestVaultReadGroupFailsWhole: reads that share a statement share its
// failure; none returns a value without its log row.
func TestVaultReadGroupFailsWhole(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := storetest.Pool(t)
	st := store.New(pool)
	if _, err := pool.Exec(ctx, `INSERT INTO projects (id, name, api_path) VALUES ('shop', 'Shop', '/shop');
		INSERT INTO vault_entries (project_id, key, key_id, sealed) VALUES ('shop', 'A', 'k1', '\x0a'), ('shop', 'REFUSED', 'k1', '\x0b');
		CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN IF NEW.key = 'REFUSED' THEN RAISE EXCEPTION 'log unavailable'; END IF; RETURN NEW; END $$;
		CREATE TRIGGER refuse BEFORE INSERT ON vault_access_log FOR EACH ROW EXECUTE FUNCTION refuse();`); err != nil {
		t.Fatal(err)
	}
	if _, err := st.ReadVaultEntry(ctx, "shop", "A", store.VaultAccess{Username: "x", Channel: "api"}); err != nil {
		t.Fatalf("a read alone: %v", err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 64)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := "A"
			if i%8 == 0 {
				key = "REFUSED"
			}
			var e store.VaultEntry
			e, errs[i] = st.ReadVaultEntry(ctx, "shop", key, store.VaultAccess{Username: fmt.Sprint("r", i), Channel: "api"})
			if errs[i] == nil && e.Key != key {
				errs[i] = fmt.Errorf("read %s, got %s", key, e.Key)
			}
		}()
	}
	wg.Wait()
	var logged int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM vault_access_log WHERE username LIKE 'r%'").Scan(&logged); err != nil {
		t.Fatal(err)
	}
	succeeded := 0
	for i, err := range errs {
		switch {
		case err == nil && i%8 == 0:
			t.Errorf("read %d of REFUSED returned a value", i)
		case err == nil:
			succeeded++
		}
	}
	if logged != succeeded {
		t.Fatalf("%d log rows for %d values returned", logged, succeeded)
	}
}

// TestVaultReadInATransaction: a read in a transaction runs in it, alone
// (no grouped statement), and its log row goes with the transaction.
func TestVaultReadInATransaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := storetest.Pool(t)
	st := store.New(pool)
	if _, err := pool.Exec(ctx, `INSERT INTO projects (id, name, api_path) VALUES ('shop', 'Shop', '/shop')`); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO vault_entries (project_id, key, key_id, sealed) VALUES ('shop', 'A', 'k1', '\x0a')`); err != nil {
		t.Fatal(err)
	}
	refused := errors.New("roll back")
	err := st.InTx(ctx, func(tx *store.Store) error {
		e, err := tx.ReadVaultEntry(ctx, "shop", "A", store.VaultAccess{Username: "x", Channel: "api"})
		if err != nil || e.Key != "A" {
			t.Fatalf("read in a transaction: %+v, %v", e, err)
		}
		if _, err := tx.ReadVaultEntry(ctx, "shop", "NOPE", store.VaultAccess{Username: "x", Channel: "api"}); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("missing key in a transaction: %v", err)
		}
		return refused
	})
	if !errors.Is(err, refused) {
		t.Fatal(err)
	}
	var logged int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM vault_access_log").Scan(&logged); err != nil || logged != 0 || st.VaultReadStatements() != 0 {
		t.Fatalf("%d log rows after the rollback, %d grouped statements (%v)", logged, st.VaultReadStatements(), err)
	}
}

// TestVaultReadChecksItsReader reads one entry as users of every account
// role, with every membership role and none, needing each role, with the
// token's credential version current and stale, all at once so that
// checked reads share statements with each other and with a read that is
// not checked: a read finds the entry exactly when the version is current,
// there is a membership, and the effective role (store.EffectiveRole) ranks
// at least what it needs; only those are logged, under the account's
// username.
func TestVaultReadChecksItsReader(t *testing.T) {
	t.Parallel()
	ctx, pool, st := shopOfOneEntry(t)
	type reader struct {
		account, membership string
		id                  int64
		version             int
	}
	var readers []*reader
	for _, account := range []string{store.RoleRoot, store.RoleAdmin, store.RoleAuthor, store.RoleViewer} {
		for _, membership := range []string{"", store.RoleAdmin, store.RoleAuthor, store.RoleViewer} {
			r := &reader{account: account, membership: membership}
			name := fmt.Sprintf("reader%d", len(readers))
			if err := pool.QueryRow(ctx, `INSERT INTO users (username, email, password_hash, role, credential_version) VALUES ($1, $1 || '@example.com', 'x', $2, 3)
				RETURNING id, credential_version`, name, account).Scan(&r.id, &r.version); err != nil {
				t.Fatal(err)
			}
			if membership != "" {
				if _, err := pool.Exec(ctx, `INSERT INTO project_members (project_id, user_id, role) VALUES ('shop', $1, $2)`, r.id, membership); err != nil {
					t.Fatal(err)
				}
			}
			readers = append(readers, r)
		}
	}
	type read struct {
		r       *reader
		need    string
		stale   bool
		allowed bool
		err     error
	}
	var reads []*read
	for _, r := range readers {
		for _, need := range []string{store.RoleViewer, store.RoleAuthor, store.RoleAdmin, store.RoleRoot} {
			for _, stale := range []bool{false, true} {
				allowed := !stale && r.membership != "" && store.RoleRank(store.EffectiveRole(r.account, r.membership)) >= store.RoleRank(need)
				reads = append(reads, &read{r: r, need: need, stale: stale, allowed: allowed})
			}
		}
	}
	var wg sync.WaitGroup
	for _, rd := range reads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			version := rd.r.version
			if rd.stale {
				version--
			}
			// No username given: the statement takes the account's.
			_, rd.err = st.ReadVaultEntry(ctx, "shop", "A", store.VaultAccess{UserID: &rd.r.id, Channel: "api",
				Reader: &store.ReaderCheck{CredentialVersion: version, Need: rd.need}})
		}()
	}
	// A read checked before, by a route, in the same groups.
	wg.Add(1)
	go func() {
		defer wg.Done()
		if _, err := st.ReadVaultEntry(ctx, "shop", "A", store.VaultAccess{Channel: "route"}); err != nil {
			t.Errorf("the route's read: %v", err)
		}
	}()
	wg.Wait()
	want := map[int64]int{}
	for _, rd := range reads {
		switch {
		case rd.allowed && rd.err != nil:
			t.Errorf("%s member as %q needing %s (stale %v): %v, want the entry", rd.r.account, rd.r.membership, rd.need, rd.stale, rd.err)
		case !rd.allowed && !errors.Is(rd.err, store.ErrNotFound):
			t.Errorf("%s member as %q needing %s (stale %v): %v, want ErrNotFound", rd.r.account, rd.r.membership, rd.need, rd.stale, rd.err)
		case rd.allowed:
			want[rd.r.id]++
		}
	}
	rows, err := pool.Query(ctx, `SELECT u.id, count(*) FILTER (WHERE l.username = u.username), count(*) FROM vault_access_log l JOIN users u ON u.id = l.user_id GROUP BY u.id`)
	if err != nil {
		t.Fatal(err)
	}
	got := map[int64]int{}
	for rows.Next() {
		var id int64
		var named, all int
		if err := rows.Scan(&id, &named, &all); err != nil {
			t.Fatal(err)
		}
		if named != all {
			t.Errorf("user %d: %d of %d log rows under the account's username", id, named, all)
		}
		got[id] = all
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	for _, r := range readers {
		if got[r.id] != want[r.id] {
			t.Errorf("%s member as %q: %d log rows, want %d", r.account, r.membership, got[r.id], want[r.id])
		}
	}
}

// shopOfOneEntry is a grouped store whose project shop has one vault
// entry, A.
func shopOfOneEntry(t *testing.T) (context.Context, *pgxpool.Pool, *store.Store) {
	t.Helper()
	ctx, pool, st := groupedStore(t)
	if _, err := pool.Exec(ctx, `INSERT INTO projects (id, name, api_path) VALUES ('shop', 'Shop', '/shop');
		INSERT INTO vault_entries (project_id, key, key_id, sealed) VALUES ('shop', 'A', 'k1', '\x0a')`); err != nil {
		t.Fatal(err)
	}
	return ctx, pool, st
}
