package runs

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"net/url"
	"strings"
	"time"

	"stencil/engine"
	"stencil/store"
)

// Serve answers one request to run a route, the one way every route runs
// (docs/engine.md): at /x it finds the project by its api_path and the
// route by method and path (or answers the project's route document),
// checks the project's rate limit, reads the route's inputs, checks its
// caller when auth_jwt is on, runs it — in one transaction when it
// writes — and answers what the run answers. Every run goes to the run
// log. An error is the platform's, never the route's: the caller answers
// it as a 500.
func (s *Service) Serve(ctx context.Context, req Request) (Answer, error) {
	start := time.Now()
	if !req.Arrived.IsZero() && req.Arrived.Before(start) {
		start = req.Arrived
	}
	if req.Plan != nil {
		run := store.Run{At: start, ProjectID: req.ProjectID, RouteID: req.Plan.Route.RouteID, Method: req.Plan.Route.Method,
			Path: req.Path, Query: req.Query, DryRun: req.DryRun, Trigger: req.Trigger}
		if req.KeepBody && req.Body != nil {
			sent := string(req.Body)
			run.Body = &sent
		}
		return s.runPlan(ctx, req.Plan, req.Params, &req, &run)
	}
	if req.Hop >= MaxHops {
		return answer(http.StatusLoopDetected, "Error: loop detected"), nil
	}
	segs, err := pathSegments(strings.TrimPrefix(req.Path, "/x"))
	if err != nil {
		return answer(http.StatusBadRequest, "Error: the path is not valid URL encoding"), nil
	}
	p, rest, err := s.table.find(ctx, segs)
	if err != nil {
		return Answer{}, err
	}
	if p == nil {
		return answer(http.StatusNotFound, "Error: route not found"), nil
	}
	a, err := s.serveProject(ctx, p, rest, &req, start)
	if err == nil && p.corsOf(&a, req.Origin) && a.preflight != nil {
		a.set("Access-Control-Allow-Methods", strings.Join(a.preflight, ", "))
		if h := requestedHeaders(req.PreflightHeaders); h != "" {
			a.set("Access-Control-Allow-Headers", h)
		}
		a.set("Access-Control-Max-Age", preflightMaxAge)
	}
	return a, err
}

// serveProject answers req at the path rest of project p's routes.
func (s *Service) serveProject(ctx context.Context, p *routing, rest []string, req *Request, start time.Time) (Answer, error) {
	if req.Method == http.MethodGet && "/"+strings.Join(rest, "/") == DocumentPath {
		doc, err := s.table.document(ctx, p)
		if err != nil {
			return Answer{}, err
		}
		a := Answer{Status: http.StatusOK, Body: doc}
		a.set("Cache-Control", "no-cache")
		return a, nil
	}
	entry, params, allow := p.router.Match(req.Method, rest)
	if entry == nil && allow != nil && req.Method == http.MethodOptions && req.PreflightMethod != "" {
		// A CORS preflight: it runs nothing and is neither logged nor
		// counted against the rate limit.
		return Answer{Status: http.StatusNoContent, preflight: allow}, nil
	}
	if entry == nil {
		if allow != nil {
			a := answer(http.StatusMethodNotAllowed, "Error: method not allowed: this path answers "+strings.Join(allow, ", "))
			a.set("Allow", strings.Join(allow, ", "))
			return a, nil
		}
		return s.unmatched(p, req, start), nil
	}
	plan, err := s.table.planOf(ctx, p.id, entry.Route.Value)
	if err != nil {
		return Answer{}, err
	}
	if plan == nil { // deleted since the table learnt of it
		return s.unmatched(p, req, start), nil
	}
	run := store.Run{At: start, ProjectID: p.id, RouteID: plan.Route.RouteID, Method: req.Method, Path: req.Path}
	if limited, err := s.overRate(ctx, p, req.Client); err != nil || limited {
		if err != nil {
			return Answer{}, err
		}
		run.Status, run.Ended, run.Duration = http.StatusTooManyRequests, "LIMITED", time.Since(start)
		a := answer(http.StatusTooManyRequests, "Error: rate limit exceeded")
		if req.LogLater {
			a.later = &run
		} else {
			s.log.add(run)
		}
		a.Ended = "LIMITED"
		a.retryAfter(int(math.Ceil(1 / float64(p.rate))))
		return a, nil
	}
	run.Query = store.Cut(req.Query, store.RunQueryMax)
	return s.runPlan(ctx, plan, params, req, &run)
}

// unmatched answers a request to project p's API path that no route
// matches, 404, counted for the project's analytics as "no route".
func (s *Service) unmatched(p *routing, req *Request, start time.Time) Answer {
	if !req.DryRun {
		s.log.countOnly(store.Run{At: start, ProjectID: p.id, RouteID: store.UnmatchedRoute, Method: req.Method,
			Path: req.Path, Status: http.StatusNotFound, Ended: "REFUSED", Duration: time.Since(start)})
	}
	return answer(http.StatusNotFound, "Error: route not found")
}

// runPlan runs plan for req, traced when req asks, and makes its answer.
func (s *Service) runPlan(ctx context.Context, plan *engine.Plan, params map[string]string, req *Request, run *store.Run) (Answer, error) {
	run.Version = plan.Version // 0 for a draft
	opts := options{dry: req.DryRun, job: req.job}
	if plan.Calls {
		hosts, err := s.table.hosts(ctx, plan.Route.ProjectID)
		if err != nil {
			return Answer{}, err
		}
		opts.key, opts.hosts, opts.hop = callKey(), hosts, req.Hop
		if req.job != 0 {
			opts.key = jobKey(req.job)
		}
	}
	var t *tracer
	if req.Trace {
		// The run log keeps the trace the caller is shown, masked alike.
		t = &tracer{rows: []TraceRow{}, last: time.Now()}
		opts.trace, opts.restart = t.event, t.restart
		opts.logTrace = func(res engine.Result) []byte {
			t.finish(res)
			raw, _ := json.Marshal(t.rows)
			return raw
		}
	}
	res, err := s.runRequest(ctx, plan, params, req, run, opts)
	if err != nil {
		return Answer{}, err
	}
	a := Answer{Status: res.Status, Body: res.Body, Ended: res.Ended,
		Attempts: max(1, run.Attempts), Duration: run.Duration, later: req.later}
	for _, h := range res.Header {
		a.set(h.Name, h.Value)
		a.exposed = append(a.exposed, h.Name)
	}
	switch {
	case res.Ended == "BUSY":
		a.retryAfter(1)
	case res.Fault != nil && res.Fault.RetryAfter > 0:
		a.retryAfter(res.Fault.RetryAfter)
	}
	if t != nil {
		a.Body, a.Trace, a.TraceCut = t.mask(res.Body, res.Derived), t.rows, t.cut
	}
	return a, nil
}

// overRate says whether a request of client at p's routes is over the
// project's rate limit (docs/engine.md), counted in PostgreSQL so that the
// limit holds across instances.
func (s *Service) overRate(ctx context.Context, p *routing, client string) (bool, error) {
	if p.rate <= 0 {
		return false, nil
	}
	ok, err := s.store.TakeXRate(ctx, p.id, client, p.rate, p.burst)
	return !ok, err
}

// pathSegments splits a path into its segments, each unescaped: an
// escaped slash stays inside its segment.
func pathSegments(path string) ([]string, error) {
	segs := engine.Segments(path)
	for i, seg := range segs {
		s, err := url.PathUnescape(seg)
		if err != nil {
			return nil, err
		}
		segs[i] = s
	}
	return segs, nil
}

// MatchPath matches path, relative to the project's api_path, against
// plan's own path, and returns the path and its parameters; problem says
// what is wrong with path otherwise. An empty path is the route's path
// when it has no parameters.
func MatchPath(plan *engine.Plan, path string) (matched string, params map[string]string, problem string) {
	r := plan.Route
	if path == "" {
		if len(engine.PathParams(r.RoutePath)) > 0 {
			return "", nil, "is required: the route's path " + r.RoutePath + " has parameters to fill"
		}
		path = r.RoutePath
	}
	if !strings.HasPrefix(path, "/") {
		return "", nil, "must start with / (the path after the project's api_path)"
	}
	segs, err := pathSegments(path)
	if err != nil {
		return "", nil, "is not valid URL encoding"
	}
	one := &engine.Router[*engine.Plan]{}
	one.Add(engine.Route[*engine.Plan]{ID: r.RouteID, Method: r.Method, Path: r.RoutePath, Value: plan})
	entry, params, _ := one.Match(r.Method, segs)
	if entry == nil {
		return "", nil, "does not match the route's path " + r.RoutePath
	}
	return path, params, ""
}

// options are how a request runs: traced, with its writes rolled back.
type options struct {
	trace engine.Trace
	dry   bool
	// restart, when set, is told that the run begins again (it failed to
	// serialize): what the trace was told of the attempt is void.
	restart func()
	// logTrace, when set, gives the trace to keep in the run log with the
	// run (as JSON), once the run has ended.
	logTrace func(engine.Result) []byte
	// key is the base of the Idempotency-Keys of the request's HTTP
	// blocks, kept across attempts; hosts the project's egress list.
	key   string
	hosts []string
	// hop is the Stencil-Hop the request to /x carried (0: none).
	hop int
	// job is the job whose run this is (0: none): the run's transaction
	// (or its savepoint in a batch) marks the job done as it commits.
	job int64
	// jobsFull: see runEnv.
	jobsFull bool
}

// runRequest runs plan for req and writes run, begun at run.At, to the run
// log with its duration, status and ending. A request the route refuses
// (bad inputs, no caller) is an answer too, with Ended REFUSED; an error is
// the platform's, logged as a 500 ending in ERROR.
func (s *Service) runRequest(ctx context.Context, plan *engine.Plan, params map[string]string, req *Request, run *store.Run, opts options) (engine.Result, error) {
	var res engine.Result
	var background func()
	var err error
	foreground := req.Trigger == "" || req.Trigger == store.TriggerHTTP
	if foreground {
		s.requests.Add(1)
	} else {
		background, err = s.enterBackground(ctx)
	}
	if err == nil {
		var release func()
		if release, err = s.slots.Enter(ctx); err == nil {
			res, err = s.execute(ctx, plan, params, req, run, opts)
			release()
		}
	}
	if foreground {
		s.requests.Add(-1)
	} else if background != nil {
		background()
	}
	if errors.Is(err, engine.ErrBusy) {
		res, err = busyResult, nil
		run.Ended = "BUSY"
	}
	run.Duration = time.Since(run.At)
	run.Status = res.Status
	if err != nil {
		run.Status, run.Ended = http.StatusInternalServerError, "ERROR"
	}
	if run.Ended == "FAIL" {
		var answer struct{ Message string }
		_ = json.Unmarshal(res.Body, &answer)
		run.Message = strings.TrimPrefix(answer.Message, "Error: ")
	}
	if opts.logTrace != nil && err == nil {
		run.Trace = opts.logTrace(res)
	}
	// A vault value the run read is masked in what the log keeps of the
	// request: a caller may send one (a key checked against the vault).
	run.Query, run.Message = res.Read.Mask(run.Query), res.Read.Mask(run.Message)
	if run.Body != nil {
		masked := res.Read.Mask(*run.Body)
		run.Body = &masked
	}
	if req.LogLater && err == nil {
		req.later = run
	} else {
		s.log.add(*run)
	}
	return res, err
}

// Finish writes the run of an answer to a request with LogLater to the
// run log and analytics, its time from the request's arrival until now;
// an answer without such a run is left as it is.
func (s *Service) Finish(a Answer) {
	if a.later == nil {
		return
	}
	a.later.Duration = time.Since(a.later.At)
	s.log.add(*a.later)
}

// enterBackground takes a background slot for a run no request waits
// for and, while the requests' runs are more than a quarter of the run
// slots, one of yield's too (see Service.requests).
func (s *Service) enterBackground(ctx context.Context) (func(), error) {
	background, err := s.background.Enter(ctx)
	if err != nil || s.requests.Load() <= int64(cap(s.slots.taken)/4) {
		return background, err
	}
	yielded, err := s.yield.Enter(ctx)
	if err != nil {
		background()
		return nil, err
	}
	return func() { yielded(); background() }, nil
}

// busyResult is the answer of a run the service has no room for now: no
// slot among the runs under way, no memory left of what runs share, or no
// connection for its transaction within its time. It carries Retry-After.
var busyResult = engine.Result{Status: http.StatusServiceUnavailable, Ended: "BUSY",
	Body: ErrorBody(http.StatusServiceUnavailable, "Error: the service is busy: try again shortly")}
