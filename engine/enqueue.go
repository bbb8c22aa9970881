package engine

import (
	"time"

	"stencil/flow"
)

// The ENQUEUE block (docs/jobs.md): a job that runs a route of the project
// later, written in the run's transaction.

// MaxWaitingJobs is how many jobs not yet finished a project may hold;
// JobBacklogRetry the Retry-After, in seconds, of a run that found as
// many.
const (
	MaxWaitingJobs  = 10_000
	JobBacklogRetry = 60
)

// enqueue compiles an ENQUEUE block: the route it names (s.name), its
// query pairs, body (s.b) and delay (s.a).
func (c *compiler) enqueue(s *step, b *flow.Block, at string) {
	c.plan.Enqueues = true
	s.name = b.TargetRoute
	s.pairs = c.pairs(b.Query, at+".query")
	s.a, s.b = c.operandPtr(b.Delay, at+".delay_ms"), c.operandPtr(b.CallBody, at+".body")
	s.index = b.MaxAttempts
	if s.index == 0 {
		s.index = flow.DefaultJobAttempts
	}
	if s.a != nil && !s.a.ref {
		if _, ok := jobDelay(s.a.lit); !ok {
			c.problem(at+".delay_ms.data", "must be a whole number of milliseconds from 0 to 2592000000 (30 days)")
		}
	}
}

// jobDelay reads a delay in milliseconds: a whole number from 0 to
// flow.MaxJobDelay.
func jobDelay(v any) (time.Duration, bool) {
	ms, ok := v.(float64)
	if !ok || ms != float64(int64(ms)) || ms < 0 || ms > float64(flow.MaxJobDelay.Milliseconds()) {
		return 0, false
	}
	return time.Duration(ms) * time.Millisecond, true
}

// enqueue runs ENQUEUE step s: the job's query and body are built as an
// HTTP block's are, and may not hold a value read from the vault (a job
// keeps them in the database until it runs; its route reads its secrets
// itself).
func (r *runner) enqueue(s *step) (int64, error) {
	j := Job{Route: s.name, MaxAttempts: s.index}
	j.Query = r.query(s)
	if len(j.Query) > MaxJobQuery {
		return 0, r.fault(s, "the query would pass 8 KiB")
	}
	if s.b != nil {
		if v := r.value(*s.b); v != nil {
			body, err := appendJSON(nil, v, MaxJobBody)
			if err != nil {
				return 0, r.fault(s, "the body would pass 64 KiB")
			}
			j.Body = body
		}
	}
	if r.secrets.Holds(j.Query) || j.Body != nil && r.secrets.Holds(string(j.Body)) {
		return 0, r.fault(s, "the job's query or body holds a value read from the vault: a job keeps them until it runs, so its route reads its secrets itself")
	}
	if s.a != nil {
		v := r.value(*s.a)
		if v != nil {
			d, ok := jobDelay(v)
			if !ok {
				return 0, r.fault(s, "delay_ms is %s, not a whole number of milliseconds from 0 to 30 days", describe(v))
			}
			j.Delay = d
		}
	}
	if err := r.charge(s, len(j.Query)+len(j.Body)); err != nil {
		return 0, err
	}
	id, err := r.env.Enqueue(r.ctx, j)
	if err != nil {
		return 0, r.envError(s, err)
	}
	return id, nil
}

// MaxJobBody bounds a job's body, as a schedule's, and MaxJobQuery its
// query string.
const (
	MaxJobBody  = 64 << 10
	MaxJobQuery = 8 << 10
)
