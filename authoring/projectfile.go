package authoring

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"stencil/egress"
	"stencil/engine"
	"stencil/projectfile"
	"stencil/runs"
	"stencil/schema"
	"stencil/store"
)

// A project as a file (docs/projects.md): what applying one would do, and
// doing it in one transaction, each object checked and saved as saving it
// by hand would.

// FileOf is a project's contents as its file holds them.
func FileOf(pc store.ProjectContents, records bool) projectfile.Document {
	p := pc.Project
	d := projectfile.Document{Format: projectfile.Format, ID: p.ID, Name: &p.Name, Description: &p.Description, APIPath: &p.APIPath,
		XRateLimit: &p.XRateLimit, XRateBurst: &p.XRateBurst, XCORSOrigins: &p.XCORSOrigins, XEgressHosts: &p.XEgressHosts,
		Collections: []projectfile.Collection{}, Routes: []projectfile.Route{}, Templates: []projectfile.Template{},
		EmailTemplates: []projectfile.EmailTemplate{}, VaultKeys: pc.VaultKeys}
	for _, c := range pc.Collections {
		fc := projectfile.Collection{ID: c.ID, Name: c.Name, Description: c.Description, Fields: c.Schema.Fields}
		if len(fc.Fields) == 0 {
			fc.Fields = nil
		}
		if c.Schema.Strict {
			no := false
			fc.Additional = &no
		}
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
	d.Schedules = []projectfile.Schedule{}
	for _, sc := range pc.Schedules {
		d.Schedules = append(d.Schedules, ScheduleOf(sc))
	}
	d.Tests = []projectfile.Test{}
	for _, t := range pc.Tests {
		d.Tests = append(d.Tests, projectfile.Test{RouteID: t.RouteID, RouteTest: t.RouteTest})
	}
	return d
}

// ScheduleOf is a schedule as a project's file holds it.
func ScheduleOf(sc store.Schedule) projectfile.Schedule {
	return projectfile.Schedule{RouteID: sc.RouteID, Cron: sc.Cron, Timezone: sc.Timezone, Query: sc.Query, Body: projectfile.CanonicalBody(sc.Body), Active: sc.Active}
}

// FilePlan is a file read and checked for a project: the file as it
// would be kept (Want), the project as it is (Have; nil: it does not exist
// yet), what applying the file would do (Plan) and the plan's id, which
// names the project's state and the file together.
type FilePlan struct {
	Want   projectfile.Document
	Have   *store.ProjectContents
	Plan   projectfile.Plan
	PlanID string
	// places are the file's paths of its collections, routes and
	// templates ("routes[3]."), by kind and id: want is sorted, the file
	// need not be.
	places map[string]string
}

// place is where the file holds the object of kind and id.
func (fp FilePlan) place(kind, id string) string { return fp.places[kind+"/"+id] }

// PlanFile reads document and plans it against project as st reads it: a
// file that cannot be applied is Problems naming each path in the file, as
// saving each object by hand would name it; with prune, what the project
// has and the file does not name is removed.
func PlanFile(ctx context.Context, st *store.Store, project string, document []byte, prune bool) (FilePlan, error) {
	var fp FilePlan
	want, p := projectfile.Decode(document)
	if len(p) > 0 {
		return fp, &Problems{Fields: p}
	}
	// The request names the project; the file's id only says where it
	// came from.
	want.ID = project
	pc, err := st.ProjectContents(ctx, project, false)
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return fp, err
	default:
		fp.Have = &pc
	}
	if err := completeSettings(&want, fp.Have, project); err != nil {
		return fp, err
	}
	if err := checkAPIPath(ctx, st, &want, fp.Have); err != nil {
		return fp, err
	}
	if err := checkFile(want, fp.Have, prune); err != nil {
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
	if fp.Have != nil {
		d := FileOf(*fp.Have, false)
		have, haveText = &d, projectfile.Encode(d)
	}
	fp.Want, fp.Plan = want, projectfile.Compare(have, want, prune)
	sum := sha256.New()
	fmt.Fprintf(sum, "%s\x00%s\x00%t", haveText, projectfile.Encode(want), prune)
	fp.PlanID = hex.EncodeToString(sum.Sum(nil))
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
	in := Project{ID: id, Name: Deref(want.Name, p.Name), Description: Deref(want.Description, p.Description),
		APIPath: Deref(want.APIPath, p.APIPath), XRateLimit: want.XRateLimit, XRateBurst: want.XRateBurst}
	if in.XRateLimit == nil {
		in.XRateLimit = &p.XRateLimit
	}
	if in.XRateBurst == nil {
		in.XRateBurst = &p.XRateBurst
	}
	if err := CheckAt("", &in); err != nil {
		return err
	}
	cors, err := (*LineList)(want.XCORSOrigins).Check("x_cors_origins", runs.Origins, p.XCORSOrigins)
	if err != nil {
		return err
	}
	hosts, err := (*LineList)(want.XEgressHosts).Check("x_egress_hosts", egress.Hosts, p.XEgressHosts)
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
func checkAPIPath(ctx context.Context, st *store.Store, want *projectfile.Document, have *store.ProjectContents) error {
	canonical, holder, equal, err := st.APIPathOf(ctx, want.ID, *want.APIPath)
	if err != nil {
		return err
	}
	want.APIPath = &canonical
	switch {
	case holder == "" || have != nil && strings.EqualFold(have.Project.APIPath, canonical):
		return nil
	case equal:
		return &Problems{Fields: map[string]string{"api_path": "is already used by another project (" + holder + ")"}}
	}
	return &Problems{Fields: map[string]string{"api_path": "overlaps project " + holder + "'s: neither path may lie inside the other"}}
}

// checkFile checks each object of want as saving it by hand would: a
// collection, an email template, a route that compiles, its records; and
// a route's method and path not held by a route of the project the file
// leaves in place (with prune, none is left).
func checkFile(want projectfile.Document, have *store.ProjectContents, prune bool) error {
	fields := map[string]string{}
	add := func(err error) error {
		var verr *Problems
		if !errors.As(err, &verr) {
			return err
		}
		maps.Copy(fields, verr.Fields)
		return nil
	}
	ids := map[string]bool{}
	for _, col := range want.Collections {
		ids[col.ID] = true
	}
	for i, col := range want.Collections {
		prefix := fmt.Sprintf("collections[%d].", i)
		if err := add(CheckAt(prefix, &Collection{ProjectID: want.ID, ID: col.ID, Name: col.Name, Description: col.Description})); err != nil {
			return err
		}
		sch := col.Schema()
		var problem *schema.Problem
		if err := sch.Check(col.ID, func(id string) bool { return ids[id] }); errors.As(err, &problem) {
			fields[prefix+problem.Path] = problem.Message
		}
		if col.Records != nil {
			seen := map[int64]int{}
			for j, r := range *col.Records {
				at := fmt.Sprintf("%srecords[%d]", prefix, j)
				id, data, err := store.SplitRecordID(r)
				if err != nil {
					fields[at+"."+store.RecordIDKey] = err.Error()
					continue
				}
				if k, dup := seen[id]; dup && id > 0 {
					fields[at+"."+store.RecordIDKey] = fmt.Sprintf("is the id of records[%d] too", k)
				}
				seen[id] = j
				if _, err := store.RecordData(data); err != nil {
					fields[at] = err.Error()
				}
			}
		}
	}
	for i, t := range want.EmailTemplates {
		in := EmailTemplate{ProjectID: "file", Name: t.Name, Subject: t.Subject, Text: t.Text, HTML: t.HTML}
		if err := add(CheckAt(fmt.Sprintf("email_templates[%d].", i), &in)); err != nil {
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
		return &Problems{Fields: fields}
	}
	return nil
}

// applyNote is the note of each version a file's apply makes.
const applyNote = "Applied from a project file"

// ApplyFile writes fp's plan with tx (a transaction the caller holds, in
// which fp was planned): settings, then what is removed, then
// collections, email templates, templates and routes changed and added,
// each as user uid saving it by hand (a version, an event).
func ApplyFile(ctx context.Context, tx *store.Store, fp FilePlan, uid int64) error {
	w := fp.Want
	project := store.Project{ID: w.ID, Name: *w.Name, Description: *w.Description, APIPath: *w.APIPath, XRateLimit: *w.XRateLimit,
		XRateBurst: *w.XRateBurst, XCORSOrigins: *w.XCORSOrigins, XEgressHosts: *w.XEgressHosts}
	id := w.ID
	// touched are the objects of kind the plan adds (true) or changes
	// (false), by id.
	touched := func(kind string) map[string]bool {
		out := map[string]bool{}
		for _, it := range fp.Plan.Change {
			if it.Kind == kind {
				out[it.ID] = false
			}
		}
		for _, it := range fp.Plan.Add {
			if it.Kind == kind {
				out[it.ID] = true
			}
		}
		return out
	}
	settingsChanged := len(touched(projectfile.KindSetting)) > 0
	switch {
	case fp.Have == nil:
		if err := tx.CreateProject(ctx, &project, uid); err != nil {
			return at("", err)
		}
	case settingsChanged:
		if err := tx.UpdateProject(ctx, &project); err != nil {
			return at("", err)
		}
	}
	var have store.ProjectContents
	if fp.Have != nil {
		have = *fp.Have
	}
	for _, it := range fp.Plan.Remove {
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
		case projectfile.KindSchedule:
			if sc, ok := scheduleByKey(have.Schedules, it.ID); ok {
				err = tx.DeleteSchedule(ctx, id, sc.ID)
			}
		case projectfile.KindTest:
			route, name, _ := strings.Cut(it.ID, "/")
			if err = tx.DeleteTest(ctx, id, route, name); errors.Is(err, store.ErrNotFound) {
				err = nil // it went with its route
			}
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
		sc := store.Collection{ProjectID: id, ID: col.ID, Name: col.Name, Description: col.Description, Schema: col.Schema()}
		if added {
			if err := tx.CreateCollection(ctx, &sc, uid); err != nil {
				return at(fp.place(projectfile.KindCollection, col.ID), fieldsInTx(err))
			}
			if col.Records != nil {
				for j, raw := range *col.Records {
					place := fp.place(projectfile.KindCollection, col.ID) + fmt.Sprintf("records[%d]", j)
					rid, data, err := store.SplitRecordID(raw)
					if err == nil {
						err = tx.InsertRecord(ctx, &store.Record{ID: rid, ProjectID: id, CollectionID: col.ID, Data: data})
					}
					if errors.Is(err, store.ErrRecordIDTaken) {
						return &Problems{Fields: map[string]string{place + "." + store.RecordIDKey: store.ErrRecordIDTaken.Error()}}
					}
					if err != nil {
						return recordAt(place, err)
					}
				}
			}
			continue
		}
		if err := tx.UpdateCollection(ctx, &sc); err != nil {
			return err
		}
		i := slices.IndexFunc(have.Collections, func(c store.Collection) bool { return c.ID == col.ID })
		if i >= 0 && have.Collections[i].Schema.Hash() != sc.Schema.Hash() {
			if err := tx.SetFields(ctx, id, col.ID, sc.Schema, nil); err != nil {
				return at(fp.place(projectfile.KindCollection, col.ID), fieldsInTx(err))
			}
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
	// Schedules last: their routes are made by now.
	schedules := touched(projectfile.KindSchedule)
	for _, fs := range w.Schedules {
		added, ok := schedules[fs.Key()]
		if !ok {
			continue
		}
		if added {
			sc := store.Schedule{ProjectID: id, RouteID: fs.RouteID, Cron: fs.Cron, Timezone: fs.Timezone, Query: fs.Query, Body: fs.Body, Active: fs.Active}
			if err := tx.CreateSchedule(ctx, &sc, uid); err != nil {
				return err
			}
			continue
		}
		if sc, ok := scheduleByKey(have.Schedules, fs.Key()); ok {
			sc.Active = fs.Active
			if err := tx.UpdateSchedule(ctx, &sc); err != nil {
				return err
			}
		}
	}
	// Tests too: their routes are made by now.
	tests := touched(projectfile.KindTest)
	for i, ft := range w.Tests {
		added, ok := tests[ft.Key()]
		if !ok {
			continue
		}
		t := store.StoredTest{ProjectID: id, RouteID: ft.RouteID, RouteTest: ft.RouteTest}
		var err error
		if added {
			err = tx.CreateTest(ctx, &t, uid)
		} else {
			err = tx.UpdateTest(ctx, ft.Name, &t)
		}
		if errors.Is(err, store.ErrTooManyTests) {
			return &Problems{Fields: map[string]string{fmt.Sprintf("tests[%d]", i): err.Error()}}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// scheduleByKey is the schedule of a project a file's schedule key names.
func scheduleByKey(list []store.Schedule, key string) (store.Schedule, bool) {
	i := slices.IndexFunc(list, func(sc store.Schedule) bool { return ScheduleOf(sc).Key() == key })
	if i < 0 {
		return store.Schedule{}, false
	}
	return list[i], true
}

// at names a conflict of a write by the file's path of what was written
// (prefix "routes[3]."): a route's path another route holds is
// routes[3].route_path.
func at(prefix string, err error) error {
	verr := AsProblems(err)
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
	return &Problems{Fields: fields}
}

// Deref is *p, or def when p is nil: a value a change leaves out keeps
// what it was.
func Deref[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

// ErrPlanStale is an apply whose plan id names another state of the
// project than the one it would be applied to: nothing was applied.
var ErrPlanStale = errors.New("changed since that plan: nothing was applied; plan again")

// ErrChangedMeanwhile is an apply the project changed under: nothing was
// applied.
var ErrChangedMeanwhile = errors.New("changed while the file was applied: nothing was applied; plan again")

// Apply plans document for project and applies it, in one transaction
// that sees one snapshot and holds the project's lock, as user uid. With
// planID (not ""), a project changed since that plan is ErrPlanStale. A
// project that does not exist is created.
func Apply(ctx context.Context, st *store.Store, project string, document []byte, prune bool, planID string, uid int64) (FilePlan, error) {
	built, unused, err := prepareFieldIndexes(ctx, st, project, document, prune)
	if err != nil {
		return FilePlan{}, err
	}
	fp, err := apply(ctx, st, project, document, prune, planID, uid)
	if err != nil {
		_ = st.DropFieldIndexes(context.WithoutCancel(ctx), built)
		return fp, err
	}
	// Indexes the fields no longer need go once the change is made; one
	// that fails to go is dropped by the next change of that field.
	_ = st.DropFieldIndexes(ctx, unused)
	return fp, nil
}

// prepareFieldIndexes builds, before the apply's transaction, the indexes
// the file's unique and indexed fields need that the project lacks
// (PostgreSQL builds one without blocking writes only outside a
// transaction), and names those built and those the file's fields no
// longer need. A file that does not plan builds nothing: its apply tells
// why.
func prepareFieldIndexes(ctx context.Context, st *store.Store, project string, document []byte, prune bool) (built, unused []string, err error) {
	fp, err := PlanFile(ctx, st, project, document, prune)
	if err != nil {
		return nil, nil, nil
	}
	for _, col := range fp.Want.Collections {
		var cur schema.Schema
		if fp.Have != nil {
			if i := slices.IndexFunc(fp.Have.Collections, func(c store.Collection) bool { return c.ID == col.ID }); i >= 0 {
				cur = fp.Have.Collections[i].Schema
			}
		}
		next := col.Schema()
		names, err := st.PrepareFieldIndexes(ctx, fp.Want.ID, col.ID, cur, next)
		if err != nil {
			_ = st.DropFieldIndexes(context.WithoutCancel(ctx), built)
			return nil, nil, at(fp.place(projectfile.KindCollection, col.ID), err)
		}
		built = append(built, names...)
		unused = append(unused, store.UnusedFieldIndexes(fp.Want.ID, col.ID, cur, next)...)
	}
	return built, unused, nil
}

// apply is Apply's transaction.
func apply(ctx context.Context, st *store.Store, project string, document []byte, prune bool, planID string, uid int64) (FilePlan, error) {
	var fp FilePlan
	err := st.InSnapshot(ctx, func(tx *store.Store) error {
		if err := tx.LockProject(ctx, project); err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		var err error
		if fp, err = PlanFile(ctx, tx, project, document, prune); err != nil {
			return err
		}
		if planID != "" && planID != fp.PlanID {
			return ErrPlanStale
		}
		return ApplyFile(ctx, tx, fp, uid)
	})
	if store.Retryable(err) {
		return fp, ErrChangedMeanwhile
	}
	return fp, err
}

// recordAt names a record of a file its collection's fields refuse by its
// place in the file (collections[2].records[1].year): a file's record is
// its data.
func recordAt(place string, err error) error {
	var v *schema.Violation
	switch {
	case errors.As(err, &v) && !v.Conflict:
		return &Problems{Fields: map[string]string{place + "." + v.Field: v.Message}}
	case errors.Is(err, store.ErrNumberRange):
		return &Problems{Fields: map[string]string{place: err.Error()}}
	}
	return err
}

// fieldsInTx names the fields of a collection whose indexes, built before
// the apply's transaction (prepareFieldIndexes), changed meanwhile.
func fieldsInTx(err error) error {
	if errors.Is(err, store.ErrIndexInTx) {
		return ErrChangedMeanwhile
	}
	return err
}
