package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"stencil/flow"
)

// RouteTemplate is a stored template with its metadata. In lists only the
// columns and Document are filled (and RoutePath, for pages): documents pass
// through undecoded. Read alone, a template is decoded and keeps Document.
type RouteTemplate struct {
	flow.Template
	CreatedBy *int64
	CreatedAt time.Time
	UpdatedAt time.Time
	Version   int64  // grows with each save and restore
	Document  []byte // the stored document as PostgreSQL returns it
	// DocumentSize is the stored document's length, which Document may no
	// longer hold (a cached copy drops it).
	DocumentSize int

	// What saving writes into the version it makes, never read back: who
	// saves it (creation: CreatedBy), a note, and the version it restores
	// (0: none).
	SavedBy      *int64
	Note         string
	RestoredFrom int64
}

// templateDocument is what the document column holds: the template less
// the fields that have columns of their own.
type templateDocument struct {
	RouteID   string          `json:"route_id"`
	RoutePath string          `json:"route_path"`
	AuthJWT   flow.AuthJWT    `json:"auth_jwt"`
	Params    flow.Params     `json:"params"`
	Body      []flow.Param    `json:"body"`
	Flow      flow.Flow       `json:"flow"`
	Variables []flow.Variable `json:"variables"`
}

const templateColumns = "id, name, description, project_id, method, document, created_by, created_at, updated_at, version"

func scanTemplate(row pgx.Row) (RouteTemplate, error) {
	var t RouteTemplate
	var doc []byte
	if err := row.Scan(&t.ID, &t.Name, &t.Description, &t.ProjectID, &t.Method, &doc, &t.CreatedBy, &t.CreatedAt, &t.UpdatedAt, &t.Version); err != nil {
		return t, translate(err)
	}
	t.Document, t.DocumentSize = doc, len(doc)
	return t, t.setDocument(doc)
}

func (t *RouteTemplate) document() ([]byte, error) {
	return json.Marshal(templateDocument{RouteID: t.RouteID, RoutePath: t.RoutePath, AuthJWT: t.AuthJWT, Params: t.Params,
		Body: t.Body, Flow: t.Flow, Variables: t.Variables})
}

// setDocument reads a stored document. It was validated strictly when it
// was written, so plain typed decoding is enough.
func (t *RouteTemplate) setDocument(raw []byte) error {
	var d templateDocument
	if err := json.Unmarshal(raw, &d); err != nil {
		return fmt.Errorf("stored template document does not decode: %w", err)
	}
	t.RouteID, t.RoutePath, t.AuthJWT, t.Params, t.Body, t.Flow, t.Variables = d.RouteID, d.RoutePath, d.AuthJWT, d.Params, d.Body, d.Flow, d.Variables
	t.Normalize()
	return nil
}

// SaveTemplate inserts t, or updates it when t.ID is set, and keeps the
// version it makes in the same statement; a name taken in the scope is a
// conflict on route_templates_name_key.
func (s *Store) SaveTemplate(ctx context.Context, t *RouteTemplate) (err error) {
	defer wrap(&err, "save template")
	doc, err := t.document()
	if err != nil {
		return err
	}
	// keep stores the version the statement's t makes, noted $n and saved
	// by $n+1.
	keep := func(n int) string {
		return fmt.Sprintf(`, v AS (INSERT INTO template_versions (template_id, version, name, description, method, document, note, created_by, created_at)
			SELECT id, version, name, description, method, document, $%d, $%d, updated_at FROM t)
			SELECT id, created_by, created_at, updated_at, version FROM t`, n, n+1)
	}
	const returning = " RETURNING id, name, description, method, document, created_by, created_at, updated_at, version)"
	verb, what := "update", "updated"
	switch {
	case t.ID == 0:
		verb, what = "create", "created"
	case t.RestoredFrom > 0:
		verb, what = "restore", fmt.Sprintf("restored to version %d", t.RestoredFrom)
	}
	return s.change(ctx, func(tx *Store) (Event, error) {
		err := tx.save(ctx, t, doc, returning, keep)
		summary := fmt.Sprintf("template %s %s, version %d", t.Name, what, t.Version)
		if t.Note != "" && t.RestoredFrom == 0 {
			summary += ": " + t.Note
		}
		return Event{Type: "template_" + verb, ProjectID: t.ProjectID, Object: strconv.FormatInt(t.ID, 10), Summary: summary}, translate(err)
	})
}

func (s *Store) save(ctx context.Context, t *RouteTemplate, doc []byte, returning string, keep func(int) string) (err error) {
	if t.ID == 0 {
		err = s.db.QueryRow(ctx, `WITH t AS (INSERT INTO route_templates (name, description, project_id, method, document, created_by)
			VALUES ($1, $2, $3, $4, $5, $7)`+returning+keep(6),
			t.Name, t.Description, t.ProjectID, t.Method, doc, t.Note, t.CreatedBy).Scan(&t.ID, &t.CreatedBy, &t.CreatedAt, &t.UpdatedAt, &t.Version)
	} else {
		err = s.db.QueryRow(ctx, `WITH t AS (UPDATE route_templates SET name = $1, description = $2, project_id = $3, method = $4, document = $5,
			updated_at = now(), version = version + 1 WHERE id = $6`+returning+keep(7),
			t.Name, t.Description, t.ProjectID, t.Method, doc, t.ID, t.Note, t.SavedBy).Scan(&t.ID, &t.CreatedBy, &t.CreatedAt, &t.UpdatedAt, &t.Version)
	}
	return err
}

// TemplateVersion is one kept version of a template.
type TemplateVersion struct {
	Template      RouteTemplate // as that version saved it (scope, id and metadata of today)
	Version       int64
	Note          string
	CreatedBy     *int64
	CreatedByName string
	CreatedAt     time.Time
}

const templateVersionColumns = `v.version, v.name, v.description, v.method, v.document, v.note, v.created_by, coalesce(u.username, ''), v.created_at
	FROM template_versions v LEFT JOIN users u ON u.id = v.created_by`

func scanTemplateVersion(row pgx.Row, of RouteTemplate) (TemplateVersion, error) {
	v := TemplateVersion{Template: of}
	var doc []byte
	t := &v.Template
	if err := row.Scan(&v.Version, &t.Name, &t.Description, &t.Method, &doc, &v.Note, &v.CreatedBy, &v.CreatedByName, &v.CreatedAt); err != nil {
		return v, translate(err)
	}
	t.Document, t.DocumentSize = doc, len(doc)
	return v, t.setDocument(doc)
}

// TemplateVersions returns a page of template t's versions, newest first,
// and how many there are.
func (s *Store) TemplateVersions(ctx context.Context, t RouteTemplate, p Page) (_ []TemplateVersion, _ int, err error) {
	defer wrap(&err, "template versions")
	var total int
	if err := s.db.QueryRow(ctx, "SELECT count(*) FROM template_versions WHERE template_id = $1", t.ID).Scan(&total); err != nil {
		return nil, 0, err
	}
	rows, err := s.db.Query(ctx, "SELECT "+templateVersionColumns+" WHERE v.template_id = $1 ORDER BY v.version DESC OFFSET $2 LIMIT $3", t.ID, p.Offset, p.Limit)
	if err != nil {
		return nil, 0, err
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (TemplateVersion, error) { return scanTemplateVersion(r, t) })
	return list, total, err
}

// TemplateVersionOf returns version n of template t.
func (s *Store) TemplateVersionOf(ctx context.Context, t RouteTemplate, n int64) (_ TemplateVersion, err error) {
	defer wrap(&err, "template version of")
	return scanTemplateVersion(s.db.QueryRow(ctx, "SELECT "+templateVersionColumns+" WHERE v.template_id = $1 AND v.version = $2", t.ID, n), t)
}

// Template returns template id.
func (s *Store) Template(ctx context.Context, id int64) (_ RouteTemplate, err error) {
	defer wrap(&err, "template")
	return scanTemplate(s.db.QueryRow(ctx, "SELECT "+templateColumns+" FROM route_templates WHERE id = $1", id))
}

// TemplateUpdatedAt returns when template id last changed: with the id, the
// version of its document.
func (s *Store) TemplateUpdatedAt(ctx context.Context, id int64) (_ time.Time, err error) {
	defer wrap(&err, "template updated at")
	var at time.Time
	err = s.db.QueryRow(ctx, "SELECT updated_at FROM route_templates WHERE id = $1", id).Scan(&at)
	return at, translate(err)
}

// TemplateByName returns the template named name in project (nil: global).
func (s *Store) TemplateByName(ctx context.Context, name string, project *string) (_ RouteTemplate, err error) {
	defer wrap(&err, "template by name", name)
	return scanTemplate(s.db.QueryRow(ctx, "SELECT "+templateColumns+
		" FROM route_templates WHERE name = $1 AND project_id IS NOT DISTINCT FROM $2", name, project))
}

// The statements of a template list: the templates of projects $1 and,
// when $2, the global ones, whose name or description contains $3; the page
// skips $4 and takes $5. Exported for the load harness's anchor.
const (
	templateListWhere = ` WHERE (project_id = ANY($1) OR ($2 AND project_id IS NULL))
		AND ($3 = '' OR strpos(lower(name || ' ' || description), lower($3)) > 0)`
	TemplateCountSQL = "SELECT count(*) FROM route_templates" + templateListWhere
	TemplatePageSQL  = "SELECT " + templateColumns + ", document->>'route_path' FROM route_templates" + templateListWhere +
		" ORDER BY project_id NULLS FIRST, lower(name) OFFSET $4 LIMIT $5"
)

// ListTemplates returns a page of the templates of projects (and, with
// global, the global ones) whose name or description contains the filter,
// global first then by name, and the number of matches.
func (s *Store) ListTemplates(ctx context.Context, projects []string, global bool, p Page) (_ []RouteTemplate, _ int, err error) {
	defer wrap(&err, "list templates")
	var total int
	if err := s.db.QueryRow(ctx, TemplateCountSQL, projects, global, p.Filter).Scan(&total); err != nil {
		return nil, 0, err
	}
	rows, err := s.db.Query(ctx, TemplatePageSQL, projects, global, p.Filter, p.Offset, p.Limit)
	if err != nil {
		return nil, 0, err
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (RouteTemplate, error) {
		var t RouteTemplate
		err := r.Scan(&t.ID, &t.Name, &t.Description, &t.ProjectID, &t.Method, &t.Document, &t.CreatedBy, &t.CreatedAt, &t.UpdatedAt, &t.Version, &t.RoutePath)
		return t, err
	})
	return list, total, err
}

// DeleteTemplate removes template id; routes made from it keep their copy.
func (s *Store) DeleteTemplate(ctx context.Context, id int64) (err error) {
	defer wrap(&err, "delete template")
	return s.change(ctx, func(tx *Store) (Event, error) {
		var name string
		var project *string
		err := tx.db.QueryRow(ctx, "DELETE FROM route_templates WHERE id = $1 RETURNING name, project_id", id).Scan(&name, &project)
		return Event{Type: "template_delete", ProjectID: project, Object: strconv.FormatInt(id, 10), Summary: "template " + name + " deleted"}, translate(err)
	})
}

// MemberProjects lists the ids of the projects uid is a member of with a
// membership role of min or higher (RoleViewer: all of them). The user's
// own role is the caller's to check: the effective role is the lower of
// the two (docs/roles.md).
func (s *Store) MemberProjects(ctx context.Context, uid int64, min string) (_ []string, err error) {
	defer wrap(&err, "member projects")
	rows, err := s.db.Query(ctx, "SELECT project_id FROM project_members WHERE user_id = $1 AND role = ANY($2) ORDER BY project_id", uid, RolesFrom(min))
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}
