package handlers

import (
	"encoding/json"
	"fmt"
	"html/template"
	"strconv"
	"strings"
	"time"

	"github.com/aymanbagabas/go-udiff"
	"github.com/gofiber/fiber/v2"

	"stencil/flow"
	"stencil/store"
)

// Route versions (SPEC §12): every save keeps the whole document; members
// read them and compare any two; AUTHOR members and up restore one.

// routeVersionDTO is a kept version as the API shows it; the list leaves
// the document out (Route nil), one version has it.
type routeVersionDTO struct {
	Version       int64       `json:"version"`
	Note          string      `json:"note"`
	CreatedBy     *int64      `json:"created_by"`
	CreatedByName string      `json:"created_by_name"`
	CreatedAt     time.Time   `json:"created_at"`
	Blocks        int         `json:"blocks"`
	Route         *flow.Route `json:"route,omitempty"`
}

func newRouteVersionDTO(v store.RouteVersion, withDocument bool) routeVersionDTO {
	d := routeVersionDTO{Version: v.Version, Note: v.Note, CreatedBy: v.CreatedBy, CreatedByName: v.CreatedByName,
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

// historyView is the route's History page: its versions, newest first,
// and what changed between two of them.
type historyView struct {
	Base
	Project  store.Project
	Route    store.StoredRoute
	Versions []routeVersionDTO
	Pager    Pager
	CanWrite bool
	Next     int64 // the number a restore makes
	From, To int64
	Numbers  []int64 // every version, newest first, for choosing two
	Diff     *diffView
}

// diffView is a comparison of two versions: the request's fields and the
// blocks in the outline's words, and the documents' JSON diff.
type diffView struct {
	From, To int64
	Request  []flow.FieldChange
	Blocks   []blockChangeView
	JSON     []diffLine
	Same     bool
}

type blockChangeView struct {
	flow.BlockChange
	Summary template.HTML // the block as the outline reads it, in the newer version (the older when removed)
	Before  template.HTML // a changed block as the outline read it in the older version, when that reads otherwise
}

// N is the block's place as people count it, from 1, in the version it
// is shown from.
func (b blockChangeView) N() int {
	if b.To >= 0 {
		return b.To + 1
	}
	return b.From + 1
}

// FromN is the block's place in the older version, from 1.
func (b blockChangeView) FromN() int { return b.From + 1 }

type diffLine struct {
	Text  string
	Class string // added, removed, hunk or empty
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
	dtos := make([]routeVersionDTO, len(list))
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
	view := historyView{Base: h.base(c, "History · "+r.RouteID), Project: p, Route: r, Versions: dtos,
		Pager: newPager(c, page, len(list), total), CanWrite: callerAtLeast(c, store.RoleAuthor), Next: r.Version + 1}
	for n := r.Version; n >= 1 && n > r.Version-int64(total); n-- {
		view.Numbers = append(view.Numbers, n)
	}
	// By default the newest version against the one kept before it.
	view.From, view.To = q.From, q.To
	if view.To == 0 {
		view.To = r.Version
	}
	if view.From == 0 {
		for _, n := range view.Numbers {
			if n < view.To {
				view.From = n
				break
			}
		}
	}
	if view.From > 0 && view.From != view.To {
		if view.Diff, err = h.compareVersions(c, p.ID, r.RouteID, view.From, view.To); err != nil {
			return err
		}
	}
	return h.respond(c, Reply{Data: dtos, Amount: &total, Page: "routes/history", View: view})
}

// routeNotFound names the route when err is the store's not found.
func (h *Handlers) routeNotFound(err error, project, route string) error {
	if err == store.ErrNotFound {
		return fiber.NewError(fiber.StatusNotFound, "route "+quote(route)+" not found in project "+quote(project))
	}
	return err
}

// compareVersions compares version from with version to of a route.
func (h *Handlers) compareVersions(c *fiber.Ctx, project, route string, from, to int64) (*diffView, error) {
	var docs [2]store.RouteVersion
	for i, n := range []int64{from, to} {
		v, err := h.store.RouteVersionOf(c.UserContext(), project, route, n)
		if err != nil {
			if err == store.ErrNotFound {
				return nil, &ValidationError{Fields: map[string]string{[]string{"from", "to"}[i]: fmt.Sprintf("version %d does not exist", n)}}
			}
			return nil, err
		}
		docs[i] = v
	}
	d := flow.DiffRoutes(docs[0].Route, docs[1].Route)
	view := &diffView{From: from, To: to, Request: d.Request, Same: d.Empty()}
	older, newer := blockViews(docs[0].Route.Flow, nil), blockViews(docs[1].Route.Flow, nil)
	for _, bc := range d.Blocks {
		cv := blockChangeView{BlockChange: bc}
		if bc.To >= 0 {
			cv.Summary = newer[bc.To].Summary
		} else {
			cv.Summary = older[bc.From].Summary
		}
		if bc.Kind == "changed" && older[bc.From].Summary != cv.Summary {
			cv.Before = older[bc.From].Summary
		}
		view.Blocks = append(view.Blocks, cv)
	}
	a, _ := json.MarshalIndent(docs[0].Route, "", "  ")
	b, _ := json.MarshalIndent(docs[1].Route, "", "  ")
	unified := udiff.Unified("version "+strconv.FormatInt(from, 10), "version "+strconv.FormatInt(to, 10), string(a)+"\n", string(b)+"\n")
	for line := range strings.SplitSeq(strings.TrimSuffix(unified, "\n"), "\n") {
		class := ""
		switch {
		case strings.HasPrefix(line, "+++"), strings.HasPrefix(line, "---"):
			class = "file"
		case strings.HasPrefix(line, "@@"):
			class = "hunk"
		case strings.HasPrefix(line, "+"):
			class = "added"
		case strings.HasPrefix(line, "-"):
			class = "removed"
		}
		if line != "" {
			view.JSON = append(view.JSON, diffLine{Text: line, Class: class})
		}
	}
	return view, nil
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
	if err == store.ErrNotFound {
		if _, err := h.store.Route(c.UserContext(), project, route); err != nil {
			return v, h.routeNotFound(err, project, route)
		}
		return v, fiber.NewError(fiber.StatusNotFound, fmt.Sprintf("route %s has no version %d", quote(route), n))
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
	if _, err := h.member(c, in.ProjectID); err != nil {
		return err
	}
	v, err := h.routeVersion(c, in.ProjectID, in.RouteID, in.Version)
	if err != nil {
		return err
	}
	warnings, err := h.checkRunnable(c, v.Route)
	if err != nil {
		return err
	}
	note := in.Note
	if note == "" {
		note = fmt.Sprintf("Restored version %d", in.Version)
	}
	sr := store.StoredRoute{Route: v.Route, SavedBy: &current(c).User.ID, Note: note}
	if err := h.store.UpdateRoute(c.UserContext(), in.RouteID, &sr); err != nil {
		return err
	}
	h.routesChanged(c, sr.ProjectID)
	h.flash(c, "success", fmt.Sprintf("Version %d restored as version %d.", in.Version, sr.Version))
	return h.respond(c, Reply{Message: "Route restored", Data: newRouteDTO(sr), Warnings: warnings,
		Redirect: "/web/routes/history?project_id=" + sr.ProjectID + "&route_id=" + sr.RouteID})
}
