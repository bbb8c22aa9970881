package store

import (
	"context"
	"strings"

	"github.com/jackc/pgx/v5"
)

// ReadVaultSQL reads vault entries and logs each read, in one statement:
// the i-th elements of $1 (projects) and $2 (keys) name an entry, those of
// $3–$7 its reader (user id, name, token, channel, route). Each entry found
// comes back with its position in the arrays (from 1); a key not found has
// no row and no log row. A data-modifying CTE runs to completion whether or
// not the outer query reads it, and when a log row cannot be written the
// statement fails whole: no entry comes back without its log row. Exported
// for the load harness, which runs exactly this SQL as its anchor.
var ReadVaultSQL = `WITH q AS (
		SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::bigint[], $6::text[], $7::text[])
			WITH ORDINALITY AS q (project_id, key, user_id, username, token_id, channel, route_id, n)
	), e AS (
		SELECT q.n, q.user_id, q.username, q.token_id, q.channel, q.route_id, ` + vaultColumnsOf("v") + `
		FROM q JOIN vault_entries v ON v.project_id = q.project_id AND v.key = q.key
	), logged AS (
		INSERT INTO vault_access_log (user_id, username, token_id, project_id, key, action, channel, route_id)
		SELECT user_id, username, token_id, project_id, key, 'read', channel, route_id FROM e ORDER BY n
	)
	SELECT n, ` + vaultColumns + ` FROM e`

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
	for i, r := range reads {
		projects[i], keys[i] = r.project, r.key
		users[i], names[i], tokens[i], channels[i], routes[i] = r.ev.UserID, r.ev.Username, r.ev.TokenID, r.ev.Channel, r.ev.RouteID
	}
	rows, err := db.Query(ctx, ReadVaultSQL, projects, keys, users, names, tokens, channels, routes)
	if err != nil {
		return nil, translate(err)
	}
	found, err := collectAt(rows, n, func(row pgx.Rows, at *int64, e *VaultEntry) error {
		return row.Scan(append([]any{at}, e.columns()...)...)
	})
	return found, translate(err)
}
