package handlers

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"stencil/authoring"
	"stencil/flow"
	"stencil/runs"
	"stencil/store"
	"stencil/views"
)

// routeDTO is a route as the API shows it (docs/routes.md), with its metadata.
type routeDTO struct {
	flow.Route
	CreatedBy *int64    `json:"created_by"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	Version   int64     `json:"version"`
}

func newRouteDTO(r store.StoredRoute) routeDTO {
	return routeDTO{Route: r.Route, CreatedBy: r.CreatedBy, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, Version: r.Version}
}

// routeInput is the body of route create and update: the route document
// under "route", decoded strictly by the flow package.
type routeInput struct {
	ProjectID  string          `json:"project_id" validate:"required"`
	RouteID    string          `json:"route_id"`
	Route      json.RawMessage `json:"route" validate:"required"`
	TemplateID int64           `json:"template_id" validate:"omitempty,min=1"`
	// Note is kept with the version the save makes (docs/routes.md).
	Note string `json:"note" validate:"max=500,plain_text"`
}

// checkRunnable checks r as saving does (authoring.CheckRoute), for a
// caller who may read the vault when ADMIN or ROOT in r's project, p (as
// the handler's membership check read it, its egress list with it: no
// second read).
func (h *Handlers) checkRunnable(c *fiber.Ctx, p store.Project, r flow.Route) ([]flow.Warning, error) {
	return authoring.CheckRoute(c.UserContext(), h.store, r, canIn(c, p, store.RoleAdmin), p.XEgressHosts)
}

// routeToSave reads a route document from the body, for a member of its
// project, and checks it as saving does: it returns the input, the route
// and its warnings. An update names the route it replaces (needID).
func (h *Handlers) routeToSave(c *fiber.Ctx, needID bool) (routeInput, flow.Route, []flow.Warning, error) {
	var in routeInput
	if err := bind(c, &in); err != nil {
		return in, flow.Route{}, nil, err
	}
	// As in a template's body and the route document itself, a field the
	// body does not know is refused, not ignored: a typo never saves
	// silently (the API document says so for both).
	if err := refuseUnknownFields(c, in); err != nil {
		return in, flow.Route{}, nil, err
	}
	if needID && in.RouteID == "" {
		return in, flow.Route{}, nil, &ValidationError{Fields: map[string]string{"route_id": "is required"}, Missing: true}
	}
	p, err := h.member(c, in.ProjectID)
	if err != nil {
		return in, flow.Route{}, nil, err
	}
	r, err := authoring.DecodeRoute(in.Route, in.ProjectID)
	if err != nil {
		return in, r, nil, err
	}
	warnings, err := h.checkRunnable(c, p, r)
	return in, r, warnings, err
}

// routeLint answers the route editor as the author types: the warnings
// saving the route would give. A document that cannot be saved answers as
// saving it would (422 by path, or 403).
func (h *Handlers) routeLint(c *fiber.Ctx) error {
	in, r, warnings, err := h.routeToSave(c, false)
	if err != nil {
		return err
	}
	broken, err := h.testsBroken(c, in.ProjectID, r)
	if err != nil {
		return err
	}
	warnings = append(warnings, broken...)
	return h.respond(c, Reply{Message: "Checked", Data: fiber.Map{"checks": warnings}, Warnings: warnings})
}

// routesChanged reloads routes of a project on this instance at once
// (none named: the whole project); other instances follow the database's
// notices.
func (h *Handlers) routesChanged(c *fiber.Ctx, project string, routes ...string) {
	if err := h.runs.RoutesChanged(c.UserContext(), project, routes...); err != nil {
		h.log.Error("reload routes", "project", project, "err", err)
	}
}

// routeCreate answers POST /route/create. With template_id (or the route's
// own template reference, as apply returns it) the route records which
// template it came from: a snapshot that later template changes leave alone.
func (h *Handlers) routeCreate(c *fiber.Ctx) error {
	in, r, warnings, err := h.routeToSave(c, false)
	if err != nil {
		return err
	}
	if in.TemplateID == 0 && r.Template != nil {
		in.TemplateID = r.Template.ID
	}
	given := r.Template
	r.Template = nil
	if in.TemplateID != 0 {
		t, err := h.templateFor(c, in.TemplateID, in.ProjectID)
		if err != nil {
			return &ValidationError{Fields: map[string]string{"template_id": "is not a template available in this project"}}
		}
		// The version applied and the values given come with the document
		// apply made; without them the route counts as made from the
		// template's version of now.
		r.Template = &flow.TemplateRef{ID: t.ID, Name: t.Name, Version: t.Version}
		if given != nil && given.ID == t.ID {
			if given.Version > t.Version {
				return &ValidationError{Fields: map[string]string{"route.template.version": fmt.Sprintf("must be a version of template %d (1 to %d)", t.ID, t.Version)}}
			}
			if given.Version > 0 {
				r.Template.Version = given.Version
			}
			r.Template.Values = given.Values
		}
	}
	sr := store.StoredRoute{Route: r, CreatedBy: &current(c).User.ID, Note: in.Note}
	if err := h.store.CreateRoute(c.UserContext(), &sr); err != nil {
		return err
	}
	h.routesChanged(c, sr.ProjectID, sr.RouteID)
	h.flash(c, "success", "Route "+sr.RouteID+" created.")
	return h.respond(c, Reply{Status: fiber.StatusCreated, Message: "Route created", Data: newRouteDTO(sr), Warnings: warnings,
		Redirect: routeViewURL(sr.ProjectID, sr.RouteID)})
}

type routeListQuery struct {
	listQuery
	ProjectID string `query:"project_id" json:"project_id" validate:"required"`
}

// routeList answers GET /route/fetch: a project's routes.
func (h *Handlers) routeList(c *fiber.Ctx) error {
	var q routeListQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	if _, err := h.member(c, q.ProjectID); err != nil {
		return err
	}
	routes, total, err := h.store.ListRoutes(c.UserContext(), q.ProjectID, q.page(50))
	if err != nil {
		return err
	}
	dtos := make([]routeDTO, len(routes))
	for i, r := range routes {
		dtos[i] = newRouteDTO(r)
	}
	return h.respond(c, Reply{Data: dtos, Amount: &total})
}

type routeKeyQuery struct {
	ProjectID string `query:"project_id" json:"project_id" validate:"required"`
	RouteID   string `query:"route_id" json:"route_id" validate:"required"`
}

// routeShow answers GET /route/fetch/one and renders /web/routes/view: a
// route, with the template it came from.
func (h *Handlers) routeShow(c *fiber.Ctx) error {
	p, r, err := h.memberRoute(c)
	if err != nil {
		return err
	}
	req := flow.Template{RouteID: r.RouteID, RoutePath: r.RoutePath, Method: r.Method, AuthJWT: r.AuthJWT, Params: r.Params, Body: r.Body}
	view := routeView{Base: h.base(c, r.RouteID), Route: r, Blocks: views.Blocks(r.Flow, nil), Request: views.RequestOf(req, nil),
		CanWrite: canIn(c, p, store.RoleAuthor), Address: h.routeAddress(c, p.APIPath, r.Route)}
	views.AddSignature(&view.Request, r.AuthSignature)
	view.Curl = runs.CurlCommand(view.Address, r.Route)
	if representationOf(c) != asJSON {
		if shown := c.Query("version"); shown != "" {
			n, err := strconv.ParseInt(shown, 10, 64)
			if err != nil || n < 1 {
				return &ValidationError{Fields: map[string]string{"version": "must be a version number"}}
			}
			if n != r.Version {
				v, err := h.store.RouteVersionOf(c.UserContext(), r.ProjectID, r.RouteID, n)
				if err != nil {
					return err
				}
				view.Blocks, view.Shown = views.Blocks(v.Route.Flow, nil), n
			}
		}
		view.Newer = h.templateNewer(c, r)
		health, err := h.healthOf(c, r.ProjectID, []string{r.RouteID})
		if err != nil {
			return err
		}
		view.Health = health[r.RouteID]
		if view.Schedules, err = h.routeSchedules(c, r.ProjectID, r.RouteID); err != nil {
			return err
		}
		if view.Jobs, _, _, err = h.jobsView(c, p, r.RouteID, "", store.Page{Limit: 10}); err != nil {
			return err
		}
	}
	return h.respond(c, Reply{Data: newRouteDTO(r), Page: "routes/view", View: view})
}

// memberRoute reads the route named by the query's project_id and
// route_id, for a member of its project.
func (h *Handlers) memberRoute(c *fiber.Ctx) (store.Project, store.StoredRoute, error) {
	var q routeKeyQuery
	if err := bindQuery(c, &q); err != nil {
		return store.Project{}, store.StoredRoute{}, err
	}
	p, err := h.member(c, q.ProjectID)
	if err != nil {
		return p, store.StoredRoute{}, err
	}
	r, err := h.store.Route(c.UserContext(), q.ProjectID, q.RouteID)
	return p, r, err
}

// routeUpdate answers PATCH /route/update: the route is replaced (it may be
// renamed); where it came from stays recorded.
func (h *Handlers) routeUpdate(c *fiber.Ctx) error {
	in, r, warnings, err := h.routeToSave(c, true)
	if err != nil {
		return err
	}
	sr := store.StoredRoute{Route: r, SavedBy: &current(c).User.ID, Note: in.Note}
	if err := h.store.UpdateRoute(c.UserContext(), in.RouteID, &sr); err != nil {
		return err
	}
	h.routesChanged(c, sr.ProjectID, in.RouteID, sr.RouteID)
	return h.respond(c, Reply{Message: "Route updated", Data: newRouteDTO(sr), Warnings: warnings})
}

// routeDelete answers DELETE /route/delete.
func (h *Handlers) routeDelete(c *fiber.Ctx) error {
	var q routeKeyQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	if _, err := h.member(c, q.ProjectID); err != nil {
		return err
	}
	if err := h.store.DeleteRoute(c.UserContext(), q.ProjectID, q.RouteID); err != nil {
		return err
	}
	h.routesChanged(c, q.ProjectID, q.RouteID)
	h.metrics.Forget(q.ProjectID, q.RouteID)
	h.flash(c, "success", "Route "+q.RouteID+" deleted.")
	return h.respond(c, Reply{Message: "Route deleted", Redirect: "/web/routes?id=" + q.ProjectID})
}
