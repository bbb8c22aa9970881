package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Sessions keeps browser sessions for scs (it satisfies scs.CtxStore) in the
// sessions table under the SHA-256 of their token: the table holds no token
// that would sign anyone in. Every query takes the request's context, so a
// request's deadline reaches it.
type Sessions struct {
	db    DB
	finds *group[string, storedSession]
}

// Sessions returns the session store on s's database.
func (s *Store) Sessions() *Sessions {
	return &Sessions{db: s.db, finds: s.groups.sessions}
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

// FindCtx returns the data of an unexpired session. Finds that overlap in
// time share a statement (see group).
func (s *Sessions) FindCtx(ctx context.Context, token string) ([]byte, bool, error) {
	found, err := s.finds.do(ctx, s.db, sessionKey(token))
	if errors.Is(err, ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	if seen, ok := ctx.Value(seenKey{}).(*seenSession); ok {
		*seen = seenSession{token: token, data: found.data, expiry: found.expiry}
	}
	return found.data, true, nil
}

// storedSession is a session's row.
type storedSession struct {
	data   []byte
	expiry time.Time
}

// findSessions reads the unexpired sessions of keys (hashed tokens), each
// in its place (nil where there is none).
func findSessions(ctx context.Context, db DB, keys []string) ([]*storedSession, error) {
	rows, err := db.Query(ctx, `SELECT q.n, s.data, s.expiry
		FROM unnest($1::text[]) WITH ORDINALITY AS q (token, n)
		JOIN sessions s ON s.token = q.token
		WHERE current_timestamp < s.expiry`, keys)
	if err != nil {
		return nil, err
	}
	return collectAt(rows, len(keys), func(row pgx.Rows, at *int64, f *storedSession) error {
		return row.Scan(at, &f.data, &f.expiry)
	})
}

// unchanged reports whether committing b with expiry would only move the
// stored expiry on by less than a minute. SessionCodec encodes the same
// session to the same bytes, so comparing bytes is enough.
func unchanged(seen *seenSession, token string, b []byte, expiry time.Time) bool {
	return seen != nil && seen.token == token && bytes.Equal(seen.data, b) && expiry.Sub(seen.expiry) < time.Minute
}

// SessionCodec encodes sessions for scs as JSON, strings and int64s apart
// (the only kinds of value the handlers keep): decoding is cheap, and since
// encoding/json writes map keys in order, the same session always makes the
// same bytes.
type SessionCodec struct{}

type sessionJSON struct {
	Deadline time.Time         `json:"deadline"`
	Strings  map[string]string `json:"s,omitempty"`
	Ints     map[string]int64  `json:"i,omitempty"`
}

// Encode encodes a session's deadline and values.
func (SessionCodec) Encode(deadline time.Time, values map[string]any) ([]byte, error) {
	s := sessionJSON{Deadline: deadline, Strings: map[string]string{}, Ints: map[string]int64{}}
	for k, v := range values {
		switch v := v.(type) {
		case string:
			s.Strings[k] = v
		case int64:
			s.Ints[k] = v
		default:
			return nil, fmt.Errorf("session value %q is a %T: only strings and int64s are kept", k, v)
		}
	}
	return json.Marshal(s)
}

// Decode decodes what Encode made.
func (SessionCodec) Decode(b []byte) (time.Time, map[string]any, error) {
	var s sessionJSON
	if err := json.Unmarshal(b, &s); err != nil {
		return time.Time{}, nil, errors.New("session data does not decode")
	}
	values := make(map[string]any, len(s.Strings)+len(s.Ints))
	for k, v := range s.Strings {
		values[k] = v
	}
	for k, v := range s.Ints {
		values[k] = v
	}
	return s.Deadline, values, nil
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
