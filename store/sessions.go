package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"reflect"
	"time"

	"github.com/alexedwards/scs/v2"
	"github.com/jackc/pgx/v5"
)

// Sessions keeps browser sessions for scs (it satisfies scs.CtxStore) in the
// sessions table under the SHA-256 of their token: the table holds no token
// that would sign anyone in. Every query takes the request's context, so a
// request's deadline reaches it.
type Sessions struct {
	db DB
}

// Sessions returns the session store on s's database.
func (s *Store) Sessions() *Sessions {
	return &Sessions{db: s.db}
}

func sessionKey(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// seenSession is what FindCtx read in a request, for CommitCtx to compare.
type seenSession struct {
	token  string
	data   []byte
	expiry time.Time
}

type seenKey struct{}

// RememberSession returns a context in which the session a request loads is
// remembered, so that committing it unchanged within a minute of its stored
// expiry writes nothing: a page view costs no session write.
func RememberSession(ctx context.Context) context.Context {
	return context.WithValue(ctx, seenKey{}, &seenSession{})
}

// FindCtx returns the data of an unexpired session.
func (s *Sessions) FindCtx(ctx context.Context, token string) ([]byte, bool, error) {
	var b []byte
	var expiry time.Time
	err := s.db.QueryRow(ctx, "SELECT data, expiry FROM sessions WHERE token = $1 AND current_timestamp < expiry", sessionKey(token)).Scan(&b, &expiry)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, nil
	}
	if seen, ok := ctx.Value(seenKey{}).(*seenSession); ok && err == nil {
		*seen = seenSession{token: token, data: b, expiry: expiry}
	}
	return b, err == nil, err
}

// unchanged reports whether committing b with expiry would only move the
// stored expiry on by less than a minute.
func unchanged(seen *seenSession, token string, b []byte, expiry time.Time) bool {
	if seen == nil || seen.token != token || seen.data == nil || expiry.Sub(seen.expiry) >= time.Minute {
		return false
	}
	var codec scs.GobCodec
	d1, v1, err1 := codec.Decode(seen.data)
	d2, v2, err2 := codec.Decode(b)
	return err1 == nil && err2 == nil && d1.Equal(d2) && reflect.DeepEqual(v1, v2)
}

// CommitCtx writes a session's data and expiry, unless it is what the
// request read and the expiry moves by less than a minute.
func (s *Sessions) CommitCtx(ctx context.Context, token string, b []byte, expiry time.Time) error {
	if seen, _ := ctx.Value(seenKey{}).(*seenSession); unchanged(seen, token, b, expiry) {
		return nil
	}
	_, err := s.db.Exec(ctx, `INSERT INTO sessions (token, data, expiry) VALUES ($1, $2, $3)
		ON CONFLICT (token) DO UPDATE SET data = EXCLUDED.data, expiry = EXCLUDED.expiry`, sessionKey(token), b, expiry)
	return err
}

// DeleteCtx removes a session.
func (s *Sessions) DeleteCtx(ctx context.Context, token string) error {
	_, err := s.db.Exec(ctx, "DELETE FROM sessions WHERE token = $1", sessionKey(token))
	return err
}

// Find is FindCtx without a deadline, for scs's Store interface.
func (s *Sessions) Find(token string) ([]byte, bool, error) {
	return s.FindCtx(context.Background(), token)
}

// Commit is CommitCtx without a deadline.
func (s *Sessions) Commit(token string, b []byte, expiry time.Time) error {
	return s.CommitCtx(context.Background(), token, b, expiry)
}

// Delete is DeleteCtx without a deadline.
func (s *Sessions) Delete(token string) error {
	return s.DeleteCtx(context.Background(), token)
}

// DeleteExpiredSessions removes browser sessions past their expiry.
func (s *Store) DeleteExpiredSessions(ctx context.Context) (int64, error) {
	tag, err := s.db.Exec(ctx, "DELETE FROM sessions WHERE expiry < current_timestamp")
	return tag.RowsAffected(), err
}
