package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"stencil/engine"
	"stencil/flow"
	"stencil/mail"
	"stencil/store"
)

// routeBodyMaxBytes bounds the JSON body a route takes (docs/engine.md).
const routeBodyMaxBytes = 1 << 20

// runRoute answers /x/<api_path><route_path>: it finds the route, reads
// its inputs, checks its caller when auth_jwt is on, runs it in one
// transaction and answers what the run answers (docs/engine.md). The answers are
// JSON for every caller; the run goes to the run log.
func (h *Handlers) runRoute(c *fiber.Ctx) error {
	start := time.Now()
	ctx := c.UserContext()
	// The path as sent: an escaped slash stays inside its segment.
	raw := string(c.Request().URI().PathOriginal())
	segs, err := pathSegments(strings.TrimPrefix(raw, "/x"))
	if err != nil {
		return routeAnswer(c, fiber.StatusBadRequest, "Error: the path is not valid URL encoding")
	}
	project, rest, err := h.routes.find(ctx, segs)
	if err != nil {
		return err
	}
	if project == nil {
		return routeAnswer(c, fiber.StatusNotFound, "Error: route not found")
	}
	if c.Method() == fiber.MethodGet && "/"+strings.Join(rest, "/") == projectDocPath {
		return h.projectDoc(c, project)
	}
	entry, params, allow := project.router.Match(c.Method(), rest)
	if entry == nil {
		if allow != nil {
			c.Set(fiber.HeaderAllow, strings.Join(allow, ", "))
			return routeAnswer(c, fiber.StatusMethodNotAllowed, "Error: method not allowed: this path answers "+strings.Join(allow, ", "))
		}
		return routeAnswer(c, fiber.StatusNotFound, "Error: route not found")
	}
	plan := entry.Plan
	// The run is written later, after fasthttp has reused the request's
	// buffers: its strings are copies.
	run := store.Run{At: start, ProjectID: project.id, RouteID: plan.Route.RouteID, Method: strings.Clone(c.Method()), Path: raw}
	if limited, err := h.overRate(ctx, project, c.IP()); err != nil || limited {
		if err != nil {
			return err
		}
		run.Status, run.Ended, run.Duration = fiber.StatusTooManyRequests, "LIMITED", time.Since(start)
		h.runs.add(run)
		c.Set(fiber.HeaderRetryAfter, strconv.Itoa(int(math.Ceil(1/float64(project.rate)))))
		return routeAnswer(c, fiber.StatusTooManyRequests, "Error: rate limit exceeded")
	}
	run.Query = store.Cut(string(c.Request().URI().QueryString()), store.RunQueryMax)
	req := routeRequest{params: params, query: string(c.Request().URI().QueryString()), body: c.Body(),
		caller: func() (*principal, error) { return h.bearerCaller(c) }}
	res, err := h.runRequest(ctx, plan, req, &run, runOptions{})
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	switch {
	case res.Ended == "BUSY":
		c.Set(fiber.HeaderRetryAfter, "1")
	case res.Fault != nil && res.Fault.RetryAfter > 0:
		c.Set(fiber.HeaderRetryAfter, strconv.Itoa(res.Fault.RetryAfter))
	}
	return c.Status(res.Status).Send(res.Body)
}

// overRate says whether a request of client at project's routes is over
// the project's rate limit (docs/engine.md), counted in PostgreSQL so that the
// limit holds across instances.
func (h *Handlers) overRate(ctx context.Context, project *projectRoutes, client string) (bool, error) {
	if project.rate <= 0 {
		return false, nil
	}
	ok, err := h.store.TakeXRate(ctx, project.id, client, project.rate, project.burst)
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

// routeAnswer writes an envelope without data.
func routeAnswer(c *fiber.Ctx, status int, message string) error {
	return c.Status(status).JSON(envelope{Status: status, Message: message})
}

// refusal is a request a route refuses before running: bad inputs (400),
// no credential (401), a caller the route does not know (403).
type refusal struct {
	status  int
	message string
}

func (r *refusal) Error() string { return r.message }

// routeRequest is what a run of a route reads: its path parameters, its
// query string, its body, and its caller — known already (as), or found
// by caller when auth_jwt is on.
type routeRequest struct {
	params map[string]string
	query  string
	body   []byte
	caller func() (*principal, error)
	// as is the caller when already known (a run tried by a member): the
	// run, the run log and the vault log name it even on a public route,
	// and caller is not asked.
	as *principal
}

// runOptions are how /route/run runs a route: with a trace, and with its
// writes rolled back.
type runOptions struct {
	trace engine.Trace
	dry   bool
	// restart, when set, is told that the run begins again (it failed to
	// serialize): what the trace was told of the attempt is void.
	restart func()
	// logTrace, when set, gives the trace to keep in the run log with the
	// run (as JSON), once the run has ended.
	logTrace func(engine.Result) []byte
}

// runRequest runs plan for req and writes run, begun at run.At, to the run
// log with its duration, status and ending. A request the route refuses
// (bad inputs, no caller) is an answer too, with Ended REFUSED; an error is
// the platform's, logged as a 500 ending in ERROR.
func (h *Handlers) runRequest(ctx context.Context, plan *engine.Plan, req routeRequest, run *store.Run, opts runOptions) (engine.Result, error) {
	var res engine.Result
	release, err := h.runGate.enter(ctx)
	if err == nil {
		res, err = h.execute(ctx, plan, req, run, opts)
		release()
	}
	if errors.Is(err, engine.ErrBusy) {
		res, err = busyResult, nil
		run.Ended = "BUSY"
	}
	run.Duration = time.Since(run.At)
	run.Status = res.Status
	if err != nil {
		run.Status, run.Ended = fiber.StatusInternalServerError, "ERROR"
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
	for _, secret := range res.Read {
		run.Query = strings.ReplaceAll(run.Query, secret, engine.Mask)
		if run.Body != nil {
			masked := strings.ReplaceAll(*run.Body, secret, engine.Mask)
			run.Body = &masked
		}
	}
	h.runs.add(*run)
	return res, err
}

// busyResult is the answer of a run the service has no room for now: no
// slot among the runs under way, no memory left of what runs share, or no
// connection for its transaction within its time. It carries Retry-After.
var busyResult = engine.Result{Status: fiber.StatusServiceUnavailable, Ended: "BUSY",
	Body: errorJSON(fiber.StatusServiceUnavailable, "Error: the service is busy: try again shortly")}

// execute reads req's inputs, checks its caller and runs plan; it fills
// run's caller, ending, fault and attempts. A plan that writes runs in one
// SERIALIZABLE transaction from its first block and, when that fails to
// serialize or deadlocks, runs again from the start after a short jittered
// back-off, until it commits or its time is up (docs/engine.md).
func (h *Handlers) execute(ctx context.Context, plan *engine.Plan, req routeRequest, run *store.Run, opts runOptions) (engine.Result, error) {
	vars, caller, err := h.routeInputs(ctx, plan.Route, req)
	if caller == nil {
		caller = req.as
	}
	if caller != nil {
		run.UserID, run.Username = &caller.User.ID, caller.User.Username
	}
	var refused *refusal
	if errors.As(err, &refused) {
		run.Ended, run.Fault = "REFUSED", refused.message
		return engine.Result{Status: refused.status, Body: errorJSON(refused.status, refused.message), Ended: "REFUSED"}, nil
	}
	if err != nil {
		return engine.Result{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, h.limits.Time)
	defer cancel()
	deadline, _ := ctx.Deadline()
	// A run that writes takes a place among its project's transactions
	// (txGate), which it keeps from one attempt to the next; once runs of
	// its route collided, it queues for its turn instead (see turns).
	route := plan.Route.ProjectID + "/" + plan.Route.RouteID
	var place func()
	defer func() {
		if place != nil {
			place()
		}
	}()
	// alone: the run left a batch for taking too long, and runs by itself
	// from then on.
	alone := false
	for attempt := 1; ; attempt++ {
		run.Attempts = attempt
		var res engine.Result
		q := &queuedRun{ctx: ctx, plan: plan, vars: vars, caller: caller, opts: opts, wake: make(chan struct{}, 1)}
		queued, leads := false, false
		if plan.Writes && !opts.dry && !alone {
			queued, leads = h.turns.join(route, q)
		}
		if queued {
			if place != nil {
				place()
				place = nil
			}
			if !leads {
				<-q.wake
			}
			if !q.finished {
				h.lead(route)
			}
			res, err = q.res, q.err
			if errors.Is(err, errRunAlone) {
				alone = true
				if opts.restart != nil {
					opts.restart()
				}
				continue
			}
		} else {
			if plan.Writes && place == nil {
				if place, err = h.txGate.enter(ctx, plan.Route.ProjectID); err != nil {
					return engine.Result{}, err
				}
			}
			res, err = h.attempt(ctx, plan, vars, caller, opts)
		}
		if attempt > 1 && res.Fault != nil && ctx.Err() != nil {
			// Its time ran out in an attempt after a collision.
			err = errContention
		}
		if errors.Is(err, errContention) {
			run.Ended = "BUSY"
			return contention, nil
		}
		if !store.Retryable(err) && !errors.Is(err, errRunAgain) {
			if err != nil {
				return res, err
			}
			run.Ended = res.Ended
			if res.Fault != nil {
				run.Fault = res.Fault.Error()
			}
			return res, nil
		}
		if opts.restart != nil {
			opts.restart()
		}
		h.turns.collided(route)
		if plan.Writes && !opts.dry && !alone {
			continue // it queues for its turn
		}
		// A dry run, or one that runs alone, is not queued: up to 2, 4, 8
		// … 64 ms, drawn at random so that the runs that collided do not
		// meet again.
		wait := time.Duration(rand.Int64N(int64(time.Millisecond) << min(attempt, 6)))
		if time.Now().Add(wait).After(deadline) {
			run.Ended = "BUSY"
			return contention, nil
		}
		time.Sleep(wait)
	}
}

// errRunAgain is the outcome of a run whose batch could not commit: the
// run begins again.
var errRunAgain = errors.New("the run's batch did not commit")

// lead runs the next batch of route's queue (see turns): one after the
// other in one serializable transaction, each in a savepoint, a run that
// does not end normally taking back what it wrote, and commits them
// together. A run a later one sees is one that commits before it, so the
// batch is as if each had run alone, in order. When a run fails to
// serialize, or the transaction fails, no run of the batch commits and
// each begins again. The leader hands the queue on to the next run, which
// leads the next batch.
func (h *Handlers) lead(route string) {
	batch := h.turns.take(route)
	defer h.turns.handOn(route)
	defer func() {
		for _, q := range batch {
			q.wake <- struct{}{}
		}
	}()
	// settle gives each run of the batch not yet finished err; again
	// makes every run begin again, what each read being void.
	settle := func(err error) {
		for _, q := range batch {
			if !q.finished {
				q.err, q.finished = err, true
			}
		}
	}
	again := func() {
		for _, q := range batch {
			q.res, q.err, q.finished = engine.Result{}, errRunAgain, true
		}
	}
	// The batch's own statements run under its own time, not a run's: a
	// run whose time is up ends alone, not the batch.
	ctx, cancel := context.WithTimeout(context.Background(), h.limits.Time)
	defer cancel()
	project := batch[0].plan.Route.ProjectID
	place, err := h.txGate.enter(ctx, project)
	if err != nil {
		settle(err)
		return
	}
	defer place()
	tx, err := h.runTx.BeginRuns(ctx)
	if err != nil {
		settle(err)
		return
	}
	defer func() { _ = tx.Rollback(ctx) }()
	// ran holds the runs begun, by their number in the transaction.
	var ran []*queuedRun
	// failed settles the run whose write failed (an earlier run's write
	// sent with a later statement, or the last write sent before the
	// commit): its writes are taken back and it answers the error; when
	// the error is a collision, every run begins again instead.
	failed := func(e *store.EarlierRunError) bool {
		if store.Retryable(e.Err) {
			again()
			return false
		}
		if err := tx.UndoEarlierRun(ctx); err != nil {
			again()
			return false
		}
		ran[e.Run].res, ran[e.Run].err = engine.Result{}, e.Err
		return true
	}
	began := time.Now()
	rerun := false // the run at i begins again, within the same savepoint
	for i := 0; i < len(batch); i++ {
		q := batch[i]
		if !rerun {
			if i > 0 && time.Since(began) > h.turns.batchTime {
				h.turns.putBack(route, batch[i:])
				batch = batch[:i]
				break
			}
			if q.ctx.Err() != nil {
				q.err, q.finished = errContention, true
				continue
			}
			if len(ran) > 0 {
				tx.NextRun()
			}
			ran = append(ran, q)
		}
		rerun = false
		// The run's Env is on the batch's transaction: it never begins,
		// commits or ends one of its own. A run gets runTime of the batch:
		// one that takes longer leaves it (its writes taken back) and runs
		// alone, so that no batch waits on one slow run.
		env := &runEnv{h: h, project: project, route: q.plan.Route.RouteID, caller: q.caller, tx: tx, batch: ctx}
		runCtx, stop := context.WithTimeout(q.ctx, h.turns.runTime)
		res, err := engine.RunTraced(runCtx, q.plan, q.vars, env, h.limits, q.opts.trace)
		slow := runCtx.Err() != nil && q.ctx.Err() == nil && (err != nil || res.Fault != nil)
		stop()
		var earlier *store.EarlierRunError
		if errors.As(err, &earlier) {
			if !failed(earlier) {
				return
			}
			// This run's first statement did not run: it begins again,
			// within the savepoint of the run taken back.
			if q.opts.restart != nil {
				q.opts.restart()
			}
			rerun = true
			i--
			continue
		}
		if store.Retryable(err) {
			again()
			return
		}
		if slow {
			if err := tx.UndoRun(ctx); err != nil {
				again()
				return
			}
			h.turns.left.Add(1)
			q.res, q.err, q.finished = engine.Result{}, errRunAlone, true
			continue
		}
		if err != nil || !res.Commit() {
			if err := tx.UndoRun(ctx); err != nil {
				again()
				return
			}
		}
		q.res, q.err, q.finished = res, err, true
	}
	if err := tx.Flush(ctx); err != nil {
		var earlier *store.EarlierRunError
		if !errors.As(err, &earlier) {
			earlier = &store.EarlierRunError{Run: len(ran) - 1, Err: err}
		}
		if !failed(earlier) {
			return
		}
	}
	if err := tx.Commit(ctx); store.Retryable(err) {
		again()
	} else if err != nil {
		// Whether it committed is unknown: no run begins again.
		for _, q := range batch {
			q.res, q.err = engine.Result{}, err
		}
	}
}

// errRunAlone is the outcome of a run that took longer than a batch
// gives a run: its writes were taken back, and it begins again alone.
var errRunAlone = errors.New("the run left its batch")

// errContention ends a run whose time ran out while it was run again.
var errContention = errors.New("the route could not complete under contention")

// contention is the answer of a run that could not serialize within its
// time: it carries Retry-After.
var contention = engine.Result{Status: fiber.StatusServiceUnavailable, Ended: "BUSY",
	Body: errorJSON(fiber.StatusServiceUnavailable, "Error: the route could not complete under contention")}

// attempt runs plan once, in a transaction of its own when it writes, and
// commits what it wrote when it ended normally (unless dry).
func (h *Handlers) attempt(ctx context.Context, plan *engine.Plan, vars map[string]any, caller *principal, opts runOptions) (engine.Result, error) {
	env := &runEnv{h: h, project: plan.Route.ProjectID, route: plan.Route.RouteID, caller: caller, serializable: plan.Writes, gated: plan.Writes}
	defer env.rollback()
	if plan.Writes {
		if err := env.begin(ctx); err != nil {
			return engine.Result{}, err
		}
	}
	res, err := engine.RunTraced(ctx, plan, vars, env, h.limits, opts.trace)
	if err != nil {
		return res, err
	}
	if res.Commit() && !opts.dry {
		if err := env.commit(ctx); err != nil {
			return res, err
		}
	}
	return res, nil
}

func errorJSON(status int, message string) []byte {
	b, _ := json.Marshal(envelope{Status: status, Message: message})
	return b
}

// routeInputs reads a request's variables (docs/engine.md): path parameters,
// the declared query parameters split on the route's delimiter and typed,
// the declared body fields typed, and — when auth_jwt is on — the caller
// and its record as auth.
func (h *Handlers) routeInputs(ctx context.Context, r flow.Route, req routeRequest) (map[string]any, *principal, error) {
	vars := make(map[string]any, len(req.params)+len(r.Params.Pairs)+len(r.Body)+1)
	// In the path's order, so that the first bad one is named.
	for _, name := range engine.PathParams(r.RoutePath) {
		v, ok := req.params[name]
		if !ok {
			continue
		}
		if !cleanText([]byte(v)) {
			return nil, nil, &refusal{fiber.StatusBadRequest, "Error: path parameter " + name + " contains a NUL character or invalid UTF-8"}
		}
		vars[name] = v
	}
	if len(r.Params.Pairs) > 0 {
		given := map[string]string{}
		// A custom delimiter splits the query, and so does "&", as every
		// client generated from the route's document sends it: an "&"
		// inside a value is sent as %26 by any client anyway.
		var parts []string
		for _, part := range strings.Split(req.query, r.Params.Delimiter) {
			parts = append(parts, strings.Split(part, "&")...)
		}
		for _, part := range parts {
			k, v, _ := strings.Cut(part, "=")
			key, err1 := url.QueryUnescape(k)
			value, err2 := url.QueryUnescape(v)
			if err1 != nil || err2 != nil {
				return nil, nil, &refusal{fiber.StatusBadRequest, "Error: the query string is not valid URL encoding"}
			}
			if _, seen := given[key]; !seen {
				given[key] = value
			}
		}
		for _, p := range r.Params.Pairs {
			text, ok := given[p.ID]
			if !ok {
				vars[p.ID] = nil
				continue
			}
			v, err := engine.ConvertText(text, p.BDType)
			if err != nil {
				return nil, nil, &refusal{fiber.StatusBadRequest, fmt.Sprintf("Error: query parameter %s %s", p.ID, err)}
			}
			vars[p.ID] = v
		}
	}
	if len(r.Body) > 0 {
		body := req.body
		if len(body) > routeBodyMaxBytes {
			return nil, nil, &refusal{fiber.StatusRequestEntityTooLarge, "Error: the body is too large (at most 1 MiB)"}
		}
		var fields map[string]any
		if err := json.Unmarshal(body, &fields); err != nil || fields == nil {
			return nil, nil, &refusal{fiber.StatusBadRequest, "Error: the body must be a JSON object"}
		}
		for _, p := range r.Body {
			v, ok := fields[p.ID]
			if !ok {
				return nil, nil, &refusal{fiber.StatusBadRequest, fmt.Sprintf("Error: body field %s is required", p.ID)}
			}
			v, err := engine.ConvertJSON(v, p.BDType)
			if err != nil {
				return nil, nil, &refusal{fiber.StatusBadRequest, fmt.Sprintf("Error: body field %s %s", p.ID, err)}
			}
			vars[p.ID] = v
		}
	}
	if !r.AuthJWT.Active {
		return vars, nil, nil
	}
	caller := req.as
	if caller == nil {
		var err error
		if caller, err = req.caller(); err != nil {
			return nil, nil, err
		}
	}
	rec, err := h.routeAuth(ctx, r, caller)
	if err != nil {
		return nil, caller, err
	}
	vars["auth"] = rec
	return vars, caller, nil
}

// bearerCaller is the caller of an auth_jwt route at /x: a JWT or PAT of
// this platform, else 401.
func (h *Handlers) bearerCaller(c *fiber.Ctx) (*principal, error) {
	if _, ok := bearerToken(c); !ok {
		return nil, &refusal{fiber.StatusUnauthorized, "Error: this route needs a bearer token of the platform (a JWT from /user/login or a personal access token)"}
	}
	p, err := h.resolvePrincipal(c)
	if err != nil {
		var fe *fiber.Error
		if errors.As(err, &fe) && fe.Code == fiber.StatusUnauthorized {
			return nil, &refusal{fiber.StatusUnauthorized, "Error: " + fe.Message}
		}
		return nil, err
	}
	return p, nil
}

// routeAuth checks the caller p of an auth_jwt route: its attribute named
// by field must equal the property field of a record of ref_col (else
// 403). It returns that record, with its _id.
func (h *Handlers) routeAuth(ctx context.Context, r flow.Route, p *principal) (map[string]any, error) {
	var attr any
	switch r.AuthJWT.Field {
	case "uid":
		attr = float64(p.User.ID)
	case "username":
		attr = p.User.Username
	case "email":
		attr = p.User.Email
	default:
		return nil, &refusal{fiber.StatusForbidden, fmt.Sprintf("Error: auth_jwt.field %s is not an attribute of callers (uid, username or email)", r.AuthJWT.Field)}
	}
	where, _ := json.Marshal(map[string]any{r.AuthJWT.Field: attr})
	recs, err := h.runReads.RunRecords(ctx, r.ProjectID, r.AuthJWT.RefCol, store.RecordQuery{Where: where, Limit: 1})
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, &refusal{fiber.StatusForbidden, fmt.Sprintf("Error: the collection %s that lists this route's callers does not exist", r.AuthJWT.RefCol)}
	case err != nil:
		return nil, err
	case len(recs) == 0:
		return nil, &refusal{fiber.StatusForbidden, fmt.Sprintf("Error: %s %v is not among this route's callers", r.AuthJWT.Field, text(attr))}
	}
	rec, err := engine.NewDecoder().Object(recs[0].Data)
	if err != nil {
		return nil, err
	}
	rec["_id"] = float64(recs[0].ID)
	return rec, nil
}

func text(v any) string {
	if f, ok := v.(float64); ok {
		return fmt.Sprint(int64(f))
	}
	return fmt.Sprint(v)
}

// runEnv is a run's Env on PostgreSQL. Its transaction begins with the
// first write (or locked read): a run that only reads holds none. The
// transaction is on the runs' own pool, within the project's share of it.
type runEnv struct {
	h       *Handlers
	project string
	route   string
	caller  *principal
	tx      *store.Tx
	release func() // gives back the project's place in txGate
	// serializable: the run writes, and its transaction is SERIALIZABLE.
	serializable bool
	gated        bool // the run holds its project's place in txGate already
	// batch is, for a run of a batch, the batch's context: the run's
	// statements go on the batch's connection under it, not under the
	// run's, since a statement stopped by its context closes its
	// connection (pgx), and a run stopped midway (its time, or its share
	// of the batch's) must leave the batch's transaction whole.
	batch context.Context
}

// on is the context a statement of the run goes under.
func (e *runEnv) on(ctx context.Context) context.Context {
	if e.batch != nil {
		return e.batch
	}
	return ctx
}

func (e *runEnv) db() *store.Store {
	if e.tx != nil {
		return e.tx.Store
	}
	return e.h.runReads
}

// begin starts the run's transaction; a run that gets no connection
// within its time is ErrBusy (503), not a fault of its route.
func (e *runEnv) begin(ctx context.Context) error {
	if e.tx != nil {
		return nil
	}
	release := func() {}
	if !e.gated {
		var err error
		if release, err = e.h.txGate.enter(ctx, e.project); err != nil {
			return err
		}
	}
	begin := e.h.runTx.Begin
	if e.serializable {
		begin = e.h.runTx.BeginSerializable
	}
	tx, err := begin(ctx)
	if err != nil {
		release()
		if ctx.Err() != nil {
			return engine.ErrBusy
		}
		return err
	}
	e.tx, e.release = tx, release
	return nil
}

func (e *runEnv) commit(ctx context.Context) error {
	if e.tx == nil {
		return nil
	}
	err := e.tx.Commit(ctx)
	e.end()
	return err
}

func (e *runEnv) rollback() {
	if e.tx != nil {
		_ = e.tx.Rollback(context.Background())
		e.end()
	}
}

func (e *runEnv) end() {
	e.tx = nil
	e.release()
	e.release = nil
}

func (e *runEnv) Select(ctx context.Context, collection string, q engine.Query) ([]engine.Record, error) {
	ctx = e.on(ctx)
	if q.Lock {
		if err := e.begin(ctx); err != nil {
			return nil, err
		}
	}
	rq := store.RecordQuery{ByID: q.ByID, ID: q.ID, Sort: q.Sort, Descending: q.Descending, Limit: q.Limit, Lock: q.Lock}
	if q.Match != nil {
		var err error
		if rq.Where, err = json.Marshal(q.Match); err != nil {
			return nil, err
		}
	}
	var out []engine.Record
	each := func(id int64, data []byte) {
		if out == nil {
			out = make([]engine.Record, 0, min(q.Limit, 128))
		}
		out = append(out, engine.Record{ID: id, Data: data})
	}
	var err error
	if !q.Lock && e.tx == nil {
		// Outside a transaction, the same read of overlapping runs is
		// shared (store.SharedRunRecords).
		err = e.h.runReads.SharedRunRecords(ctx, e.project, collection, rq, each)
	} else {
		err = e.db().EachRunRecord(ctx, e.project, collection, rq, each)
	}
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, engine.ErrNoCollection
	case errors.Is(err, store.ErrTooLarge):
		return nil, engine.ErrTooLarge
	}
	return out, err
}

func (e *runEnv) Insert(ctx context.Context, collection string, data []byte) (int64, error) {
	ctx = e.on(ctx)
	if err := e.begin(ctx); err != nil {
		return 0, err
	}
	r := store.Record{ProjectID: e.project, CollectionID: collection, Data: data}
	err := e.tx.InsertRecord(ctx, &r)
	if errors.Is(err, store.ErrNotFound) {
		return 0, engine.ErrNoCollection
	}
	return r.ID, err
}

func (e *runEnv) Update(ctx context.Context, collection string, writes []engine.Write) error {
	ctx = e.on(ctx)
	if err := e.begin(ctx); err != nil {
		return err
	}
	recs := make([]store.Record, len(writes))
	for i, w := range writes {
		recs[i] = store.Record{ID: w.ID, Data: w.Data}
	}
	_, err := e.tx.UpdateRecords(ctx, e.project, collection, recs)
	return err
}

func (e *runEnv) Delete(ctx context.Context, collection string, ids []int64) error {
	ctx = e.on(ctx)
	if err := e.begin(ctx); err != nil {
		return err
	}
	return e.tx.DeleteRecords(ctx, e.project, collection, ids)
}

// Vault reads an entry of the route's project: the read is logged on the
// channel route, naming the route and the caller if known, in its own
// statement, committed before the value is used.
func (e *runEnv) Vault(ctx context.Context, key string) (string, error) {
	ev := store.VaultAccess{ProjectID: e.project, Key: key, Channel: "route", RouteID: &e.route}
	if e.caller != nil {
		ev.UserID, ev.Username, ev.TokenID = &e.caller.User.ID, e.caller.User.Username, e.caller.TokenID
	}
	entry, err := e.h.store.ReadVaultEntry(ctx, e.project, key, ev)
	if errors.Is(err, store.ErrNotFound) {
		return "", engine.ErrNoVaultKey
	}
	if err != nil {
		return "", err
	}
	e.h.metrics.vaultReads.WithLabelValues("route").Inc()
	value, err := e.h.keyring.Open(entry.KeyID, entry.ProjectID, entry.Key, entry.Sealed)
	return string(value), err
}

func (e *runEnv) Queue(ctx context.Context, m engine.Email) error {
	ctx = e.on(ctx)
	if err := e.begin(ctx); err != nil {
		return err
	}
	pairs, err := json.Marshal(m.Pairs)
	if err != nil {
		return err
	}
	project := e.project
	full, err := e.tx.MailBacklogFull(ctx, project, e.h.cfg.MailBacklog)
	if err != nil {
		return err
	}
	if full {
		return engine.ErrMailBacklog
	}
	msg := &store.Email{ProjectID: &project, RouteID: e.route, Template: m.Template, Recipients: m.Recipients, Pairs: pairs, Status: e.h.mail.Status()}
	// A recipient that is not an address fails the message now, held or
	// not, with the reason: no server would take it later.
	for i, to := range m.Recipients {
		if err := mail.CheckAddress(to); err != nil {
			msg.Status, msg.LastError = store.EmailFailed, fmt.Sprintf("recipient %d %q %s", i+1, flow.Printable(to), err)
			break
		}
	}
	return e.tx.QueueEmail(ctx, msg)
}
