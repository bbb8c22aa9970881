package store_test

import (
	"testing"

	"stencil/store"
)

// TestVaultListingFollowsTheVersion: every statement that changes a
// project's entries moves its vault version on once, and only its own; a
// masked page is kept while the version is the same, read again once it
// moves, and read afresh in a transaction.
func TestVaultListingFollowsTheVersion(t *testing.T) {
	t.Parallel()
	st, ctx := vaultStore(t)
	version := func(project string) int64 {
		t.Helper()
		p, err := st.Project(ctx, project, 1)
		if err != nil {
			t.Fatal(err)
		}
		return p.VaultVersion
	}
	exec := func(sql string) {
		t.Helper()
		if err := st.ExecForTest(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	list := func(p store.Project) []string {
		t.Helper()
		entries, total, err := st.VaultListing(ctx, p, store.Page{Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		for _, e := range entries {
			if e.Sealed != nil {
				t.Errorf("listing of %s holds the sealed value of %s", p.ID, e.Key)
			}
			keys = append(keys, e.Key)
		}
		if total != len(keys) {
			t.Errorf("listing counts %d, shows %v", total, keys)
		}
		return keys
	}
	project := func(id string) store.Project {
		t.Helper()
		p, err := st.Project(ctx, id, 1)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}

	shop, blog := version("shop"), version("blog")
	exec(`INSERT INTO vault_entries (project_id, key, key_id, sealed) VALUES ('shop', 'A', 'k1', '\x01'), ('shop', 'B', 'k1', '\x02')`)
	if v := version("shop"); v != shop+1 {
		t.Fatalf("two entries inserted in one statement moved shop from %d to %d, want one step", shop, v)
	}
	if v := version("blog"); v != blog {
		t.Fatalf("shop's insert moved blog's version from %d to %d", blog, v)
	}
	exec(`INSERT INTO vault_entries (project_id, key, key_id, sealed) VALUES ('blog', 'A', 'k1', '\x03');
		UPDATE vault_entries SET key_id = 'k2'`) // a rotation: every project, one statement
	if s, b := version("shop"), version("blog"); s != shop+2 || b != blog+2 {
		t.Fatalf("versions after an insert into blog and a rotation of both: shop %d→%d, blog %d→%d", shop, s, blog, b)
	}
	exec(`DELETE FROM vault_entries WHERE project_id = 'blog'`)
	if v := version("blog"); v != blog+3 {
		t.Fatalf("a delete moved blog from %d to %d", blog+2, v)
	}

	// Kept: a change the version does not tell (its trigger off) is not
	// seen while the version stays.
	p := project("shop")
	if got := list(p); len(got) != 2 {
		t.Fatalf("shop lists %v, want A and B", got)
	}
	exec(`ALTER TABLE vault_entries DISABLE TRIGGER vault_entries_inserted;
		INSERT INTO vault_entries (project_id, key, key_id, sealed) VALUES ('shop', 'HIDDEN', 'k1', '\x04');
		ALTER TABLE vault_entries ENABLE TRIGGER vault_entries_inserted;
		UPDATE projects SET vault_entries = vault_entries + 1 WHERE id = 'shop'`) // the count the trigger keeps, by hand
	if got := list(project("shop")); len(got) != 2 {
		t.Fatalf("shop at the same version lists %v: not kept", got)
	}
	// A page handed out is a copy: changing it changes no later page.
	entries, _, _ := st.VaultListing(ctx, p, store.Page{Limit: 10})
	entries[0].Key = "CHANGED"
	if got := list(p); got[0] != "A" {
		t.Fatalf("a caller's change reached the kept page: %v", got)
	}
	// A transaction reads its own writes.
	err := st.InTx(ctx, func(tx *store.Store) error {
		if err := tx.ExecForTest(ctx, `INSERT INTO vault_entries (project_id, key, key_id, sealed) VALUES ('shop', 'IN_TX', 'k1', '\x05')`); err != nil {
			return err
		}
		entries, _, err := tx.VaultListing(ctx, p, store.Page{Limit: 10})
		if err != nil || len(entries) != 4 {
			t.Errorf("in a transaction, at the version before its insert: %d entries (%v), want 4", len(entries), err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The new version shows everything.
	if got := list(project("shop")); len(got) != 4 {
		t.Fatalf("shop at its new version lists %v, want A, B, HIDDEN and IN_TX", got)
	}
	// A project with entries can still be deleted (its entries go by
	// cascade, and their trigger finds no project row to move).
	if err := st.DeleteProject(ctx, "shop"); err != nil {
		t.Fatal(err)
	}
}
