package handlers

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/url"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"stencil/authoring"
	"stencil/engine"
	"stencil/flow"
	"stencil/schedule"
	"stencil/store"
)

// Schedules of routes (docs/schedules.md): AUTHOR and up make,
// change and delete them; members read them with their next runs.

// scheduleDTO is a schedule as the API gives it, with its next five ticks.
type scheduleDTO struct {
	ID        int64           `json:"id"`
	ProjectID string          `json:"project_id"`
	RouteID   string          `json:"route_id"`
	Cron      string          `json:"cron"`
	Timezone  string          `json:"timezone"`
	Query     string          `json:"query"`
	Body      json.RawMessage `json:"body"`
	Active    bool            `json:"active"`
	NextRuns  []time.Time     `json:"next_runs"`
	LastTicks []tickDTO       `json:"last_ticks"`
	Since     time.Time       `json:"since"`
	CreatedBy *int64          `json:"created_by"`
	CreatedAt time.Time       `json:"created_at"`
	UpdatedAt time.Time       `json:"updated_at"`
}

// tickDTO is a tick of a schedule as it went: running, done (with the
// run's status) or skipped (its previous run still ran).
type tickDTO struct {
	Tick       time.Time  `json:"tick"`
	State      string     `json:"state"`
	Status     *int       `json:"status"`
	FinishedAt *time.Time `json:"finished_at"`
}

// Code is the tick's run's status, 0 when it has none (yet).
func (t tickDTO) Code() int {
	if t.Status == nil {
		return 0
	}
	return *t.Status
}

// nextRuns is how many upcoming ticks a schedule shows, and lastTicks how
// many of those past.
const (
	nextRuns  = 5
	lastTicks = 5
)

func newScheduleDTO(sc store.Schedule, now time.Time) scheduleDTO {
	d := scheduleDTO{ID: sc.ID, ProjectID: sc.ProjectID, RouteID: sc.RouteID, Cron: sc.Cron, Timezone: sc.Timezone, Query: sc.Query,
		Body: sc.Body, Active: sc.Active, NextRuns: []time.Time{}, LastTicks: []tickDTO{}, Since: sc.Since, CreatedBy: sc.CreatedBy, CreatedAt: sc.CreatedAt, UpdatedAt: sc.UpdatedAt}
	if d.Body == nil {
		d.Body = json.RawMessage("null")
	}
	if spec, err := schedule.Parse(sc.Cron, sc.Timezone); err == nil && sc.Active {
		d.NextRuns = spec.Upcoming(now, nextRuns)
	}
	return d
}

// scheduleInput is a new schedule: a JSON body, or the route page's form,
// whose body is JSON text (BodyText).
type scheduleInput struct {
	ProjectID string          `json:"project_id" form:"project_id" validate:"required"`
	RouteID   string          `json:"route_id" form:"route_id" validate:"required,max=100"`
	Cron      string          `json:"cron" form:"cron" validate:"required,max=100"`
	Timezone  string          `json:"timezone" form:"timezone" validate:"max=64"`
	Query     string          `json:"query" form:"query" validate:"max=2048"`
	Body      json.RawMessage `json:"body" form:"-"`
	BodyText  string          `json:"-" form:"body" validate:"max=65536"`
	Active    *bool           `json:"active" form:"-"`
}

type scheduleUpdateInput struct {
	ProjectID string          `json:"project_id" form:"project_id" validate:"required"`
	ID        int64           `json:"id" form:"id" validate:"required,min=1"`
	Cron      *string         `json:"cron" form:"-" validate:"omitnil,min=1,max=100"`
	Timezone  *string         `json:"timezone" form:"-" validate:"omitnil,max=64"`
	Query     *string         `json:"query" form:"-" validate:"omitnil,max=2048"`
	Body      json.RawMessage `json:"body" form:"-"`
	Active    *bool           `json:"active" form:"active"`
}

type scheduleQuery struct {
	ProjectID string `query:"project_id" json:"project_id" validate:"required"`
	RouteID   string `query:"route_id" json:"route_id" validate:"max=100"`
}

type scheduleKeyQuery struct {
	ProjectID string `query:"project_id" json:"project_id" validate:"required"`
	ID        int64  `query:"id" json:"id" validate:"required,min=1"`
}

// checkSchedule checks a schedule's expression, zone and body, and that
// its route can run without a caller: no path parameters to fill, no
// caller to check (auth_jwt) or signature (auth_signature). It fills
// Timezone's default, UTC.
func (h *Handlers) checkSchedule(c *fiber.Ctx, sc *store.Schedule) error {
	if sc.Timezone == "" {
		sc.Timezone = "UTC"
	}
	if _, err := schedule.Zone(sc.Timezone); err != nil {
		return &ValidationError{Fields: map[string]string{"timezone": err.Error()}}
	}
	if _, err := schedule.Parse(sc.Cron, sc.Timezone); err != nil {
		return &ValidationError{Fields: map[string]string{"cron": err.Error()}}
	}
	if b := bytes.TrimSpace(sc.Body); !given(b) {
		sc.Body = nil
	} else if b[0] != '{' || !json.Valid(b) {
		return &ValidationError{Fields: map[string]string{"body": "must be a JSON object or null"}}
	} else if len(b) > 64<<10 {
		return &ValidationError{Fields: map[string]string{"body": "must be at most 64 KiB"}}
	}
	r, err := h.store.Route(c.UserContext(), sc.ProjectID, sc.RouteID)
	if errors.Is(err, store.ErrNotFound) {
		return fiber.NewError(fiber.StatusNotFound, "route "+sc.RouteID+" not found")
	}
	if err != nil {
		return err
	}
	switch {
	case len(engine.PathParams(r.RoutePath)) > 0:
		return &ValidationError{Fields: map[string]string{"route_id": "names a route whose path has parameters to fill: a schedule runs routes without them"}}
	case r.AuthJWT.Active:
		return &ValidationError{Fields: map[string]string{"route_id": "names a route that checks its callers (auth_jwt): a schedule's run has no caller"}}
	case r.AuthSignature.Checks():
		return &ValidationError{Fields: map[string]string{"route_id": "names a route that checks signed webhooks (auth_signature): a schedule's run carries no signature"}}
	}
	return nil
}

// routeSchedules are a route's schedules as its page shows them, each
// with its last ticks.
func (h *Handlers) routeSchedules(c *fiber.Ctx, project, route string) ([]scheduleDTO, error) {
	list, err := h.store.Schedules(c.UserContext(), project, route)
	if err != nil {
		return nil, err
	}
	ids := make([]int64, len(list))
	for i, sc := range list {
		ids[i] = sc.ID
	}
	ticks, err := h.store.Ticks(c.UserContext(), ids, lastTicks)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	out := make([]scheduleDTO, len(list))
	for i, sc := range list {
		out[i] = newScheduleDTO(sc, now)
		for _, tk := range ticks[sc.ID] {
			out[i].LastTicks = append(out[i].LastTicks, tickDTO{Tick: tk.Tick.UTC(), State: tk.State, Status: tk.Status, FinishedAt: tk.FinishedAt})
		}
	}
	return out, nil
}

// scheduleFormError answers the route page's form with its errors beside
// their fields.
func (h *Handlers) scheduleFormError(c *fiber.Ctx, err error, in scheduleInput) error {
	return h.formError(c, err, func() (Reply, *Form, error) {
		view := routeView{Base: h.base(c, in.RouteID), Route: store.StoredRoute{Route: flow.Route{ProjectID: in.ProjectID, RouteID: in.RouteID}}, CanWrite: true}
		return Reply{Page: "routes/view", Fragment: "routes/schedule_form", View: &view}, &view.Form, nil
	})
}

// scheduleCreate answers POST /route/schedule/create.
func (h *Handlers) scheduleCreate(c *fiber.Ctx) error {
	var in scheduleInput
	if err := bind(c, &in); err != nil {
		return h.scheduleFormError(c, err, in)
	}
	if _, err := h.member(c, in.ProjectID); err != nil {
		return err
	}
	if in.BodyText != "" {
		in.Body = json.RawMessage(in.BodyText)
	}
	sc := store.Schedule{ProjectID: in.ProjectID, RouteID: in.RouteID, Cron: in.Cron, Timezone: in.Timezone, Query: in.Query, Body: in.Body, Active: true}
	if in.Active != nil {
		sc.Active = *in.Active
	}
	if err := h.checkSchedule(c, &sc); err != nil {
		return h.scheduleFormError(c, err, in)
	}
	if err := h.store.CreateSchedule(c.UserContext(), &sc, current(c).User.ID); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return fiber.NewError(fiber.StatusNotFound, "route "+sc.RouteID+" not found")
		}
		return err
	}
	h.flash(c, "success", "Schedule "+sc.Cron+" added.")
	return h.respond(c, Reply{Status: fiber.StatusCreated, Message: "Schedule created", Data: newScheduleDTO(sc, time.Now()),
		Redirect: routeViewURL(sc.ProjectID, sc.RouteID)})
}

// scheduleList answers GET /route/schedule/fetch: a project's schedules,
// or a route's.
func (h *Handlers) scheduleList(c *fiber.Ctx) error {
	var q scheduleQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	if _, err := h.member(c, q.ProjectID); err != nil {
		return err
	}
	out, err := h.routeSchedules(c, q.ProjectID, q.RouteID)
	if err != nil {
		return err
	}
	n := len(out)
	return h.respond(c, Reply{Data: out, Amount: &n})
}

// scheduleUpdate answers PATCH /route/schedule/update: what is given
// changes; pausing is active false, resuming active true.
func (h *Handlers) scheduleUpdate(c *fiber.Ctx) error {
	var in scheduleUpdateInput
	if err := bind(c, &in); err != nil {
		return err
	}
	if _, err := h.member(c, in.ProjectID); err != nil {
		return err
	}
	sc, err := h.store.ScheduleByID(c.UserContext(), in.ProjectID, in.ID)
	if err != nil {
		return scheduleMissing(err, in.ID)
	}
	sc.Cron, sc.Timezone, sc.Query = authoring.Deref(in.Cron, sc.Cron), authoring.Deref(in.Timezone, sc.Timezone), authoring.Deref(in.Query, sc.Query)
	sc.Active = authoring.Deref(in.Active, sc.Active)
	if in.Body != nil {
		sc.Body = in.Body
	}
	if err := h.checkSchedule(c, &sc); err != nil {
		return err
	}
	if err := h.store.UpdateSchedule(c.UserContext(), &sc); err != nil {
		return scheduleMissing(err, in.ID)
	}
	word := "updated"
	if in.Active != nil && len(c.Body()) > 0 && in.Cron == nil && in.Timezone == nil && in.Query == nil && in.Body == nil {
		word = map[bool]string{true: "resumed", false: "paused"}[sc.Active]
	}
	// The view first: it reads the page's flash, which the fragment's
	// out-of-band flash then carries.
	view, err := h.schedulesView(c, sc.ProjectID, sc.RouteID)
	if err != nil {
		return err
	}
	h.flash(c, "success", "Schedule "+sc.Cron+" "+word+".")
	return h.respond(c, Reply{Message: "Schedule " + word, Data: newScheduleDTO(sc, time.Now()), Redirect: routeViewURL(sc.ProjectID, sc.RouteID),
		Fragment: "routes/schedules", View: view})
}

// schedulesView is the route page's schedules section, which a pause, a
// resumption or a deletion from the page answers with in place.
func (h *Handlers) schedulesView(c *fiber.Ctx, project, route string) (*routeView, error) {
	if representationOf(c) != asFragment {
		return nil, nil
	}
	list, err := h.routeSchedules(c, project, route)
	if err != nil {
		return nil, err
	}
	return &routeView{Base: h.base(c, route), Route: store.StoredRoute{Route: flow.Route{ProjectID: project, RouteID: route}}, CanWrite: true,
		Schedules: list}, nil
}

// scheduleDelete answers DELETE /route/schedule/delete.
func (h *Handlers) scheduleDelete(c *fiber.Ctx) error {
	var q scheduleKeyQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	if _, err := h.member(c, q.ProjectID); err != nil {
		return err
	}
	sc, err := h.store.ScheduleByID(c.UserContext(), q.ProjectID, q.ID)
	if err != nil {
		return scheduleMissing(err, q.ID)
	}
	if err := h.store.DeleteSchedule(c.UserContext(), q.ProjectID, q.ID); err != nil {
		return scheduleMissing(err, q.ID)
	}
	view, err := h.schedulesView(c, sc.ProjectID, sc.RouteID)
	if err != nil {
		return err
	}
	h.flash(c, "success", "Schedule "+sc.Cron+" deleted.")
	return h.respond(c, Reply{Message: "Schedule deleted", Redirect: routeViewURL(sc.ProjectID, sc.RouteID), Fragment: "routes/schedules", View: view})
}

// scheduleMissing words a schedule that is not there as 404.
func scheduleMissing(err error, id int64) error {
	if errors.Is(err, store.ErrNotFound) {
		return fiber.NewError(fiber.StatusNotFound, "schedule "+strconv.FormatInt(id, 10)+" not found")
	}
	return err
}

// routeViewURL is a route's page.
func routeViewURL(project, route string) string {
	return "/web/routes/view?project_id=" + url.QueryEscape(project) + "&route_id=" + url.QueryEscape(route)
}
