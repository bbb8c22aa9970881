package handlers

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gofiber/fiber/v2"

	"stencil/egress"
	"stencil/engine"
	"stencil/flow"
	"stencil/projectfile"
	"stencil/runs"
	"stencil/store"
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
	return c.Send(projectfile.Encode(fileOf(pc, q.Records)))
}

// fileOf is a project's contents as its file holds them.
func fileOf(pc store.ProjectContents, records bool) projectfile.Document {
	p := pc.Project
	d := projectfile.Document{Format: projectfile.Format, ID: p.ID, Name: &p.Name, Description: &p.Description, APIPath: &p.APIPath,
		XRateLimit: &p.XRateLimit, XRateBurst: &p.XRateBurst, XCORSOrigins: &p.XCORSOrigins, XEgressHosts: &p.XEgressHosts,
		Collections: []projectfile.Collection{}, Routes: []projectfile.Route{}, Templates: []projectfile.Template{},
		EmailTemplates: []projectfile.EmailTemplate{}, VaultKeys: pc.VaultKeys}
	for _, c := range pc.Collections {
		fc := projectfile.Collection{ID: c.ID, Name: c.Name, Description: c.Description}
		if records {
			rs := pc.Records[c.ID]
			if rs == nil {
				rs = []json.RawMessage{}
			}
			fc.Records = &rs
		}
		d.Collections = append(d.Collections, fc)
	}
	for _, r := range pc.Routes {
		d.Routes = append(d.Routes, r.Document())
	}
	for _, t := range pc.Templates {
		d.Templates = append(d.Templates, projectfile.TemplateOf(t.Template))
	}
	for _, t := range pc.EmailTemplates {
		d.EmailTemplates = append(d.EmailTemplates, projectfile.EmailTemplate{Name: t.Name, Subject: t.Subject, Text: t.Text, HTML: t.HTML})
	}
	return d
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

// filePlan is a file read and checked for a project, the project as it
// is (nil: it does not exist yet) and what applying the file would do.
type filePlan struct {
	want   projectfile.Document
	have   *store.ProjectContents
	plan   projectfile.Plan
	planID string
	// places are the file's paths of its collections, routes and
	// templates ("routes[3]."), by kind and id: want is sorted, the file
	// need not be.
	places map[string]string
}

// place is where the file holds the object of kind and id.
func (fp filePlan) place(kind, id string) string { return fp.places[kind+"/"+id] }

// planFile reads in's document and plans it against the project as st
// reads it: a file that cannot be applied is a validation failure naming
// its path in the file, as saving each object by hand would name it.
func planFile(c *fiber.Ctx, st *store.Store, in projectFileInput) (filePlan, error) {
	var fp filePlan
	want, p := projectfile.Decode(in.Document)
	if len(p) > 0 {
		return fp, problems(p)
	}
	// The request names the project; the file's id only says where it
	// came from.
	want.ID = in.ProjectID
	pc, err := st.ProjectContents(c.UserContext(), in.ProjectID, false)
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return fp, err
	default:
		fp.have = &pc
	}
	if err := completeSettings(&want, fp.have, in.ProjectID); err != nil {
		return fp, err
	}
	if err := checkAPIPath(c, st, &want, fp.have); err != nil {
		return fp, err
	}
	if err := checkFile(want, fp.have, in.Prune); err != nil {
		return fp, err
	}
	// Checked in the file's order (paths name its places); written in
	// the order the project's file lists them.
	fp.places = map[string]string{}
	for i, c := range want.Collections {
		fp.places[projectfile.KindCollection+"/"+c.ID] = fmt.Sprintf("collections[%d].", i)
	}
	for i, r := range want.Routes {
		fp.places[projectfile.KindRoute+"/"+r.RouteID] = fmt.Sprintf("routes[%d].", i)
	}
	for i, t := range want.Templates {
		fp.places[projectfile.KindTemplate+"/"+t.Name] = fmt.Sprintf("templates[%d].", i)
	}
	want.Sort()
	var have *projectfile.Document
	haveText := []byte("a new project")
	if fp.have != nil {
		d := fileOf(*fp.have, false)
		have, haveText = &d, projectfile.Encode(d)
	}
	fp.want, fp.plan = want, projectfile.Compare(have, want, in.Prune)
	sum := sha256.New()
	fmt.Fprintf(sum, "%s\x00%s\x00%t", haveText, projectfile.Encode(want), in.Prune)
	fp.planID = hex.EncodeToString(sum.Sum(nil))
	return fp, nil
}

// completeSettings gives want each setting it leaves out: the project's,
// or for a new project what /project/create gives. The lists come out as
// the project stores them (runs.Origins, egress.Hosts).
func completeSettings(want *projectfile.Document, have *store.ProjectContents, id string) error {
	p := store.Project{ID: id, Name: id, APIPath: "/" + id, XRateLimit: store.DefaultXRateLimit, XRateBurst: store.DefaultXRateBurst,
		XCORSOrigins: []string{}, XEgressHosts: []string{}}
	if have != nil {
		p = have.Project
	}
	in := projectInput{ID: id, Name: deref(want.Name, p.Name), Description: deref(want.Description, p.Description),
		APIPath: deref(want.APIPath, p.APIPath), XRateLimit: want.XRateLimit, XRateBurst: want.XRateBurst}
	if in.XRateLimit == nil {
		in.XRateLimit = &p.XRateLimit
	}
	if in.XRateBurst == nil {
		in.XRateBurst = &p.XRateBurst
	}
	if err := checkAt("", &in); err != nil {
		return err
	}
	cors, err := (*lineList)(want.XCORSOrigins).check("x_cors_origins", runs.Origins, p.XCORSOrigins)
	if err != nil {
		return err
	}
	hosts, err := (*lineList)(want.XEgressHosts).check("x_egress_hosts", egress.Hosts, p.XEgressHosts)
	if err != nil {
		return err
	}
	if cors == nil {
		cors = []string{}
	}
	if hosts == nil {
		hosts = []string{}
	}
	want.Name, want.Description, want.APIPath = &in.Name, &in.Description, &in.APIPath
	want.XRateLimit, want.XRateBurst, want.XCORSOrigins, want.XEgressHosts = in.XRateLimit, in.XRateBurst, &cors, &hosts
	return nil
}

// checkAPIPath writes want's api_path as the project would store it
// ("/shop/" is "/shop": no change), and refuses, as saving the project
// would, one another project holds or overlaps; a path that keeps its
// key is not checked again (docs/security.md).
func checkAPIPath(c *fiber.Ctx, st *store.Store, want *projectfile.Document, have *store.ProjectContents) error {
	canonical, holder, equal, err := st.APIPathOf(c.UserContext(), want.ID, *want.APIPath)
	if err != nil {
		return err
	}
	want.APIPath = &canonical
	switch {
	case holder == "" || have != nil && strings.EqualFold(have.Project.APIPath, canonical):
		return nil
	case equal:
		return &ValidationError{Fields: map[string]string{"api_path": "is already used by another project (" + holder + ")"}}
	}
	return &ValidationError{Fields: map[string]string{"api_path": "overlaps project " + holder + "'s: neither path may lie inside the other"}}
}

// checkAt validates v as binding a request body would, its fields named
// under prefix ("collections[2]." gives "collections[2].name").
func checkAt(prefix string, v any) error {
	err := checkPresent(v, func(string) bool { return true })
	var verr *ValidationError
	if !errors.As(err, &verr) || prefix == "" {
		return err
	}
	fields := make(map[string]string, len(verr.Fields))
	for k, msg := range verr.Fields {
		fields[prefix+k] = msg
	}
	return &ValidationError{Fields: fields}
}

// checkFile checks each object of want as saving it by hand would: a
// collection, an email template, a route that compiles, its records; and
// a route's method and path not held by a route of the project the file
// leaves in place (with prune, none is left).
func checkFile(want projectfile.Document, have *store.ProjectContents, prune bool) error {
	fields := map[string]string{}
	add := func(err error) error {
		var verr *ValidationError
		if !errors.As(err, &verr) {
			return err
		}
		maps.Copy(fields, verr.Fields)
		return nil
	}
	for i, col := range want.Collections {
		prefix := fmt.Sprintf("collections[%d].", i)
		if err := add(checkAt(prefix, &collectionInput{ProjectID: want.ID, ID: col.ID, Name: col.Name, Description: col.Description})); err != nil {
			return err
		}
		if col.Records != nil {
			for j, r := range *col.Records {
				if _, err := store.RecordData(r); err != nil {
					fields[fmt.Sprintf("%srecords[%d]", prefix, j)] = err.Error()
				}
			}
		}
	}
	for i, t := range want.EmailTemplates {
		in := emailTemplateInput{ProjectID: "file", Name: t.Name, Subject: t.Subject, Text: t.Text, HTML: t.HTML}
		if err := add(checkAt(fmt.Sprintf("email_templates[%d].", i), &in)); err != nil {
			return err
		}
	}
	held := map[string]string{} // "GET /path" → route id, of routes the file does not name
	if have != nil && !prune {
		named := map[string]bool{}
		for _, r := range want.Routes {
			named[r.RouteID] = true
		}
		for _, r := range have.Routes {
			if !named[r.RouteID] {
				held[r.Method+" "+r.RoutePath] = r.RouteID
			}
		}
	}
	for i, r := range want.Routes {
		route := r.In(want.ID)
		_, p := engine.Compile(route, engine.PathParams(route.RoutePath))
		for path, msg := range p {
			fields[fmt.Sprintf("routes[%d].%s", i, path)] = msg
		}
		if other, ok := held[r.Method+" "+r.RoutePath]; ok {
			fields[fmt.Sprintf("routes[%d].route_path", i)] = fmt.Sprintf("is used with %s by route %s, which the file does not name: "+
				"remove it with prune, or give the file's route another path", r.Method, other)
		}
	}
	if len(fields) > 0 {
		return &ValidationError{Fields: fields}
	}
	return nil
}

// projectPlan answers POST /project/plan (ADMIN and ROOT members; for a
// project that does not exist yet, ADMIN and ROOT users): what applying
// the file would do, writing nothing.
func (h *Handlers) projectPlan(c *fiber.Ctx) error {
	var in projectFileInput
	if err := h.bindFile(c, &in); err != nil {
		return err
	}
	fp, err := planFile(c, h.store, in)
	if verr := asValidation(err); verr != nil && representationOf(c) != asJSON {
		// The page lists every fault of the file where the plan would be.
		view := projectFileView{Project: store.Project{ID: in.ProjectID}, Problems: verr.Fields}
		return h.respond(c, Reply{Status: fiber.StatusUnprocessableEntity, Message: "Error: " + verr.Error(), Fragment: "projects/plan", View: view})
	}
	if err != nil {
		return err
	}
	msg := "Nothing to change"
	if !fp.plan.Empty() {
		msg = fmt.Sprintf("Plan: %d to add, %d to change, %d to remove", len(fp.plan.Add), len(fp.plan.Change), len(fp.plan.Remove))
	}
	view := projectFileView{Project: store.Project{ID: in.ProjectID}, Plan: newPlanView(fp, in.Prune)}
	return h.respond(c, Reply{Message: msg, Data: planDTO{Plan: fp.plan, PlanID: fp.planID}, Fragment: "projects/plan", View: view})
}

// projectFileView is the page that applies a file to a project, and its
// plan fragment (Plan, or the file's Problems by path).
type projectFileView struct {
	Base
	Project  store.Project
	Plan     *planView
	Problems map[string]string
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
	Diff *diffView
}

func newPlanView(fp filePlan, prune bool) *planView {
	v := &planView{planDTO: planDTO{Plan: fp.plan, PlanID: fp.planID}, Prune: prune}
	for _, it := range fp.plan.Change {
		pc := planChange{Item: it}
		switch it.Kind {
		case projectfile.KindRoute:
			i := slices.IndexFunc(fp.have.Routes, func(r store.StoredRoute) bool { return r.RouteID == it.ID })
			j := slices.IndexFunc(fp.want.Routes, func(r projectfile.Route) bool { return r.RouteID == it.ID })
			pc.Diff = newDiffView(0, 0, fp.have.Routes[i].Route, fp.want.Routes[j].In(fp.want.ID), nil)
		case projectfile.KindTemplate:
			i := slices.IndexFunc(fp.have.Templates, func(t store.RouteTemplate) bool { return t.Name == it.ID })
			j := slices.IndexFunc(fp.want.Templates, func(t projectfile.Template) bool { return t.Name == it.ID })
			a, b := fp.have.Templates[i].Template, fp.want.Templates[j]
			pc.Diff = newDiffView(0, 0, flow.Route{RouteID: a.RouteID, RoutePath: a.RoutePath, Method: a.Method, AuthJWT: a.AuthJWT, Params: a.Params, Body: a.Body, Flow: a.Flow},
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
	ctx := c.UserContext()
	uid := current(c).User.ID
	var fp filePlan
	err := h.store.InSnapshot(ctx, func(tx *store.Store) error {
		if err := tx.LockProject(ctx, in.ProjectID); err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		var err error
		if fp, err = planFile(c, tx, in); err != nil {
			return err
		}
		if in.PlanID != "" && in.PlanID != fp.planID {
			return fiber.NewError(fiber.StatusConflict, "project "+quote(in.ProjectID)+" changed since that plan: nothing was applied; plan again")
		}
		return applyFile(c, tx, fp, uid)
	})
	if store.Retryable(err) {
		return fiber.NewError(fiber.StatusConflict, "project "+quote(in.ProjectID)+" changed while the file was applied: nothing was applied; plan again")
	}
	if err != nil {
		return err
	}
	if !fp.plan.Empty() {
		h.routesChanged(c, in.ProjectID)
		for _, it := range fp.plan.Remove {
			if it.Kind == projectfile.KindRoute {
				h.metrics.forget(in.ProjectID, it.ID)
			}
		}
	}
	status, msg := fiber.StatusOK, "Nothing to change"
	switch {
	case fp.have == nil:
		status, msg = fiber.StatusCreated, "Project created from the file"
	case !fp.plan.Empty():
		msg = fmt.Sprintf("Applied: %d added, %d changed, %d removed", len(fp.plan.Add), len(fp.plan.Change), len(fp.plan.Remove))
	}
	if status == fiber.StatusOK && !fp.plan.Empty() {
		h.flash(c, "success", fmt.Sprintf("File applied: %d added, %d changed, %d removed.", len(fp.plan.Add), len(fp.plan.Change), len(fp.plan.Remove)))
	}
	return h.respond(c, Reply{Status: status, Message: msg, Data: planDTO{Plan: fp.plan, PlanID: fp.planID}, Redirect: "/web/project?id=" + in.ProjectID})
}

// applyNote is the note of each version a file's apply makes.
const applyNote = "Applied from a project file"

// applyFile writes fp's plan with tx: settings, then what is removed, then
// collections, email templates, templates and routes changed and added.
func applyFile(c *fiber.Ctx, tx *store.Store, fp filePlan, uid int64) error {
	ctx := c.UserContext()
	w := fp.want
	project := store.Project{ID: w.ID, Name: *w.Name, Description: *w.Description, APIPath: *w.APIPath, XRateLimit: *w.XRateLimit,
		XRateBurst: *w.XRateBurst, XCORSOrigins: *w.XCORSOrigins, XEgressHosts: *w.XEgressHosts}
	id := w.ID
	// touched are the objects of kind the plan adds (true) or changes
	// (false), by id.
	touched := func(kind string) map[string]bool {
		out := map[string]bool{}
		for _, it := range fp.plan.Change {
			if it.Kind == kind {
				out[it.ID] = false
			}
		}
		for _, it := range fp.plan.Add {
			if it.Kind == kind {
				out[it.ID] = true
			}
		}
		return out
	}
	settingsChanged := len(touched(projectfile.KindSetting)) > 0
	switch {
	case fp.have == nil:
		if err := tx.CreateProject(ctx, &project, uid); err != nil {
			return at("", err)
		}
	case settingsChanged:
		if err := tx.UpdateProject(ctx, &project); err != nil {
			return at("", err)
		}
	}
	var have store.ProjectContents
	if fp.have != nil {
		have = *fp.have
	}
	for _, it := range fp.plan.Remove {
		var err error
		switch it.Kind {
		case projectfile.KindRoute:
			err = tx.DeleteRoute(ctx, id, it.ID)
		case projectfile.KindTemplate:
			i := slices.IndexFunc(have.Templates, func(t store.RouteTemplate) bool { return t.Name == it.ID })
			err = tx.DeleteTemplate(ctx, have.Templates[i].ID)
		case projectfile.KindEmailTemplate:
			err = tx.DeleteEmailTemplate(ctx, id, it.ID)
		case projectfile.KindCollection:
			err = tx.DeleteCollection(ctx, id, it.ID)
		}
		if err != nil {
			return err
		}
	}
	collections := touched(projectfile.KindCollection)
	for _, col := range w.Collections {
		added, ok := collections[col.ID]
		if !ok {
			continue
		}
		sc := store.Collection{ProjectID: id, ID: col.ID, Name: col.Name, Description: col.Description}
		if added {
			if err := tx.CreateCollection(ctx, &sc, uid); err != nil {
				return at(fp.place(projectfile.KindCollection, col.ID), err)
			}
			if col.Records != nil {
				for _, data := range *col.Records {
					if err := tx.InsertRecord(ctx, &store.Record{ProjectID: id, CollectionID: col.ID, Data: data}); err != nil {
						return err
					}
				}
			}
			continue
		}
		if err := tx.UpdateCollection(ctx, &sc); err != nil {
			return err
		}
	}
	emails := touched(projectfile.KindEmailTemplate)
	for _, t := range w.EmailTemplates {
		added, ok := emails[t.Name]
		if !ok {
			continue
		}
		et := store.EmailTemplate{ProjectID: id, Name: t.Name, Subject: t.Subject, Text: t.Text, HTML: t.HTML}
		var err error
		if added {
			err = tx.CreateEmailTemplate(ctx, &et, uid)
		} else {
			err = tx.UpdateEmailTemplate(ctx, &et)
		}
		if err != nil {
			return err
		}
	}
	templates := touched(projectfile.KindTemplate)
	for _, t := range w.Templates {
		added, ok := templates[t.Name]
		if !ok {
			continue
		}
		rt := store.RouteTemplate{Template: t.In(id), Note: applyNote, SavedBy: &uid}
		if added {
			rt.CreatedBy = &uid
		} else {
			rt.ID = have.Templates[slices.IndexFunc(have.Templates, func(h store.RouteTemplate) bool { return h.Name == t.Name })].ID
		}
		if err := tx.SaveTemplate(ctx, &rt); err != nil {
			return at(fp.place(projectfile.KindTemplate, t.Name), err)
		}
	}
	routes := touched(projectfile.KindRoute)
	for _, r := range w.Routes {
		added, ok := routes[r.RouteID]
		if !ok {
			continue
		}
		sr := store.StoredRoute{Route: r.In(id), Note: applyNote}
		var err error
		if added {
			sr.CreatedBy = &uid
			err = tx.CreateRoute(ctx, &sr)
		} else {
			sr.SavedBy = &uid
			err = tx.UpdateRoute(ctx, r.RouteID, &sr)
		}
		if err != nil {
			return at(fp.place(projectfile.KindRoute, r.RouteID), err)
		}
	}
	return nil
}

// at names a conflict of a write by the file's path of what was written
// (prefix "routes[3]."): a route's path another route holds is
// routes[3].route_path.
func at(prefix string, err error) error {
	verr := asValidation(err)
	if verr == nil {
		return err
	}
	fields := map[string]string{}
	for k, msg := range verr.Fields {
		if prefix == "" && k == "id" {
			k = "project_id" // a project made meanwhile by someone else
		}
		fields[prefix+strings.TrimPrefix(k, "route.")] = msg
	}
	return &ValidationError{Fields: fields}
}
