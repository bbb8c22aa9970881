package handlers

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"stencil/engine"
	"stencil/flow"
	"stencil/store"
)

// The trace of a run (docs/routes.md).
const (
	previewMax   = 200      // characters of a value's preview
	valueMax     = 64 << 10 // bytes of a value's whole text, when its preview is cut
	turnsShown   = 3        // turns of a LOOP shown block by block; the rest are counted
	traceMaxRows = 2000     // rows of a trace; a longer one is cut, and says so
)

type routeRunInput struct {
	ProjectID string          `json:"project_id" validate:"required,max=64"`
	RouteID   string          `json:"route_id" validate:"max=128"`
	Route     json.RawMessage `json:"route"`                              // a draft, instead of route_id
	Version   int64           `json:"version" validate:"omitempty,min=1"` // with route_id: a kept version, run dry
	Path      string          `json:"path" validate:"max=2048"`
	Query     string          `json:"query" validate:"max=8192"`
	Body      json.RawMessage `json:"body"`
	DryRun    bool            `json:"dry_run"`
	// Caller is who the run is for: me (the default: whoever asks), none
	// (an anonymous client), or token (the user of Token, a JWT or a
	// personal access token, as /x would take it in Authorization).
	Caller string `json:"caller" validate:"omitempty,oneof=me none token"`
	Token  string `json:"token" validate:"required_if=Caller token,max=4096"`
}

// routeRunDTO is what POST /route/run answers.
type routeRunDTO struct {
	Response   routeAnswerDTO `json:"response"`
	DurationMS float64        `json:"duration_ms"`
	Ended      string         `json:"ended"`
	Attempts   int            `json:"attempts"`
	DryRun     bool           `json:"dry_run"`
	Trace      []traceRow     `json:"trace"`
	TraceCut   bool           `json:"trace_cut,omitempty"`
}

type routeAnswerDTO struct {
	Status int             `json:"status"`
	Body   json.RawMessage `json:"body"`
}

// traceRow is one block executed, or the turns of a LOOP left out.
type traceRow struct {
	Block    int    `json:"block"`
	Type     string `json:"type"`
	Depth    int    `json:"depth"`
	Turn     int    `json:"turn,omitempty"`
	Variable string `json:"variable,omitempty"`
	Preview  string `json:"preview,omitempty"`
	Held     bool   `json:"held"`
	Outcome  string `json:"outcome,omitempty"`
	Message  string `json:"message,omitempty"`
	// Value is the whole value when Preview was cut (up to 64 KiB).
	Value string `json:"value,omitempty"`
	// TookMS is the time from the row before (the run's start for the
	// first) to this block's end.
	TookMS float64 `json:"took_ms"`
	// A LOOP's turns after the third, summarized: how many, and how many
	// block executions they held.
	MoreTurns  int `json:"more_turns,omitempty"`
	MoreBlocks int `json:"more_blocks,omitempty"`
}

// N is the row's block as people count it, from 1.
func (r traceRow) N() int { return r.Block + 1 }

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
	ctx := c.UserContext()
	plan, err := h.planToRun(c, &in)
	if err != nil {
		return err
	}
	path, params, err := matchOne(plan, in.Path)
	if err != nil {
		return err
	}
	body := []byte(in.Body)
	if bytes.Equal(bytes.TrimSpace(body), []byte("null")) {
		body = nil
	}
	// The run log keeps what the playground shows: the query, the body sent
	// (to replay it) and the trace, masked as it is shown here.
	run := store.Run{At: time.Now(), ProjectID: in.ProjectID, RouteID: plan.Route.RouteID, Method: plan.Route.Method,
		Path: "/x" + strings.TrimSuffix(project.APIPath, "/") + path, Query: in.Query, DryRun: in.DryRun}
	if body != nil {
		sent := string(body)
		run.Body = &sent
	}
	as, caller := h.runCaller(c, in)
	t := &tracer{rows: []traceRow{}, last: time.Now()}
	finish := func(res engine.Result) {
		t.flush()
		if res.Ended == "FAULT" && res.Fault != nil && res.Fault.Block < 0 {
			t.rows = append(t.rows, traceRow{Block: -1, Type: "ROUTE", Held: true, Outcome: "FAULT", Message: t.maskText(res.Fault.Reason)})
		}
	}
	res, err := h.runRequest(ctx, plan, routeRequest{params: params, query: in.Query, body: body,
		as: as, caller: caller}, &run, runOptions{trace: t.event, dry: in.DryRun, restart: t.restart, logTrace: func(res engine.Result) []byte {
		finish(res)
		raw, _ := json.Marshal(t.rows)
		return raw
	}})
	if err != nil {
		return err
	}
	out := routeRunDTO{
		Response:   routeAnswerDTO{Status: res.Status, Body: t.mask(res.Body, res.Derived)},
		DurationMS: float64(run.Duration.Microseconds()) / 1000,
		Ended:      res.Ended,
		Attempts:   max(1, run.Attempts),
		DryRun:     in.DryRun,
		Trace:      t.rows,
		TraceCut:   t.cut,
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
func (h *Handlers) planToRun(c *fiber.Ctx, in *routeRunInput) (*engine.Plan, error) {
	draft := len(in.Route) > 0 && !bytes.Equal(bytes.TrimSpace(in.Route), []byte("null"))
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
			if r, err = decodeRoute(routeInput{ProjectID: in.ProjectID, Route: in.Route}); err != nil {
				return nil, err
			}
		} else {
			v, err := h.routeVersion(c, in.ProjectID, in.RouteID, in.Version)
			if err != nil {
				return nil, err
			}
			r = v.Route
		}
		if _, err := h.checkRunnable(c, r); err != nil {
			return nil, err
		}
		plan, _ := engine.Compile(r, engine.PathParams(r.RoutePath))
		in.DryRun = true
		return plan, nil
	}
	_, plan, err := h.routes.plan(c.UserContext(), in.ProjectID, in.RouteID)
	if err == nil && plan == nil {
		err = fiber.NewError(fiber.StatusNotFound, "route "+quote(in.RouteID)+" not found in project "+quote(in.ProjectID))
	}
	return plan, err
}

// matchOne matches path, relative to the project's api_path, against the
// route's own path, and returns the path and its parameters. An empty path
// is the route's path when it has no parameters.
func matchOne(plan *engine.Plan, path string) (string, map[string]string, error) {
	r := plan.Route
	if path == "" {
		if len(engine.PathParams(r.RoutePath)) > 0 {
			return "", nil, &ValidationError{Fields: map[string]string{"path": "is required: the route's path " + r.RoutePath + " has parameters to fill"}}
		}
		path = r.RoutePath
	}
	if !strings.HasPrefix(path, "/") {
		return "", nil, &ValidationError{Fields: map[string]string{"path": "must start with / (the path after the project's api_path)"}}
	}
	segs, err := pathSegments(path)
	if err != nil {
		return "", nil, &ValidationError{Fields: map[string]string{"path": "is not valid URL encoding"}}
	}
	one := &engine.Router{}
	one.Add(plan)
	entry, params, _ := one.Match(r.Method, segs)
	if entry == nil {
		return "", nil, &ValidationError{Fields: map[string]string{"path": "does not match the route's path " + r.RoutePath}}
	}
	return path, params, nil
}

// tracer turns a run's events into trace rows: values previewed with vault
// values masked, a LOOP's turns after the third counted rather than listed
// (the block that ended the run is always listed).
type tracer struct {
	rows    []traceRow
	secrets []string // vault values the run read, longest first
	loops   []openLoop
	cut     bool
	last    time.Time // when the event before ended: a row's time runs from it
}

// runCaller is who a run from /route/run is for (routeRunInput.Caller):
// as is a caller known already, caller resolves one when the route asks.
func (h *Handlers) runCaller(c *fiber.Ctx, in routeRunInput) (*principal, func() (*principal, error)) {
	switch in.Caller {
	case "none":
		return nil, func() (*principal, error) {
			return nil, &refusal{fiber.StatusUnauthorized, "Error: this route needs a bearer token of the platform (a JWT from /user/login or a personal access token)"}
		}
	case "token":
		return nil, func() (*principal, error) {
			p, err := h.tokenPrincipal(c.UserContext(), in.Token, "")
			var fe *fiber.Error
			if errors.As(err, &fe) && fe.Code == fiber.StatusUnauthorized {
				return nil, &refusal{fiber.StatusUnauthorized, "Error: " + fe.Message}
			}
			return p, err
		}
	}
	return current(c), nil
}

// openLoop is a LOOP whose turns are under way.
type openLoop struct {
	block, depth, turn int
	moreTurns          int
	moreBlocks         int
}

// turns tells whether ev is the beginning of one of l's turns.
func (l openLoop) turns(ev engine.Event) bool {
	return ev.Type == "LOOP" && ev.Turn > 0 && ev.Block == l.block && ev.Depth == l.depth
}

func (t *tracer) event(ev engine.Event) {
	// Loops this event is not inside of are over.
	for len(t.loops) > 0 {
		top := t.loops[len(t.loops)-1]
		if ev.Depth > top.depth || top.turns(ev) {
			break
		}
		t.close()
	}
	if ev.Secret {
		if s, ok := ev.Value.(string); ok && s != "" && !slices.Contains(t.secrets, s) {
			t.secrets = append(t.secrets, s)
			slices.SortFunc(t.secrets, func(a, b string) int { return len(b) - len(a) })
		}
	}
	if ev.Type == "LOOP" && ev.Turn > 0 {
		if n := len(t.loops); n > 0 && t.loops[n-1].turns(ev) {
			t.loops[n-1].turn = ev.Turn
		} else {
			t.loops = append(t.loops, openLoop{block: ev.Block, depth: ev.Depth, turn: ev.Turn})
		}
	}
	// The outermost loop in a turn past the third hides this event.
	hidden := -1
	for i, l := range t.loops {
		if l.turn > turnsShown {
			hidden = i
			break
		}
	}
	ending := ev.Outcome == "RETURN" || ev.Outcome == "FAIL" || ev.Outcome == "FAULT"
	if hidden >= 0 && !ending {
		l := &t.loops[hidden]
		if l.turns(ev) {
			l.moreTurns++
		} else {
			l.moreBlocks++
		}
		return
	}
	if ending {
		t.flush()
	}
	// A FAIL's message reads as the route's author wrote it, without the
	// answer's "Error: ".
	now := time.Now()
	row := traceRow{Block: ev.Block, Type: ev.Type, Depth: ev.Depth, Turn: ev.Turn, Held: ev.Held, Outcome: ev.Outcome,
		Message: strings.TrimPrefix(t.maskText(ev.Message), "Error: "), TookMS: float64(now.Sub(t.last).Microseconds()) / 1000}
	t.last = now
	if ev.Name != "" {
		row.Variable = ev.Name
		switch {
		case ev.Secret:
			row.Preview = engine.Mask
		case ev.Derived:
			row.Preview = engine.Mask + " (from a vault value)"
		default:
			row.Preview, row.Value = t.preview(ev.Value)
		}
	}
	t.add(row)
}

// restart forgets the rows of an attempt that failed to serialize: the
// trace shows the attempt that ended the run. The vault values read stay
// masked.
func (t *tracer) restart() {
	t.rows, t.loops, t.cut = t.rows[:0], nil, false
}

// close ends the innermost open loop, with a row for the turns it left out.
func (t *tracer) close() {
	l := t.loops[len(t.loops)-1]
	t.loops = t.loops[:len(t.loops)-1]
	if l.moreTurns > 0 {
		t.add(traceRow{Block: l.block, Type: "LOOP", Depth: l.depth, Held: true, MoreTurns: l.moreTurns, MoreBlocks: l.moreBlocks})
	}
}

// flush closes every open loop.
func (t *tracer) flush() {
	for len(t.loops) > 0 {
		t.close()
	}
}

func (t *tracer) add(row traceRow) {
	if len(t.rows) >= traceMaxRows {
		t.cut = true
		return
	}
	t.rows = append(t.rows, row)
}

// preview is v as JSON, vault values masked, cut to previewMax characters;
// when it was cut, full is the whole value (cut at valueMax bytes) for a
// reader who opens the row.
func (t *tracer) preview(v any) (preview, full string) {
	text, _ := engine.AppendMasked(nil, v, valueMax, t.secrets)
	runes := []rune(string(text))
	if len(runes) <= previewMax {
		return string(runes), ""
	}
	return string(runes[:previewMax-1]) + "…", string(text)
}

// maskText is text with the vault values the run read masked.
func (t *tracer) maskText(text string) string {
	for _, secret := range t.secrets {
		text = strings.ReplaceAll(text, secret, engine.Mask)
	}
	return text
}

// mask is a run's answer with the vault values it read masked, and the
// values of derived keys (computed from a vault value) too: decoded and
// written again when it holds any.
func (t *tracer) mask(body []byte, derived []string) []byte {
	if len(t.secrets) == 0 && len(derived) == 0 {
		return body
	}
	v, err := engine.NewDecoder().Object(body)
	if err != nil {
		return []byte(`"` + engine.Mask + `"`)
	}
	for _, key := range derived {
		v[key] = engine.Mask
	}
	out, err := engine.AppendMasked(nil, v, 2*len(body)+1024, t.secrets)
	if err != nil {
		return []byte(`"` + engine.Mask + `"`)
	}
	return out
}

// String is a row as one line, for logs and tests.
func (r traceRow) String() string {
	line := fmt.Sprintf("%d %s %d", r.Block, r.Type, r.Depth)
	if r.Turn > 0 {
		line += fmt.Sprintf(" turn %d", r.Turn)
	}
	if r.Variable != "" {
		line += " " + r.Variable + "=" + r.Preview
	}
	if r.MoreTurns > 0 {
		line += fmt.Sprintf(" +%d turns (%d blocks)", r.MoreTurns, r.MoreBlocks)
	}
	if !r.Held {
		line += " not held"
	}
	if r.Outcome != "" {
		line += " " + strings.TrimSpace(r.Outcome+" "+r.Message)
	}
	return line
}

// tryView is /web/routes/try: a form made from the route's declarations.
type tryView struct {
	Base
	Route      store.StoredRoute
	APIPath    string
	PathParams []string
	Query      []tryField
	Body       []tryField
	Replay     template.JS // a run's inputs to fill the form with (replayValues), or empty
	ReplayOf   int64       // that run's id
	ReplayBody bool        // the run kept its body
	Version    int64       // a kept version tried instead of the live one (always dry), or 0
}

// tryField is one input of the form, by its bdtype.
type tryField struct {
	ID, BDType string
	Kind       string // number, decimal, switch, json, text
}

func tryFields(params []flow.Param) []tryField {
	out := make([]tryField, len(params))
	for i, p := range params {
		kind := "text"
		switch p.BDType {
		case "INTEGER":
			kind = "number"
		case "FLOAT":
			kind = "decimal"
		case "BOOLEAN":
			kind = "switch"
		case "ARRAY", "OTHER":
			kind = "json"
		}
		out[i] = tryField{ID: p.ID, BDType: p.BDType, Kind: kind}
	}
	return out
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
		PathParams: engine.PathParams(r.RoutePath), Query: tryFields(r.Params.Pairs), Body: tryFields(r.Body)}
	// ?run= replays a run of the run log: its inputs fill the form.
	if id := c.QueryInt("run"); id > 0 {
		run, err := h.store.Run(c.UserContext(), p.ID, int64(id))
		if err != nil {
			return err
		}
		raw, _ := json.Marshal(replayValues(run, r.Route, p.APIPath))
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
		DocURL: "/x" + strings.TrimSuffix(p.APIPath, "/") + projectDocPath, Back: "/web/routes?id=" + url.QueryEscape(p.ID), BackText: "Routes of " + p.Name}})
}
