package store

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
)

// VaultEntry is one secret of a project's vault, as stored: sealed.
type VaultEntry struct {
	ProjectID string
	Key       string
	KeyID     string // the master key that sealed it
	Sealed    []byte
	CreatedAt time.Time
	UpdatedAt time.Time
	CreatedBy *int64
	UpdatedBy *int64
	Version   int64 // grows with each update and restore
	// UpdatedByName is the username of UpdatedBy, in lists only.
	UpdatedByName string
}

// VaultAccess is one row of the access log: who did what to which entry.
type VaultAccess struct {
	ID        int64
	At        time.Time
	UserID    *int64
	Username  string
	TokenID   *int64
	ProjectID string
	Key       string
	Action    string  // create, read, update, delete, restore, export, import
	Channel   string  // api, web, route
	RouteID   *string // the route whose VAULT block read, on channel route
	Version   *int64  // a read of an older version: its number; a restore: the version restored
	// Batch is the id of the export or import row a read or write was
	// part of; Keys, on that row, how many keys it read or wrote.
	Batch *int64
	Keys  *int
	// Reader, on a read, is checked by the read's own statement
	// (ReadVaultSQL): nothing of the caller was read before.
	Reader *ReaderCheck `db:"-"`
}

// ReaderCheck is what a read's statement checks of its reader, UserID,
// before it reads and logs (docs/vaults.md): the account still holds
// CredentialVersion (its token was issued for it) and its effective role in
// the project (EffectiveRole) is Need or higher. The log row then takes the
// account's username. A read refused has no row, as a key not found has:
// ErrNotFound, and nothing logged.
type ReaderCheck struct {
	CredentialVersion int
	Need              string
}

const vaultColumns = "project_id, key, key_id, sealed, created_at, updated_at, created_by, updated_by, version"

func scanVaultEntry(row pgx.Row) (VaultEntry, error) {
	var e VaultEntry
	err := row.Scan(e.columns()...)
	return e, translate(err)
}

// columns are the scan destinations of vaultColumns, in order.
func (e *VaultEntry) columns() []any {
	return []any{&e.ProjectID, &e.Key, &e.KeyID, &e.Sealed, &e.CreatedAt, &e.UpdatedAt, &e.CreatedBy, &e.UpdatedBy, &e.Version}
}

// logVaultChange writes the access-log row of a change of the entry ev
// names and its event, vault_<action>: the key and what happened, never
// the value.
func (s *Store) logVaultChange(ctx context.Context, ev VaultAccess, summary string) error {
	if err := s.logAccess(ctx, ev); err != nil {
		return err
	}
	return s.writeEvent(ctx, Event{Type: "vault_" + ev.Action, ProjectID: in(ev.ProjectID), Object: ev.Key, Summary: ev.Key + " " + summary})
}

// ExportVault reads every entry of the project, in key order, and logs the
// export in the same statement: one export row with the number of keys,
// and a read row for each value that names it as its batch.
func (s *Store) ExportVault(ctx context.Context, project string, ev VaultAccess) (_ []VaultEntry, err error) {
	defer wrap(&err, "export vault", project)
	rows, err := s.db.Query(ctx, `WITH page AS (SELECT `+vaultColumns+` FROM vault_entries WHERE project_id = $1),
		batch AS (
			INSERT INTO vault_access_log (user_id, username, token_id, project_id, key, action, channel, keys)
			SELECT $2, $3, $4, $1, '', 'export', $5, count(*) FROM page RETURNING id
		), logged AS (
			INSERT INTO vault_access_log (user_id, username, token_id, project_id, key, action, channel, batch)
			SELECT $2, $3, $4, page.project_id, page.key, 'read', $5, batch.id FROM page, batch
		)
		SELECT * FROM page ORDER BY key`, project, ev.UserID, ev.Username, ev.TokenID, ev.Channel)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (VaultEntry, error) {
		var e VaultEntry
		return e, r.Scan(e.columns()...)
	})
}

// logAccess writes one access-log row for the entry ev names.
func (s *Store) logAccess(ctx context.Context, ev VaultAccess) error {
	_, err := s.db.Exec(ctx, `INSERT INTO vault_access_log (user_id, username, token_id, project_id, key, action, channel, route_id, version)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`, ev.UserID, ev.Username, ev.TokenID, ev.ProjectID, ev.Key, ev.Action, ev.Channel, ev.RouteID, ev.Version)
	return err
}

// CreateVaultEntry inserts e and logs it, in one transaction; an existing
// key is a conflict on vault_entries_pkey.
func (s *Store) CreateVaultEntry(ctx context.Context, e *VaultEntry, ev VaultAccess) (err error) {
	defer wrap(&err, "create vault entry")
	return s.InTx(ctx, func(tx *Store) error {
		err := tx.db.QueryRow(ctx, `INSERT INTO vault_entries (project_id, key, key_id, sealed, created_by, updated_by)
			VALUES ($1, $2, $3, $4, $5, $5) RETURNING created_at, updated_at, created_by, updated_by, version`,
			e.ProjectID, e.Key, e.KeyID, e.Sealed, ev.UserID).Scan(&e.CreatedAt, &e.UpdatedAt, &e.CreatedBy, &e.UpdatedBy, &e.Version)
		if err != nil {
			return translate(err)
		}
		ev.Action = "create"
		return tx.logVaultChange(ctx, ev, "created")
	})
}

// ReadVaultEntry returns entry key of project and logs the read, in one
// statement (ReadVaultSQL): the entry comes back only with its log row, and
// when that row cannot be written the read fails. Reads that overlap in
// time share the statement (see group), and so its failure.
func (s *Store) ReadVaultEntry(ctx context.Context, project, key string, ev VaultAccess) (_ VaultEntry, err error) {
	defer wrap(&err, "read vault entry", project, key)
	return s.groups.reads.do(ctx, s.db, vaultRead{project: project, key: key, ev: ev})
}

// keyWhere returns the WHERE clause selecting a project's rows ($1) whose key
// contains a filter, and the clause's arguments (the first of them the query
// mode). Each case has its own statement, so that no plan has to fit
// another's: no filter; a filter of one or two characters, too short for
// trigrams, tested on the project's keys in order; and a longer one, a LIKE
// pattern (wildcards escaped, upper case as keys are) that the project's
// trigram index serves. Filtered statements are planned with their values
// each time (no generic plan: a pattern's selectivity is in its value).
func keyWhere(project, filter string) (string, []any) {
	filter = strings.ToUpper(filter)
	switch {
	case filter == "":
		return " WHERE project_id = $1", []any{project}
	case utf8.RuneCountInString(filter) < 3:
		return " WHERE project_id = $1 AND strpos(key, $2) > 0", []any{pgx.QueryExecModeExec, project, filter}
	}
	pattern := "%" + strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(filter) + "%"
	return " WHERE project_id = $1 AND key LIKE $2", []any{pgx.QueryExecModeExec, project, pattern}
}

// params is how many numbered parameters args holds (a query mode first is
// none).
func params(args []any) int {
	if len(args) > 0 {
		if _, ok := args[0].(pgx.QueryExecMode); ok {
			return len(args) - 1
		}
	}
	return len(args)
}

// LogCountCap bounds counts over the access log, which grows without end:
// counting it all would cost more the longer a project lives.
const LogCountCap = 10_000

// ListVaultEntries returns a page of the project's entries whose key
// contains the filter, ordered by key, and the number of matches, in one
// statement: the count is a subquery computed once and carried on each row
// (a page past the end, which has no rows, counts on its own). With read
// set, every entry returned is logged as read by the same statement (its
// value is about to be shown): no entry comes back without its log row.
func (s *Store) ListVaultEntries(ctx context.Context, project string, p Page, read *VaultAccess) (_ []VaultEntry, _ int, err error) {
	defer wrap(&err, "list vault entries", project)
	sql, pageArgs, count, args := vaultListSQL(project, p, read)
	rows, err := s.db.Query(ctx, sql, pageArgs...)
	if err != nil {
		return nil, 0, err
	}
	var total int
	entries, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (VaultEntry, error) {
		var e VaultEntry
		err := r.Scan(append(append([]any{&total}, e.columns()...), &e.UpdatedByName)...)
		return e, err
	})
	if err == nil && len(entries) == 0 && p.Offset > 0 {
		err = s.db.QueryRow(ctx, count, args...).Scan(&total)
	}
	return entries, total, err
}

// vaultListSQL is the statement of ListVaultEntries and its arguments, and
// the count alone with its own.
func vaultListSQL(project string, p Page, read *VaultAccess) (sql string, pageArgs []any, count string, args []any) {
	where, args := keyWhere(project, p.Filter)
	count = "SELECT count(*) FROM vault_entries" + where
	if p.Filter == "" {
		// Kept on the project's row (migration 046).
		count = "SELECT vault_entries FROM projects WHERE id = $1"
	}
	n := params(args)
	page := fmt.Sprintf("SELECT %s FROM vault_entries%s ORDER BY key OFFSET $%d LIMIT $%d", vaultColumns, where, n+1, n+2)
	logged := ""
	pageArgs = append(args[:len(args):len(args)], p.Offset, p.Limit)
	if read != nil {
		logged = fmt.Sprintf(`, logged AS (
			INSERT INTO vault_access_log (user_id, username, token_id, project_id, key, action, channel)
			SELECT $%d, $%d, $%d, page.project_id, page.key, 'read', $%d FROM page RETURNING id)`, n+3, n+4, n+5, n+6)
		pageArgs = append(pageArgs, read.UserID, read.Username, read.TokenID, read.Channel)
	}
	sql = fmt.Sprintf(`WITH page AS (%s)%s SELECT (%s), page.*, coalesce((SELECT username FROM users WHERE id = page.updated_by), '')
		FROM page ORDER BY key`, page, logged, count)
	return sql, pageArgs, count, args
}

// UpdateVaultEntry stores a new sealed value for an existing entry as its
// next version and logs it; the value it replaces is kept as an older
// version (the newest keep of them stay).
func (s *Store) UpdateVaultEntry(ctx context.Context, e *VaultEntry, ev VaultAccess, keep int) (err error) {
	defer wrap(&err, "update vault entry")
	return s.InTx(ctx, func(tx *Store) error {
		if err := tx.setVaultValue(ctx, e, ev.UserID, keep); err != nil {
			return err
		}
		ev.Action = "update"
		return tx.logVaultChange(ctx, ev, fmt.Sprintf("updated to version %d", e.Version))
	})
}

// setVaultValue makes e's sealed value the live one of its entry, keeping
// the one it replaces as an older version, inside a transaction. The
// entry's row is locked first: saves of one entry at once take their turns
// and each keeps the value the one before it set.
func (s *Store) setVaultValue(ctx context.Context, e *VaultEntry, by *int64, keep int) error {
	tag, err := s.db.Exec(ctx, `INSERT INTO vault_versions (project_id, key, version, key_id, sealed, set_at, set_by)
		SELECT project_id, key, version, key_id, sealed, updated_at, updated_by FROM vault_entries
		WHERE project_id = $1 AND key = $2 FOR UPDATE`, e.ProjectID, e.Key)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	err = s.db.QueryRow(ctx, `UPDATE vault_entries SET key_id = $3, sealed = $4, updated_at = now(), updated_by = $5, version = version + 1
		WHERE project_id = $1 AND key = $2 RETURNING created_at, updated_at, created_by, updated_by, version`,
		e.ProjectID, e.Key, e.KeyID, e.Sealed, by).Scan(&e.CreatedAt, &e.UpdatedAt, &e.CreatedBy, &e.UpdatedBy, &e.Version)
	if err != nil {
		return translate(err)
	}
	_, err = s.db.Exec(ctx, "DELETE FROM vault_versions WHERE project_id = $1 AND key = $2 AND version < $3",
		e.ProjectID, e.Key, e.Version-int64(keep))
	return err
}

// DeleteVaultEntry removes entry key of project with every version it
// keeps, and logs it, in one transaction: deleting is permanent (docs/vaults.md),
// and the key can be created again at once.
func (s *Store) DeleteVaultEntry(ctx context.Context, project, key string, ev VaultAccess) (err error) {
	defer wrap(&err, "delete vault entry", project, key)
	return s.InTx(ctx, func(tx *Store) error {
		n, err := tx.deleteVaultKeys(ctx, project, []string{key})
		if err != nil {
			return err
		}
		if n == 0 {
			return ErrNotFound
		}
		ev.Action = "delete"
		return tx.logVaultChange(ctx, ev, "deleted with every version it kept")
	})
}

// deleteVaultKeys removes the entries keys of project and every version
// they keep, and returns how many entries went.
func (s *Store) deleteVaultKeys(ctx context.Context, project string, keys []string) (int64, error) {
	tag, err := s.db.Exec(ctx, `WITH v AS (DELETE FROM vault_versions WHERE project_id = $1 AND key = ANY($2))
		DELETE FROM vault_entries WHERE project_id = $1 AND key = ANY($2)`, project, keys)
	return tag.RowsAffected(), err
}

// VaultLogQuery selects access-log rows: a key fragment, an action, one
// batch (its export or import row and the rows it logged), or, folded,
// every row but those a batch logged.
type VaultLogQuery struct {
	Page
	Action string
	Batch  int64
	Folded bool
}

// ListVaultAccess returns a page of the project's access log, newest first,
// and the number of matching rows, counted up to logCountCap.
func (s *Store) ListVaultAccess(ctx context.Context, project string, q VaultLogQuery) (_ []VaultAccess, _ int, err error) {
	defer wrap(&err, "list vault access", project)
	where, args := keyWhere(project, q.Filter)
	if q.Action != "" {
		args = append(args, q.Action)
		where += fmt.Sprintf(" AND action = $%d", params(args))
	}
	if q.Batch != 0 {
		args = append(args, q.Batch)
		where += fmt.Sprintf(" AND (batch = $%d OR id = $%[1]d)", params(args))
	}
	if q.Folded {
		where += " AND batch IS NULL"
	}
	var total int
	if err := s.db.QueryRow(ctx, fmt.Sprintf("SELECT count(*) FROM (SELECT 1 FROM vault_access_log%s LIMIT %d) AS capped", where, LogCountCap),
		args...).Scan(&total); err != nil {
		return nil, 0, err
	}
	n := params(args)
	rows, err := s.db.Query(ctx, fmt.Sprintf(`SELECT id, at, user_id, username, token_id, project_id, key, action, channel, route_id, version, batch, keys
		FROM vault_access_log%s ORDER BY id DESC OFFSET $%d LIMIT $%d`, where, n+1, n+2), append(args, q.Offset, q.Limit)...)
	if err != nil {
		return nil, 0, err
	}
	log, err := pgx.CollectRows(rows, pgx.RowToStructByPos[VaultAccess])
	return log, total, err
}

// VaultProject is a project whose vault a user may manage, with its size.
type VaultProject struct {
	ID, Name string
	Entries  int
}

// ListVaultProjects returns a page of the projects whose vault uid manages
// (a member whose role there is ADMIN or ROOT: docs/roles.md) and whose id
// or name contains the filter, each with its number of entries.
func (s *Store) ListVaultProjects(ctx context.Context, uid int64, p Page) (_ []VaultProject, _ int, err error) {
	defer wrap(&err, "list vault projects")
	const where = ` FROM projects p JOIN project_members m ON m.project_id = p.id AND m.user_id = $1
		WHERE (m.role = 'ADMIN' OR (SELECT role FROM users WHERE id = $1) = 'ROOT')
		AND ($2 = '' OR strpos(lower(p.id || ' ' || p.name), lower($2)) > 0)`
	var total int
	if err := s.db.QueryRow(ctx, "SELECT count(*)"+where, uid, p.Filter).Scan(&total); err != nil {
		return nil, 0, err
	}
	rows, err := s.db.Query(ctx, `SELECT p.id, p.name, p.vault_entries`+
		where+" ORDER BY p.id OFFSET $3 LIMIT $4", uid, p.Filter, p.Offset, p.Limit)
	if err != nil {
		return nil, 0, err
	}
	projects, err := pgx.CollectRows(rows, pgx.RowToStructByPos[VaultProject])
	return projects, total, err
}

// VaultKeyIDs lists the master key ids that sealed at least one entry.
func (s *Store) VaultKeyIDs(ctx context.Context) (_ []string, err error) {
	defer wrap(&err, "vault key i ds")
	rows, err := s.db.Query(ctx, `SELECT key_id FROM vault_entries UNION SELECT key_id FROM vault_versions ORDER BY key_id`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// ResealVaultBatch re-encrypts up to limit entries, kept versions and
// deleted entries not sealed under active,
// with reseal turning an entry's sealed value into a new key id and value.
// Each batch is one short transaction that locks only its rows, so the
// service keeps serving; a row updated meanwhile (under the active key) is
// passed over. It returns how many entries it resealed.
func (s *Store) ResealVaultBatch(ctx context.Context, active string, limit int, reseal func(VaultEntry) (string, []byte, error)) (_ int, err error) {
	defer wrap(&err, "reseal vault batch")
	n := 0
	err = s.InTx(ctx, func(tx *Store) error {
		rows, err := tx.db.Query(ctx, "SELECT "+vaultColumns+` FROM vault_entries WHERE key_id <> $1
			ORDER BY project_id, key LIMIT $2 FOR UPDATE`, active, limit)
		if err != nil {
			return err
		}
		entries, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (VaultEntry, error) { return scanVaultEntry(r) })
		if err != nil {
			return err
		}
		for _, e := range entries {
			keyID, sealed, err := reseal(e)
			if err != nil {
				return err
			}
			if _, err := tx.db.Exec(ctx, "UPDATE vault_entries SET key_id = $3, sealed = $4 WHERE project_id = $1 AND key = $2",
				e.ProjectID, e.Key, keyID, sealed); err != nil {
				return err
			}
		}
		n = len(entries)
		// Then the older versions and the deleted entries.
		if n < limit {
			kept, err := tx.resealKept(ctx, active, limit-n, reseal)
			n += kept
			return err
		}
		return nil
	})
	return n, err
}

// VaultEntryInfo returns entry key of project without its sealed value:
// nothing is read, so nothing is logged.
func (s *Store) VaultEntryInfo(ctx context.Context, project, key string) (_ VaultEntry, err error) {
	defer wrap(&err, "vault entry info", project, key)
	e, err := scanVaultEntry(s.db.QueryRow(ctx, `SELECT project_id, key, key_id, ''::bytea, created_at, updated_at, created_by, updated_by, version
		FROM vault_entries WHERE project_id = $1 AND key = $2`, project, key))
	e.Sealed = nil
	return e, err
}

// MissingVaultKeys returns those of keys that project's vault does not hold,
// in the order given: what a route's VAULT blocks would fault on. It reads
// keys only, never a value, and logs nothing.
func (s *Store) MissingVaultKeys(ctx context.Context, project string, keys []string) (_ []string, err error) {
	defer wrap(&err, "missing vault keys", project)
	if len(keys) == 0 {
		return nil, nil
	}
	rows, err := s.db.Query(ctx, `SELECT k FROM unnest($2::text[]) WITH ORDINALITY AS w(k, n)
		WHERE NOT EXISTS (SELECT 1 FROM vault_entries e WHERE e.project_id = $1 AND e.key = w.k) ORDER BY n`, project, keys)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// VaultKeys returns up to limit of project's vault keys, in order: names
// only, for the editor's suggestions. Nothing is read, so nothing is logged.
func (s *Store) VaultKeys(ctx context.Context, project string, limit int) (_ []string, err error) {
	defer wrap(&err, "vault keys", project)
	rows, err := s.db.Query(ctx, "SELECT key FROM vault_entries WHERE project_id = $1 ORDER BY key LIMIT $2", project, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}
