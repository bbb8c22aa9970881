package store

import (
	"context"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
)

// PAT is a personal access token; only the SHA-256 of the token is stored.
type PAT struct {
	ID         int64
	UserID     int64
	Name       string
	Hash       []byte
	Hint       string // the token's first characters, to recognize it in lists
	ValidFrom  time.Time
	ValidTo    *time.Time
	LastUsedAt *time.Time
	RevokedAt  *time.Time
	CreatedAt  time.Time
}

const patColumns = "id, user_id, name, token_hash, hint, valid_from, valid_to, last_used_at, revoked_at, created_at"

func scanPAT(row pgx.Row) (PAT, error) {
	var p PAT
	err := row.Scan(&p.ID, &p.UserID, &p.Name, &p.Hash, &p.Hint, &p.ValidFrom, &p.ValidTo, &p.LastUsedAt, &p.RevokedAt, &p.CreatedAt)
	return p, translate(err)
}

// CreatePAT inserts p; a zero ValidFrom means now.
func (s *Store) CreatePAT(ctx context.Context, p *PAT) (err error) {
	defer wrap(&err, "create p a t")
	var from *time.Time
	if !p.ValidFrom.IsZero() {
		from = &p.ValidFrom
	}
	return s.change(ctx, func(tx *Store) (Event, error) {
		err := tx.db.QueryRow(ctx, `INSERT INTO personal_access_tokens (user_id, name, token_hash, hint, valid_from, valid_to)
			VALUES ($1, $2, $3, $4, COALESCE($5, now()), $6) RETURNING id, valid_from, created_at`,
			p.UserID, p.Name, p.Hash, p.Hint, from, p.ValidTo).Scan(&p.ID, &p.ValidFrom, &p.CreatedAt)
		return Event{Type: "token_create", Object: strconv.FormatInt(p.ID, 10), Summary: "personal access token " + p.Name + " (" + p.Hint + ") created"}, translate(err)
	})
}

// ListPATs returns the tokens of user uid, newest first.
func (s *Store) ListPATs(ctx context.Context, uid int64) (_ []PAT, err error) {
	defer wrap(&err, "list p a ts")
	rows, err := s.db.Query(ctx, "SELECT "+patColumns+" FROM personal_access_tokens WHERE user_id = $1 ORDER BY created_at DESC, id DESC", uid)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (PAT, error) { return scanPAT(r) })
}

// RevokePAT revokes token id of user uid; another user's token, an unknown
// one or one revoked already is ErrNotFound.
func (s *Store) RevokePAT(ctx context.Context, uid, id int64) (err error) {
	defer wrap(&err, "revoke p a t")
	return s.change(ctx, func(tx *Store) (Event, error) {
		var name, hint string
		err := tx.db.QueryRow(ctx, `UPDATE personal_access_tokens SET revoked_at = now() WHERE id = $1 AND user_id = $2 AND revoked_at IS NULL
			RETURNING name, hint`, id, uid).Scan(&name, &hint)
		return Event{Type: "token_revoke", Object: strconv.FormatInt(id, 10), Summary: "personal access token " + name + " (" + hint + ") revoked"}, translate(err)
	})
}
