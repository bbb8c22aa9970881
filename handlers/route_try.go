package handlers

import (
	"bytes"
	"encoding/json"
	"html/template"
	"net/http"
	"net/url"
	"strings"

	"github.com/gofiber/fiber/v2"

	"stencil/authoring"
	"stencil/engine"
	"stencil/flow"
	"stencil/runs"
	"stencil/store"
	"stencil/views"
)

type routeRunInput struct {
	ProjectID string          `json:"project_id" validate:"required,max=64"`
	RouteID   string          `json:"route_id" validate:"max=128"`
	Route     json.RawMessage `json:"route"` // a draft, instead of route_id
	// Template is an unsaved template document, instead of route_id or
	// route: the route its Values make of it runs as a draft
	// (docs/routes.md).
	Template json.RawMessage    `json:"template"`
	Values   map[string]*string `json:"values"`
	Version  int64              `json:"version" validate:"omitempty,min=1"` // with route_id: a kept version, run dry
	Path     string             `json:"path" validate:"max=2048"`
	Query    string             `json:"query" validate:"max=8192"`
	Body     json.RawMessage    `json:"body"`
	DryRun   bool               `json:"dry_run"`
	// Caller is who the run is for: me (the default: whoever asks), none
	// (an anonymous client), or token (the user of Token, a JWT or a
	// personal access token, as /x would take it in Authorization).
	Caller string `json:"caller" validate:"omitempty,oneof=me none token"`
	Token  string `json:"token" validate:"required_if=Caller token,max=4096"`
}

// routeRunDTO is what POST /route/run answers.
type routeRunDTO struct {
	Response   routeAnswerDTO  `json:"response"`
	DurationMS float64         `json:"duration_ms"`
	Ended      string          `json:"ended"`
	Attempts   int             `json:"attempts"`
	DryRun     bool            `json:"dry_run"`
	Trace      []runs.TraceRow `json:"trace"`
	TraceCut   bool            `json:"trace_cut,omitempty"`
}

type routeAnswerDTO struct {
	Status  int               `json:"status"`
	Body    json.RawMessage   `json:"body"`
	Headers map[string]string `json:"headers,omitempty"`
}

// routeRun answers POST /route/run: it runs a route of the project as the
// caller, with the same inputs, checks and limits as at /x, traced; with
// dry_run its writes are rolled back (queued email included). The run is
// logged like any other; vault values never appear in what it answers.
func (h *Handlers) routeRun(c *fiber.Ctx) error {
	var in routeRunInput
	if err := bind(c, &in); err != nil {
		return err
	}
	project, err := h.member(c, in.ProjectID)
	if err != nil {
		return err
	}
	plan, err := h.planToRun(c, project, &in)
	if err != nil {
		return err
	}
	path, params, problem := runs.MatchPath(plan, in.Path)
	if problem != "" {
		return &ValidationError{Fields: map[string]string{"path": problem}}
	}
	body := []byte(in.Body)
	if !given(in.Body) {
		body = nil
	}
	// The run log keeps what the playground shows: the query, the body sent
	// (to replay it) and the trace, masked as it is shown here.
	req := runs.Request{Plan: plan, Params: params, ProjectID: in.ProjectID, Path: "/x" + strings.TrimSuffix(project.APIPath, "/") + path,
		Query: in.Query, Body: body, DryRun: in.DryRun, Trace: true, KeepBody: true}
	req.Caller, req.Resolve = h.runCaller(c, in)
	a, err := h.runs.Serve(c.UserContext(), req)
	if err != nil {
		return err
	}
	out := routeRunDTO{
		Response:   routeAnswerDTO{Status: a.Status, Body: a.Body, Headers: headerMap(a.Header)},
		DurationMS: float64(a.Duration.Microseconds()) / 1000,
		Ended:      a.Ended,
		Attempts:   a.Attempts,
		DryRun:     in.DryRun,
		Trace:      a.Trace,
		TraceCut:   a.TraceCut,
	}
	message := "Route run"
	if in.DryRun {
		message = "Route run (dry run: nothing written)"
	}
	return h.respond(c, Reply{Message: message, Data: out})
}

// planToRun is the plan /route/run runs: the saved route route_id, or a
// kept version of it, or the draft route — a version or a draft checked as
// saving it would be and always run dry.
func (h *Handlers) planToRun(c *fiber.Ctx, project store.Project, in *routeRunInput) (*engine.Plan, error) {
	draft := given(in.Route)
	if given(in.Template) {
		if draft || in.RouteID != "" || in.Version != 0 {
			return nil, &ValidationError{Fields: map[string]string{"template": "must be the only document: leave out route_id, route and version"}}
		}
		r, err := templateDraft(in.Template, in.ProjectID, in.Values)
		if err != nil {
			return nil, err
		}
		if in.Route, err = json.Marshal(r); err != nil {
			return nil, err
		}
		draft = true
	} else if in.Values != nil {
		return nil, &ValidationError{Fields: map[string]string{"values": "are a template's: give template with them"}}
	}
	switch {
	case draft && in.RouteID != "":
		return nil, &ValidationError{Fields: map[string]string{"route_id": "must be left out with route: give a saved route's id or a draft, not both"}}
	case !draft && in.RouteID == "":
		return nil, &ValidationError{Fields: map[string]string{"route_id": "is required (or route, a draft)"}, Missing: true}
	case draft && in.Version != 0:
		return nil, &ValidationError{Fields: map[string]string{"version": "must be left out with route: a version is of a saved route"}}
	case draft, in.Version != 0:
		var r flow.Route
		if draft {
			var err error
			if r, err = authoring.DecodeRoute(in.Route, in.ProjectID); err != nil {
				return nil, err
			}
		} else {
			v, err := h.routeVersion(c, in.ProjectID, in.RouteID, in.Version)
			if err != nil {
				return nil, err
			}
			r = v.Route
		}
		if _, err := h.checkRunnable(c, project, r); err != nil {
			return nil, err
		}
		plan, _ := engine.Compile(r, engine.PathParams(r.RoutePath))
		in.DryRun = true
		return plan, nil
	}
	plan, err := h.runs.Plan(c.UserContext(), in.ProjectID, in.RouteID)
	if err == nil && plan == nil {
		err = fiber.NewError(fiber.StatusNotFound, "route "+authoring.Quote(in.RouteID)+" not found in project "+authoring.Quote(in.ProjectID))
	}
	return plan, err
}

// runCaller is who a run from /route/run is for (routeRunInput.Caller):
// as is a caller known already, resolve finds one when the route asks.
func (h *Handlers) runCaller(c *fiber.Ctx, in routeRunInput) (as *store.Caller, resolve func() (*store.Caller, error)) {
	switch in.Caller {
	case "none":
		return nil, nil
	case "token":
		return nil, func() (*store.Caller, error) {
			p, err := h.tokenPrincipal(c.UserContext(), in.Token, "")
			if err != nil {
				return nil, asRefusal(err)
			}
			return &p.Caller, nil
		}
	}
	if p := current(c); p != nil {
		return &p.Caller, nil
	}
	return nil, nil
}

// tryView is /web/routes/try: a form made from the route's declarations.
type tryView struct {
	Base
	Route      store.StoredRoute
	APIPath    string
	PathParams []string
	Query      []views.TryField
	Body       []views.TryField
	Replay     template.JS // a run's inputs to fill the form with (runs.ReplayValues), or empty
	ReplayOf   int64       // that run's id
	ReplayBody bool        // the run kept its body
	Version    int64       // a kept version tried instead of the live one (always dry), or 0
}

// routeTryPage renders /web/routes/try?project_id=&route_id= (AUTHOR and
// up, members): the form sends POST /route/run and shows the answer and
// its trace.
func (h *Handlers) routeTryPage(c *fiber.Ctx) error {
	p, r, err := h.memberRoute(c)
	if err != nil {
		return err
	}
	// ?version= tries a kept version: its own inputs, always as a dry run.
	version := int64(c.QueryInt("version"))
	if version > 0 && version != r.Version {
		v, err := h.routeVersion(c, p.ID, r.RouteID, version)
		if err != nil {
			return err
		}
		r.Route = v.Route
	} else {
		version = 0
	}
	view := tryView{Base: h.base(c, "Try "+r.RouteID), Route: r, Version: version, APIPath: strings.TrimSuffix(p.APIPath, "/"),
		PathParams: engine.PathParams(r.RoutePath), Query: views.TryFields(r.Params.Pairs), Body: views.TryFields(r.Body)}
	// ?run= replays a run of the run log: its inputs fill the form.
	if id := c.QueryInt("run"); id > 0 {
		run, err := h.store.Run(c.UserContext(), p.ID, int64(id))
		if err != nil {
			return err
		}
		raw, _ := json.Marshal(runs.ReplayValues(run, r.Route, p.APIPath))
		view.Replay, view.ReplayOf, view.ReplayBody = template.JS(raw), run.ID, run.Body != nil
	}
	return h.respond(c, Reply{Page: "routes/try", View: view})
}

// routeDocsPage renders /web/routes/docs?project_id=: the project's route
// document in the Scalar viewer, whose "try it" calls the routes.
func (h *Handlers) routeDocsPage(c *fiber.Ctx) error {
	var q projectQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	p, err := h.member(c, q.ProjectID)
	if err != nil {
		return err
	}
	// The home page's checklist ticks "read its docs" from this.
	h.sessionPut(c, docsReadKey, int64(1))
	return h.respond(c, Reply{Page: "api/scalar", View: scalarView{Base: h.base(c, p.Name+" routes"), Heading: p.Name + " routes",
		DocURL: "/x" + strings.TrimSuffix(p.APIPath, "/") + runs.DocumentPath, Back: "/web/routes?id=" + url.QueryEscape(p.ID), BackText: "Routes of " + p.Name}})
}

// headerMap is an answer's headers, one value each, for JSON.
func headerMap(h http.Header) map[string]string {
	if len(h) == 0 {
		return nil
	}
	out := make(map[string]string, len(h))
	for k := range h {
		out[k] = h.Get(k)
	}
	return out
}

// withoutSaveNote takes a save's note out of a template document, checked
// as the save checks it (authoring.SaveNote): a draft runs the document a
// client is about to save, note included. Anything but a JSON object comes
// back as it is, for flow.DecodeTemplate to say what is wrong with it.
func withoutSaveNote(raw json.RawMessage) (json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil || dec.More() {
		return raw, nil
	}
	if _, ok := doc["note"]; !ok {
		return raw, nil
	}
	if _, err := authoring.SaveNote(doc); err != nil {
		if p, ok := err.(*authoring.Problems); ok {
			return nil, &authoring.Problems{Fields: map[string]string{"template.note": p.Fields["note"]}}
		}
		return nil, err
	}
	return json.Marshal(doc)
}

// given reports whether a JSON field was sent with a value (not null).
func given(raw json.RawMessage) bool {
	return len(raw) > 0 && !bytes.Equal(bytes.TrimSpace(raw), []byte("null"))
}

// templateDraft is the route an unsaved template makes with values in
// project, as applying a saved one would (problems under "template." and
// "values."); a project's template runs only in its project.
func templateDraft(raw json.RawMessage, project string, values map[string]*string) (flow.Route, error) {
	raw, err := withoutSaveNote(raw)
	if err != nil {
		return flow.Route{}, err
	}
	t, p := flow.DecodeTemplate(raw, "template")
	if len(p) == 0 {
		t.Normalize()
		p = flow.ValidateTemplate(t, "template")
	}
	if err := authoring.ProblemsOf(p); err != nil {
		return flow.Route{}, err
	}
	if t.ProjectID != nil && *t.ProjectID != project {
		return flow.Route{}, &ValidationError{Fields: map[string]string{"template.project_id": "must be the project_id of the request, or null for a global template"}}
	}
	r, err := authoring.ApplyTemplate(store.RouteTemplate{Template: t, DocumentSize: -1}, project, values)
	r.Template = nil // an unsaved template is no template a route was made from
	return r, err
}
