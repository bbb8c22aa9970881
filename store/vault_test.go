package store_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"stencil/store"
	"stencil/store/storetest"
)

func vaultStore(t *testing.T) (*store.Store, context.Context) {
	t.Helper()
	ctx := context.Background()
	pool := storetest.Pool(t)
	st := store.New(pool)
	_, err := pool.Exec(ctx, `INSERT INTO users (username, email, password_hash, role) VALUES ('uuu', 'u@example.com', 'x', 'ADMIN');
		INSERT INTO projects (id, name, api_path) VALUES ('shop', 'Shop', '/shop'), ('blog', 'Blog', '/blog')`)
	if err != nil {
		t.Fatal(err)
	}
	return st, ctx
}

// TestVaultKeyFilterUsesTheIndex fills a vault with 100,000 entries and
// checks that the filtered page query is served by the trigram index.
func TestVaultKeyFilterUsesTheIndex(t *testing.T) {
	t.Parallel()
	st, ctx := vaultStore(t)
	if err := st.ExecForTest(ctx, `INSERT INTO vault_entries (project_id, key, key_id, sealed)
		SELECT 'shop', 'KEY_' || upper(md5(i::text)) || '_' || i, 'k1', '\x00'::bytea FROM generate_series(1, 100000) AS i;
		INSERT INTO vault_entries (project_id, key, key_id, sealed) VALUES ('shop', 'STRIPE_SECRET_KEY', 'k1', '\x00');
		ANALYZE vault_entries`); err != nil {
		t.Fatal(err)
	}
	plan, err := st.ExplainVaultFilterForTest(ctx, "shop", "stripe_sec")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("EXPLAIN ANALYZE of the filtered page query on 100,001 entries:\n%s", plan)
	if !strings.Contains(plan, "vault_entries_project_key_trgm_idx") {
		t.Fatalf("the filtered page query does not use the trigram index:\n%s", plan)
	}
	entries, total, err := st.ListVaultEntries(ctx, "shop", store.Page{Limit: 10, Filter: "stripe_sec"}, nil)
	if err != nil || total != 1 || len(entries) != 1 || entries[0].Key != "STRIPE_SECRET_KEY" {
		t.Fatalf("filtered list = %d of %d (%v)", len(entries), total, err)
	}
}

// TestShortFilterInASmallProject: a one- or two-character filter in a
// project of 1,000 entries, beside one of 100,000, walks only the small
// project's keys — also after many executions, when a prepared statement
// would switch to a generic plan.
func TestShortFilterInASmallProject(t *testing.T) {
	t.Parallel()
	st, ctx := vaultStore(t)
	if err := st.ExecForTest(ctx, `INSERT INTO vault_entries (project_id, key, key_id, sealed)
		SELECT 'blog', 'KEY_' || upper(md5(i::text)) || '_' || i, 'k1', '\x00'::bytea FROM generate_series(1, 100000) AS i;
		INSERT INTO vault_entries (project_id, key, key_id, sealed)
		SELECT 'shop', 'KEY_' || i || CASE WHEN i % 100 = 0 THEN '_QZ' ELSE '' END, 'k1', '\x00'::bytea FROM generate_series(1, 1000) AS i;
		ANALYZE vault_entries`); err != nil {
		t.Fatal(err)
	}
	for range 8 {
		entries, total, err := st.ListVaultEntries(ctx, "shop", store.Page{Limit: 25, Filter: "qz"}, nil)
		if err != nil || total != 10 || len(entries) != 10 {
			t.Fatalf("short filter: %d of %d (%v)", len(entries), total, err)
		}
	}
	plan, err := st.ExplainVaultFilterForTest(ctx, "shop", "qz")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("EXPLAIN ANALYZE of a two-character filter in a 1,000-entry project:\n%s", plan)
	if strings.Contains(plan, "trgm") || !strings.Contains(plan, "vault_entries_pkey") {
		t.Fatalf("a two-character filter must walk the project's keys, not trigrams:\n%s", plan)
	}
	if _, total, _ := st.ListVaultEntries(ctx, "shop", store.Page{Limit: 25, Filter: "_q"}, nil); total != 10 {
		t.Fatalf("\"_q\" matches literally: %d", total)
	}
}

func TestVaultListIsolatedPerProjectAndFilterIsLiteral(t *testing.T) {
	t.Parallel()
	st, ctx := vaultStore(t)
	uid := int64(1)
	ev := store.VaultAccess{UserID: &uid, Username: "u", Channel: "api"}
	for _, e := range []struct{ project, key string }{{"shop", "A_B"}, {"shop", "AXB"}, {"blog", "A_B"}} {
		ev.ProjectID, ev.Key = e.project, e.key
		if err := st.CreateVaultEntry(ctx, &store.VaultEntry{ProjectID: e.project, Key: e.key, KeyID: "k1", Sealed: []byte{1}}, ev); err != nil {
			t.Fatal(err)
		}
	}
	entries, total, err := st.ListVaultEntries(ctx, "shop", store.Page{Limit: 10, Filter: "a_b"}, nil)
	if err != nil || total != 1 || entries[0].Key != "A_B" || entries[0].ProjectID != "shop" {
		t.Fatalf("\"_\" must match itself only, within one project: %d %v (%v)", total, entries, err)
	}
	ev.ProjectID, ev.Key = "shop", "A_B"
	err = st.CreateVaultEntry(ctx, &store.VaultEntry{ProjectID: "shop", Key: "A_B", KeyID: "k1", Sealed: []byte{1}}, ev)
	if err == nil || !strings.Contains(err.Error(), "vault_entries_pkey") {
		t.Fatalf("duplicate key in one project: %v", err)
	}
	var logged int
	_ = st.QueryIntForTest(ctx, "SELECT count(*) FROM vault_access_log WHERE action = 'create'", &logged)
	if logged != 3 {
		t.Fatalf("a failed create must log nothing: %d create rows", logged)
	}
	for _, bad := range []string{"lower", "1ABC", "_X", strings.Repeat("A", 256)} {
		err := st.ExecForTest(ctx, fmt.Sprintf("INSERT INTO vault_entries (project_id, key, key_id, sealed) VALUES ('shop', '%s', 'k', '\\x00')", bad))
		if err == nil {
			t.Errorf("the database accepted key %q", bad)
		}
	}
}

// TestAccessLogCountStops: the log's count stops at LogCountCap, so a page of
// a long history costs the same as one of a short history.
func TestAccessLogCountStops(t *testing.T) {
	t.Parallel()
	st, ctx := vaultStore(t)
	if err := st.ExecForTest(ctx, fmt.Sprintf(`INSERT INTO vault_access_log (user_id, username, project_id, key, action, channel)
		SELECT 1, 'uuu', 'shop', 'K', 'read', 'api' FROM generate_series(1, %d)`, store.LogCountCap+50)); err != nil {
		t.Fatal(err)
	}
	log, total, err := st.ListVaultAccess(ctx, "shop", store.VaultLogQuery{Page: store.Page{Limit: 25}})
	if err != nil || total != store.LogCountCap || len(log) != 25 {
		t.Fatalf("%d rows, total %d (%v)", len(log), total, err)
	}
	if _, total, _ := st.ListVaultAccess(ctx, "blog", store.VaultLogQuery{Page: store.Page{Limit: 25}}); total != 0 {
		t.Fatalf("another project: %d", total)
	}
}

// TestVaultListCountsEveryPage: the count rides on the page's rows, so a
// page past the end counts on its own; a read page logs exactly its rows.
func TestVaultListCountsEveryPage(t *testing.T) {
	t.Parallel()
	st, ctx := vaultStore(t)
	if err := st.ExecForTest(ctx, `INSERT INTO vault_entries (project_id, key, key_id, sealed)
		SELECT 'shop', 'KEY_' || lpad(i::text, 2, '0'), 'k1', '\x00'::bytea FROM generate_series(1, 12) AS i`); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		page       store.Page
		rows, want int
		first      string
	}{
		{store.Page{Limit: 5}, 5, 12, "KEY_01"},
		{store.Page{Offset: 10, Limit: 5}, 2, 12, "KEY_11"},
		{store.Page{Offset: 40, Limit: 5}, 0, 12, ""},
		{store.Page{Offset: 5, Limit: 5, Filter: "1"}, 0, 4, ""},
		{store.Page{Limit: 5, Filter: "zz"}, 0, 0, ""},
	} {
		entries, total, err := st.ListVaultEntries(ctx, "shop", c.page, nil)
		if err != nil || len(entries) != c.rows || total != c.want || (c.rows > 0 && entries[0].Key != c.first) {
			t.Fatalf("%+v: %d rows of %d (%v), want %d of %d from %q", c.page, len(entries), total, err, c.rows, c.want, c.first)
		}
	}
	uid := int64(1)
	entries, total, err := st.ListVaultEntries(ctx, "shop", store.Page{Offset: 3, Limit: 4},
		&store.VaultAccess{UserID: &uid, Username: "uuu", Channel: "api"})
	if err != nil || len(entries) != 4 || total != 12 {
		t.Fatalf("read page: %d of %d (%v)", len(entries), total, err)
	}
	var logged int
	if err := st.QueryIntForTest(ctx, "SELECT count(*) FROM vault_access_log WHERE action = 'read' AND key BETWEEN 'KEY_04' AND 'KEY_07'", &logged); err != nil || logged != 4 {
		t.Fatalf("read page logged %d rows (%v), want its 4", logged, err)
	}
}

// TestAccessLogKeepsWhoReadAfterTheyAreGone: a read's log row keeps the
// user's and the token's ids after the account is deleted (ids are never
// reused), and goes with its project when the project is deleted.
func TestAccessLogKeepsWhoReadAfterTheyAreGone(t *testing.T) {
	t.Parallel()
	st, ctx := vaultStore(t)
	u, err := st.UserByUsername(ctx, "uuu")
	if err != nil {
		t.Fatal(err)
	}
	pat := store.PAT{UserID: u.ID, Name: "ci", Hash: []byte(strings.Repeat("h", 32)), Hint: "stp_…abcd"}
	if err := st.CreatePAT(ctx, &pat); err != nil {
		t.Fatal(err)
	}
	if err := st.ExecForTest(ctx, `INSERT INTO vault_entries (project_id, key, key_id, sealed) VALUES ('shop', 'K', 'k1', '\x00'), ('blog', 'K', 'k1', '\x00')`); err != nil {
		t.Fatal(err)
	}
	for _, project := range []string{"shop", "blog"} {
		if _, err := st.ReadVaultEntry(ctx, project, "K", store.VaultAccess{UserID: &u.ID, Username: u.Username, TokenID: &pat.ID, Channel: "api"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.DeleteUser(ctx, u.ID); err != nil {
		t.Fatal(err)
	}
	log, _, err := st.ListVaultAccess(ctx, "shop", store.VaultLogQuery{Page: store.Page{Limit: 25}})
	if err != nil || len(log) != 1 {
		t.Fatalf("%d rows (%v)", len(log), err)
	}
	if r := log[0]; r.UserID == nil || *r.UserID != u.ID || r.TokenID == nil || *r.TokenID != pat.ID || r.Username != "uuu" {
		t.Fatalf("the log row after the user's deletion: user %v, token %v, %q", r.UserID, r.TokenID, r.Username)
	}
	if err := st.DeleteProject(ctx, "shop"); err != nil {
		t.Fatal(err)
	}
	var kept int
	if err := st.QueryIntForTest(ctx, "SELECT count(*) FROM vault_access_log WHERE project_id = 'shop'", &kept); err != nil || kept != 0 {
		t.Fatalf("the deleted project kept %d log rows (%v)", kept, err)
	}
	if log, _, err := st.ListVaultAccess(ctx, "blog", store.VaultLogQuery{Page: store.Page{Limit: 25}}); err != nil || len(log) != 1 {
		t.Fatalf("another project's log: %d rows (%v)", len(log), err)
	}
}
