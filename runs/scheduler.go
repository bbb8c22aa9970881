package runs

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"

	"stencil/schedule"
	"stencil/store"
)

// Scheduler runs the routes' schedules (docs/schedules.md). Every
// instance runs one; each tick is run by the one instance that claims it
// (store.ClaimTick). Each look (every Every) reads the active schedules
// and, for each, the latest tick at or before now — after the schedule's
// Since and within the last hour — which, once claimed, runs the route
// with the schedule's query and body (trigger schedule) through Serve, as
// a request to /x would: the run log, analytics, the slots (a background
// slot first). After a time away, only the latest missed tick runs. A
// tick that falls while the schedule's previous run still runs is
// skipped.
type Scheduler struct {
	s *Service
	// Now is the clock (tests set their own) and Every how often the
	// schedules are read.
	Now   func() time.Time
	Every time.Duration
	log   *slog.Logger
	runs  sync.WaitGroup
}

// catchUp bounds how far back a missed tick still runs; staleTick is how
// long a claimed run is taken to be running (a run is bounded by its
// time, engine.Limits.Time, and the wait for a slot: an instance that
// died while running one leaves a claim this old).
const (
	catchUp   = time.Hour
	staleTick = time.Minute
)

// Scheduler makes the service's scheduler; Run sets it going.
func (s *Service) Scheduler(log *slog.Logger) *Scheduler {
	return &Scheduler{s: s, Now: time.Now, Every: time.Second, log: log}
}

// Run looks for due ticks every Every until ctx ends, then waits for the
// runs it started.
func (sc *Scheduler) Run(ctx context.Context) {
	t := time.NewTicker(sc.Every)
	defer t.Stop()
	for {
		sc.Once(ctx)
		select {
		case <-ctx.Done():
			sc.Wait()
			return
		case <-t.C:
		}
	}
}

// Wait waits for the runs Once started.
func (sc *Scheduler) Wait() { sc.runs.Wait() }

// Once claims the ticks due now and starts their runs, each on its own.
func (sc *Scheduler) Once(ctx context.Context) {
	list, err := sc.s.store.ActiveSchedules(ctx)
	if err != nil {
		if ctx.Err() == nil && sc.log != nil {
			sc.log.Warn("schedules: read", "err", err)
		}
		return
	}
	now := sc.Now()
	for _, sched := range list {
		spec, err := schedule.Parse(sched.Cron, sched.Timezone)
		if err != nil {
			continue // saved before a rule it now fails: it never ticks
		}
		since := sched.Since
		if from := now.Add(-catchUp); from.After(since) {
			since = from
		}
		tick, ok := spec.Latest(since, now)
		if !ok {
			continue
		}
		state, err := sc.s.store.ClaimTick(ctx, sched.ID, tick, staleTick)
		if err != nil {
			if ctx.Err() == nil && sc.log != nil {
				sc.log.Warn("schedules: claim", "schedule", sched.ID, "err", err)
			}
			continue
		}
		if state != store.TickRunning {
			continue // another instance's, or skipped
		}
		sc.runs.Add(1)
		go func() {
			defer sc.runs.Done()
			sc.run(context.WithoutCancel(ctx), sched, tick)
		}()
	}
}

// run runs sched's route for tick and records how it ended.
func (sc *Scheduler) run(ctx context.Context, sched store.Schedule, tick time.Time) {
	status := 0
	defer func() {
		if err := sc.s.store.FinishTick(ctx, sched.ID, tick, status); err != nil && sc.log != nil {
			sc.log.Warn("schedules: finish", "schedule", sched.ID, "err", err)
		}
	}()
	plan, err := sc.s.Plan(ctx, sched.ProjectID, sched.RouteID)
	if err != nil || plan == nil {
		status = 404
		return
	}
	project, err := sc.s.store.Project(ctx, sched.ProjectID, 0)
	if err != nil {
		status = 404
		return
	}
	a, err := sc.s.Serve(ctx, Request{Plan: plan, ProjectID: sched.ProjectID, Method: plan.Route.Method,
		Path: "/x" + strings.TrimSuffix(project.APIPath, "/") + plan.Route.RoutePath, Query: sched.Query, Body: sched.Body,
		Client: "schedule", Trigger: store.TriggerSchedule})
	if err != nil {
		status = 500
		return
	}
	status = a.Status
}
