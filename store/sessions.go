package store

import "context"

// DeleteExpiredSessions removes browser sessions past their expiry; the
// sessions table itself is read and written by scs's pgx store.
func (s *Store) DeleteExpiredSessions(ctx context.Context) (int64, error) {
	tag, err := s.db.Exec(ctx, "DELETE FROM sessions WHERE expiry < current_timestamp")
	return tag.RowsAffected(), err
}
