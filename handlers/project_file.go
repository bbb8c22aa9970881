package handlers

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/gofiber/fiber/v2"

	"stencil/authoring"
	"stencil/flow"
	"stencil/projectfile"
	"stencil/store"
	"stencil/views"
)

// A project as a file (docs/projects.md, SPEC 15): export, plan, apply.

type projectExportQuery struct {
	ProjectID string `query:"project_id" json:"project_id" validate:"required"`
	Records   bool   `query:"records" json:"records"`
}

// projectExport answers GET /project/export (ADMIN and ROOT members): the
// project's file itself, as a download.
func (h *Handlers) projectExport(c *fiber.Ctx) error {
	var q projectExportQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	if _, err := h.member(c, q.ProjectID); err != nil {
		return err
	}
	pc, err := h.store.ProjectContents(c.UserContext(), q.ProjectID, q.Records)
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderContentDisposition, `attachment; filename="`+q.ProjectID+`.stencil.json"`)
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSONCharsetUTF8)
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.Send(projectfile.Encode(authoring.FileOf(pc, q.Records)))
}

// projectFileInput is the body of /project/plan and /project/apply.
type projectFileInput struct {
	ProjectID string   `json:"project_id" form:"project_id" validate:"required,project_id"`
	Document  jsonText `json:"document" form:"document" validate:"required"`
	Prune     bool     `json:"prune" form:"prune"`
	PlanID    string   `json:"plan_id" form:"plan_id" validate:"omitempty,len=64,hexadecimal"`
}

// planDTO is a plan as /project/plan and /project/apply answer it.
type planDTO struct {
	projectfile.Plan
	PlanID string `json:"plan_id"`
}

// projectPlan answers POST /project/plan (ADMIN and ROOT members; for a
// project that does not exist yet, ADMIN and ROOT users): what applying
// the file would do, writing nothing.
func (h *Handlers) projectPlan(c *fiber.Ctx) error {
	var in projectFileInput
	if err := h.bindFile(c, &in); err != nil {
		return err
	}
	fp, err := authoring.PlanFile(c.UserContext(), h.store, in.ProjectID, in.Document, in.Prune)
	if verr := asValidation(err); verr != nil && representationOf(c) != asJSON {
		// The page lists every fault of the file where the plan would be.
		view := projectFileView{Project: store.Project{ID: in.ProjectID}, Problems: fileProblems(in.Document, verr.Fields)}
		return h.respond(c, Reply{Status: fiber.StatusUnprocessableEntity, Message: "Error: " + verr.Error(), Fragment: "projects/plan", View: view})
	}
	if err != nil {
		return err
	}
	msg := "Nothing to change"
	if !fp.Plan.Empty() {
		msg = fmt.Sprintf("Plan: %d to add, %d to change, %d to remove", len(fp.Plan.Add), len(fp.Plan.Change), len(fp.Plan.Remove))
	}
	if n := len(fp.Plan.Kept); n > 0 {
		msg += fmt.Sprintf("; %d not in the file (kept)", n)
	}
	view := projectFileView{Project: store.Project{ID: in.ProjectID}, Plan: newPlanView(fp, in.Prune)}
	return h.respond(c, Reply{Message: msg, Data: planDTO{Plan: fp.Plan, PlanID: fp.PlanID}, Fragment: "projects/plan", View: view})
}

// projectFileView is the page that applies a file to a project, and its
// plan fragment (Plan, or the file's Problems).
type projectFileView struct {
	Base
	Project  store.Project
	Plan     *planView
	Problems []fileProblem
}

// fileProblem is a fault of a project file as the page lists it: the
// place in the pages' words, its path in the file, what is wrong.
type fileProblem struct{ Where, Path, Message string }

// fileProblems lists a file's faults (by path) in the order of the file's
// paths, each named in the pages' words (projectfile.Places: the file is
// read once for all of them).
func fileProblems(raw []byte, fields map[string]string) []fileProblem {
	out := make([]fileProblem, 0, len(fields))
	where := projectfile.Places(raw)
	for _, path := range slices.Sorted(maps.Keys(fields)) {
		out = append(out, fileProblem{Where: where(path), Path: path, Message: fields[path]})
	}
	return out
}

// planView is a plan as the page shows it: a changed route or template
// with the history page's comparison.
type planView struct {
	planDTO
	Prune   bool
	Changes []planChange
}

type planChange struct {
	projectfile.Item
	Diff *views.Diff
}

func newPlanView(fp authoring.FilePlan, prune bool) *planView {
	v := &planView{planDTO: planDTO{Plan: fp.Plan, PlanID: fp.PlanID}, Prune: prune}
	for _, it := range fp.Plan.Change {
		pc := planChange{Item: it}
		switch it.Kind {
		case projectfile.KindRoute:
			i := slices.IndexFunc(fp.Have.Routes, func(r store.StoredRoute) bool { return r.RouteID == it.ID })
			j := slices.IndexFunc(fp.Want.Routes, func(r projectfile.Route) bool { return r.RouteID == it.ID })
			pc.Diff = views.DiffOf(0, 0, fp.Have.Routes[i].Route, fp.Want.Routes[j].In(fp.Want.ID), nil)
		case projectfile.KindTemplate:
			i := slices.IndexFunc(fp.Have.Templates, func(t store.RouteTemplate) bool { return t.Name == it.ID })
			j := slices.IndexFunc(fp.Want.Templates, func(t projectfile.Template) bool { return t.Name == it.ID })
			a, b := fp.Have.Templates[i].Template, fp.Want.Templates[j]
			pc.Diff = views.DiffOf(0, 0, flow.Route{RouteID: a.RouteID, RoutePath: a.RoutePath, Method: a.Method, AuthJWT: a.AuthJWT, Params: a.Params, Body: a.Body, Flow: a.Flow},
				flow.Route{RouteID: b.RouteID, RoutePath: b.RoutePath, Method: b.Method, AuthJWT: b.AuthJWT, Params: b.Params, Body: b.Body, Flow: b.Flow}, nil)
		}
		v.Changes = append(v.Changes, pc)
	}
	return v
}

// projectFilePage answers GET /web/project/apply: a file to paste or
// choose, planned, then applied (ADMIN and ROOT members).
func (h *Handlers) projectFilePage(c *fiber.Ctx) error {
	var q projectQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	p, err := h.member(c, q.ProjectID)
	if err != nil {
		return err
	}
	return h.respond(c, Reply{Page: "projects/apply", View: projectFileView{Base: h.base(c, "Apply a file · "+p.Name), Project: p}})
}

// bindFile reads the body of plan and apply, and checks the caller may
// change the project it names: a member, or any ADMIN or ROOT user when
// the project does not exist yet (as /project/create).
func (h *Handlers) bindFile(c *fiber.Ctx, in *projectFileInput) error {
	if err := bind(c, in); err != nil {
		return err
	}
	if err := refuseUnknownFields(c, *in); err != nil {
		return err
	}
	if err := checkJSONText(in.Document, "document"); err != nil {
		return err
	}
	_, err := h.member(c, in.ProjectID)
	if isStatus(err, fiber.StatusNotFound) {
		return nil
	}
	return err
}

// projectApply answers POST /project/apply: the plan, in one transaction,
// each change made as saving it by hand makes it (a version, an event).
// With plan_id, a project changed since that plan is 409 and nothing is
// written. A project that does not exist is created.
func (h *Handlers) projectApply(c *fiber.Ctx) error {
	var in projectFileInput
	if err := h.bindFile(c, &in); err != nil {
		return err
	}
	fp, err := authoring.Apply(c.UserContext(), h.store, in.ProjectID, in.Document, in.Prune, in.PlanID, current(c).User.ID)
	if errors.Is(err, authoring.ErrPlanStale) || errors.Is(err, authoring.ErrChangedMeanwhile) {
		return fiber.NewError(fiber.StatusConflict, "project "+authoring.Quote(in.ProjectID)+" "+err.Error())
	}
	if err != nil {
		return err
	}
	if !fp.Plan.Empty() {
		h.routesChanged(c, in.ProjectID)
		for _, it := range fp.Plan.Remove {
			if it.Kind == projectfile.KindRoute {
				h.metrics.Forget(in.ProjectID, it.ID)
			}
		}
	}
	status, msg := fiber.StatusOK, "Nothing to change"
	switch {
	case fp.Have == nil:
		status, msg = fiber.StatusCreated, "Project created from the file"
	case !fp.Plan.Empty():
		msg = fmt.Sprintf("Applied: %d added, %d changed, %d removed", len(fp.Plan.Add), len(fp.Plan.Change), len(fp.Plan.Remove))
	}
	if status == fiber.StatusOK && !fp.Plan.Empty() {
		h.flash(c, "success", fmt.Sprintf("File applied: %d added, %d changed, %d removed.", len(fp.Plan.Add), len(fp.Plan.Change), len(fp.Plan.Remove)))
	}
	return h.respond(c, Reply{Status: status, Message: msg, Data: planDTO{Plan: fp.Plan, PlanID: fp.PlanID}, Redirect: "/web/project?id=" + in.ProjectID})
}
