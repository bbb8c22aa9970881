package store

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// ReadVaultSQL reads vault entries and logs each read, in one statement:
// the i-th elements of $1 (projects) and $2 (keys) name an entry, those of
// $3–$7 its reader (user id, name, token, channel, route). Where $8 (the
// reader's credential version) is not null, the reader is checked first
// (ReaderCheck): the user must hold that version and have an effective role
// in the project of rank $9 or higher, and the log row takes the user's
// name. Each entry found and allowed comes back with its position in the
// arrays (from 1); a key not found, or a reader refused, has no row and no
// log row. A data-modifying CTE runs to completion whether or not the outer
// query reads it, and when a log row cannot be written the statement fails
// whole: no entry comes back without its log row. Exported for the load
// harness, which runs exactly this SQL as its anchor.
var ReadVaultSQL = `WITH q AS (
		SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::bigint[], $6::text[], $7::text[], $8::int[], $9::int[])
			WITH ORDINALITY AS q (project_id, key, user_id, username, token_id, channel, route_id, version, need, n)
	), e AS (
		SELECT q.n, q.user_id, coalesce(u.username, q.username) AS username, q.token_id, q.channel, q.route_id, ` + vaultColumnsOf("v") + `
		FROM q JOIN vault_entries v ON v.project_id = q.project_id AND v.key = q.key
		LEFT JOIN users u ON q.version IS NOT NULL AND u.id = q.user_id AND u.credential_version = q.version
		WHERE q.version IS NULL OR EXISTS (SELECT FROM project_members m WHERE m.project_id = q.project_id AND m.user_id = u.id
			AND ` + effectiveRankSQL("u.role", "m.role") + ` >= q.need)
	), logged AS (
		INSERT INTO vault_access_log (user_id, username, token_id, project_id, key, action, channel, route_id)
		SELECT user_id, username, token_id, project_id, key, 'read', channel, route_id FROM e ORDER BY n
	)
	SELECT n, ` + vaultColumns + ` FROM e`

// effectiveRankSQL is the SQL of RoleRank(EffectiveRole(user, membership))
// for a membership that exists: ROOT's rank for a ROOT user, else the lower
// of the two ranks.
func effectiveRankSQL(user, membership string) string {
	return fmt.Sprintf("CASE WHEN %s = '%s' THEN %d ELSE least(%s, %s) END", user, RoleRoot, RoleRank(RoleRoot), roleRankSQL(user), roleRankSQL(membership))
}

// roleRankSQL is the SQL of RoleRank(role), from RoleRank itself.
func roleRankSQL(role string) string {
	var b strings.Builder
	b.WriteString("CASE " + role)
	for _, r := range RolesFrom(RoleViewer) {
		fmt.Fprintf(&b, " WHEN '%s' THEN %d", r, RoleRank(r))
	}
	b.WriteString(" ELSE 0 END")
	return b.String()
}

func vaultColumnsOf(alias string) string {
	cols := strings.Split(vaultColumns, ", ")
	for i, c := range cols {
		cols[i] = alias + "." + c
	}
	return strings.Join(cols, ", ")
}

// vaultRead is one read: the entry and who reads it.
type vaultRead struct {
	project, key string
	ev           VaultAccess
}

// VaultReadStatements is how many statements the pool's grouped vault
// reads have run: reads per statement tell how much the grouping saves.
func (s *Store) VaultReadStatements() int64 {
	return s.groups.reads.statements.Load()
}

// readEntries runs ReadVaultSQL for reads and returns what each found (nil
// for a key not found), in their order.
func readEntries(ctx context.Context, db DB, reads []vaultRead) ([]*VaultEntry, error) {
	n := len(reads)
	projects, keys, users, names := make([]string, n), make([]string, n), make([]*int64, n), make([]string, n)
	tokens, channels, routes := make([]*int64, n), make([]string, n), make([]*string, n)
	versions, needs := make([]*int32, n), make([]*int32, n)
	for i, r := range reads {
		projects[i], keys[i] = r.project, r.key
		users[i], names[i], tokens[i], channels[i], routes[i] = r.ev.UserID, r.ev.Username, r.ev.TokenID, r.ev.Channel, r.ev.RouteID
		if c := r.ev.Reader; c != nil {
			v, need := int32(c.CredentialVersion), int32(RoleRank(c.Need))
			versions[i], needs[i] = &v, &need
		}
	}
	rows, err := db.Query(ctx, ReadVaultSQL, projects, keys, users, names, tokens, channels, routes, versions, needs)
	if err != nil {
		return nil, translate(err)
	}
	found, err := collectAt(rows, n, func(row pgx.Rows, at *int64, e *VaultEntry) error {
		return row.Scan(append([]any{at}, e.columns()...)...)
	})
	return found, translate(err)
}
