package handlers

import (
	"net/url"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"stencil/flow"
	"stencil/runs"
	"stencil/store"
	"stencil/views"
)

type routesView struct {
	Base
	Project  store.Project
	Routes   []store.StoredRoute
	Pager    Pager
	CanWrite bool
	Health   map[string]routeHealth // a project's routes over the last 24 hours
}

// routesIndex renders /web/routes?id=: a project's routes; without id, the
// routes of every project the caller is a member of.
func (h *Handlers) routesIndex(c *fiber.Ctx) error {
	var q listQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	if c.Query("id") == "" {
		page := q.page(20)
		routes, total, err := h.store.ListMemberRoutes(c.UserContext(), current(c).User.ID, page)
		if err != nil {
			return err
		}
		view := routesView{Base: h.base(c, "Routes"), Routes: routes, Pager: newPager(c, page, len(routes), total)}
		return h.respond(c, Reply{Page: "routes/index", View: view})
	}
	p, err := h.member(c, c.Query("id"))
	if err != nil {
		return err
	}
	page := q.page(20)
	routes, total, err := h.store.ListRoutes(c.UserContext(), p.ID, page)
	if err != nil {
		return err
	}
	ids := make([]string, len(routes))
	for i, r := range routes {
		ids[i] = r.RouteID
	}
	health, err := h.healthOf(c, p.ID, ids)
	if err != nil {
		return err
	}
	view := routesView{Base: h.base(c, "Routes · "+p.Name), Project: p, Routes: routes, Pager: newPager(c, page, len(routes), total),
		CanWrite: canIn(c, p, store.RoleAuthor), Health: health}
	return h.respond(c, Reply{Page: "routes/index", View: view})
}

type routeView struct {
	Base
	Route    store.StoredRoute
	Blocks   []views.Block
	Request  views.Request
	CanWrite bool
	Address  string // the URL the route answers at
	Curl     string // a cURL command that calls it
	Newer    int64  // a newer version of the route's template, 0 when none
	Health   routeHealth
	// Shown is the older version whose flow the page shows (?version=, as
	// the run log links a fault's block to the version that ran); 0: the
	// live one.
	Shown int64
	// Schedules are the route's schedules with their next runs; Form the
	// form that adds one (docs/schedules.md).
	Schedules []scheduleDTO
	Form      Form
	// Jobs are the route's newest jobs (docs/jobs.md).
	Jobs jobsView
}

// routeEditor renders /web/routes/create?id=: the route form, with Create
// from Template; with template_id, that template's values are asked first.
func (h *Handlers) routeEditor(c *fiber.Ctx) error {
	p, err := h.member(c, c.Query("id"))
	if err != nil {
		return err
	}
	doc := flow.Route{ProjectID: p.ID, Method: "GET", RoutePath: "/"}
	doc.Normalize()
	data := newEditorData("route", doc)
	data.ProjectID = p.ID
	if raw := c.Query("template_id"); raw != "" {
		// "Use this template": the editor opens asking for its values.
		id, err := strconv.ParseInt(raw, 10, 64)
		if err != nil || id < 1 {
			return &ValidationError{Fields: map[string]string{"template_id": "must be a template id"}}
		}
		t, err := h.templateFor(c, id, p.ID)
		if err != nil {
			return err
		}
		dto := newTemplateDTO(t)
		data.Template = &dto
	}
	return h.editorPage(c, "New route in "+p.Name, "/web/routes?id="+p.ID, data)
}

// routeEditPage renders /web/routes/edit?project_id=&route_id=: the route
// in the editor; saving updates it (PATCH /route/update).
func (h *Handlers) routeEditPage(c *fiber.Ctx) error {
	p, r, err := h.memberRoute(c)
	if err != nil {
		return err
	}
	data := newEditorData("route", r.Route)
	data.ProjectID, data.RouteID = p.ID, r.RouteID
	return h.editorPage(c, "Edit route "+r.RouteID, "/web/routes/view?project_id="+url.QueryEscape(p.ID)+"&route_id="+url.QueryEscape(r.RouteID), data)
}

// routeAddress is where route r of a project at apiPath answers, as its
// clients call it: this service's origin, /x, the project's path and the
// route's, its :name segments written {name}. The origin is
// ROUTES_ORIGIN's when /x has one of its own.
func (h *Handlers) routeAddress(c *fiber.Ctx, apiPath string, r flow.Route) string {
	path, _ := runs.DocPath(r.RoutePath)
	origin := c.BaseURL()
	if h.cfg.RoutesOrigin != "" {
		origin = h.cfg.RoutesOrigin
	}
	return origin + "/x" + strings.TrimSuffix(apiPath, "/") + path
}
