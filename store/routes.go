package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"stencil/flow"
)

// StoredRoute is a route of a project with its metadata.
type StoredRoute struct {
	flow.Route
	CreatedBy *int64
	CreatedAt time.Time
	UpdatedAt time.Time
	Version   int64 // grows with each change

	// What saving writes into the version it makes, never read back from
	// the route: who saves it (creation: CreatedBy) and a note.
	SavedBy *int64
	Note    string
}

const routeColumns = "project_id, document, template_id, template_name, template_version, template_values, created_by, created_at, updated_at, version"

func scanRoute(row pgx.Row) (StoredRoute, error) {
	var r StoredRoute
	var doc []byte
	var tid, tversion *int64
	var tname *string
	var tvalues map[string]string
	if err := row.Scan(&r.ProjectID, &doc, &tid, &tname, &tversion, &tvalues, &r.CreatedBy, &r.CreatedAt, &r.UpdatedAt, &r.Version); err != nil {
		return r, translate(err)
	}
	// Validated when written: plain typed decoding is enough.
	var d flow.RouteDocument
	if err := json.Unmarshal(doc, &d); err != nil {
		return r, fmt.Errorf("stored route document does not decode: %w", err)
	}
	r.Route = d.In(r.ProjectID)
	if tid != nil && tname != nil {
		r.Template = &flow.TemplateRef{ID: *tid, Name: *tname, Values: tvalues}
		if tversion != nil {
			r.Template.Version = *tversion
		}
	}
	r.Normalize()
	return r, nil
}

// documentOf is what the document column holds: the route less the fields
// that have columns of their own (project_id, template).
func documentOf(r flow.Route) ([]byte, error) {
	return json.Marshal(r.Document())
}

// CreateRoute inserts r, and its version 1, in one statement; a route_id
// or method and path taken in the project are conflicts on routes_pkey and
// routes_method_path_key.
func (s *Store) CreateRoute(ctx context.Context, r *StoredRoute) (err error) {
	defer wrap(&err, "create route")
	doc, err := documentOf(r.Route)
	if err != nil {
		return err
	}
	var tid, tversion *int64
	var tname *string
	var tvalues map[string]string
	if r.Template != nil {
		tid, tname, tvalues = &r.Template.ID, &r.Template.Name, r.Template.Values
		if r.Template.Version > 0 {
			tversion = &r.Template.Version
		}
	}
	from := ""
	if r.Template != nil {
		from = fmt.Sprintf(" from template %s (version %d)", r.Template.Name, r.Template.Version)
	}
	// The route, its first version and its event, in one statement.
	err = s.db.QueryRow(ctx, `WITH r AS (
			INSERT INTO routes (project_id, route_id, method, route_path, document, template_id, template_name, template_version, template_values, created_by)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $10, $11, $8) RETURNING project_id, route_id, document, template_version, template_values, created_at, updated_at, version),
		v AS (INSERT INTO route_versions (project_id, route_id, version, document, template_version, template_values, note, created_by, created_at)
			SELECT project_id, route_id, version, document, template_version, template_values, $9, $8, updated_at FROM r)`+eventCTE(12)+`
		SELECT created_at, updated_at, version FROM r`,
		append([]any{r.ProjectID, r.RouteID, r.Method, r.RoutePath, doc, tid, tname, r.CreatedBy, r.Note, tversion, tvalues},
			eventArgs(ctx, routeEvent("create", r, "created"+from))...)...).Scan(&r.CreatedAt, &r.UpdatedAt, &r.Version)
	return translate(err)
}

// routeEvent tells of a change of route r, for eventCTE: "GET /users/{id}
// created …, version %s: the note given with it".
func routeEvent(verb string, r *StoredRoute, what string) Event {
	summary := strings.ReplaceAll(r.Method+" "+r.RoutePath+" "+what, "%", "%%") + ", version %s"
	if r.Note != "" {
		summary += ": " + strings.ReplaceAll(r.Note, "%", "%%")
	}
	return Event{Type: "route_" + verb, ProjectID: in(r.ProjectID), Object: r.RouteID, Summary: summary}
}

// Route returns route id of project.
func (s *Store) Route(ctx context.Context, project, id string) (_ StoredRoute, err error) {
	defer wrap(&err, "route", project, id)
	return scanRoute(s.db.QueryRow(ctx, "SELECT "+routeColumns+" FROM routes WHERE project_id = $1 AND route_id = $2", project, id))
}

// ListRoutes returns a page of project's routes whose id or path contains
// the filter, ordered by path and method, and the number of matches.
func (s *Store) ListRoutes(ctx context.Context, project string, p Page) (_ []StoredRoute, _ int, err error) {
	defer wrap(&err, "list routes", project)
	return s.listRoutes(ctx, "project_id = $1", project, p)
}

// RouteIDs returns the ids of a project's routes, in order.
func (s *Store) RouteIDs(ctx context.Context, project string) (_ []string, err error) {
	defer wrap(&err, "route i ds", project)
	rows, err := s.db.Query(ctx, "SELECT route_id FROM routes WHERE project_id = $1 ORDER BY route_id", project)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// ListMemberRoutes returns a page of the routes in every project uid is a
// member of, whose id or path contains the filter, ordered by project and
// path, and the number of matches.
func (s *Store) ListMemberRoutes(ctx context.Context, uid int64, p Page) (_ []StoredRoute, _ int, err error) {
	defer wrap(&err, "list member routes")
	return s.listRoutes(ctx, "project_id IN (SELECT project_id FROM project_members WHERE user_id = $1)", uid, p)
}

// listRoutes pages the routes that scope (a condition on $1, which is
// owner) picks and whose id or path contains the filter.
func (s *Store) listRoutes(ctx context.Context, scope string, owner any, p Page) ([]StoredRoute, int, error) {
	where := " WHERE " + scope + " AND ($2 = '' OR strpos(lower(route_id || ' ' || route_path), lower($2)) > 0)"
	var total int
	if err := s.db.QueryRow(ctx, "SELECT count(*) FROM routes"+where, owner, p.Filter).Scan(&total); err != nil {
		return nil, 0, err
	}
	rows, err := s.db.Query(ctx, "SELECT "+routeColumns+" FROM routes"+where+" ORDER BY project_id, route_path, method OFFSET $3 LIMIT $4",
		owner, p.Filter, p.Offset, p.Limit)
	if err != nil {
		return nil, 0, err
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (StoredRoute, error) { return scanRoute(r) })
	return list, total, err
}

// UpdateRoute replaces route id of project with r (which may rename it),
// and stores the new version, saved by r.SavedBy with r.Note, in the same
// statement; the template snapshot stays as it was.
func (s *Store) UpdateRoute(ctx context.Context, id string, r *StoredRoute) (err error) {
	defer wrap(&err, "update route", id)
	what := "updated"
	if id != r.RouteID {
		what = "updated (was " + id + ")"
	}
	return s.updateRoute(ctx, id, r, 0, false, "update", what)
}

// UpgradeRoute is UpdateRoute for a route upgraded from its template: it
// also writes r.Template's version and values, and only when the route is
// still at version from (else ErrStale: it changed since it was merged).
func (s *Store) UpgradeRoute(ctx context.Context, id string, r *StoredRoute, from int64) (err error) {
	defer wrap(&err, "upgrade route", id)
	if r.Template == nil || from < 1 {
		return errors.New("store: an upgrade needs the template and the version it starts from")
	}
	err = s.updateRoute(ctx, id, r, from, true, "upgrade", fmt.Sprintf("upgraded to template %s version %d", r.Template.Name, r.Template.Version))
	if errors.Is(err, ErrNotFound) {
		if _, e := s.Route(ctx, r.ProjectID, id); e == nil {
			return ErrStale
		}
	}
	return err
}

// RestoreRoute is UpdateRoute for a route restored to kept version v: the
// template version and values go back to v's too.
func (s *Store) RestoreRoute(ctx context.Context, id string, r *StoredRoute, v RouteVersion) (err error) {
	defer wrap(&err, "restore route", id)
	r.Template = &flow.TemplateRef{Version: v.TemplateVersion, Values: v.TemplateValues}
	return s.updateRoute(ctx, id, r, 0, true, "restore", fmt.Sprintf("restored to version %d", v.Version))
}

// updateRoute writes r over route id; from > 0 writes it only over that
// version; setTemplate writes r.Template's version and values too (its
// id and name stay). The event is route_<verb>, what it says of the route.
func (s *Store) updateRoute(ctx context.Context, id string, r *StoredRoute, from int64, setTemplate bool, verb, what string) error {
	doc, err := documentOf(r.Route)
	if err != nil {
		return err
	}
	var newVersion *int64
	var newValues map[string]string
	if setTemplate && r.Template != nil {
		if r.Template.Version > 0 {
			newVersion = &r.Template.Version
		}
		if len(r.Template.Values) > 0 {
			newValues = r.Template.Values
		}
	}
	var tid, tversion *int64
	var tname *string
	var tvalues map[string]string
	// The route, its new version and its event, in one statement.
	err = s.db.QueryRow(ctx, `WITH r AS (
			UPDATE routes SET route_id = $3, method = $4, route_path = $5, document = $6, updated_at = now(), version = version + 1,
				template_version = CASE WHEN $10 THEN $11 ELSE template_version END,
				template_values = CASE WHEN $10 THEN $12 ELSE template_values END
			WHERE project_id = $1 AND route_id = $2 AND ($9 = 0 OR version = $9)
			RETURNING project_id, route_id, document, template_id, template_name, template_version, template_values, created_by, created_at, updated_at, version),
		v AS (INSERT INTO route_versions (project_id, route_id, version, document, template_version, template_values, note, created_by, created_at)
			SELECT project_id, route_id, version, document, template_version, template_values, $7, $8, updated_at FROM r)`+eventCTE(13)+`
		SELECT template_id, template_name, template_version, template_values, created_by, created_at, updated_at, version FROM r`,
		append([]any{r.ProjectID, id, r.RouteID, r.Method, r.RoutePath, doc, r.Note, r.SavedBy, from, setTemplate, newVersion, newValues},
			eventArgs(ctx, routeEvent(verb, r, what))...)...).Scan(&tid, &tname, &tversion, &tvalues, &r.CreatedBy, &r.CreatedAt, &r.UpdatedAt, &r.Version)
	if err != nil {
		return translate(err)
	}
	r.Template = nil
	if tid != nil && tname != nil {
		r.Template = &flow.TemplateRef{ID: *tid, Name: *tname, Values: tvalues}
		if tversion != nil {
			r.Template.Version = *tversion
		}
	}
	return nil
}

// RouteVersion is one kept version of a route: the whole document as it
// was saved, who saved it, when, and the note given with the save.
type RouteVersion struct {
	Version       int64
	Route         flow.Route // with the project and the route's id of today
	Note          string
	CreatedBy     *int64
	CreatedByName string // the saver's username, empty when unknown or deleted
	CreatedAt     time.Time
	// The version of the route's template it stood on and the values
	// applied (0 and nil when not known).
	TemplateVersion int64
	TemplateValues  map[string]string
}

const routeVersionColumns = `v.version, v.document, v.note, v.created_by, coalesce(u.username, ''), v.created_at, coalesce(v.template_version, 0), v.template_values
	FROM route_versions v LEFT JOIN users u ON u.id = v.created_by`

func scanRouteVersion(row pgx.Row, project, route string) (RouteVersion, error) {
	var v RouteVersion
	var doc []byte
	if err := row.Scan(&v.Version, &doc, &v.Note, &v.CreatedBy, &v.CreatedByName, &v.CreatedAt, &v.TemplateVersion, &v.TemplateValues); err != nil {
		return v, translate(err)
	}
	var d flow.RouteDocument
	if err := json.Unmarshal(doc, &d); err != nil {
		return v, fmt.Errorf("stored route version does not decode: %w", err)
	}
	v.Route = d.In(project)
	v.Route.RouteID = route // the route's id of today
	v.Route.Normalize()
	return v, nil
}

// RouteVersions returns a page of route id's versions in project, newest
// first, and how many there are; a route that does not exist is
// ErrNotFound.
func (s *Store) RouteVersions(ctx context.Context, project, id string, p Page) (_ []RouteVersion, _ int, err error) {
	defer wrap(&err, "route versions", project, id)
	var total int
	err = s.db.QueryRow(ctx, `SELECT (SELECT count(*) FROM route_versions WHERE project_id = $1 AND route_id = $2)
		FROM routes WHERE project_id = $1 AND route_id = $2`, project, id).Scan(&total)
	if err != nil {
		return nil, 0, translate(err)
	}
	rows, err := s.db.Query(ctx, "SELECT "+routeVersionColumns+` WHERE v.project_id = $1 AND v.route_id = $2
		ORDER BY v.version DESC OFFSET $3 LIMIT $4`, project, id, p.Offset, p.Limit)
	if err != nil {
		return nil, 0, err
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (RouteVersion, error) { return scanRouteVersion(r, project, id) })
	return list, total, err
}

// RouteVersionOf returns version n of route id in project.
func (s *Store) RouteVersionOf(ctx context.Context, project, id string, n int64) (_ RouteVersion, err error) {
	defer wrap(&err, "route version of", project, id)
	return scanRouteVersion(s.db.QueryRow(ctx, "SELECT "+routeVersionColumns+
		" WHERE v.project_id = $1 AND v.route_id = $2 AND v.version = $3", project, id, n), project, id)
}

// DeleteRoute removes route id of project.
func (s *Store) DeleteRoute(ctx context.Context, project, id string) (err error) {
	defer wrap(&err, "delete route", project, id)
	return s.change(ctx, func(tx *Store) (Event, error) {
		var method, path string
		err := tx.db.QueryRow(ctx, "DELETE FROM routes WHERE project_id = $1 AND route_id = $2 RETURNING method, route_path", project, id).
			Scan(&method, &path)
		return Event{Type: "route_delete", ProjectID: in(project), Object: id, Summary: method + " " + path + " deleted"}, translate(err)
	})
}
