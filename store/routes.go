package store

import (
	"context"
	"encoding/json"
	"errors"
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
}

const routeColumns = "project_id, document, template_id, template_name, created_by, created_at, updated_at"

func scanRoute(row pgx.Row) (StoredRoute, error) {
	var r StoredRoute
	var doc []byte
	var tid *int64
	var tname *string
	if err := row.Scan(&r.ProjectID, &doc, &tid, &tname, &r.CreatedBy, &r.CreatedAt, &r.UpdatedAt); err != nil {
		return r, translate(err)
	}
	project := r.ProjectID
	if p := flow.DecodeValue(mustParse(doc), &r.Route, ""); len(p) > 0 {
		return r, errors.New("stored route document does not decode: " + p.Error())
	}
	r.ProjectID, r.Template = project, nil
	if tid != nil && tname != nil {
		r.Template = &flow.TemplateRef{ID: *tid, Name: *tname}
	}
	r.Normalize()
	return r, nil
}

// routeDocument is the route without the fields that have columns.
func routeDocument(r flow.Route) ([]byte, error) {
	r.ProjectID, r.Template = "", nil
	raw, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	// project_id and template live in columns.
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	delete(m, "project_id")
	delete(m, "template")
	return json.Marshal(m)
}

// CreateRoute inserts r; a route_id or method and path taken in the project
// are conflicts on routes_pkey and routes_method_path_key.
func (s *Store) CreateRoute(ctx context.Context, r *StoredRoute) error {
	doc, err := routeDocument(r.Route)
	if err != nil {
		return err
	}
	var tid *int64
	var tname *string
	if r.Template != nil {
		tid, tname = &r.Template.ID, &r.Template.Name
	}
	err = s.db.QueryRow(ctx, `INSERT INTO routes (project_id, route_id, method, route_path, document, template_id, template_name, created_by)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING created_at, updated_at`,
		r.ProjectID, r.RouteID, r.Method, r.RoutePath, doc, tid, tname, r.CreatedBy).Scan(&r.CreatedAt, &r.UpdatedAt)
	return translate(err)
}

// Route returns route id of project.
func (s *Store) Route(ctx context.Context, project, id string) (StoredRoute, error) {
	return scanRoute(s.db.QueryRow(ctx, "SELECT "+routeColumns+" FROM routes WHERE project_id = $1 AND route_id = $2", project, id))
}

// ListRoutes returns a page of the project's routes whose id or path
// contains the filter, by path then method, and the number of matches.
func (s *Store) ListRoutes(ctx context.Context, project string, p Page) ([]StoredRoute, int, error) {
	const where = ` WHERE project_id = $1 AND ($2 = '' OR strpos(lower(route_id || ' ' || route_path), lower($2)) > 0)`
	var total int
	if err := s.db.QueryRow(ctx, "SELECT count(*) FROM routes"+where, project, p.Filter).Scan(&total); err != nil {
		return nil, 0, err
	}
	rows, err := s.db.Query(ctx, "SELECT "+routeColumns+" FROM routes"+where+" ORDER BY route_path, method OFFSET $3 LIMIT $4",
		project, p.Filter, p.Offset, p.Limit)
	if err != nil {
		return nil, 0, err
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (StoredRoute, error) { return scanRoute(r) })
	return list, total, err
}

// UpdateRoute replaces route id of project with r (which may rename it); the
// template snapshot stays as it was.
func (s *Store) UpdateRoute(ctx context.Context, id string, r *StoredRoute) error {
	doc, err := routeDocument(r.Route)
	if err != nil {
		return err
	}
	var tid *int64
	var tname *string
	err = s.db.QueryRow(ctx, `UPDATE routes SET route_id = $3, method = $4, route_path = $5, document = $6, updated_at = now()
		WHERE project_id = $1 AND route_id = $2 RETURNING template_id, template_name, created_by, created_at, updated_at`,
		r.ProjectID, id, r.RouteID, r.Method, r.RoutePath, doc).Scan(&tid, &tname, &r.CreatedBy, &r.CreatedAt, &r.UpdatedAt)
	if err != nil {
		return translate(err)
	}
	r.Template = nil
	if tid != nil && tname != nil {
		r.Template = &flow.TemplateRef{ID: *tid, Name: *tname}
	}
	return nil
}

// DeleteRoute removes route id of project.
func (s *Store) DeleteRoute(ctx context.Context, project, id string) error {
	tag, err := s.db.Exec(ctx, "DELETE FROM routes WHERE project_id = $1 AND route_id = $2", project, id)
	if err == nil && tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return err
}
