package runs

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"stencil/engine"
)

// Slots bounds the runs of routes under way at once: past the bound, as
// many more runs wait a moment for one to end, and the rest are refused at
// once (503 with Retry-After), so that a flood is answered rather than
// queued without end. The same bounds the upstream requests in flight
// (EGRESS_CONCURRENCY), where every run past it waits, within its time:
// the run slots bound how many those are.
type Slots struct {
	taken   chan struct{}
	waiting atomic.Int64
	Wait    time.Duration // the longest a run waits for a slot
	Queue   int64         // how many may wait at once; the rest are refused
}

// NewSlots bounds the runs under way to n, and those waiting to n more.
func NewSlots(n int) *Slots {
	return &Slots{taken: make(chan struct{}, n), Wait: time.Second, Queue: int64(n)}
}

// Enter takes a slot, or says why not: engine.ErrBusy.
func (g *Slots) Enter(ctx context.Context) (release func(), err error) {
	select {
	case g.taken <- struct{}{}:
		return g.leave, nil
	default:
	}
	if g.waiting.Add(1) > g.Queue {
		g.waiting.Add(-1)
		return nil, engine.ErrBusy
	}
	defer g.waiting.Add(-1)
	timer := time.NewTimer(g.Wait)
	defer timer.Stop()
	select {
	case g.taken <- struct{}{}:
		return g.leave, nil
	case <-timer.C:
	case <-ctx.Done():
	}
	return nil, engine.ErrBusy
}

func (g *Slots) leave() { <-g.taken }

// projectSlots bounds what one project holds at once of a resource the
// projects share: the transactions of its runs, to half the pool they
// come from, so a project whose routes write under load leaves
// connections to the others; its runs waiting on upstream calls, to a
// quarter of the run slots.
type projectSlots struct {
	per      int
	mu       sync.Mutex
	projects map[string]chan struct{}
}

func newProjectSlots(per int) *projectSlots {
	return &projectSlots{per: per, projects: map[string]chan struct{}{}}
}

func (g *projectSlots) of(project string) chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	slots, ok := g.projects[project]
	if !ok {
		slots = make(chan struct{}, g.per)
		g.projects[project] = slots
	}
	return slots
}

// tryEnter takes one of project's slots if one is free now.
func (g *projectSlots) tryEnter(project string) (release func(), ok bool) {
	slots := g.of(project)
	select {
	case slots <- struct{}{}:
		return func() { <-slots }, true
	default:
		return nil, false
	}
}

// enter takes one of project's slots, waiting until ctx ends at most:
// then engine.ErrBusy.
func (g *projectSlots) enter(ctx context.Context, project string) (release func(), err error) {
	slots := g.of(project)
	select {
	case slots <- struct{}{}:
		return func() { <-slots }, nil
	case <-ctx.Done():
		return nil, engine.ErrBusy
	}
}
