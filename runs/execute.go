package runs

import (
	"cmp"
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"time"

	"stencil/engine"
	"stencil/flow"
	"stencil/store"
	"stencil/webhooks"
)

// execute reads req's inputs, checks its caller and runs plan; it fills
// run's caller, ending, fault and attempts. A plan that writes runs in one
// SERIALIZABLE transaction from its first block and, when that fails to
// serialize or deadlocks, runs again from the start after a short jittered
// back-off, until it commits or its time is up (docs/engine.md).
func (s *Service) execute(ctx context.Context, plan *engine.Plan, params map[string]string, req *Request, run *store.Run, opts options) (engine.Result, error) {
	// A signed webhook's signature is checked on the raw body before the
	// body is read (docs/webhooks.md).
	delivery, err := s.signed(ctx, plan.Route, req)
	var vars map[string]any
	var caller *store.Caller
	if err == nil {
		vars, caller, err = s.inputs(ctx, plan.Route, params, req)
	}
	if caller == nil {
		caller = req.Caller
	}
	if caller != nil {
		run.UserID, run.Username = &caller.User.ID, caller.User.Username
	}
	var refused *Refusal
	if errors.As(err, &refused) {
		ended, fault := cmp.Or(refused.Ended, "REFUSED"), cmp.Or(refused.Detail, refused.Message)
		run.Ended, run.Fault = ended, fault
		return engine.Result{Status: refused.Status, Body: ErrorBody(refused.Status, refused.Message), Ended: ended}, nil
	}
	if err != nil {
		return engine.Result{}, err
	}
	runCtx, cancel := context.WithTimeout(ctx, s.Limits.Time)
	defer cancel()
	if plan.Enqueues {
		if opts.jobsFull, err = s.jobsFull(runCtx, plan.Route.ProjectID); err != nil {
			return engine.Result{}, err
		}
	}
	res, err := s.attempts(runCtx, plan, vars, caller, run, opts)
	if delivery != "" && (err != nil || res.Status >= http.StatusInternalServerError) {
		// Not done: the sender's retry of this delivery runs.
		if rerr := s.store.ReleaseDelivery(context.WithoutCancel(ctx), plan.Route.ProjectID, plan.Route.RouteID, delivery); rerr != nil && err == nil {
			err = rerr
		}
	}
	return res, err
}

// signatureMismatch is what a request whose signature does not hold is
// answered (docs/webhooks.md), whatever the reason, which the run log
// keeps.
const signatureMismatch = "Error: signature does not match"

// signed checks the signature of a request to a route with an active
// auth_signature, with the secret of the project's vault entry it names
// (read and logged as a route's read), and claims the delivery's id where
// the scheme carries one: it returns that id, "" when there is none. A
// replay of a delivery accepted before is a Refusal of status 200 that
// runs nothing. A member's try of the route (a plan given with its
// caller) is not checked: the member is signed in.
func (s *Service) signed(ctx context.Context, r flow.Route, req *Request) (string, error) {
	sig := r.AuthSignature
	if !sig.Checks() || req.Plan != nil && req.Caller != nil {
		return "", nil
	}
	access := store.VaultAccess{ProjectID: r.ProjectID, Key: sig.VaultKey, Channel: "route", RouteID: &r.RouteID}
	_, secret, err := s.vault.Read(ctx, r.ProjectID, sig.VaultKey, access)
	if errors.Is(err, store.ErrNotFound) {
		return "", &Refusal{Status: http.StatusInternalServerError, Message: "Error: the route cannot check signatures: its secret is not in the project's vault",
			Ended: "FAULT", Detail: "Error: auth_signature.vault_key " + sig.VaultKey + " is not an entry of the project's vault"}
	}
	if err != nil {
		return "", err
	}
	header := req.Header
	if header == nil {
		header = func(string) string { return "" }
	}
	tolerance := webhooks.DefaultTolerance
	if sig.ToleranceS > 0 {
		tolerance = time.Duration(sig.ToleranceS) * time.Second
	}
	id, err := webhooks.Verify(sig.Scheme, secret, sig.Header, header, req.Body, time.Now(), tolerance)
	var mismatch *webhooks.Mismatch
	if errors.As(err, &mismatch) {
		return "", &Refusal{Status: http.StatusUnauthorized, Message: signatureMismatch, Detail: signatureMismatch + ": " + mismatch.Reason}
	}
	if err != nil || id == "" {
		return "", err
	}
	first, err := s.store.ClaimDelivery(ctx, r.ProjectID, r.RouteID, id)
	if err != nil {
		return "", err
	}
	if !first {
		return "", &Refusal{Status: http.StatusOK, Message: "Delivery " + id + " was received already: nothing ran"}
	}
	return id, nil
}

// attempts runs plan until it commits, ends otherwise, or its time is up
// (then 503 BUSY).
func (s *Service) attempts(ctx context.Context, plan *engine.Plan, vars map[string]any, caller *store.Caller, run *store.Run, opts options) (engine.Result, error) {
	deadline, _ := ctx.Deadline()
	// A run that writes takes a slot among its project's transactions
	// (txSlots), which it keeps from one attempt to the next; once runs of
	// its route collided, it queues for a batch instead (see batches).
	route := plan.Route.ProjectID + "/" + plan.Route.RouteID
	var slot func()
	defer func() {
		if slot != nil {
			slot()
		}
	}()
	// alone: the run left a batch for taking too long, and runs by itself
	// from then on.
	alone := false
	for attempt := 1; ; attempt++ {
		run.Attempts = attempt
		// A run that calls upstream never joins a batch: it would hold the
		// batch's transaction while it waits (docs/engine.md).
		batched := plan.Writes && !plan.Calls && !opts.dry && !alone
		var res engine.Result
		var err error
		if batched {
			res, err = s.attemptBatched(ctx, route, &queuedRun{ctx: ctx, plan: plan, vars: vars, caller: caller, opts: opts, wake: make(chan struct{}, 1)}, &slot)
		} else {
			res, err = s.attemptAlone(ctx, plan, vars, caller, opts, &slot)
		}
		if errors.Is(err, errRunAlone) {
			alone = true
			if opts.restart != nil {
				opts.restart()
			}
			continue
		}
		if attempt > 1 && (res.Fault != nil || errors.Is(err, engine.ErrBusy)) && ctx.Err() != nil {
			// Its time ran out in an attempt after a collision, or before
			// that attempt could begin.
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
		s.batches.Collided(route)
		if batched {
			continue // it queues for a batch
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

// attemptBatched runs q once: in a batch of its route when the route's
// runs queue for batches (giving back the transaction slot the run holds:
// the batch takes its own), else by itself, holding *slot.
func (s *Service) attemptBatched(ctx context.Context, route string, q *queuedRun, slot *func()) (engine.Result, error) {
	if queued, leads := s.batches.join(route, q); queued {
		if *slot != nil {
			(*slot)()
			*slot = nil
		}
		if !leads {
			<-q.wake
		}
		if !q.finished {
			s.leadBatch(route)
		}
		return q.res, q.err
	}
	return s.attemptAlone(ctx, q.plan, q.vars, q.caller, q.opts, slot)
}

// attemptAlone runs plan once by itself, holding *slot (taken first when
// it writes).
func (s *Service) attemptAlone(ctx context.Context, plan *engine.Plan, vars map[string]any, caller *store.Caller, opts options, slot *func()) (engine.Result, error) {
	if plan.Writes && *slot == nil {
		var err error
		if *slot, err = s.txSlots.enter(ctx, plan.Route.ProjectID); err != nil {
			return engine.Result{}, err
		}
	}
	return s.attempt(ctx, plan, vars, caller, opts)
}

// errRunAgain is the outcome of a run whose batch could not commit: the
// run begins again.
var errRunAgain = errors.New("the run's batch did not commit")

// errRunAlone is the outcome of a run that took longer than a batch
// gives a run: its writes were taken back, and it begins again alone.
var errRunAlone = errors.New("the run left its batch")

// errContention ends a run whose time ran out while it was run again.
var errContention = errors.New("the route could not complete under contention")

// contention is the answer of a run that could not serialize within its
// time: it carries Retry-After.
var contention = engine.Result{Status: http.StatusServiceUnavailable, Ended: "BUSY",
	Body: ErrorBody(http.StatusServiceUnavailable, "Error: the route could not complete under contention")}

// attempt runs plan once, in a transaction of its own when it writes, and
// commits what it wrote when it ended normally (unless dry).
func (s *Service) attempt(ctx context.Context, plan *engine.Plan, vars map[string]any, caller *store.Caller, opts options) (engine.Result, error) {
	env := &runEnv{s: s, project: plan.Route.ProjectID, route: plan.Route.RouteID, caller: caller, serializable: plan.Writes, gated: plan.Writes,
		key: opts.key, hosts: opts.hosts, hop: opts.hop, jobsFull: opts.jobsFull}
	defer env.rollback()
	if plan.Writes {
		if err := env.begin(ctx); err != nil {
			return engine.Result{}, err
		}
	}
	res, err := engine.RunTraced(ctx, plan, vars, env, s.Limits, opts.trace)
	if err != nil {
		return res, err
	}
	if res.Commit() && !opts.dry {
		if opts.job != 0 && env.tx != nil {
			if err := env.tx.MarkJobDone(ctx, opts.job); err != nil {
				return res, err
			}
		}
		if err := env.commit(ctx); err != nil {
			return res, err
		}
	}
	return res, nil
}
