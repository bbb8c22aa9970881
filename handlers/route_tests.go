package handlers

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"stencil/authoring"
	"stencil/engine"
	"stencil/flow"
	"stencil/projectfile"
	"stencil/runs"
	"stencil/store"
)

// Route tests (docs/tests.md, SPEC 18): AUTHOR and up save, change,
// delete and run them; members read them.

// testDTO is a route's test as the API gives it.
type testDTO struct {
	ProjectID string           `json:"project_id"`
	RouteID   string           `json:"route_id"`
	Name      string           `json:"name"`
	Request   flow.TestRequest `json:"request"`
	Expect    flow.Expectation `json:"expect"`
	CreatedBy *int64           `json:"created_by"`
	CreatedAt time.Time        `json:"created_at"`
	UpdatedAt time.Time        `json:"updated_at"`
}

func newTestDTO(t store.StoredTest) testDTO {
	rt := t.RouteTest
	rt.Normalize()
	return testDTO{ProjectID: t.ProjectID, RouteID: t.RouteID, Name: rt.Name, Request: rt.Request, Expect: rt.Expect,
		CreatedBy: t.CreatedBy, CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt}
}

// routeTestInput is a new test; routeTestUpdateInput changes one
// (new_name renames it; request and expect, when given, replace the
// test's).
type routeTestInput struct {
	ProjectID string          `json:"project_id" validate:"required"`
	RouteID   string          `json:"route_id" validate:"required,max=100"`
	Name      string          `json:"name" validate:"required"`
	Request   json.RawMessage `json:"request" validate:"required"`
	Expect    json.RawMessage `json:"expect" validate:"required"`
}

type routeTestUpdateInput struct {
	ProjectID string          `json:"project_id" validate:"required"`
	RouteID   string          `json:"route_id" validate:"required,max=100"`
	Name      string          `json:"name" validate:"required,max=400"`
	NewName   *string         `json:"new_name"`
	Request   json.RawMessage `json:"request"`
	Expect    json.RawMessage `json:"expect"`
}

type routeTestQuery struct {
	ProjectID string `query:"project_id" json:"project_id" validate:"required"`
	RouteID   string `query:"route_id" json:"route_id" validate:"max=100"`
}

type routeTestKeyQuery struct {
	ProjectID string `query:"project_id" json:"project_id" validate:"required"`
	RouteID   string `query:"route_id" json:"route_id" validate:"required,max=100"`
	Name      string `query:"name" json:"name" validate:"required,max=400"`
}

// decodeTestPart decodes a test's request or expect strictly: a field it
// does not know is refused, as at the top of every body.
func decodeTestPart(raw json.RawMessage, at string, v any) error {
	if len(bytes.TrimSpace(raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return &ValidationError{Fields: map[string]string{at: "is required"}, Missing: true}
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		msg := "must be an object of the test's fields"
		if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			return &ValidationError{Fields: map[string]string{at + "." + strings.Trim(name, `"`): "is not a known field"}}
		}
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) && typeErr.Field != "" {
			return &ValidationError{Fields: map[string]string{at + "." + typeErr.Field: "must be " + authoring.KindOf(typeErr.Type)}}
		}
		return &ValidationError{Fields: map[string]string{at: msg}}
	}
	return nil
}

// checkTest checks a test as saving it would, and that its route exists.
func (h *Handlers) checkTest(c *fiber.Ctx, project, route string, t flow.RouteTest) error {
	if p := t.Check(); len(p) > 0 {
		return &ValidationError{Fields: p}
	}
	if _, err := h.store.Route(c.UserContext(), project, route); errors.Is(err, store.ErrNotFound) {
		return fiber.NewError(fiber.StatusNotFound, "route "+authoring.Quote(route)+" not found in project "+authoring.Quote(project))
	} else if err != nil {
		return err
	}
	return nil
}

// testStoreError words the store's refusals of a test.
func testStoreError(err error, route, name string) error {
	switch {
	case errors.Is(err, store.ErrNotFound):
		return fiber.NewError(fiber.StatusNotFound, "test "+authoring.Quote(name)+" of route "+authoring.Quote(route)+" not found")
	case errors.Is(err, store.ErrConflict):
		return fiber.NewError(fiber.StatusConflict, "route "+authoring.Quote(route)+" has a test named "+authoring.Quote(name)+" already")
	case errors.Is(err, store.ErrTooManyTests):
		return &ValidationError{Fields: map[string]string{"route_id": store.ErrTooManyTests.Error()}}
	}
	return err
}

// testCreate answers POST /route/test/create.
func (h *Handlers) testCreate(c *fiber.Ctx) error {
	var in routeTestInput
	if err := bind(c, &in); err != nil {
		return err
	}
	if _, err := h.member(c, in.ProjectID); err != nil {
		return err
	}
	t := store.StoredTest{ProjectID: in.ProjectID, RouteID: in.RouteID, RouteTest: flow.RouteTest{Name: in.Name}}
	if err := decodeTestPart(in.Request, "request", &t.Request); err != nil {
		return err
	}
	if err := decodeTestPart(in.Expect, "expect", &t.Expect); err != nil {
		return err
	}
	if err := h.checkTest(c, in.ProjectID, in.RouteID, t.RouteTest); err != nil {
		return err
	}
	if err := h.store.CreateTest(c.UserContext(), &t, current(c).User.ID); err != nil {
		return testStoreError(err, in.RouteID, in.Name)
	}
	return h.respond(c, Reply{Status: fiber.StatusCreated, Message: "Test " + t.Name + " saved", Data: newTestDTO(t)})
}

// testList answers GET /route/test/fetch: a project's tests, or a
// route's.
func (h *Handlers) testList(c *fiber.Ctx) error {
	var q routeTestQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	if _, err := h.member(c, q.ProjectID); err != nil {
		return err
	}
	list, err := h.store.Tests(c.UserContext(), q.ProjectID, q.RouteID)
	if err != nil {
		return err
	}
	out := make([]testDTO, len(list))
	for i, t := range list {
		out[i] = newTestDTO(t)
	}
	n := len(out)
	return h.respond(c, Reply{Data: out, Amount: &n})
}

// testUpdate answers PATCH /route/test/update.
func (h *Handlers) testUpdate(c *fiber.Ctx) error {
	var in routeTestUpdateInput
	if err := bind(c, &in); err != nil {
		return err
	}
	if _, err := h.member(c, in.ProjectID); err != nil {
		return err
	}
	found, err := h.store.Test(c.UserContext(), in.ProjectID, in.RouteID, in.Name)
	if err != nil {
		return testStoreError(err, in.RouteID, in.Name)
	}
	t := &found
	t.Name = authoring.Deref(in.NewName, t.Name)
	if len(in.Request) > 0 {
		t.Request = flow.TestRequest{}
		if err := decodeTestPart(in.Request, "request", &t.Request); err != nil {
			return err
		}
	}
	if len(in.Expect) > 0 {
		t.Expect = flow.Expectation{}
		if err := decodeTestPart(in.Expect, "expect", &t.Expect); err != nil {
			return err
		}
	}
	if p := t.Check(); len(p) > 0 {
		if msg, ok := p["name"]; ok && in.NewName != nil {
			p["new_name"] = msg
			delete(p, "name")
		}
		return &ValidationError{Fields: p}
	}
	if err := h.store.UpdateTest(c.UserContext(), in.Name, t); err != nil {
		return testStoreError(err, in.RouteID, t.Name)
	}
	return h.respond(c, Reply{Message: "Test " + t.Name + " saved", Data: newTestDTO(*t)})
}

// testDelete answers DELETE /route/test/delete.
func (h *Handlers) testDelete(c *fiber.Ctx) error {
	var q routeTestKeyQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	if _, err := h.member(c, q.ProjectID); err != nil {
		return err
	}
	if err := h.store.DeleteTest(c.UserContext(), q.ProjectID, q.RouteID, q.Name); err != nil {
		return testStoreError(err, q.RouteID, q.Name)
	}
	return h.respond(c, Reply{Message: "Test " + q.Name + " deleted"})
}

// routeTestRunInput asks for a project's tests to run (route_id: one route's),
// against the saved routes or, with draft, a route document tested in
// place of the saved route of its route_id.
type routeTestRunInput struct {
	ProjectID string          `json:"project_id" validate:"required"`
	RouteID   string          `json:"route_id" validate:"max=100"`
	Draft     json.RawMessage `json:"draft"`
}

// testResultDTO is how one test went.
type testResultDTO struct {
	RouteID    string   `json:"route_id"`
	Test       string   `json:"test"`
	Passed     bool     `json:"passed"`
	Status     int      `json:"status"`
	DurationMS float64  `json:"duration_ms"`
	Failures   []string `json:"failures"`
}

type testRunDTO struct {
	Passed  int             `json:"passed"`
	Failed  int             `json:"failed"`
	Results []testResultDTO `json:"results"`
}

// add counts res among the run's results.
func (d *testRunDTO) add(res testResultDTO) {
	if res.Passed {
		d.Passed++
	} else {
		d.Failed++
	}
	d.Results = append(d.Results, res)
}

// count is the run's counts for its message: "3 passed, 1 failed".
func (d testRunDTO) count() string {
	return strconv.Itoa(d.Passed) + " passed, " + strconv.Itoa(d.Failed) + " failed"
}

// testRun answers POST /route/test/run: each test runs as a dry run (the
// project's data, writes rolled back, no mail) and is judged by its
// expectation.
func (h *Handlers) testRun(c *fiber.Ctx) error {
	var in routeTestRunInput
	if err := bind(c, &in); err != nil {
		return err
	}
	project, err := h.member(c, in.ProjectID)
	if err != nil {
		return err
	}
	route := in.RouteID
	var draft *engine.Plan
	if isProjectDocument(in.Draft) {
		return h.testRunFile(c, project, in)
	}
	if d := bytes.TrimSpace(in.Draft); len(d) > 0 && string(d) != "null" {
		r, err := authoring.DecodeRoute(in.Draft, in.ProjectID)
		if err != nil {
			return prefixFields(err, "draft.")
		}
		if route != "" && r.RouteID != route {
			return &ValidationError{Fields: map[string]string{"route_id": "must be the draft's route_id, or left out"}}
		}
		if _, err := h.checkRunnable(c, project, r); err != nil {
			return prefixFields(err, "draft.")
		}
		draft, _ = engine.Compile(r, engine.PathParams(r.RoutePath))
		route = r.RouteID
	}
	tests, err := h.store.Tests(c.UserContext(), in.ProjectID, route)
	if err != nil {
		return err
	}
	if route != "" && draft == nil {
		if _, err := h.store.Route(c.UserContext(), in.ProjectID, route); errors.Is(err, store.ErrNotFound) {
			return fiber.NewError(fiber.StatusNotFound, "route "+authoring.Quote(route)+" not found in project "+authoring.Quote(in.ProjectID))
		} else if err != nil {
			return err
		}
	}
	out := testRunDTO{Results: make([]testResultDTO, 0, len(tests))}
	plans := map[string]*engine.Plan{}
	for _, t := range tests {
		plan := draft
		if plan == nil || t.RouteID != route {
			if plan = plans[t.RouteID]; plan == nil {
				if plan, err = h.runs.Plan(c.UserContext(), in.ProjectID, t.RouteID); err != nil {
					return err
				}
				plans[t.RouteID] = plan
			}
		}
		out.add(h.runTest(c, project, plan, t))
	}
	msg := "Tests run: " + out.count()
	return h.respond(c, Reply{Message: msg, Data: out})
}

// isProjectDocument says whether a draft is a project's file (it has a
// format) rather than a route document.
func isProjectDocument(raw json.RawMessage) bool {
	var head struct {
		Format json.RawMessage `json:"format"`
	}
	return json.Unmarshal(raw, &head) == nil && head.Format != nil
}

// testRunFile runs the tests a project's file carries against the file's
// routes, on the project's data, before the file is applied: what a
// change to the file breaks (stencil project test file.json).
func (h *Handlers) testRunFile(c *fiber.Ctx, project store.Project, in routeTestRunInput) error {
	doc, problems := projectfile.Decode(in.Draft)
	if len(problems) > 0 {
		return prefixFields(&ValidationError{Fields: problems}, "draft.")
	}
	plans := map[string]*engine.Plan{}
	for _, r := range doc.Routes {
		fr := r.In(project.ID)
		plan, problems := engine.Compile(fr, engine.PathParams(fr.RoutePath))
		if len(problems) > 0 {
			plan = engine.Broken(fr, problems.Error())
		}
		plans[r.RouteID] = plan
	}
	out := testRunDTO{Results: []testResultDTO{}}
	for _, t := range doc.Tests {
		if in.RouteID != "" && t.RouteID != in.RouteID {
			continue
		}
		out.add(h.runTest(c, project, plans[t.RouteID], store.StoredTest{ProjectID: project.ID, RouteID: t.RouteID, RouteTest: t.RouteTest}))
	}
	msg := "The file's tests run: " + out.count()
	return h.respond(c, Reply{Message: msg, Data: out})
}

// testsBroken runs the saved tests of draft r's route against r, as dry
// runs, and words each that fails as a check of the editor: the tests a
// change breaks, named before it is saved (docs/tests.md).
func (h *Handlers) testsBroken(c *fiber.Ctx, projectID string, r flow.Route) ([]flow.Warning, error) {
	tests, err := h.store.Tests(c.UserContext(), projectID, r.RouteID)
	if err != nil || len(tests) == 0 {
		return nil, err
	}
	project, err := h.member(c, projectID)
	if err != nil {
		return nil, err
	}
	plan, problems := engine.Compile(r, engine.PathParams(r.RoutePath))
	if len(problems) > 0 {
		return nil, nil // the checks say what to fix first
	}
	var out []flow.Warning
	for _, t := range tests {
		if res := h.runTest(c, project, plan, t); !res.Passed {
			out = append(out, flow.Warning{Message: "Test “" + t.Name + "” fails on this draft: " + strings.Join(res.Failures, "; ")})
		}
	}
	return out, nil
}

// prefixFields puts prefix before the paths of a refusal's fields (a
// draft's "route_path" is the body's "draft.route_path").
func prefixFields(err error, prefix string) error {
	var p *ValidationError
	if !errors.As(err, &p) {
		return err
	}
	fields := make(map[string]string, len(p.Fields))
	for k, v := range p.Fields {
		fields[prefix+k] = v
	}
	return &ValidationError{Fields: fields, Missing: p.Missing}
}

// runTest runs test t against plan as a dry run and judges its answer.
func (h *Handlers) runTest(c *fiber.Ctx, project store.Project, plan *engine.Plan, t store.StoredTest) testResultDTO {
	res := testResultDTO{RouteID: t.RouteID, Test: t.Name, Failures: []string{}}
	if plan == nil {
		res.Failures = append(res.Failures, "route: not found")
		return res
	}
	path, params, problem := runs.MatchPath(plan, t.Request.Path)
	if problem != "" {
		res.Failures = append(res.Failures, "request.path: "+problem)
		return res
	}
	var body []byte
	if b := bytes.TrimSpace(t.Request.Body); len(b) > 0 && string(b) != "null" {
		body = b
	}
	headers := http.Header{}
	for _, p := range t.Request.Headers {
		headers.Add(p.ID, p.Data.Data)
	}
	req := runs.Request{Plan: plan, Params: params, ProjectID: project.ID, Path: "/x" + strings.TrimSuffix(project.APIPath, "/") + path,
		Query: t.Request.Query, Body: body, DryRun: true, Header: headers.Get}
	if t.Request.Caller == flow.TestSelf {
		req.Caller, req.Resolve = h.runCaller(c, routeRunInput{})
	} else {
		req.Resolve = func() (*store.Caller, error) {
			return nil, &runs.Refusal{Status: fiber.StatusUnauthorized, Message: runs.NoTokenMessage}
		}
	}
	a, err := h.runs.Serve(c.UserContext(), req)
	if err != nil {
		res.Failures = append(res.Failures, "run: "+err.Error())
		return res
	}
	res.Status, res.DurationMS = a.Status, float64(a.Duration.Microseconds())/1000
	res.Failures = t.Expect.Failures(flow.TestAnswer{Status: a.Status, Header: a.Header.Get, Body: a.Body, Duration: a.Duration})
	res.Passed = len(res.Failures) == 0
	return res
}
