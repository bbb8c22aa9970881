package store

import "context"

// Progress is how far a user has come on a first day, read from what the
// projects they are a member of hold: the home page's checklist.
type Progress struct {
	FirstProject string // the first of their projects by id, or ""
	Projects     int
	Secrets      bool // a vault entry in one of them
	Templates    bool // a template of one of them, or a global one they made
	Routes       bool // a route in one of them
	Runs         bool // a run of one of their routes in the run log
}

// UserProgress reads user uid's Progress in one statement.
func (s *Store) UserProgress(ctx context.Context, uid int64) (_ Progress, err error) {
	defer wrap(&err, "user progress")
	var p Progress
	err = s.db.QueryRow(ctx, `WITH mine AS (SELECT project_id FROM project_members WHERE user_id = $1)
		SELECT coalesce((SELECT min(project_id) FROM mine), ''), (SELECT count(*) FROM mine),
			EXISTS (SELECT 1 FROM vault_entries WHERE project_id IN (SELECT project_id FROM mine)),
			EXISTS (SELECT 1 FROM route_templates WHERE project_id IN (SELECT project_id FROM mine) OR (project_id IS NULL AND created_by = $1)),
			EXISTS (SELECT 1 FROM routes WHERE project_id IN (SELECT project_id FROM mine)),
			EXISTS (SELECT 1 FROM route_runs WHERE project_id IN (SELECT project_id FROM mine))`, uid).
		Scan(&p.FirstProject, &p.Projects, &p.Secrets, &p.Templates, &p.Routes, &p.Runs)
	return p, err
}
