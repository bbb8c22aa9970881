package vault_test

import (
	"context"
	"crypto/rand"
	"os"
	"testing"

	"stencil/store"
	"stencil/store/storetest"
	"stencil/vault"
	"stencil/vaultcrypt"
)

func TestMain(m *testing.M) { os.Exit(storetest.Main(m)) }

func key(t *testing.T, id string) vaultcrypt.Key {
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	return vaultcrypt.Key{ID: id, Secret: secret}
}

// TestVaultSealsEveryValue: what is written is stored sealed and read
// back opened, each read counted on its channel and logged; versions,
// lists and exports read the same; rotation re-seals every entry under
// the new active key, readable after; a link opens only at its place.
func TestVaultSealsEveryValue(t *testing.T) {
	ctx := context.Background()
	pool := storetest.Pool(t)
	st := store.New(pool)
	u := store.User{Username: "root", Email: "root@example.com", Role: store.RoleRoot, FirstName: "R", LastName: "Oot", PasswordHash: "x"}
	if err := st.CreateUser(ctx, &u); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateProject(ctx, &store.Project{ID: "shop", Name: "Shop", APIPath: "/shop"}, u.ID); err != nil {
		t.Fatal(err)
	}
	old := key(t, "k1")
	keyring, err := vaultcrypt.NewKeyring([]vaultcrypt.Key{old})
	if err != nil {
		t.Fatal(err)
	}
	reads := map[string]int{}
	v := vault.New(vault.Config{Store: st, Keyring: keyring, Versions: 5, Reads: func(ch string, n int) { reads[ch] += n }})
	by := store.VaultAccess{UserID: &u.ID, Username: "root", ProjectID: "shop", Key: "API_KEY", Channel: "api"}
	if _, err := v.Create(ctx, "shop", "API_KEY", "sk-one", by); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Update(ctx, "shop", "API_KEY", "sk-two", by); err != nil {
		t.Fatal(err)
	}
	var stored []byte
	if err := pool.QueryRow(ctx, "SELECT sealed FROM vault_entries WHERE key = 'API_KEY'").Scan(&stored); err != nil || len(stored) == 0 {
		t.Fatalf("%v", err)
	}
	if e, value, err := v.Read(ctx, "shop", "API_KEY", by); err != nil || value != "sk-two" || e.KeyID != "k1" {
		t.Fatalf("read: %q %v", value, err)
	}
	if _, value, err := v.ReadVersion(ctx, "shop", "API_KEY", 1, by); err != nil || value != "sk-one" {
		t.Fatalf("version 1: %q %v", value, err)
	}
	entries, values, total, err := v.List(ctx, "shop", store.Page{Limit: 10}, by)
	if err != nil || total != 1 || len(entries) != 1 || values[0] != "sk-two" {
		t.Fatalf("list: %v %v %d %v", entries, values, total, err)
	}
	if all, err := v.Export(ctx, "shop", by); err != nil || all["API_KEY"] != "sk-two" {
		t.Fatalf("export: %v %v", all, err)
	}
	if reads["api"] != 3 {
		t.Fatalf("reads counted: %v", reads)
	}
	var logged int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM vault_access_log WHERE action = 'read'").Scan(&logged); err != nil || logged != 4 {
		t.Fatalf("%d reads logged (%v)", logged, err)
	}
	// Rotation: a new active key, the old one kept to open.
	rotated, err := vaultcrypt.NewKeyring([]vaultcrypt.Key{key(t, "k2"), old})
	if err != nil {
		t.Fatal(err)
	}
	w := vault.New(vault.Config{Store: st, Keyring: rotated, Versions: 5})
	batches := 0
	n, err := w.Rotate(ctx, 500, func(int, int) { batches++ })
	if err != nil || n != 2 || batches != 1 || w.ActiveKey() != "k2" { // the entry and its kept version
		t.Fatalf("rotate: %d in %d batches, %v", n, batches, err)
	}
	if e, value, err := w.Read(ctx, "shop", "API_KEY", by); err != nil || value != "sk-two" || e.KeyID != "k2" {
		t.Fatalf("after rotation: %q %s %v", value, e.KeyID, err)
	}
	// Links open only where they were sealed.
	id, sealed, err := w.SealLink("shop", "outbox link kim@example.com", "https://stencil.example.com/web/invite?token=t")
	if err != nil {
		t.Fatal(err)
	}
	if link, err := w.OpenLink(id, "shop", "outbox link kim@example.com", sealed); err != nil || link != "https://stencil.example.com/web/invite?token=t" {
		t.Fatalf("open: %q %v", link, err)
	}
	if _, err := w.OpenLink(id, "shop", "outbox link eve@example.com", sealed); err == nil {
		t.Fatal("a link opened at another place")
	}
}
