package store

import (
	"context"
	"time"
)

// RecordLoginFailure counts one failed login against each scope.
func (s *Store) RecordLoginFailure(ctx context.Context, scopes ...string) error {
	_, err := s.db.Exec(ctx, "INSERT INTO login_attempts (scope) SELECT unnest($1::text[])", scopes)
	return err
}

// LoginFailures returns how many failures scope had since since, and when
// the oldest of them happened.
func (s *Store) LoginFailures(ctx context.Context, scope string, since time.Time) (int, time.Time, error) {
	var n int
	var oldest *time.Time
	err := s.db.QueryRow(ctx, "SELECT count(*), min(attempted_at) FROM login_attempts WHERE scope = $1 AND attempted_at > $2",
		scope, since).Scan(&n, &oldest)
	if oldest == nil {
		return n, time.Time{}, err
	}
	return n, *oldest, err
}

// ClearLoginFailures forgets the failures of scope, after a success.
func (s *Store) ClearLoginFailures(ctx context.Context, scope string) error {
	_, err := s.db.Exec(ctx, "DELETE FROM login_attempts WHERE scope = $1", scope)
	return err
}

// DeleteLoginFailuresBefore removes failures older than t.
func (s *Store) DeleteLoginFailuresBefore(ctx context.Context, t time.Time) error {
	_, err := s.db.Exec(ctx, "DELETE FROM login_attempts WHERE attempted_at < $1", t)
	return err
}
