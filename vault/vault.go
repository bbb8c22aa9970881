// Package vault is the only package that seals or opens a secret
// (docs/vaults.md): a project's entries — each read together with its log
// row, writes, versions, imports and exports, and the rotation to a new
// master key — and the one-time links the platform keeps sealed
// (invitations, messages of its own). Handlers, the route runtime, the
// mailer and the CLI call it; none of them touches a key. It speaks no
// HTTP, decides no rights (its callers check membership) and keeps no
// value it returned.
package vault

import (
	"context"
	"fmt"

	"stencil/store"
	"stencil/vaultcrypt"
)

// Vault seals and opens values under a keyring, reading and writing
// entries through the store.
type Vault struct {
	store    *store.Store
	keyring  *vaultcrypt.Keyring
	versions int
	reads    func(channel string, n int)
}

// Config is what a Vault works with: the store, the keyring of
// VAULT_KEYS, how many older values an entry keeps (VAULT_VERSIONS) and,
// when set, a counter of the values read by channel (metrics).
type Config struct {
	Store    *store.Store
	Keyring  *vaultcrypt.Keyring
	Versions int
	Reads    func(channel string, n int)
}

// New is the vault of cfg.
func New(cfg Config) *Vault {
	reads := cfg.Reads
	if reads == nil {
		reads = func(string, int) {}
	}
	return &Vault{store: cfg.Store, keyring: cfg.Keyring, versions: cfg.Versions, reads: reads}
}

// Seal is the entry key of project holding value, sealed: what a write
// stores.
func (v *Vault) Seal(project, key, value string) (store.VaultEntry, error) {
	e := store.VaultEntry{ProjectID: project, Key: key}
	var err error
	e.KeyID, e.Sealed, err = v.keyring.Seal(project, key, []byte(value))
	return e, err
}

// Open is the value of an entry already read (its read logged by the
// statement that read it).
func (v *Vault) Open(e store.VaultEntry) (string, error) {
	value, err := v.keyring.Open(e.KeyID, e.ProjectID, e.Key, e.Sealed)
	return string(value), err
}

// Create adds entry key of project, logged as by.
func (v *Vault) Create(ctx context.Context, project, key, value string, by store.VaultAccess) (store.VaultEntry, error) {
	e, err := v.Seal(project, key, value)
	if err != nil {
		return e, err
	}
	return e, v.store.CreateVaultEntry(ctx, &e, by)
}

// Update gives entry key of project a new value, the one it replaces kept
// as a version; logged as by.
func (v *Vault) Update(ctx context.Context, project, key, value string, by store.VaultAccess) (store.VaultEntry, error) {
	e, err := v.Seal(project, key, value)
	if err != nil {
		return e, err
	}
	return e, v.store.UpdateVaultEntry(ctx, &e, by, v.versions)
}

// Read reads entry key of project for by: the read is logged in the
// statement that reads it, before the value is opened.
func (v *Vault) Read(ctx context.Context, project, key string, by store.VaultAccess) (store.VaultEntry, string, error) {
	e, err := v.store.ReadVaultEntry(ctx, project, key, by)
	if err != nil {
		return e, "", err
	}
	v.reads(by.Channel, 1)
	value, err := v.Open(e)
	return e, value, err
}

// ReadVersion reads version n of entry key of project for by, logged
// with the version's number.
func (v *Vault) ReadVersion(ctx context.Context, project, key string, n int64, by store.VaultAccess) (store.VaultEntry, string, error) {
	e, err := v.store.ReadVaultVersion(ctx, project, key, n, by)
	if err != nil {
		return e, "", err
	}
	v.reads(by.Channel, 1)
	value, err := v.Open(e)
	return e, value, err
}

// List reads a page of project's entries with their values for by, each
// read logged; values[i] is entries[i]'s.
func (v *Vault) List(ctx context.Context, project string, page store.Page, by store.VaultAccess) (entries []store.VaultEntry, values []string, total int, err error) {
	entries, total, err = v.store.ListVaultEntries(ctx, project, page, &by)
	if err != nil {
		return nil, nil, 0, err
	}
	v.reads(by.Channel, len(entries))
	values = make([]string, len(entries))
	for i, e := range entries {
		if values[i], err = v.Open(e); err != nil {
			return nil, nil, 0, err
		}
	}
	return entries, values, total, nil
}

// Export reads every value of project for by, by key: one log row for
// the export, one for each value read. The reads counter counts single
// reads and pages, not exports (docs/vaults.md).
func (v *Vault) Export(ctx context.Context, project string, by store.VaultAccess) (map[string]string, error) {
	entries, err := v.store.ExportVault(ctx, project, by)
	if err != nil {
		return nil, err
	}
	values := make(map[string]string, len(entries))
	for _, e := range entries {
		if values[e.Key], err = v.Open(e); err != nil {
			return nil, err
		}
	}
	return values, nil
}

// Rotate re-seals, under the active key, every entry sealed under
// another, batch entries a transaction, telling done after each; it
// returns how many it re-sealed.
func (v *Vault) Rotate(ctx context.Context, batch int, done func(n, total int)) (int, error) {
	reseal := func(e store.VaultEntry) (string, []byte, error) {
		value, err := v.keyring.Open(e.KeyID, e.ProjectID, e.Key, e.Sealed)
		if err != nil {
			return "", nil, fmt.Errorf("%s/%s: %w", e.ProjectID, e.Key, err)
		}
		return v.keyring.Seal(e.ProjectID, e.Key, value)
	}
	total := 0
	for {
		n, err := v.store.ResealVaultBatch(ctx, v.keyring.Active(), batch, reseal)
		if err != nil || n == 0 {
			return total, err
		}
		total += n
		done(n, total)
	}
}

// ActiveKey is the id of the key new values are sealed under.
func (v *Vault) ActiveKey() string { return v.keyring.Active() }

// SealLink seals a one-time link (or token) kept at place of project: an
// invitation's, a message's (docs/mail.md).
func (v *Vault) SealLink(project, place, link string) (keyID string, sealed []byte, err error) {
	return v.keyring.Seal(project, place, []byte(link))
}

// OpenLink opens what SealLink sealed; a link sealed under a key the
// keyring no longer has is vaultcrypt.ErrUnknownKey.
func (v *Vault) OpenLink(keyID, project, place string, sealed []byte) (string, error) {
	link, err := v.keyring.Open(keyID, project, place, sealed)
	return string(link), err
}

// Versions is how many older values an entry keeps (VAULT_VERSIONS).
func (v *Vault) Versions() int { return v.versions }

// Restore makes version n of entry key of project its live value, as a
// new version, logged as by.
func (v *Vault) Restore(ctx context.Context, project, key string, n int64, by store.VaultAccess) (store.VaultEntry, error) {
	return v.store.RestoreVaultVersion(ctx, project, key, n, by, v.versions)
}
