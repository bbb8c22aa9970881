package store

import "context"

// Progress is how far a user has come on a first day, read from their own
// work in the projects they are a member of: the home page's checklist
// counts the viewer's own steps only (docs/roles.md).
type Progress struct {
	FirstProject string // the first of their projects by id, or ""
	Projects     int
	// Role is their highest membership role ("" with no project): with
	// their own role, the most they can do in any of their projects.
	Role      string
	Secrets   bool // a vault entry they created
	Templates bool // a template they made
	Routes    bool // a route they made
	Runs      bool // a run they sent, or a run of a route they made, in the run log
}

// UserProgress reads user uid's Progress in one statement.
func (s *Store) UserProgress(ctx context.Context, uid int64) (_ Progress, err error) {
	defer wrap(&err, "user progress")
	var p Progress
	err = s.db.QueryRow(ctx, `WITH mine AS (SELECT project_id, role FROM project_members WHERE user_id = $1)
		SELECT coalesce((SELECT min(project_id) FROM mine), ''), (SELECT count(*) FROM mine),
			coalesce((SELECT CASE WHEN bool_or(role = 'ADMIN') THEN 'ADMIN' WHEN bool_or(role = 'AUTHOR') THEN 'AUTHOR' ELSE 'VIEWER' END FROM mine HAVING count(*) > 0), ''),
			EXISTS (SELECT 1 FROM vault_entries WHERE created_by = $1 AND project_id IN (SELECT project_id FROM mine)),
			EXISTS (SELECT 1 FROM route_templates WHERE created_by = $1 AND (project_id IS NULL OR project_id IN (SELECT project_id FROM mine))),
			EXISTS (SELECT 1 FROM routes WHERE created_by = $1 AND project_id IN (SELECT project_id FROM mine)),
			EXISTS (SELECT 1 FROM route_runs WHERE user_id = $1 AND project_id IN (SELECT project_id FROM mine))
			OR EXISTS (SELECT 1 FROM routes r JOIN route_runs x ON x.project_id = r.project_id AND x.route_id = r.route_id
				WHERE r.created_by = $1 AND r.project_id IN (SELECT project_id FROM mine))`, uid).
		Scan(&p.FirstProject, &p.Projects, &p.Role, &p.Secrets, &p.Templates, &p.Routes, &p.Runs)
	return p, err
}
