package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// VaultVersion is one version of a vault entry, never its value: when it
// became the live value and who set it.
type VaultVersion struct {
	Version   int64
	SetAt     time.Time
	SetBy     *int64
	SetByName string
	Live      bool
}

// VaultVersions lists the versions entry key of project keeps, the live one
// first, then the older ones newest first. Nothing is read, so nothing is
// logged. An entry that does not exist is ErrNotFound.
func (s *Store) VaultVersions(ctx context.Context, project, key string) (_ []VaultVersion, err error) {
	defer wrap(&err, "vault versions", project, key)
	rows, err := s.db.Query(ctx, `SELECT v.version, v.set_at, v.set_by, coalesce(u.username, ''), v.live FROM (
			SELECT version, updated_at AS set_at, updated_by AS set_by, true AS live FROM vault_entries WHERE project_id = $1 AND key = $2
			UNION ALL
			SELECT version, set_at, set_by, false FROM vault_versions
			WHERE project_id = $1 AND key = $2 AND EXISTS (SELECT 1 FROM vault_entries WHERE project_id = $1 AND key = $2)
		) v LEFT JOIN users u ON u.id = v.set_by ORDER BY v.version DESC`, project, key)
	if err != nil {
		return nil, err
	}
	list, err := pgx.CollectRows(rows, pgx.RowToStructByPos[VaultVersion])
	if err == nil && len(list) == 0 {
		err = ErrNotFound
	}
	return list, err
}

// ReadVaultVersion returns version n of entry key of project — the live
// value or a kept older one — and logs the read with its number, in one
// statement: the value comes back only with its log row. A version the
// entry does not keep is ErrNotFound.
func (s *Store) ReadVaultVersion(ctx context.Context, project, key string, n int64, ev VaultAccess) (_ VaultEntry, err error) {
	defer wrap(&err, "read vault version", project, key)
	e, err := scanVaultEntry(s.db.QueryRow(ctx, `WITH v AS (
			SELECT `+vaultColumns+` FROM vault_entries WHERE project_id = $1 AND key = $2 AND version = $3
			UNION ALL
			SELECT o.project_id, o.key, o.key_id, o.sealed, e.created_at, o.set_at, e.created_by, o.set_by, o.version
			FROM vault_versions o JOIN vault_entries e USING (project_id, key)
			WHERE o.project_id = $1 AND o.key = $2 AND o.version = $3
		), logged AS (
			INSERT INTO vault_access_log (user_id, username, token_id, project_id, key, action, channel, version)
			SELECT $4, $5, $6, project_id, key, 'read', $7, version FROM v
		)
		SELECT `+vaultColumns+` FROM v`, project, key, n, ev.UserID, ev.Username, ev.TokenID, ev.Channel))
	return e, err
}

// RestoreVaultVersion makes the value of version n of entry key the live
// one again, as a new version (the value it replaces is kept as any
// update's is), and logs it with the version restored. The live version
// itself, or one not kept, is ErrNotFound.
func (s *Store) RestoreVaultVersion(ctx context.Context, project, key string, n int64, ev VaultAccess, keep int) (_ VaultEntry, err error) {
	defer wrap(&err, "restore vault version", project, key)
	e := VaultEntry{ProjectID: project, Key: key}
	err = s.InTx(ctx, func(tx *Store) error {
		err := tx.db.QueryRow(ctx, `SELECT key_id, sealed FROM vault_versions WHERE project_id = $1 AND key = $2 AND version = $3`,
			project, key, n).Scan(&e.KeyID, &e.Sealed)
		if err != nil {
			return translate(err)
		}
		if err := tx.setVaultValue(ctx, &e, ev.UserID, keep); err != nil {
			return err
		}
		ev.Action, ev.Version = "restore", &n
		return tx.logVaultChange(ctx, ev, fmt.Sprintf("restored to version %d as version %d", n, e.Version))
	})
	e.Sealed = nil
	return e, err
}

// resealKept re-encrypts up to limit kept versions not sealed under
// active, in tx, and returns how many.
func (s *Store) resealKept(ctx context.Context, active string, limit int, reseal func(VaultEntry) (string, []byte, error)) (int, error) {
	n := 0
	for _, table := range []struct{ name, key, where string }{
		{"vault_versions", "project_id, key, version", "project_id = $1 AND key = $2 AND version = $3"},
	} {
		rows, err := s.db.Query(ctx, "SELECT "+table.key+", key_id, sealed FROM "+table.name+
			" WHERE key_id <> $1 ORDER BY "+table.key+" LIMIT $2 FOR UPDATE", active, limit-n)
		if err != nil {
			return n, err
		}
		type kept struct {
			Project, Key string
			Version      int64
			KeyID        string
			Sealed       []byte
		}
		list, err := pgx.CollectRows(rows, pgx.RowToStructByPos[kept])
		if err != nil {
			return n, err
		}
		for _, k := range list {
			keyID, sealed, err := reseal(VaultEntry{ProjectID: k.Project, Key: k.Key, KeyID: k.KeyID, Sealed: k.Sealed})
			if err != nil {
				return n, err
			}
			if _, err := s.db.Exec(ctx, "UPDATE "+table.name+" SET key_id = $4, sealed = $5 WHERE "+table.where,
				k.Project, k.Key, k.Version, keyID, sealed); err != nil {
				return n, err
			}
		}
		n += len(list)
		if n >= limit {
			break
		}
	}
	return n, nil
}
