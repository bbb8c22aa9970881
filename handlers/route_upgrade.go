package handlers

import (
	"errors"
	"fmt"
	"html/template"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"stencil/authoring"
	"stencil/flow"
	"stencil/store"
	"stencil/views"
)

// Upgrading a route from its template (docs/routes.md): the template's newest
// version, applied with the values the route was made with, is merged
// with what the route's own edits changed since (flow.MergeRoutes).

type upgradeInput struct {
	ProjectID string             `json:"project_id" form:"project_id" validate:"required"`
	RouteID   string             `json:"route_id" form:"route_id" validate:"required"`
	Values    map[string]*string `json:"values" form:"-"` // new variables' values (or a kept one changed); null counts as not given
	// Resolutions choose a side for conflicts, named as the answer names
	// them.
	Resolutions []resolutionInput `json:"resolutions" form:"-" validate:"max=1000,dive"`
	// Version, when given, is the route's version the preview was made
	// from: a route changed since is 409 instead of merged again.
	Version int64  `json:"version" form:"version" validate:"min=0"`
	DryRun  bool   `json:"dry_run" form:"dry_run"`
	Note    string `json:"note" form:"note" validate:"max=500,plain_text"`
}

type resolutionInput struct {
	Block int    `json:"block" validate:"min=-1"`
	Field string `json:"field" validate:"required,max=64"`
	Take  string `json:"take" validate:"required,oneof=template route"`
}

// Form fields of the upgrade page: "value:<key>" for a variable's value,
// "resolve:<block>:<field>" for a conflict's side.
const (
	formValue   = "value:"
	formResolve = "resolve:"
)

// conflictKey names a conflict by its block and field, as resolutions
// and the page's form fields name it.
func conflictKey(block int, field string) string { return strconv.Itoa(block) + ":" + field }

// readUpgradeForm fills in's values and resolutions from a form or query.
func readUpgradeForm(args *fasthttp.Args, in *upgradeInput) {
	args.VisitAll(func(k, v []byte) {
		key, value := string(k), string(v)
		switch {
		case strings.HasPrefix(key, formValue):
			if in.Values == nil {
				in.Values = map[string]*string{}
			}
			in.Values[strings.TrimPrefix(key, formValue)] = &value
		case strings.HasPrefix(key, formResolve):
			block, field, ok := strings.Cut(strings.TrimPrefix(key, formResolve), ":")
			n, err := strconv.Atoi(block)
			if ok && err == nil && (value == flow.TakeTemplate || value == flow.TakeRoute) {
				in.Resolutions = append(in.Resolutions, resolutionInput{Block: n, Field: field, Take: value})
			}
		}
	})
}

// upgradeDTO is an upgrade's answer (authoring.Upgrade).
type upgradeDTO = authoring.Upgrade

// upgradePlan merges the route with its template's newest version as
// visible in the route's project (authoring.PlanUpgrade).
func (h *Handlers) upgradePlan(c *fiber.Ctx, r store.StoredRoute, given map[string]*string, resolve func(flow.Conflict) string) (upgradeDTO, error) {
	var t *store.RouteTemplate
	if r.Template != nil {
		if found, err := h.templateFor(c, r.Template.ID, r.ProjectID); err == nil {
			t = &found
		}
	}
	return authoring.PlanUpgrade(c.UserContext(), h.store, r, t, given, resolve)
}

// routeUpgrade answers POST /route/upgrade: the merge, previewed with
// dry_run, else applied as the route's new version once every conflict
// has a side.
func (h *Handlers) routeUpgrade(c *fiber.Ctx) error {
	var in upgradeInput
	if err := bind(c, &in); err != nil {
		return err
	}
	if mediaType(c) != fiber.MIMEApplicationJSON {
		readUpgradeForm(c.Context().PostArgs(), &in)
	}
	p, err := h.member(c, in.ProjectID)
	if err != nil {
		return err
	}
	chosen := map[string]string{}
	for _, res := range in.Resolutions {
		chosen[conflictKey(res.Block, res.Field)] = res.Take
	}
	// A route changed between the merge and its write is merged again.
	for attempt := 0; ; attempt++ {
		r, err := h.store.Route(c.UserContext(), in.ProjectID, in.RouteID)
		if err != nil {
			return h.routeNotFound(err, in.ProjectID, in.RouteID)
		}
		if in.Version > 0 && r.Version != in.Version {
			return fiber.NewError(fiber.StatusConflict, fmt.Sprintf("route %s changed since the preview (version %d, now %d): preview the upgrade again", authoring.Quote(r.RouteID), in.Version, r.Version))
		}
		used := map[string]bool{}
		plan, err := h.upgradePlan(c, r, in.Values, func(cf flow.Conflict) string {
			key := conflictKey(cf.Block, cf.Field)
			used[key] = true
			return chosen[key]
		})
		if err != nil {
			return err
		}
		for i, res := range in.Resolutions {
			if !used[conflictKey(res.Block, res.Field)] {
				return &ValidationError{Fields: map[string]string{fmt.Sprintf("resolutions[%d]", i): fmt.Sprintf("names no conflict of this upgrade (block %d, field %s)", res.Block, res.Field)}}
			}
		}
		if !in.DryRun && plan.Unresolved > 0 {
			return fiber.NewError(fiber.StatusConflict, fmt.Sprintf("%d of the upgrade's conflicts have no side chosen: give each a resolution, \"template\" or \"route\" (preview with dry_run to list them)", plan.Unresolved))
		}
		warnings, err := h.checkRunnable(c, p, plan.Route)
		if err != nil {
			return err
		}
		if in.DryRun {
			return h.respond(c, Reply{Message: "Upgrade previewed", Data: plan, Warnings: warnings})
		}
		note := in.Note
		if note == "" {
			note = fmt.Sprintf("Upgraded to version %d of template %s", plan.ToVersion, plan.Template.Name)
		}
		sr := store.StoredRoute{Route: plan.Route, SavedBy: &current(c).User.ID, Note: note}
		err = h.store.UpgradeRoute(c.UserContext(), r.RouteID, &sr, r.Version)
		if errors.Is(err, store.ErrStale) && attempt < 3 && in.Version == 0 {
			continue
		} else if errors.Is(err, store.ErrStale) {
			return fiber.NewError(fiber.StatusConflict, fmt.Sprintf("route %s keeps changing while it is upgraded: try again", authoring.Quote(r.RouteID)))
		} else if err != nil {
			return err
		}
		h.routesChanged(c, sr.ProjectID, r.RouteID, sr.RouteID)
		plan.Applied, plan.Version, plan.Route = true, sr.Version, sr.Route
		h.flash(c, "success", fmt.Sprintf("Upgraded to version %d of template %s as route version %d.", plan.ToVersion, plan.Template.Name, sr.Version))
		return h.respond(c, Reply{Message: "Route upgraded", Data: plan, Warnings: warnings,
			Redirect: routeViewURL(sr.ProjectID, sr.RouteID)})
	}
}

// upgradeView is the upgrade page: the preview of the merge with the
// values and sides chosen so far.
type upgradeView struct {
	Base
	Route      store.StoredRoute
	Plan       upgradeDTO
	Refused    string // why the route cannot be upgraded
	Problems   map[string]string
	Variables  []upgradeVariable
	Template   *views.Diff // what the template changed
	Local      *views.Diff // what the route's edits changed
	Result     *views.Diff // the route today against the result
	Conflicts  []conflictView
	Warnings   []flow.Warning
	ValueField string
	// After a preview the keyboard goes on at the first conflict still
	// open (FirstOpen, -1 for none), else at Upgrade (Focus "upgrade").
	FirstOpen int
	Focus     string
	Next      int64 // the route's version the upgrade makes
	Previewed bool  // the form was sent: its problems are shown
}

type upgradeVariable struct {
	flow.Variable
	Value   string
	New     bool // not in the version the route was made from
	Given   bool // a value was kept or given (else the default shows)
	Problem string
}

type conflictView struct {
	flow.Conflict
	Name   string // the form field choosing its side
	Chosen string
	Where  string // the block or part it is in
	// Each side's block as the outline reads it, when the conflict is of
	// one block that side has.
	TemplateWords, RouteWords template.HTML
}

// routeUpgradePage renders /web/routes/upgrade.
func (h *Handlers) routeUpgradePage(c *fiber.Ctx) error {
	p, r, err := h.memberRoute(c)
	if err != nil {
		return err
	}
	var in upgradeInput
	readUpgradeForm(c.Context().QueryArgs(), &in)
	chosen := map[string]string{}
	for _, res := range in.Resolutions {
		chosen[conflictKey(res.Block, res.Field)] = res.Take
	}
	view := upgradeView{Base: h.base(c, "Upgrade · "+r.RouteID), Route: r, ValueField: formValue, FirstOpen: -1, Next: r.Version + 1}
	previewed := c.Context().QueryArgs().Has("version")
	plan, err := h.upgradePlan(c, r, in.Values, func(cf flow.Conflict) string { return chosen[conflictKey(cf.Block, cf.Field)] })
	var verr *ValidationError
	switch {
	case errors.As(err, &verr) && verr.Fields["route_id"] != "":
		view.Refused = verr.Fields["route_id"]
		return h.respond(c, Reply{Page: "routes/upgrade", View: view})
	case errors.As(err, &verr):
		view.Problems = verr.Fields
		view.Previewed = previewed
	case err != nil:
		return err
	}
	view.Plan = plan
	view.Variables = upgradeVariables(plan, r, in, view.Problems, previewed)
	if view.Problems != nil {
		return h.respond(c, Reply{Page: "routes/upgrade", View: view})
	}
	view.Template = views.DiffOf(plan.FromVersion, plan.ToVersion, plan.Base, plan.Theirs, nil)
	view.Local = views.DiffOf(0, r.Version, plan.Base, r.Route, nil)
	view.Result = views.DiffOf(r.Version, r.Version+1, r.Route, plan.Route, nil)
	view.Conflicts, view.FirstOpen = upgradeConflicts(plan, r, chosen, previewed)
	if previewed && view.FirstOpen < 0 {
		view.Focus = "upgrade"
	}
	if w, err := h.checkRunnable(c, p, plan.Route); err == nil {
		view.Warnings = w
	} else if errors.As(err, &verr) {
		view.Problems = verr.Fields
	}
	return h.respond(c, Reply{Page: "routes/upgrade", View: view})
}

// upgradeVariables are the variables of the template's newest version the
// page shows: the new ones to fill, the kept ones as they are (a value
// given here changes one).
func upgradeVariables(plan upgradeDTO, r store.StoredRoute, in upgradeInput, problems map[string]string, previewed bool) []upgradeVariable {
	var out []upgradeVariable
	isNew := map[string]bool{}
	for _, v := range plan.NewVariables {
		isNew[v.Key] = true
	}
	for _, v := range plan.Variables {
		uv := upgradeVariable{Variable: v, New: isNew[v.Key]}
		if previewed {
			uv.Problem = problems["values."+v.Key]
		}
		if given, ok := in.Values[v.Key]; ok && given != nil {
			uv.Value, uv.Given = *given, true
		} else if kept, ok := r.Template.Values[v.Key]; ok {
			uv.Value, uv.Given = kept, true
		} else if v.DefaultValue != nil {
			uv.Value = *v.DefaultValue
		}
		if uv.New || uv.Given {
			out = append(out, uv)
		}
	}
	return out
}

// upgradeConflicts are the conflicts the page asks about, each in the
// words of both sides, with the choice made; firstOpen is the first one
// not chosen yet on a preview (-1: none).
func upgradeConflicts(plan upgradeDTO, r store.StoredRoute, chosen map[string]string, previewed bool) (out []conflictView, firstOpen int) {
	firstOpen = -1
	ours, theirs := views.Blocks(r.Flow, nil), views.Blocks(plan.Theirs.Flow, nil)
	for _, cf := range plan.Conflicts {
		key := conflictKey(cf.Block, cf.Field)
		cv := conflictView{Conflict: cf, Name: formResolve + key, Chosen: chosen[key]}
		switch {
		case cf.Field == "order":
			cv.Where = "The order of the blocks"
		case cf.Block < 0:
			cv.Where = "The request"
		case cf.RouteBlock >= 0:
			cv.Where = fmt.Sprintf("Block #%d %s", cf.RouteBlock+1, cf.Type)
		default:
			cv.Where = fmt.Sprintf("A %s block this route removed", cf.Type)
		}
		if cf.RouteBlock >= 0 {
			cv.RouteWords = ours[cf.RouteBlock].Summary
		}
		if cf.TemplateBlock >= 0 {
			cv.TemplateWords = theirs[cf.TemplateBlock].Summary
		}
		if previewed && cv.Chosen == "" && firstOpen < 0 {
			firstOpen = len(out)
		}
		out = append(out, cv)
	}
	return out, firstOpen
}

// templateNewer says which version of a route's template is newer than
// the one it was made from, 0 when none is (or it cannot be upgraded).
func (h *Handlers) templateNewer(c *fiber.Ctx, r store.StoredRoute) int64 {
	if r.Template == nil || r.Template.Version == 0 {
		return 0
	}
	t, err := h.templateFor(c, r.Template.ID, r.ProjectID)
	if err != nil || t.Version <= r.Template.Version {
		return 0
	}
	return t.Version
}
