package store

import (
	"context"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Caller is who sends a request: the user, the personal access token used,
// if any, and, when the request names a project, that project as the user
// sees it (nil when it does not exist).
type Caller struct {
	User    User
	TokenID *int64
	Project *Project
}

// CallerQuery names a request's caller: a user id (JWT or session) or the
// hash of a personal access token, and the project the request names ("" for
// none).
type CallerQuery struct {
	UserID    int64
	PATHash   []byte
	ProjectID string
}

// callerProject is what CallerSQL and CallerPATSQL read of the named
// project ($2) with the user's membership, beside the user: a request's
// identity and its right to a project cost one round trip. The user's
// password hash is not read: the password change reads it itself. The
// project is read whole (its page and /project/fetch/one show it from
// here, so a column left out would read as its zero value), but for its
// member count (Project.Members stays 0): it would be counted
// on every request, and only the project's own page shows it, with the
// members it reads anyway.
const callerProject = `p.id, p.name, p.description, p.api_path, p.x_rate_limit, p.x_rate_burst, p.x_cors_origins, p.x_egress_hosts, p.created_by, p.created_at, p.updated_at, p.vault_version,
		(SELECT m.role FROM project_members m WHERE m.project_id = p.id AND m.user_id = u.id)`

// callerUserColumns are the user's columns a caller is read with: all but
// the password hash.
var callerUserColumns = strings.Replace(userColumnsOf("u"), " u.password_hash,", "", 1)

// CallerSQL finds, for the i-th elements of $1 (user ids: a JWT or a
// browser session) and $2 (projects), the user and the project.
// CallerPATSQL finds, for the i-th elements of $1 (hashes of personal
// access tokens) and $2 (projects), the user through the token if it is
// valid, writing the token's last-use time when over a minute old, and the
// project. Each row comes with its position in the arrays (from 1): callers
// that overlap in time share a statement (see group). Each kind has its own
// statement, so that a JWT's caller runs no write. Both are exported for
// the load harness, which runs exactly this SQL as its anchor.
var (
	CallerSQL = `SELECT q.n, ` + callerUserColumns + `, NULL::bigint, ` + callerProject + `
	FROM unnest($1::bigint[], $2::text[]) WITH ORDINALITY AS q (user_id, project_id, n)
	JOIN users u ON u.id = q.user_id
	LEFT JOIN projects p ON p.id = q.project_id`
	CallerPATSQL = `WITH pat AS (
		SELECT q.n, q.project_id, t.id, t.user_id, t.last_used_at
		FROM unnest($1::bytea[], $2::text[]) WITH ORDINALITY AS q (token_hash, project_id, n)
		JOIN personal_access_tokens t ON t.token_hash = q.token_hash
		WHERE t.revoked_at IS NULL AND t.valid_from <= now() AND (t.valid_to IS NULL OR t.valid_to > now())
	), touched AS (
		UPDATE personal_access_tokens t SET last_used_at = now() FROM pat
		WHERE t.id = pat.id AND (pat.last_used_at IS NULL OR pat.last_used_at < now() - interval '1 minute')
		RETURNING t.id
	)
	SELECT pat.n, ` + callerUserColumns + `, pat.id, ` + callerProject + `
	FROM pat JOIN users u ON u.id = pat.user_id
	LEFT JOIN projects p ON p.id = pat.project_id`
)

// Caller returns the caller q names; an unknown user or an invalid token is
// ErrNotFound.
func (s *Store) Caller(ctx context.Context, q CallerQuery) (_ Caller, err error) {
	defer wrap(&err, "caller")
	g := s.groups.callers
	if q.PATHash != nil {
		g = s.groups.patCallers
	}
	return g.do(ctx, s.db, callerQuery{user: q.UserID, pat: q.PATHash, project: q.ProjectID})
}

// callerQuery is a caller known by user id or by the hash of a personal
// access token, and the project named.
type callerQuery struct {
	user    int64
	pat     []byte
	project string
}

// userCallers runs CallerSQL for qs and returns each one's caller (nil for
// an unknown user), in their order.
func userCallers(ctx context.Context, db DB, qs []callerQuery) ([]*Caller, error) {
	users := make([]int64, len(qs))
	for i, q := range qs {
		users[i] = q.user
	}
	return queryCallers(ctx, db, CallerSQL, users, qs)
}

// patCallers runs CallerPATSQL for qs and returns each one's caller (nil
// for a token not valid), in their order.
func patCallers(ctx context.Context, db DB, qs []callerQuery) ([]*Caller, error) {
	hashes := make([][]byte, len(qs))
	for i, q := range qs {
		hashes[i] = q.pat
	}
	return queryCallers(ctx, db, CallerPATSQL, hashes, qs)
}

// queryCallers runs sql with who ($1, one element per query) and the
// queries' projects ($2), and reads each row, led by its position.
func queryCallers(ctx context.Context, db DB, sql string, who any, qs []callerQuery) ([]*Caller, error) {
	projects := make([]string, len(qs))
	for i, q := range qs {
		projects[i] = q.project
	}
	rows, err := db.Query(ctx, sql, who, projects)
	if err != nil {
		return nil, err
	}
	return collectAt(rows, len(qs), scanCaller)
}

// scanCaller scans a row of CallerSQL or CallerPATSQL into c, its position
// into at.
func scanCaller(row pgx.Rows, at *int64, c *Caller) error {
	var p struct {
		ID, Name, Description, APIPath *string
		XRateLimit, XRateBurst         *int
		XCORSOrigins, XEgressHosts     []string
		CreatedBy                      *int64
		CreatedAt, UpdatedAt           *time.Time
		VaultVersion                   *int64
		Role                           *string
	}
	u := &c.User
	err := row.Scan(at,
		&u.ID, &u.FirstName, &u.LastName, &u.Username, &u.Email, &u.Role, &u.Bio,
		&u.ProfilePicture, &u.IsPublic, &u.Links, &u.CredentialVersion, &u.CreatedAt, &u.UpdatedAt, &c.TokenID,
		&p.ID, &p.Name, &p.Description, &p.APIPath, &p.XRateLimit, &p.XRateBurst, &p.XCORSOrigins, &p.XEgressHosts, &p.CreatedBy, &p.CreatedAt, &p.UpdatedAt, &p.VaultVersion, &p.Role)
	if err != nil {
		return err
	}
	if p.ID != nil {
		c.Project = &Project{ID: *p.ID, Name: *p.Name, Description: *p.Description, APIPath: *p.APIPath, XRateLimit: *p.XRateLimit, XRateBurst: *p.XRateBurst, XCORSOrigins: p.XCORSOrigins, XEgressHosts: p.XEgressHosts, CreatedBy: p.CreatedBy,
			CreatedAt: *p.CreatedAt, UpdatedAt: *p.UpdatedAt, VaultVersion: *p.VaultVersion}
		c.Project.membership(p.Role)
	}
	return nil
}
