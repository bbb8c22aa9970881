package store

import "context"

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
