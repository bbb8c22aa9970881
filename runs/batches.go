package runs

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"stencil/engine"
	"stencil/store"
)

// batches is the group commit of write routes. Once two runs of a route
// have collided in this instance (failed to serialize or to get a row
// lock), runs that read and write the same records — a counter, a stock,
// a balance — queue here in order of arrival instead of beginning together
// in PostgreSQL, where all but one would fail and be run again, over and
// over. The run at the head of the queue is the leader: it takes up to
// batchRuns queued runs and runs them one after the other in one
// serializable transaction, each in a savepoint of its own, and commits
// them together (Service.leadBatch), then passes the lead on to the run
// now at the head. A route whose runs have not collided for contendedFor
// runs them side by side again. Collisions with runs of other routes or
// instances are still settled by running again.
type batches struct {
	mu     sync.Mutex
	routes map[string]*routeQueue
	// Led counts the batches led, Left the runs that left a batch for
	// taking too long.
	Led, Left atomic.Int64
	// BatchTime is the time a batch begins runs in, RunTime the time one
	// run of a batch may take (see batchTime and runTime).
	BatchTime, RunTime time.Duration
}

// routeQueue is a contended route's queue.
type routeQueue struct {
	until   time.Time    // the last collision plus contendedFor
	queue   []*queuedRun // the runs waiting for a batch
	leading bool         // a run is leading a batch
}

// queuedRun is a run waiting for a batch, then its outcome.
type queuedRun struct {
	ctx    context.Context
	plan   *engine.Plan
	vars   map[string]any
	caller *store.Caller
	opts   options
	// wake is signalled once: the run has its outcome (finished), or it
	// is at the head of the queue and leads the next batch.
	wake     chan struct{}
	finished bool
	res      engine.Result
	err      error
}

const (
	// contendedFor is how long a route's runs queue for batches after a
	// collision.
	contendedFor = 2 * time.Second
	// batchRuns bounds the runs of one batch: each that writes holds a
	// subtransaction, and a backend keeps 64 of them in shared memory.
	batchRuns = 32
	// batchTime bounds the time a batch begins runs in: runs of a slow
	// route past it wait for the next batch, so that a batch commits
	// well within any run's time.
	batchTime = 100 * time.Millisecond
	// runTime bounds the time one run of a batch takes: a run past it
	// leaves the batch (its savepoint rolled back) and runs alone, so that
	// a slow caller holds no batch — and with it every caller of the
	// route — back.
	runTime = 100 * time.Millisecond
)

func newBatches() *batches {
	return &batches{routes: map[string]*routeQueue{}, BatchTime: batchTime, RunTime: runTime}
}

// Collided notes that runs of route collided, and forgets the routes
// whose runs no longer queue.
func (t *batches) Collided(route string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	for r, tn := range t.routes {
		if !tn.leading && len(tn.queue) == 0 && now.After(tn.until) {
			delete(t.routes, r)
		}
	}
	tn := t.routes[route]
	if tn == nil {
		tn = &routeQueue{}
		t.routes[route] = tn
	}
	tn.until = now.Add(contendedFor)
}

// join queues q when route's runs queue for batches, and tells whether it does
// and whether q leads the next batch at once (no run leads one now).
func (t *batches) join(route string, q *queuedRun) (queued, leads bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	tn := t.routes[route]
	if tn == nil || !tn.leading && len(tn.queue) == 0 && time.Now().After(tn.until) {
		delete(t.routes, route)
		return false, false
	}
	tn.queue = append(tn.queue, q)
	if tn.leading {
		return true, false
	}
	tn.leading = true
	return true, true
}

// next removes the next batch of route's queue; the caller leads it.
func (t *batches) next(route string) []*queuedRun {
	t.Led.Add(1)
	t.mu.Lock()
	defer t.mu.Unlock()
	tn := t.routes[route]
	n := min(len(tn.queue), batchRuns)
	batch := slices.Clone(tn.queue[:n])
	tn.queue = slices.Delete(tn.queue, 0, n)
	return batch
}

// putBack returns runs a batch did not begin to the head of route's queue.
func (t *batches) putBack(route string, runs []*queuedRun) {
	t.mu.Lock()
	defer t.mu.Unlock()
	tn := t.routes[route]
	tn.queue = append(slices.Clone(runs), tn.queue...)
}

// passLead ends a batch: the run now at the head of route's queue leads the
// next one, or none does.
func (t *batches) passLead(route string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	tn := t.routes[route]
	if len(tn.queue) == 0 {
		tn.leading = false
		return
	}
	tn.queue[0].wake <- struct{}{}
}

// leadBatch runs the next batch of route's queue: one run after the other
// in one serializable transaction, each in a savepoint, a run that does
// not end normally taking back what it wrote, and commits them together.
// A run a later one sees is one that commits before it, so the batch is as
// if each had run alone, in order. When a run fails to serialize, or the
// transaction fails, no run of the batch commits and each begins again.
// The leader then passes the lead on to the run at the head of the queue.
func (s *Service) leadBatch(route string) {
	b := &batch{s: s, route: route, runs: s.batches.next(route)}
	defer s.batches.passLead(route)
	defer func() {
		for _, q := range b.runs {
			q.wake <- struct{}{}
		}
	}()
	// The batch's own statements run under its own time, not a run's: a
	// run whose time is up ends alone, not the batch.
	ctx, cancel := context.WithTimeout(context.Background(), s.Limits.Time)
	defer cancel()
	b.ctx = ctx
	b.project = b.runs[0].plan.Route.ProjectID
	slot, err := s.txSlots.enter(ctx, b.project)
	if err != nil {
		b.settle(err)
		return
	}
	defer slot()
	if b.tx, err = s.tx.BeginRuns(ctx); err != nil {
		b.settle(err)
		return
	}
	defer func() { _ = b.tx.Rollback(ctx) }()
	if b.runAll() {
		b.commit()
	}
}

// batch is a batch under way.
type batch struct {
	s       *Service
	route   string
	project string
	ctx     context.Context
	tx      *store.Tx
	runs    []*queuedRun
	ran     []*queuedRun // the runs begun, by their number in the transaction
}

// runAll runs the batch's runs in turn; false when the batch ended early
// (every run begins again).
func (b *batch) runAll() bool {
	began := time.Now()
	rerun := false // the run at i begins again, within the same savepoint
	for i := 0; i < len(b.runs); i++ {
		q := b.runs[i]
		if !rerun {
			if i > 0 && time.Since(began) > b.s.batches.BatchTime {
				b.s.batches.putBack(b.route, b.runs[i:])
				b.runs = b.runs[:i]
				break
			}
			if q.ctx.Err() != nil {
				q.err, q.finished = errContention, true
				continue
			}
			if len(b.ran) > 0 {
				b.tx.NextRun()
			}
			b.ran = append(b.ran, q)
		}
		var ok bool
		if rerun, ok = b.runOne(q); !ok {
			return false
		}
		if rerun {
			i--
		}
	}
	return true
}

// runOne runs q in its savepoint. A run gets RunTime of the batch: one
// that takes longer leaves it (its writes taken back) and runs alone, so
// that no batch waits on one slow run. rerun: q begins again, its first
// statement having carried an earlier run's failed write; ok is false
// when the batch ended early.
func (b *batch) runOne(q *queuedRun) (rerun, ok bool) {
	// The run's Env is on the batch's transaction: it never begins,
	// commits or ends one of its own.
	env := &runEnv{s: b.s, project: b.project, route: q.plan.Route.RouteID, caller: q.caller, tx: b.tx, batch: b.ctx, jobsFull: q.opts.jobsFull}
	runCtx, stop := context.WithTimeout(q.ctx, b.s.batches.RunTime)
	res, err := engine.RunTraced(runCtx, q.plan, q.vars, env, b.s.Limits, q.opts.trace)
	slow := runCtx.Err() != nil && q.ctx.Err() == nil && (err != nil || res.Fault != nil)
	stop()
	// An earlier run's write that failed with this run's statement is
	// that run's to answer, whatever this run made of the error (its
	// route may answer it as a fault, or as its time being up).
	switch earlier := b.tx.LateFailure(); {
	case earlier != nil:
		if !b.failed(earlier) {
			return false, false
		}
		// This run's first statement did not run: it begins again,
		// within the savepoint of the run taken back.
		if q.opts.restart != nil {
			q.opts.restart()
		}
		return true, true
	case store.Retryable(err):
		b.again()
		return false, false
	case slow:
		if err := b.tx.UndoRun(b.ctx); err != nil {
			b.again()
			return false, false
		}
		b.s.batches.Left.Add(1)
		q.res, q.err, q.finished = engine.Result{}, errRunAlone, true
		return false, true
	case err != nil || !res.Commit():
		if err := b.tx.UndoRun(b.ctx); err != nil {
			b.again()
			return false, false
		}
	case q.opts.job != 0:
		// A job's run marks its job in its savepoint (see Service.attempt).
		if err := b.tx.MarkJobDone(b.ctx, q.opts.job); err != nil {
			b.again()
			return false, false
		}
	}
	q.res, q.err, q.finished = res, err, true
	return false, true
}

// commit sends what the runs wrote and commits it.
func (b *batch) commit() {
	if err := b.tx.Flush(b.ctx); err != nil {
		var earlier *store.EarlierRunError
		if !errors.As(err, &earlier) {
			earlier = &store.EarlierRunError{Run: len(b.ran) - 1, Err: err}
		}
		if !b.failed(earlier) {
			return
		}
	}
	if err := b.tx.Commit(b.ctx); store.Retryable(err) {
		b.again()
	} else if err != nil {
		// Whether it committed is unknown: no run begins again.
		for _, q := range b.runs {
			q.res, q.err = engine.Result{}, err
		}
	}
}

// settle gives each run of the batch not yet finished err.
func (b *batch) settle(err error) {
	for _, q := range b.runs {
		if !q.finished {
			q.err, q.finished = err, true
		}
	}
}

// again makes every run of the batch begin again, what each read being
// void.
func (b *batch) again() {
	for _, q := range b.runs {
		q.res, q.err, q.finished = engine.Result{}, errRunAgain, true
	}
}

// failed settles the run whose write failed (an earlier run's write sent
// with a later statement, or the last write sent before the commit): its
// writes are taken back and it answers the error; when the error is a
// collision, every run begins again instead, and failed is false.
func (b *batch) failed(e *store.EarlierRunError) bool {
	if store.Retryable(e.Err) {
		b.again()
		return false
	}
	if err := b.tx.UndoEarlierRun(b.ctx); err != nil {
		b.again()
		return false
	}
	b.ran[e.Run].res, b.ran[e.Run].err = engine.Result{}, e.Err
	return true
}
