package handlers

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/gofiber/fiber/v2"

	"stencil/authoring"
	"stencil/flow"
	"stencil/store"
	"stencil/views"
)

// Route versions (docs/routes.md): every save keeps the whole document; members
// read them and compare any two; AUTHOR members and up restore one.

// versionDTO is a kept version of a route or template as the API shows
// it; lists leave the document out, one route version has it.
type versionDTO struct {
	Version       int64       `json:"version"`
	Note          string      `json:"note"`
	CreatedBy     *int64      `json:"created_by"`
	CreatedByName string      `json:"created_by_name"`
	CreatedAt     time.Time   `json:"created_at"`
	Blocks        int         `json:"blocks"`
	Route         *flow.Route `json:"route,omitempty"`
}

func newRouteVersionDTO(v store.RouteVersion, withDocument bool) versionDTO {
	d := versionDTO{Version: v.Version, Note: v.Note, CreatedBy: v.CreatedBy, CreatedByName: v.CreatedByName,
		CreatedAt: v.CreatedAt, Blocks: len(v.Route.Flow.Blocks)}
	if withDocument {
		d.Route = &v.Route
	}
	return d
}

type routeVersionsQuery struct {
	listQuery
	ProjectID string `query:"project_id" json:"project_id" validate:"required"`
	RouteID   string `query:"route_id" json:"route_id" validate:"required"`
	// The page compares version From with version To (both optional: the
	// newest and the one before it).
	From int64 `query:"from" json:"from" validate:"min=0"`
	To   int64 `query:"to" json:"to" validate:"min=0"`
}

// historyView is a History page, of a route or a template: its versions,
// newest first, and what changed between two of them.
type historyView struct {
	Base
	Back, BackText string
	Subject        string // what the versions are of, as the heading's line names it
	Self           string // the page with the query naming its route or template
	Keys           []hiddenField
	RestoreURL     string
	RestoreVals    string // the restore's JSON fields, less the version
	TryURL         string // routes: the playground, less the version
	Live           int64  // the live version
	Next           int64  // the number a restore makes
	Versions       []versionDTO
	Pager          Pager
	CanWrite       bool
	From, To       int64
	Numbers        []int64 // every version, newest first, for choosing two
	Diff           *views.Diff
}

type hiddenField struct{ Name, Value string }

// newHistoryView fills what a History page shows of its versions, given
// the live version and how many are kept, and picks the two it compares:
// by default the newest against the one kept before it.
func newHistoryView(c *fiber.Ctx, base Base, page store.Page, list []versionDTO, total int, live int64, from, to int64, canWrite bool) historyView {
	v := historyView{Base: base, Versions: list, Pager: newPager(c, page, len(list), total), CanWrite: canWrite,
		Live: live, Next: live + 1, From: from, To: to}
	for n := live; n >= 1 && n > live-int64(total); n-- {
		v.Numbers = append(v.Numbers, n)
	}
	if v.To == 0 {
		v.To = live
	}
	if v.From == 0 {
		for _, n := range v.Numbers {
			if n < v.To {
				v.From = n
				break
			}
		}
	}
	return v
}

// routeVersionList answers GET /route/versions and renders
// /web/routes/history: a route's versions, newest first; the page also
// compares two of them.
func (h *Handlers) routeVersionList(c *fiber.Ctx) error {
	var q routeVersionsQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	p, err := h.member(c, q.ProjectID)
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	page := q.page(defaultLimit(c, 25))
	list, total, err := h.store.RouteVersions(ctx, p.ID, q.RouteID, page)
	if err != nil {
		return h.routeNotFound(err, q.ProjectID, q.RouteID)
	}
	dtos := make([]versionDTO, len(list))
	for i, v := range list {
		dtos[i] = newRouteVersionDTO(v, false)
	}
	if representationOf(c) == asJSON {
		return h.respond(c, Reply{Data: dtos, Amount: &total})
	}
	r, err := h.store.Route(ctx, p.ID, q.RouteID)
	if err != nil {
		return err
	}
	key := "project_id=" + url.QueryEscape(p.ID) + "&route_id=" + url.QueryEscape(r.RouteID)
	view := newHistoryView(c, h.base(c, "History · "+r.RouteID), page, dtos, total, r.Version, q.From, q.To, canIn(c, p, store.RoleAuthor))
	view.Back, view.BackText, view.Subject = "/web/routes/view?"+key, "Route "+r.RouteID, r.Method+" "+r.RoutePath
	view.Self, view.Keys = "/web/routes/history?"+key, []hiddenField{{"project_id", p.ID}, {"route_id", r.RouteID}}
	view.RestoreURL, view.TryURL = "/route/restore", "/web/routes/try?"+key+"&version="
	raw, _ := json.Marshal(map[string]string{"project_id": p.ID, "route_id": r.RouteID})
	view.RestoreVals = string(raw[1 : len(raw)-1])
	if view.From > 0 && view.From != view.To {
		var docs [2]flow.Route
		for i, n := range []int64{view.From, view.To} {
			v, err := h.store.RouteVersionOf(ctx, p.ID, r.RouteID, n)
			if err != nil {
				return versionMissing(err, i, n)
			}
			docs[i] = v.Route
		}
		view.Diff = views.DiffOf(view.From, view.To, docs[0], docs[1], nil)
	}
	return h.respond(c, Reply{Data: dtos, Amount: &total, Page: "routes/history", View: view})
}

// versionMissing names a version to compare that does not exist (from:
// i 0, to: i 1).
func versionMissing(err error, i int, n int64) error {
	if errors.Is(err, store.ErrNotFound) {
		return &ValidationError{Fields: map[string]string{[]string{"from", "to"}[i]: fmt.Sprintf("version %d does not exist", n)}}
	}
	return err
}

// routeNotFound names the route when err is the store's not found.
func (h *Handlers) routeNotFound(err error, project, route string) error {
	return notFound(err, "route "+authoring.Quote(route)+" not found in project "+authoring.Quote(project))
}

type routeVersionQuery struct {
	ProjectID string `query:"project_id" json:"project_id" validate:"required"`
	RouteID   string `query:"route_id" json:"route_id" validate:"required"`
	Version   int64  `query:"version" json:"version" validate:"required,min=1"`
}

// routeVersionShow answers GET /route/version: one version with its whole
// document.
func (h *Handlers) routeVersionShow(c *fiber.Ctx) error {
	var q routeVersionQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	if _, err := h.member(c, q.ProjectID); err != nil {
		return err
	}
	v, err := h.routeVersion(c, q.ProjectID, q.RouteID, q.Version)
	if err != nil {
		return err
	}
	return h.respond(c, Reply{Data: newRouteVersionDTO(v, true)})
}

// routeVersion reads version n of a route; a route or version that does
// not exist is 404, saying which.
func (h *Handlers) routeVersion(c *fiber.Ctx, project, route string, n int64) (store.RouteVersion, error) {
	v, err := h.store.RouteVersionOf(c.UserContext(), project, route, n)
	if errors.Is(err, store.ErrNotFound) {
		if _, err := h.store.Route(c.UserContext(), project, route); err != nil {
			return v, h.routeNotFound(err, project, route)
		}
		return v, fiber.NewError(fiber.StatusNotFound, fmt.Sprintf("route %s has no version %d", authoring.Quote(route), n))
	}
	return v, err
}

type routeRestoreInput struct {
	ProjectID string `json:"project_id" form:"project_id" validate:"required"`
	RouteID   string `json:"route_id" form:"route_id" validate:"required"`
	Version   int64  `json:"version" form:"version" validate:"required,min=1"`
	Note      string `json:"note" form:"note" validate:"max=500,plain_text"`
}

// routeRestore answers POST /route/restore: a new version equal to an
// older one. The route keeps its id of today; the version is checked as
// saving it would be (a VAULT block needs an ADMIN or ROOT member, a path
// another route took since is 422).
func (h *Handlers) routeRestore(c *fiber.Ctx) error {
	var in routeRestoreInput
	if err := bind(c, &in); err != nil {
		return err
	}
	p, err := h.member(c, in.ProjectID)
	if err != nil {
		return err
	}
	v, err := h.routeVersion(c, in.ProjectID, in.RouteID, in.Version)
	if err != nil {
		return err
	}
	warnings, err := h.checkRunnable(c, p, v.Route)
	if err != nil {
		return err
	}
	note := in.Note
	if note == "" {
		note = fmt.Sprintf("Restored version %d", in.Version)
	}
	sr := store.StoredRoute{Route: v.Route, SavedBy: &current(c).User.ID, Note: note}
	if err := h.store.RestoreRoute(c.UserContext(), in.RouteID, &sr, v); err != nil {
		return err
	}
	h.routesChanged(c, sr.ProjectID, in.RouteID, sr.RouteID)
	h.flash(c, "success", fmt.Sprintf("Version %d restored as version %d.", in.Version, sr.Version))
	return h.respond(c, Reply{Message: "Route restored", Data: newRouteDTO(sr), Warnings: warnings,
		Redirect: "/web/routes/history?project_id=" + sr.ProjectID + "&route_id=" + sr.RouteID})
}
