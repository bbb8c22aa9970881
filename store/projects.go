package store

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Project owns routes, templates and a vault.
type Project struct {
	ID          string
	Name        string
	Description string
	APIPath     string
	XRateLimit  int // requests a second per client address at /x; 0: none
	XRateBurst  int // requests at once beyond the rate
	// XCORSOrigins are the origins whose browsers may call the project's
	// routes at /x ("*" alone: any); none by default.
	XCORSOrigins []string
	// XEgressHosts are the hosts its routes' HTTP blocks may call
	// ("*.example.com" for the names under one); empty: any public host.
	XEgressHosts []string
	CreatedBy    *int64
	CreatedAt    time.Time
	UpdatedAt    time.Time
	Members      int  // number of members (not read for a Caller: 0 there)
	IsMember     bool // whether the asking user is one
	// Role is the asking user's membership role ("" when not a member);
	// their role in the project is EffectiveRole of it (docs/roles.md).
	Role string
	// VaultVersion grows with every statement that changes the project's
	// vault entries (see VaultListing).
	VaultVersion int64
}

// Member is a user's membership of a project: the membership's role and
// the user's (EffectiveRole of the two is the member's role there).
type Member struct {
	UserID    int64
	Username  string
	FirstName string
	LastName  string
	Role      string
	UserRole  string
	AddedAt   time.Time
}

// Effective is the member's role in the project (docs/roles.md).
func (m Member) Effective() string { return EffectiveRole(m.UserRole, m.Role) }

// projectSelect reads projects with their member count and the role of
// $1 (a user id) as a member (NULL: not one).
const projectSelect = `SELECT p.id, p.name, p.description, p.api_path, p.x_rate_limit, p.x_rate_burst, p.x_cors_origins, p.x_egress_hosts, p.created_by, p.created_at, p.updated_at, p.vault_version,
	(SELECT count(*) FROM project_members m WHERE m.project_id = p.id),
	(SELECT m.role FROM project_members m WHERE m.project_id = p.id AND m.user_id = $1)
	FROM projects p`

func scanProject(row pgx.Row) (Project, error) {
	var p Project
	var role *string
	err := row.Scan(&p.ID, &p.Name, &p.Description, &p.APIPath, &p.XRateLimit, &p.XRateBurst, &p.XCORSOrigins, &p.XEgressHosts, &p.CreatedBy, &p.CreatedAt, &p.UpdatedAt, &p.VaultVersion, &p.Members, &role)
	p.membership(role)
	return p, translate(err)
}

// membership sets the asking user's membership from its role (nil: none).
func (p *Project) membership(role *string) {
	p.IsMember, p.Role = role != nil, ""
	if role != nil {
		p.Role = *role
	}
}

// Default rate limit of a project at /x (docs/engine.md).
const (
	DefaultXRateLimit = 50
	DefaultXRateBurst = 100
)

// CreateProject inserts p and makes its creator a member, in one
// transaction. A project without an XRateBurst gets the default burst
// (its XRateLimit stays as given: 0 is none).
func (s *Store) CreateProject(ctx context.Context, p *Project, creator int64) (err error) {
	defer wrap(&err, "create project")
	if p.XRateBurst == 0 {
		p.XRateBurst = DefaultXRateBurst
	}
	p.lists()
	return s.change(ctx, func(tx *Store) (Event, error) {
		err := tx.db.QueryRow(ctx, `INSERT INTO projects (id, name, description, api_path, x_rate_limit, x_rate_burst, x_cors_origins, x_egress_hosts, created_by)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING api_path, created_at, updated_at, vault_version`,
			p.ID, p.Name, p.Description, p.APIPath, p.XRateLimit, p.XRateBurst, p.XCORSOrigins, p.XEgressHosts, creator).Scan(&p.APIPath, &p.CreatedAt, &p.UpdatedAt, &p.VaultVersion)
		if err != nil {
			return Event{}, translate(err)
		}
		p.CreatedBy, p.Members, p.IsMember, p.Role = &creator, 1, true, RoleAdmin
		_, err = tx.addMember(ctx, p.ID, creator, RoleAdmin)
		return projectEvent("create", p.ID, "project "+p.Name+" created at /x"+p.APIPath), err
	})
}

// Project returns project id as seen by user uid (IsMember tells whether uid
// is a member; visibility is the caller's decision).
func (s *Store) Project(ctx context.Context, id string, uid int64) (_ Project, err error) {
	defer wrap(&err, "project", id)
	return scanProject(s.db.QueryRow(ctx, projectSelect+" WHERE p.id = $2", uid, id))
}

// ListProjects returns a page of the projects uid is a member of (all
// projects when all is set), whose id or name contains the filter, and the
// number of matches.
func (s *Store) ListProjects(ctx context.Context, uid int64, all bool, p Page) (_ []Project, _ int, err error) {
	defer wrap(&err, "list projects")
	const where = ` WHERE ($2 OR EXISTS (SELECT 1 FROM project_members m WHERE m.project_id = p.id AND m.user_id = $1))
		AND ($3 = '' OR strpos(lower(p.id || ' ' || p.name), lower($3)) > 0)`
	var total int
	if err := s.db.QueryRow(ctx, "SELECT count(*) FROM projects p"+where, uid, all, p.Filter).Scan(&total); err != nil {
		return nil, 0, err
	}
	rows, err := s.db.Query(ctx, projectSelect+where+" ORDER BY p.id OFFSET $4 LIMIT $5", uid, all, p.Filter, p.Offset, p.Limit)
	if err != nil {
		return nil, 0, err
	}
	projects, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Project, error) { return scanProject(r) })
	return projects, total, err
}

// lists makes p's absent lists empty, as the columns hold them.
func (p *Project) lists() {
	if p.XCORSOrigins == nil {
		p.XCORSOrigins = []string{}
	}
	if p.XEgressHosts == nil {
		p.XEgressHosts = []string{}
	}
}

// UpdateProject stores the name, description, api_path, rate limit, CORS
// origins and egress hosts of p.
func (s *Store) UpdateProject(ctx context.Context, p *Project) (err error) {
	defer wrap(&err, "update project")
	p.lists()
	return s.change(ctx, func(tx *Store) (Event, error) {
		err := tx.db.QueryRow(ctx, `UPDATE projects SET name = $2, description = $3, api_path = $4, x_rate_limit = $5, x_rate_burst = $6, x_cors_origins = $7, x_egress_hosts = $8, updated_at = now()
			WHERE id = $1 RETURNING api_path, created_by, created_at, updated_at, vault_version,
				(SELECT count(*) FROM project_members WHERE project_id = $1)`, p.ID, p.Name, p.Description, p.APIPath, p.XRateLimit, p.XRateBurst, p.XCORSOrigins, p.XEgressHosts).
			Scan(&p.APIPath, &p.CreatedBy, &p.CreatedAt, &p.UpdatedAt, &p.VaultVersion, &p.Members)
		rate := "no rate limit"
		if p.XRateLimit > 0 {
			rate = fmt.Sprintf("%d requests/s (burst %d)", p.XRateLimit, p.XRateBurst)
		}
		if len(p.XCORSOrigins) > 0 {
			rate += ", browsers of " + strings.Join(p.XCORSOrigins, " ")
		}
		if len(p.XEgressHosts) > 0 {
			rate += ", calls to " + strings.Join(p.XEgressHosts, " ")
		}
		return projectEvent("update", p.ID, fmt.Sprintf("project %s updated: /x%s, %s", p.Name, p.APIPath, rate)), translate(err)
	})
}

func projectEvent(verb, id, summary string) Event {
	return Event{Type: "project_" + verb, ProjectID: in(id), Object: id, Summary: summary}
}

// DeleteProject removes project id with its members (and, by cascade,
// everything the project owns).
func (s *Store) DeleteProject(ctx context.Context, id string) (err error) {
	defer wrap(&err, "delete project", id)
	return s.change(ctx, func(tx *Store) (Event, error) {
		var name string
		err := tx.db.QueryRow(ctx, "DELETE FROM projects WHERE id = $1 RETURNING name", id).Scan(&name)
		if err == nil {
			// Jobs keep their project in River's table, which no key ties.
			_, err = tx.db.Exec(ctx, "DELETE FROM river_job WHERE kind = 'route' AND args->>'project' = $1", id)
		}
		return projectEvent("delete", id, "project "+name+" deleted with everything in it"), translate(err)
	})
}

// AddMember makes user uid a member of project id with role (ADMIN,
// AUTHOR or VIEWER); a second time is a conflict on project_members_pkey.
func (s *Store) AddMember(ctx context.Context, id string, uid int64, role string) (err error) {
	defer wrap(&err, "add member", id)
	return s.change(ctx, func(tx *Store) (Event, error) {
		name, err := tx.addMember(ctx, id, uid, role)
		return memberEvent("add", id, uid, name+" added to the project as "+role), err
	})
}

// addMember adds the membership and returns the member's username.
func (s *Store) addMember(ctx context.Context, id string, uid int64, role string) (string, error) {
	var name string
	err := s.db.QueryRow(ctx, `INSERT INTO project_members (project_id, user_id, role) VALUES ($1, $2, $3)
		RETURNING (SELECT username FROM users WHERE id = $2)`, id, uid, role).Scan(&name)
	return name, translate(err)
}

// SetMemberRole sets the role of uid's membership of project id and
// returns the member as it is now. Lowering the project's last member who
// manages it (effective role ADMIN or ROOT) below ADMIN fails with
// ErrLastAdmin: the project's memberships are locked first, so that two
// members lowering each other at once cannot both pass.
func (s *Store) SetMemberRole(ctx context.Context, id string, uid int64, role string) (_ Member, err error) {
	defer wrap(&err, "set member role", id)
	var m Member
	err = s.change(ctx, func(tx *Store) (Event, error) {
		members, err := tx.lockMembers(ctx, id)
		if err != nil {
			return Event{}, err
		}
		i := slices.IndexFunc(members, func(m Member) bool { return m.UserID == uid })
		if i < 0 {
			return Event{}, ErrNotFound
		}
		before := members[i]
		m = before
		m.Role = role
		if RoleRank(m.Effective()) < RoleRank(RoleAdmin) && !managedWithout(members, uid) {
			return Event{}, ErrLastAdmin
		}
		if _, err := tx.db.Exec(ctx, "UPDATE project_members SET role = $3 WHERE project_id = $1 AND user_id = $2", id, uid, role); err != nil {
			return Event{}, err
		}
		summary := fmt.Sprintf("%s's role in the project: %s → %s", m.Username, before.Role, role)
		if e := m.Effective(); e != role {
			summary += " (works as " + e + ": the account's role)"
		}
		return memberEvent("role", id, uid, summary), nil
	})
	return m, err
}

// lockMembers reads the members of project id, locking their memberships
// until the transaction ends.
func (s *Store) lockMembers(ctx context.Context, id string) ([]Member, error) {
	rows, err := s.db.Query(ctx, `SELECT u.id, u.username, u.first_name, u.last_name, m.role, u.role, m.added_at
		FROM project_members m JOIN users u ON u.id = m.user_id
		WHERE m.project_id = $1 ORDER BY m.user_id FOR UPDATE OF m`, id)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowToStructByPos[Member])
}

// managedWithout reports whether a member other than uid manages the
// project (effective role ADMIN or ROOT).
func managedWithout(members []Member, uid int64) bool {
	return slices.ContainsFunc(members, func(m Member) bool {
		return m.UserID != uid && RoleRank(m.Effective()) >= RoleRank(RoleAdmin)
	})
}

func memberEvent(verb, project string, uid int64, summary string) Event {
	return Event{Type: "member_" + verb, ProjectID: in(project), Object: strconv.FormatInt(uid, 10), Summary: summary}
}

// RemoveMember ends the membership of uid in project id; removing the
// last member who manages the project fails with ErrLastAdmin (as
// SetMemberRole).
func (s *Store) RemoveMember(ctx context.Context, id string, uid int64) (err error) {
	defer wrap(&err, "remove member", id)
	return s.change(ctx, func(tx *Store) (Event, error) {
		members, err := tx.lockMembers(ctx, id)
		if err != nil {
			return Event{}, err
		}
		i := slices.IndexFunc(members, func(m Member) bool { return m.UserID == uid })
		if i >= 0 && RoleRank(members[i].Effective()) >= RoleRank(RoleAdmin) && !managedWithout(members, uid) {
			return Event{}, ErrLastAdmin
		}
		var name string
		err = tx.db.QueryRow(ctx, `DELETE FROM project_members WHERE project_id = $1 AND user_id = $2
			RETURNING (SELECT username FROM users WHERE id = $2)`, id, uid).Scan(&name)
		return memberEvent("remove", id, uid, name+" removed from the project"), translate(err)
	})
}

// Members lists the members of project id by username.
func (s *Store) Members(ctx context.Context, id string) (_ []Member, err error) {
	defer wrap(&err, "members", id)
	rows, err := s.db.Query(ctx, `SELECT u.id, u.username, u.first_name, u.last_name, m.role, u.role, m.added_at
		FROM project_members m JOIN users u ON u.id = m.user_id
		WHERE m.project_id = $1 ORDER BY lower(u.username)`, id)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowToStructByPos[Member])
}

// APIPathClash is two projects whose api_paths share URL space, made before
// the rule that forbids it (migration 013) and kept as they were: the
// older answers at /x, the newer's routes do not answer until one of the
// two paths changes.
type APIPathClash struct {
	Older, OlderPath string
	Newer, NewerPath string
}

// APIPathClashes lists the projects whose api_paths overlap. Two paths
// overlap when one's key is a whole-segment prefix of the other's, or
// equal (migration 013's api_paths_overlap), so each project's key is
// joined by equality to the prefixes of every key ("/" among them): a
// hash join, where comparing every pair took minutes at 1,000 projects
// and more than the service waits at start.
func (s *Store) APIPathClashes(ctx context.Context) (_ []APIPathClash, err error) {
	defer wrap(&err, "a p i path clashes")
	rows, err := s.db.Query(ctx, `WITH k AS MATERIALIZED (SELECT id, api_path, created_at, api_path_key(api_path) AS key FROM projects),
		prefixes AS (
			SELECT id, '/' AS prefix FROM k
			UNION
			SELECT k.id, '/' || array_to_string(s[1:n], '/') FROM k
				CROSS JOIN LATERAL string_to_array(substr(k.key, 2), '/') AS s CROSS JOIN LATERAL generate_series(1, cardinality(s)) AS n
			WHERE k.key <> '/'),
		pairs AS (
			SELECT DISTINCT CASE WHEN (x.created_at, x.id) < (y.created_at, y.id) THEN x.id ELSE y.id END AS older,
				CASE WHEN (x.created_at, x.id) < (y.created_at, y.id) THEN y.id ELSE x.id END AS newer
			FROM prefixes p JOIN k x ON x.key = p.prefix JOIN k y ON y.id = p.id
			WHERE x.id <> y.id)
		SELECT o.id, o.api_path, n.id, n.api_path FROM pairs JOIN k o ON o.id = pairs.older JOIN k n ON n.id = pairs.newer
		ORDER BY o.id, n.id`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowToStructByPos[APIPathClash])
}
