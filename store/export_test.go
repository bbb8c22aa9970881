package store

import (
	"context"
	"strings"

	"github.com/jackc/pgx/v5"
)

// ExecForTest runs sql through the store's error translation.
func (s *Store) ExecForTest(ctx context.Context, sql string) error {
	_, err := s.db.Exec(ctx, sql)
	return translate(err)
}

// QueryRowForTest scans one text column through the store's error translation.
func (s *Store) QueryRowForTest(ctx context.Context, sql string) error {
	var v string
	return translate(s.db.QueryRow(ctx, sql).Scan(&v))
}

// ExplainVaultFilterForTest explains the page query of ListVaultEntries with
// a filter.
func (s *Store) ExplainVaultFilterForTest(ctx context.Context, project, filter string) (string, error) {
	where, args := keyWhere(project, filter)
	rows, err := s.db.Query(ctx, "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) SELECT "+vaultColumns+" FROM vault_entries"+where+
		" ORDER BY key OFFSET 0 LIMIT 10", args...)
	if err != nil {
		return "", err
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return strings.Join(lines, "\n"), err
}

// QueryIntForTest scans one integer.
func (s *Store) QueryIntForTest(ctx context.Context, sql string, dst *int) error {
	return s.db.QueryRow(ctx, sql).Scan(dst)
}
