package store

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// User is a person or client account.
type User struct {
	ID             int64
	FirstName      string
	LastName       string
	Username       string
	Email          string
	PasswordHash   string
	Role           string
	Bio            string
	ProfilePicture string
	IsPublic       bool
	Links          []string
	// CredentialVersion grows with every password change; tokens and
	// sessions of an older version no longer sign the user in.
	CredentialVersion int
	CreatedAt         time.Time
	UpdatedAt         time.Time
}

// Roles, highest first.
const (
	RoleRoot   = "ROOT"
	RoleAdmin  = "ADMIN"
	RoleAuthor = "AUTHOR"
	RoleViewer = "VIEWER"
)

// RoleRank orders the roles: a higher rank has the rights of the lower
// ones; an unknown role (no membership) ranks 0.
func RoleRank(role string) int {
	switch role {
	case RoleViewer:
		return 1
	case RoleAuthor:
		return 2
	case RoleAdmin:
		return 3
	case RoleRoot:
		return 4
	}
	return 0
}

// RolesFrom lists the roles of rank min or higher.
func RolesFrom(min string) []string {
	var roles []string
	for _, r := range []string{RoleRoot, RoleAdmin, RoleAuthor, RoleViewer} {
		if RoleRank(r) >= RoleRank(min) {
			roles = append(roles, r)
		}
	}
	return roles
}

// EffectiveRole is a member's role in a project (docs/roles.md): the lower
// of the user's role and the membership's; a ROOT user is ROOT in every
// project. Without a membership ("") it is "".
func EffectiveRole(user, membership string) string {
	switch {
	case membership == "":
		return ""
	case user == RoleRoot || RoleRank(membership) > RoleRank(user):
		return user
	}
	return membership
}

// MembershipRole is the membership role that gives user role the same
// rights: a ROOT user's membership reads ADMIN (its effective role is ROOT
// whatever the membership's).
func MembershipRole(user string) string {
	if user == RoleRoot {
		return RoleAdmin
	}
	return user
}

// ErrLastRoot refuses to demote or delete the only ROOT user.
var ErrLastRoot = errors.New("the last ROOT user cannot be demoted or deleted")

// ErrLastAdmin refuses to lower or remove a project's last member who
// manages it (effective role ADMIN or ROOT).
var ErrLastAdmin = errors.New("the last ADMIN of a project cannot be lowered or removed")

// ErrAlreadySetUp refuses a second first-run setup.
var ErrAlreadySetUp = errors.New("setup is done: a user exists already")

const userColumns = `id, first_name, last_name, username, email, password_hash, role, bio,
	profile_picture, is_public, links, credential_version, created_at, updated_at`

// userColumnsOf is userColumns qualified by a table alias.
func userColumnsOf(alias string) string {
	cols := strings.Split(userColumns, ",")
	for i, c := range cols {
		cols[i] = alias + "." + strings.TrimSpace(c)
	}
	return strings.Join(cols, ", ")
}

func scanUser(row pgx.Row) (User, error) {
	var u User
	err := row.Scan(&u.ID, &u.FirstName, &u.LastName, &u.Username, &u.Email, &u.PasswordHash, &u.Role, &u.Bio,
		&u.ProfilePicture, &u.IsPublic, &u.Links, &u.CredentialVersion, &u.CreatedAt, &u.UpdatedAt)
	return u, translate(err)
}

// CreateUser inserts u and fills its id and times; the event log has it
// as user_create.
func (s *Store) CreateUser(ctx context.Context, u *User) (err error) {
	defer wrap(&err, "create user")
	return s.change(ctx, func(tx *Store) (Event, error) {
		err := tx.createUser(ctx, u)
		return userCreated(u, "user "+u.Username+" created as "+u.Role), err
	})
}

func userCreated(u *User, summary string) Event {
	return Event{Type: "user_create", Object: strconv.FormatInt(u.ID, 10), Summary: summary}
}

func (s *Store) createUser(ctx context.Context, u *User) error {
	if u.Links == nil {
		u.Links = []string{}
	}
	err := s.db.QueryRow(ctx, `INSERT INTO users (first_name, last_name, username, email, password_hash, role)
		VALUES ($1, $2, $3, $4, $5, $6) RETURNING id, credential_version, created_at, updated_at`,
		u.FirstName, u.LastName, u.Username, u.Email, u.PasswordHash, u.Role).Scan(&u.ID, &u.CredentialVersion, &u.CreatedAt, &u.UpdatedAt)
	return translate(err)
}

// CreateFirstUser inserts u only while no user exists, safely against
// concurrent setups; otherwise it returns ErrAlreadySetUp.
func (s *Store) CreateFirstUser(ctx context.Context, u *User) (err error) {
	defer wrap(&err, "create first user")
	return s.change(ctx, func(tx *Store) (Event, error) {
		if _, err := tx.db.Exec(ctx, "LOCK TABLE users IN SHARE ROW EXCLUSIVE MODE"); err != nil {
			return Event{}, err
		}
		has, err := tx.HasUsers(ctx)
		if err != nil {
			return Event{}, err
		}
		if has {
			return Event{}, ErrAlreadySetUp
		}
		err = tx.createUser(ctx, u)
		return userCreated(u, "first user "+u.Username+" created as "+u.Role), err
	})
}

// HasUsers reports whether any user exists.
func (s *Store) HasUsers(ctx context.Context) (_ bool, err error) {
	defer wrap(&err, "has users")
	var has bool
	err = s.db.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM users)").Scan(&has)
	return has, err
}

// UserByID returns the user with id.
func (s *Store) UserByID(ctx context.Context, id int64) (_ User, err error) {
	defer wrap(&err, "user by i d")
	return scanUser(s.db.QueryRow(ctx, "SELECT "+userColumns+" FROM users WHERE id = $1", id))
}

// UserByLogin returns the user whose username or email is login, ignoring
// case. Usernames cannot contain "@", so the two never collide.
func (s *Store) UserByLogin(ctx context.Context, login string) (_ User, err error) {
	defer wrap(&err, "user by login")
	return scanUser(s.db.QueryRow(ctx, "SELECT "+userColumns+
		" FROM users WHERE lower(username) = lower($1) OR lower(email) = lower($1)", login))
}

// UserByUsername returns the user with username, ignoring case.
func (s *Store) UserByUsername(ctx context.Context, username string) (_ User, err error) {
	defer wrap(&err, "user by username", username)
	return scanUser(s.db.QueryRow(ctx, "SELECT "+userColumns+" FROM users WHERE lower(username) = lower($1)", username))
}

// Page selects a slice of a list: Offset items skipped, at most Limit
// returned, Filter a case-insensitive substring.
type Page struct {
	Offset, Limit int
	Filter        string
}

// ListUsers returns a page of users whose username, email or name contains
// the filter, ordered by username, and the number of matches.
func (s *Store) ListUsers(ctx context.Context, p Page) (_ []User, _ int, err error) {
	defer wrap(&err, "list users")
	const where = ` WHERE $1 = '' OR strpos(lower(username || ' ' || email || ' ' || first_name || ' ' || last_name), lower($1)) > 0`
	var total int
	if err := s.db.QueryRow(ctx, "SELECT count(*) FROM users"+where, p.Filter).Scan(&total); err != nil {
		return nil, 0, err
	}
	rows, err := s.db.Query(ctx, "SELECT "+userColumns+" FROM users"+where+
		" ORDER BY lower(username) OFFSET $2 LIMIT $3", p.Filter, p.Offset, p.Limit)
	if err != nil {
		return nil, 0, err
	}
	users, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (User, error) { return scanUser(r) })
	return users, total, err
}

// UpdateUserRole sets the role of user id; demoting the last ROOT fails
// with ErrLastRoot.
func (s *Store) UpdateUserRole(ctx context.Context, id int64, role string) (_ User, err error) {
	defer wrap(&err, "update user role")
	var u User
	err = s.change(ctx, func(tx *Store) (Event, error) {
		if role != RoleRoot {
			if err := tx.guardLastRoot(ctx, id); err != nil {
				return Event{}, err
			}
		}
		var err error
		u, err = scanUser(tx.db.QueryRow(ctx, "UPDATE users SET role = $2, updated_at = now() WHERE id = $1 RETURNING "+userColumns, id, role))
		return Event{Type: "user_role", Object: strconv.FormatInt(id, 10), Summary: u.Username + " is now " + role}, err
	})
	return u, err
}

// DeleteUser removes user id; deleting the last ROOT fails with ErrLastRoot.
func (s *Store) DeleteUser(ctx context.Context, id int64) (err error) {
	defer wrap(&err, "delete user")
	return s.change(ctx, func(tx *Store) (Event, error) {
		if err := tx.guardLastRoot(ctx, id); err != nil {
			return Event{}, err
		}
		var name string
		err := tx.db.QueryRow(ctx, "DELETE FROM users WHERE id = $1 RETURNING username", id).Scan(&name)
		return Event{Type: "user_delete", Object: strconv.FormatInt(id, 10), Summary: "user " + name + " deleted"}, translate(err)
	})
}

// guardLastRoot locks the ROOT users, so that concurrent demotions cannot
// both pass, and fails if id is the only one.
func (s *Store) guardLastRoot(ctx context.Context, id int64) error {
	rows, err := s.db.Query(ctx, "SELECT id FROM users WHERE role = 'ROOT' FOR UPDATE")
	if err != nil {
		return err
	}
	roots, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return err
	}
	if len(roots) == 1 && roots[0] == id {
		return ErrLastRoot
	}
	return nil
}

// SetPassword stores a new password hash for user id and moves its
// credential version on, which ends its older tokens and sessions. It
// returns the new version.
func (s *Store) SetPassword(ctx context.Context, id int64, hash string) (_ int, err error) {
	defer wrap(&err, "set password")
	var version int
	err = s.change(ctx, func(tx *Store) (Event, error) {
		var name string
		var err error
		version, name, err = tx.setPassword(ctx, id, hash)
		return Event{Type: "user_password", Object: strconv.FormatInt(id, 10), Summary: "password of " + name + " changed"}, err
	})
	return version, err
}

func (s *Store) setPassword(ctx context.Context, id int64, hash string) (version int, username string, err error) {
	err = s.db.QueryRow(ctx, `UPDATE users SET password_hash = $2, credential_version = credential_version + 1, updated_at = now()
		WHERE id = $1 RETURNING credential_version, username`, id, hash).Scan(&version, &username)
	return version, username, translate(err)
}
