package handlers

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"stencil/engine"
)

// runGate bounds the runs of routes under way at once: past the bound, as
// many more runs wait a moment for one to end, and the rest are refused at
// once (503 with Retry-After), so that a flood is answered rather than
// queued without end.
type runGate struct {
	slots   chan struct{}
	waiting atomic.Int64
	wait    time.Duration // the longest a run waits for a slot
}

func newRunGate(n int) *runGate {
	return &runGate{slots: make(chan struct{}, n), wait: time.Second}
}

// enter takes a slot, or says why not: engine.ErrBusy.
func (g *runGate) enter(ctx context.Context) (release func(), err error) {
	select {
	case g.slots <- struct{}{}:
		return g.leave, nil
	default:
	}
	if g.waiting.Add(1) > int64(cap(g.slots)) {
		g.waiting.Add(-1)
		return nil, engine.ErrBusy
	}
	defer g.waiting.Add(-1)
	timer := time.NewTimer(g.wait)
	defer timer.Stop()
	select {
	case g.slots <- struct{}{}:
		return g.leave, nil
	case <-timer.C:
	case <-ctx.Done():
	}
	return nil, engine.ErrBusy
}

func (g *runGate) leave() { <-g.slots }

// txGate bounds the transactions of runs one project holds at once, to
// half the pool they come from: a project whose routes write under load
// leaves connections to the others.
type txGate struct {
	per      int
	mu       sync.Mutex
	projects map[string]chan struct{}
}

func newTxGate(poolSize int) *txGate {
	return &txGate{per: max(1, poolSize/2), projects: map[string]chan struct{}{}}
}

// enter takes one of project's places, waiting until ctx ends at most:
// then engine.ErrBusy.
func (g *txGate) enter(ctx context.Context, project string) (release func(), err error) {
	g.mu.Lock()
	slots, ok := g.projects[project]
	if !ok {
		slots = make(chan struct{}, g.per)
		g.projects[project] = slots
	}
	g.mu.Unlock()
	select {
	case slots <- struct{}{}:
		return func() { <-slots }, nil
	case <-ctx.Done():
		return nil, engine.ErrBusy
	}
}

// turns makes the runs of a write route take turns in this instance once
// two of them have collided (failed to serialize or to get a row lock):
// runs that read and write the same records — a counter, a stock, a
// balance — then queue here, in order of arrival, instead of beginning
// together in PostgreSQL, where all but one would fail and be run again,
// over and over. The run at the head of the queue leads: it takes up to
// batchRuns queued runs and runs them one after the other in one
// serializable transaction, each in a savepoint of its own, and commits
// them together (see Handlers.lead). A route whose runs have not collided
// for contendedFor runs them side by side again. Collisions with runs of
// other routes or instances are still settled by running again.
type turns struct {
	mu     sync.Mutex
	routes map[string]*turn
	// batches counts the batches led, left the runs that left a batch
	// for taking too long.
	batches, left atomic.Int64
	// batchTime is the time a batch begins runs in (batchTime), runTime
	// the time one run of a batch may take (runTime).
	batchTime, runTime time.Duration
}

type turn struct {
	until   time.Time    // the last collision plus contendedFor
	queue   []*queuedRun // the runs waiting for their turn
	leading bool         // a run is leading a batch
}

// queuedRun is a run waiting for its turn, then its outcome.
type queuedRun struct {
	ctx    context.Context
	plan   *engine.Plan
	vars   map[string]any
	caller *principal
	opts   runOptions
	// wake is signalled once: the run has its outcome (finished), or it
	// is at the head of the queue and leads the next batch.
	wake     chan struct{}
	finished bool
	res      engine.Result
	err      error
}

const (
	// contendedFor is how long a route's runs take turns after a
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

func newTurns() *turns {
	return &turns{routes: map[string]*turn{}, batchTime: batchTime, runTime: runTime}
}

// collided notes that runs of route collided, and forgets the routes
// whose runs no longer take turns.
func (t *turns) collided(route string) {
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
		tn = &turn{}
		t.routes[route] = tn
	}
	tn.until = now.Add(contendedFor)
}

// join queues q when route's runs take turns, and tells whether it does
// and whether q leads the next batch at once (no run leads one now).
func (t *turns) join(route string, q *queuedRun) (queued, leads bool) {
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

// take removes the next batch of route's queue; the caller leads it.
func (t *turns) take(route string) []*queuedRun {
	t.batches.Add(1)
	t.mu.Lock()
	defer t.mu.Unlock()
	tn := t.routes[route]
	n := min(len(tn.queue), batchRuns)
	batch := slices.Clone(tn.queue[:n])
	tn.queue = slices.Delete(tn.queue, 0, n)
	return batch
}

// putBack returns runs a batch did not begin to the head of route's queue.
func (t *turns) putBack(route string, runs []*queuedRun) {
	t.mu.Lock()
	defer t.mu.Unlock()
	tn := t.routes[route]
	tn.queue = append(slices.Clone(runs), tn.queue...)
}

// handOn ends a batch: the run now at the head of route's queue leads the
// next one, or none does.
func (t *turns) handOn(route string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	tn := t.routes[route]
	if len(tn.queue) == 0 {
		tn.leading = false
		return
	}
	tn.queue[0].wake <- struct{}{}
}
