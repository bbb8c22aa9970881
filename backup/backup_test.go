package backup

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestArchiveRoundTrip: what Write writes, Read reads back; the keys are
// sealed (not in the archive in the clear) and open only with the
// passphrase.
func TestArchiveRoundTrip(t *testing.T) {
	dir := t.TempDir()
	dump := filepath.Join(dir, "in.dump")
	if err := os.WriteFile(dump, []byte("PGDMP the database"), 0o600); err != nil {
		t.Fatal(err)
	}
	secrets := &Secrets{VaultKeys: "dev-1a2b:S2V5S2V5S2V5S2V5S2V5S2V5S2V5S2V5S2V5S2V5S2U=", JWTSecret: "jwt-secret-of-forty-eight-characters-in-the-clear"}
	m := Manifest{CreatedAt: time.Now().UTC().Truncate(time.Second), VaultKeyIDs: []string{"dev-1a2b"}, Keys: KeysSealed, Database: "pg_dump custom"}
	path := filepath.Join(dir, "b.tar")
	if err := Write(path, m, secrets, "a long passphrase", dump); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(path)
	for _, clear := range []string{secrets.VaultKeys, "S2V5S2V5", secrets.JWTSecret} {
		if bytes.Contains(raw, []byte(clear)) {
			t.Fatalf("the archive holds %q in the clear", clear)
		}
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", st.Mode())
	}
	out := t.TempDir()
	a, err := Read(path, out)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(a.DumpPath); string(got) != "PGDMP the database" || a.Manifest.VaultKeyIDs[0] != "dev-1a2b" || !a.Manifest.CreatedAt.Equal(m.CreatedAt) {
		t.Fatalf("read back: %+v %q", a.Manifest, got)
	}
	if _, err := OpenSecrets("another passphrase", a.Sealed); !errors.Is(err, ErrPassphrase) {
		t.Fatalf("a wrong passphrase: %v", err)
	}
	got, err := OpenSecrets("a long passphrase", a.Sealed)
	if err != nil || got != *secrets {
		t.Fatalf("opened: %+v %v", got, err)
	}
	if _, err := Read(dump, out); err == nil {
		t.Fatal("a file that is no archive was read")
	}
}
