package handlers

import (
	"slices"

	"github.com/gofiber/fiber/v2"

	"stencil/store"
)

type runListQuery struct {
	listQuery
	ProjectID string `query:"project_id" json:"project_id" validate:"required"`
	RouteID   string `query:"route_id" json:"route_id" validate:"max=100"`
	Status    string `query:"status" json:"status" validate:"omitempty,run_status"`
}

// runDTO is one run of a route as the API shows it.
type runDTO struct {
	ID         int64   `json:"id"`
	At         string  `json:"at"`
	RouteID    string  `json:"route_id"`
	Method     string  `json:"method"`
	Path       string  `json:"path"`
	Status     int     `json:"status"`
	Ended      string  `json:"ended"`
	DurationMS float64 `json:"duration_ms"`
	UserID     *int64  `json:"user_id"`
	Username   string  `json:"username"`
	Fault      string  `json:"fault"`
	Attempts   int     `json:"attempts"`
}

type runsView struct {
	Base
	Project  store.Project
	Runs     []runDTO
	Pager    Pager
	RouteID  string
	Status   string
	RouteIDs []string
	Statuses []string
}

// runList answers GET /route/runs and renders /web/routes/runs: the runs
// of a project's routes, newest first, by route and by status (a class
// such as 4xx, or one status), for every member of the project.
func (h *Handlers) runList(c *fiber.Ctx) error {
	var q runListQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	p, err := h.member(c, q.ProjectID)
	if err != nil {
		return err
	}
	page := q.page(defaultLimit(c, 25))
	runs, total, err := h.store.ListRuns(c.UserContext(), p.ID, store.RunQuery{Page: page, RouteID: q.RouteID, Status: q.Status})
	if err != nil {
		return err
	}
	dtos := make([]runDTO, len(runs))
	for i, r := range runs {
		dtos[i] = runDTO{ID: r.ID, At: r.At.UTC().Format("2006-01-02T15:04:05.000Z"), RouteID: r.RouteID, Method: r.Method, Path: r.Path,
			Status: r.Status, Ended: r.Ended, DurationMS: float64(r.Duration.Microseconds()) / 1000, UserID: r.UserID, Username: r.Username, Fault: r.Fault, Attempts: r.Attempts}
	}
	if representationOf(c) == asJSON {
		return h.respond(c, Reply{Data: dtos, Amount: &total})
	}
	ids, err := h.store.RouteIDs(c.UserContext(), p.ID)
	if err != nil {
		return err
	}
	if q.RouteID != "" && !slices.Contains(ids, q.RouteID) {
		ids = append(ids, q.RouteID) // a route deleted since: its runs stay a week
	}
	view := runsView{Base: h.base(c, "Runs · "+p.Name), Project: p, Runs: dtos, Pager: newCappedPager(c, page, len(runs), total, store.LogCountCap),
		RouteID: q.RouteID, Status: q.Status, RouteIDs: ids, Statuses: []string{"2xx", "4xx", "5xx"}}
	return h.respond(c, Reply{Data: dtos, Amount: &total, Page: "routes/runs", View: view})
}
