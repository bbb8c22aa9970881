package store

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"
)

// ProjectContents is what a project's file holds (docs/projects.md), read
// at one moment.
type ProjectContents struct {
	Project        Project
	Routes         []StoredRoute   // by route_id
	Templates      []RouteTemplate // the project's own, by name
	Collections    []Collection    // by id, without their record counts
	Records        map[string][]json.RawMessage
	EmailTemplates []EmailTemplate // by name
	Schedules      []Schedule      // by route and id
	Tests          []StoredTest    // by route and name
	VaultKeys      []string        // names only, by name
}

// ProjectContents reads project's settings, routes, templates,
// collections (with records, each collection's data in id order, its id
// as _id: WithRecordID), email
// templates, schedules and vault key names from one snapshot of the database: in a
// repeatable-read transaction, or in the caller's own.
func (s *Store) ProjectContents(ctx context.Context, project string, records bool) (_ ProjectContents, err error) {
	defer wrap(&err, "project contents", project)
	var pc ProjectContents
	read := func(tx *Store) error {
		var err error
		if pc.Project, err = tx.Project(ctx, project, 0); err != nil {
			return err
		}
		rows, err := tx.db.Query(ctx, "SELECT "+routeColumns+" FROM routes WHERE project_id = $1 ORDER BY route_id", project)
		if err != nil {
			return err
		}
		if pc.Routes, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (StoredRoute, error) { return scanRoute(r) }); err != nil {
			return err
		}
		rows, err = tx.db.Query(ctx, "SELECT "+templateColumns+" FROM route_templates WHERE project_id = $1 ORDER BY name", project)
		if err != nil {
			return err
		}
		if pc.Templates, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (RouteTemplate, error) { return scanTemplate(r) }); err != nil {
			return err
		}
		rows, err = tx.db.Query(ctx, "SELECT project_id, id, name, description, fields, NOT additional, created_by, created_at, updated_at FROM collections WHERE project_id = $1 ORDER BY id", project)
		if err != nil {
			return err
		}
		if pc.Collections, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (Collection, error) {
			var c Collection
			var fields []byte
			if err := r.Scan(&c.ProjectID, &c.ID, &c.Name, &c.Description, &fields, &c.Schema.Strict, &c.CreatedBy, &c.CreatedAt, &c.UpdatedAt); err != nil {
				return c, err
			}
			return c, json.Unmarshal(fields, &c.Schema.Fields)
		}); err != nil {
			return err
		}
		if records {
			pc.Records = map[string][]json.RawMessage{}
			rows, err := tx.db.Query(ctx, "SELECT collection_id, id, data::text FROM records WHERE project_id = $1 ORDER BY collection_id, id", project)
			if err != nil {
				return err
			}
			var collection, data string
			var id int64
			if _, err := pgx.ForEachRow(rows, []any{&collection, &id, &data}, func() error {
				compact, err := CompactObject([]byte(data))
				pc.Records[collection] = append(pc.Records[collection], WithRecordID(id, compact))
				return err
			}); err != nil {
				return err
			}
		}
		if pc.EmailTemplates, err = tx.EmailTemplates(ctx, project); err != nil {
			return err
		}
		if pc.Tests, err = tx.Tests(ctx, project, ""); err != nil {
			return err
		}
		if pc.Schedules, err = tx.Schedules(ctx, project, ""); err != nil {
			return err
		}
		rows, err = tx.db.Query(ctx, "SELECT key FROM vault_entries WHERE project_id = $1 ORDER BY key", project)
		if err != nil {
			return err
		}
		pc.VaultKeys, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	}
	return pc, s.inReadSnapshot(ctx, read)
}

// LockProject takes project's row for the rest of the transaction s is
// in: the project's file is applied by one caller at a time. A project
// that does not exist is ErrNotFound.
func (s *Store) LockProject(ctx context.Context, project string) (err error) {
	defer wrap(&err, "lock project", project)
	var id string
	return translate(s.db.QueryRow(ctx, "SELECT id FROM projects WHERE id = $1 FOR UPDATE", project).Scan(&id))
}

// APIPathOf is path as the projects table would store it for project id
// (canonical: one leading slash, no empty segment, no trailing slash), and
// a project other than id whose api_path is path, or overlaps it (one
// inside the other by whole segments), as the table's trigger would find
// when path is written: "" when none; equal says the paths are the same.
func (s *Store) APIPathOf(ctx context.Context, id, path string) (canonical, holder string, equal bool, err error) {
	defer wrap(&err, "api path of", id)
	err = s.db.QueryRow(ctx, `SELECT api_path_canonical($2), coalesce(h.id, ''), coalesce(h.equal, false)
		FROM (SELECT 1) AS one LEFT JOIN LATERAL (
			SELECT p.id, api_path_key(p.api_path) = api_path_key($2) AS equal FROM projects p
			WHERE p.id <> $1 AND api_paths_overlap(api_path_key(p.api_path), api_path_key($2)) ORDER BY 2 DESC, 1 LIMIT 1) AS h ON true`,
		id, path).Scan(&canonical, &holder, &equal)
	return canonical, holder, equal, err
}
