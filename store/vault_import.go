package store

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// VaultImport is what an import of a .env file writes: entries to add and
// entries whose value changes (both sealed), and keys to delete.
type VaultImport struct {
	Add, Change []VaultEntry
	Delete      []string
	// Read names the entries whose values planning read (to compare them):
	// each is logged as read.
	Read []string
}

// VaultImportPlan decides an import given the project's live entries.
type VaultImportPlan func(live map[string]VaultEntry) (VaultImport, error)

// ImportVault plans an import and, unless dryRun, applies it, in one
// transaction: imports of a project take turns, and the live entries are
// locked while plan compares them, so no save can slip in between (a key
// created meanwhile is a conflict on vault_entries_pkey, and nothing is
// written); every value plan read is logged as read; every write is
// logged as a create, update or delete; applied, the import is also one
// import row, which those rows name as their batch. Updates keep the
// values they replace (keep of them), deletes are permanent. A dry run
// commits only the read log rows.
func (s *Store) ImportVault(ctx context.Context, project string, ev VaultAccess, keep int, dryRun bool, plan VaultImportPlan) (_ VaultImport, err error) {
	defer wrap(&err, "import vault", project)
	var out VaultImport
	err = s.InTx(ctx, func(tx *Store) error {
		lock := " FOR UPDATE"
		if dryRun {
			lock = ""
		} else {
			// Imports of one project take turns: the second plans against
			// what the first wrote (row locks cannot hold back keys that do
			// not exist yet).
			if _, err := tx.db.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtextextended('vault-import:' || $1, 0))", project); err != nil {
				return err
			}
		}
		rows, err := tx.db.Query(ctx, "SELECT "+vaultColumns+" FROM vault_entries WHERE project_id = $1"+lock, project)
		if err != nil {
			return err
		}
		live := map[string]VaultEntry{}
		entries, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (VaultEntry, error) {
			var e VaultEntry
			return e, r.Scan(e.columns()...)
		})
		if err != nil {
			return err
		}
		for _, e := range entries {
			live[e.Key] = e
		}
		if out, err = plan(live); err != nil {
			return err
		}
		if !dryRun {
			// The import's own row takes an id now, so that each row it
			// logs can name it, and is written last, with its count.
			var batch int64
			if err := tx.db.QueryRow(ctx, "SELECT nextval(pg_get_serial_sequence('vault_access_log', 'id'))").Scan(&batch); err != nil {
				return err
			}
			ev.Batch = &batch
		}
		if err := tx.logMany(ctx, ev, "read", out.Read); err != nil {
			return err
		}
		if dryRun {
			return nil
		}
		if err := tx.importWrites(ctx, project, ev, keep, out); err != nil {
			return err
		}
		if _, err := tx.db.Exec(ctx, `INSERT INTO vault_access_log (id, user_id, username, token_id, project_id, key, action, channel, keys)
			OVERRIDING SYSTEM VALUE VALUES ($1, $2, $3, $4, $5, '', 'import', $6, $7)`,
			*ev.Batch, ev.UserID, ev.Username, ev.TokenID, project, ev.Channel, len(out.Add)+len(out.Change)+len(out.Delete)); err != nil {
			return err
		}
		if len(out.Add)+len(out.Change)+len(out.Delete) == 0 {
			return nil // nothing changed, nothing to tell
		}
		return tx.writeEvent(ctx, Event{Type: "vault_import", ProjectID: in(project), Object: ".env", Summary: out.summary()})
	})
	return out, err
}

// summary tells what an import wrote, keys only, the counts first:
// ".env imported: 2 added, 1 deleted — A, B; C".
func (im VaultImport) summary() string {
	var counts, keys []string
	for _, part := range []struct {
		what string
		keys []string
	}{{"added", entryKeys(im.Add)}, {"changed", entryKeys(im.Change)}, {"deleted", im.Delete}} {
		if len(part.keys) > 0 {
			counts = append(counts, fmt.Sprintf("%d %s", len(part.keys), part.what))
			keys = append(keys, strings.Join(part.keys, ", "))
		}
	}
	return ".env imported: " + strings.Join(counts, ", ") + " — " + strings.Join(keys, "; ")
}

func entryKeys(es []VaultEntry) []string {
	keys := make([]string, len(es))
	for i, e := range es {
		keys[i] = e.Key
	}
	return keys
}

// importWrites writes an import's entries, each logged.
func (s *Store) importWrites(ctx context.Context, project string, ev VaultAccess, keep int, im VaultImport) error {
	columns := func(list []VaultEntry) (keys, keyIDs []string, sealed [][]byte) {
		for _, e := range list {
			keys, keyIDs, sealed = append(keys, e.Key), append(keyIDs, e.KeyID), append(sealed, e.Sealed)
		}
		return
	}
	if len(im.Add) > 0 {
		keys, keyIDs, sealed := columns(im.Add)
		if _, err := s.db.Exec(ctx, `INSERT INTO vault_entries (project_id, key, key_id, sealed, created_by, updated_by)
			SELECT $1, k, i, s, $5, $5 FROM unnest($2::text[], $3::text[], $4::bytea[]) AS t(k, i, s)`, project, keys, keyIDs, sealed, ev.UserID); err != nil {
			return translate(err)
		}
		if err := s.logMany(ctx, ev, "create", keys); err != nil {
			return err
		}
	}
	if len(im.Change) > 0 {
		keys, keyIDs, sealed := columns(im.Change)
		// The values replaced become older versions; then the new ones;
		// then what is past keep goes.
		if _, err := s.db.Exec(ctx, `INSERT INTO vault_versions (project_id, key, version, key_id, sealed, set_at, set_by)
			SELECT project_id, key, version, key_id, sealed, updated_at, updated_by FROM vault_entries
			WHERE project_id = $1 AND key = ANY($2)`, project, keys); err != nil {
			return err
		}
		if _, err := s.db.Exec(ctx, `UPDATE vault_entries e SET key_id = t.i, sealed = t.s, updated_at = now(), updated_by = $5, version = e.version + 1
			FROM unnest($2::text[], $3::text[], $4::bytea[]) AS t(k, i, s) WHERE e.project_id = $1 AND e.key = t.k`,
			project, keys, keyIDs, sealed, ev.UserID); err != nil {
			return err
		}
		if _, err := s.db.Exec(ctx, `DELETE FROM vault_versions v USING vault_entries e
			WHERE v.project_id = $1 AND v.key = ANY($2) AND e.project_id = v.project_id AND e.key = v.key AND v.version < e.version - $3`,
			project, keys, keep); err != nil {
			return err
		}
		if err := s.logMany(ctx, ev, "update", keys); err != nil {
			return err
		}
	}
	if len(im.Delete) > 0 {
		if _, err := s.deleteVaultKeys(ctx, project, im.Delete); err != nil {
			return err
		}
		if err := s.logMany(ctx, ev, "delete", im.Delete); err != nil {
			return err
		}
	}
	return nil
}

// logMany writes one access-log row per key, with ev's who and channel.
func (s *Store) logMany(ctx context.Context, ev VaultAccess, action string, keys []string) error {
	if len(keys) == 0 {
		return nil
	}
	_, err := s.db.Exec(ctx, `INSERT INTO vault_access_log (user_id, username, token_id, project_id, key, action, channel, batch)
		SELECT $1, $2, $3, $4, k, $5, $6, $8 FROM unnest($7::text[]) AS k`, ev.UserID, ev.Username, ev.TokenID, ev.ProjectID, action, ev.Channel, keys, ev.Batch)
	return err
}
