package handlers

import (
	"context"
	"errors"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"stencil/runs"
	"stencil/store"
)

// Jobs of routes (docs/jobs.md): members read them; AUTHOR members and up
// cancel and retry them.

type jobListQuery struct {
	ProjectID string `query:"project_id" json:"project_id" validate:"required"`
	RouteID   string `query:"route_id" json:"route_id" validate:"max=100"`
	State     string `query:"state" json:"state" validate:"omitempty,oneof=scheduled running retryable completed discarded cancelled"`
	listQuery
}

type jobKey struct {
	ProjectID string `json:"project_id" form:"project_id" validate:"required"`
	ID        int64  `json:"id" form:"id" validate:"required,min=1"`
	// RouteID is the route page a form was sent from: its jobs section is
	// answered in place (htmx); empty, the jobs page's table.
	RouteID string `json:"-" form:"route_id" validate:"max=100"`
	State   string `json:"-" form:"state" validate:"max=20"`
}

// jobsView is the jobs page (/web/routes/jobs) and a route page's jobs
// section (routes/jobs-table, which both show).
type jobsView struct {
	Base
	Project store.Project
	Jobs    []store.Job
	Pager   Pager
	RouteID string
	State   string
	States  []string
	// CanChange: the reader may cancel and retry (AUTHOR and up).
	CanChange bool
}

// jobList answers GET /route/job/fetch and renders /web/routes/jobs: a
// project's jobs, newest first, by route and state.
func (h *Handlers) jobList(c *fiber.Ctx) error {
	var q jobListQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	p, err := h.member(c, q.ProjectID)
	if err != nil {
		return err
	}
	view, total, capped, err := h.jobsView(c, p, q.RouteID, q.State, q.page(defaultLimit(c, 25)))
	if err != nil {
		return err
	}
	if representationOf(c) != asJSON {
		view.Base = h.base(c, "Jobs · "+p.Name)
	}
	return h.respond(c, Reply{Data: view.Jobs, Amount: &total, Capped: capped, Page: "routes/jobs", View: view})
}

// jobsView reads the jobs of p that route and state select, a page of
// them (its Base is the caller's to set: a page's, not a fragment's).
func (h *Handlers) jobsView(c *fiber.Ctx, p store.Project, route, state string, page store.Page) (jobsView, int, bool, error) {
	jobs, total, capped, err := h.store.Jobs(c.UserContext(), store.JobQuery{Project: p.ID, Route: route, State: state, Offset: page.Offset, Limit: page.Limit})
	if err != nil {
		return jobsView{}, 0, false, err
	}
	pager := newPager(c, page, len(jobs), total)
	pager.AtLeast = capped
	view := jobsView{Project: p, Jobs: jobs, Pager: pager, RouteID: route, State: state, States: store.JobStates,
		CanChange: canIn(c, p, store.RoleAuthor)}
	return view, total, capped, nil
}

// jobCancel answers POST /route/job/cancel.
func (h *Handlers) jobCancel(c *fiber.Ctx) error {
	return h.jobChange(c, "cancelled", h.runs.CancelJob)
}

// jobRetry answers POST /route/job/retry.
func (h *Handlers) jobRetry(c *fiber.Ctx) error {
	return h.jobChange(c, "due now", h.runs.RetryJob)
}

// jobChange does change to the job the request names and answers it: as
// JSON, the job; to a page, the table the form was in, in place.
func (h *Handlers) jobChange(c *fiber.Ctx, done string, change func(ctx context.Context, project string, id int64) (store.Job, error)) error {
	var in jobKey
	if err := bind(c, &in); err != nil {
		return err
	}
	p, err := h.member(c, in.ProjectID)
	if err != nil {
		return err
	}
	j, err := change(c.UserContext(), p.ID, in.ID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return fiber.NewError(fiber.StatusNotFound, "job "+strconv.FormatInt(in.ID, 10)+" not found")
	case errors.Is(err, runs.ErrJobNotRetried):
		return fiber.NewError(fiber.StatusConflict, "job "+strconv.FormatInt(in.ID, 10)+" is "+j.State+": "+err.Error())
	case err != nil:
		return err
	}
	if representationOf(c) == asJSON {
		return h.respond(c, Reply{Data: j, Message: "Job " + done})
	}
	view, _, _, err := h.jobsView(c, p, in.RouteID, in.State, store.Page{Limit: 25})
	if err != nil {
		return err
	}
	h.flash(c, "success", "Job "+strconv.FormatInt(j.ID, 10)+" "+done+".")
	redirect := "/web/routes/jobs?project_id=" + p.ID
	if in.RouteID != "" {
		redirect = routeViewURL(p.ID, in.RouteID)
	}
	return h.respond(c, Reply{Data: j, Message: "Job " + done, Redirect: redirect, Fragment: "routes/jobs-table", View: view})
}
