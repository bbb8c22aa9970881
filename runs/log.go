package runs

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"stencil/stats"
	"stencil/store"
)

// logWriter takes every run as it answers (add) and, off the requests'
// path, counts it for route analytics and writes the runs the log keeps
// (docs/routes.md):
//
//   - Analytics count every run: add counts it into a tally of route
//     minutes, written once a second in a transaction of its own. A
//     tally that cannot be written is kept and added to the next, so
//     rollups stay exact across a database that is away for a while.
//   - The log keeps every run that did not succeed (status other than
//     2xx), every dry run and traced run, and each route's first
//     logKeepAll successful runs of a second; past those, one successful
//     run in logSampleRate, which carries that rate (the page shows "1 in
//     100 kept"). What the log then cannot take (a database away, a storm
//     of failures) waits, up to logMax runs; past that the oldest waiting
//     go and are counted in the warning, which counts nothing else.
type logWriter struct {
	store   *store.Store
	log     *slog.Logger
	count   bool              // write the tally to route analytics (ROUTE_STATS)
	counted func(store.Tally) // told of each second's tally, when set (metrics)

	max     int // runs waiting at most (logMax)
	keepAll int // successful runs of a route a second kept as themselves (logKeepAll)

	mu      sync.Mutex
	tally   store.Tally
	pending []store.Run // kept runs waiting for the log, oldest first
	seconds map[routeKey]*second
	dropped int // kept runs dropped since the last warning
	lost    int // runs analytics could not count since the last warning
	kick    chan struct{}
	// flushes are asks to write everything now; each is closed once
	// written (with an error: left open).
	flushes chan chan struct{}

	// unwritten is what earlier tallies counted that route analytics could
	// not take yet (the writer's alone).
	unwritten store.Tally
}

const (
	logBatch = 1000
	logMax   = 100_000
	// logKeepAll is how many successful runs of a route a second the log
	// keeps; past them it keeps 1 in logSampleRate.
	logKeepAll    = 100
	logSampleRate = 100
	// tallyMax bounds the route minutes a tally holds while it cannot be
	// written (1,000 routes for over an hour and a half).
	tallyMax = 100_000
)

// routeKey names a route for the sampling of its runs.
type routeKey struct{ project, route string }

// second counts a route's successful runs in one second.
type second struct {
	at int64 // Unix seconds
	n  int
}

func newLogWriter(st *store.Store, count bool, counted func(store.Tally), log *slog.Logger) *logWriter {
	return &logWriter{store: st, count: count, counted: counted, log: log, max: logMax, keepAll: logKeepAll, seconds: map[routeKey]*second{}, kick: make(chan struct{}, 1), flushes: make(chan chan struct{})}
}

// countOnly counts r for analytics and keeps nothing of it in the log
// (a request no route matched: store.UnmatchedRoute).
func (l *logWriter) countOnly(r store.Run) {
	l.mu.Lock()
	if !l.tally.Count(r, tallyMax) {
		l.lost++
	}
	l.mu.Unlock()
}

// add counts r and queues it for the log when the log keeps it.
func (l *logWriter) add(r store.Run) {
	l.mu.Lock()
	if !l.tally.Count(r, tallyMax) {
		l.lost++
	}
	rate := l.sample(&r)
	if rate == 0 {
		l.mu.Unlock()
		return
	}
	r.SampleRate = rate
	if len(l.pending) >= l.max {
		l.pending[0] = store.Run{} // its strings go with it
		l.pending = l.pending[1:]
		l.dropped++
	}
	l.pending = append(l.pending, r)
	full := len(l.pending) >= logBatch
	l.mu.Unlock()
	if full {
		select {
		case l.kick <- struct{}{}:
		default:
		}
	}
}

// sample is how many runs r stands for in the log: 1 for a run kept as
// itself, logSampleRate for one kept of a sample, 0 for one not kept.
func (l *logWriter) sample(r *store.Run) int {
	if r.DryRun || len(r.Trace) > 0 || stats.Class(r.Status, r.Ended) != stats.Class2xx {
		return 1
	}
	k := routeKey{r.ProjectID, r.RouteID}
	at := r.At.Unix()
	s := l.seconds[k]
	if s == nil {
		if len(l.seconds) >= tallyMax {
			// Routes that ran in an earlier second start again.
			for k, s := range l.seconds {
				if s.at < at {
					delete(l.seconds, k)
				}
			}
		}
		s = &second{at: at}
		l.seconds[k] = s
	}
	if s.at != at {
		s.at, s.n = at, 0
	}
	s.n++
	switch {
	case s.n <= l.keepAll:
		return 1
	case (s.n-l.keepAll)%logSampleRate == 0:
		return logSampleRate
	}
	return 0
}

// run writes the tally and the queued runs until ctx ends, and then once
// more.
func (l *logWriter) run(ctx context.Context) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			final, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := l.flush(final, true); err != nil {
				l.log.Error("run log: final write", "err", err)
			}
			return
		case <-tick.C:
			if err := l.flush(ctx, true); err != nil && ctx.Err() == nil {
				l.log.Error("run log: write", "err", err)
			}
		case <-l.kick:
			if err := l.flush(ctx, false); err != nil && ctx.Err() == nil {
				l.log.Error("run log: write", "err", err)
			}
		case done := <-l.flushes:
			if err := l.flush(ctx, true); err != nil {
				if ctx.Err() == nil {
					l.log.Error("run log: write", "err", err)
				}
				continue
			}
			close(done)
		}
	}
}

// flushFor writes the run log at once for a backup's ask (nonce) and then
// says so (store.RunLogFlushed); it gives up after flushWait.
func (l *logWriter) flushFor(ctx context.Context, nonce string) {
	wait, cancel := context.WithTimeout(ctx, flushWait)
	defer cancel()
	done := make(chan struct{})
	select {
	case l.flushes <- done:
	case <-wait.Done():
		return
	}
	select {
	case <-done:
	case <-wait.Done():
		return
	}
	if err := l.store.RunLogFlushed(wait, nonce); err != nil {
		l.log.Warn("run log: telling a backup it is written", "err", err)
	}
}

// flushWait bounds a backup's ask to write the run log.
const flushWait = 5 * time.Second

// flush writes the tally (with counts) and then what is queued, a batch at
// a time; what cannot be written waits for the next time.
func (l *logWriter) flush(ctx context.Context, counts bool) error {
	if counts {
		if err := l.flushTally(ctx); err != nil {
			return err
		}
	}
	for {
		l.mu.Lock()
		n := min(len(l.pending), logBatch)
		batch := make([]store.Run, n)
		copy(batch, l.pending)
		clear(l.pending[:n])
		l.pending = l.pending[n:]
		if len(l.pending) == 0 {
			l.pending = nil // the array it held goes
		}
		dropped := l.dropped
		l.dropped = 0
		l.mu.Unlock()
		if dropped > 0 {
			l.log.Warn("run log: runs dropped while the database could not take them", "runs", dropped)
		}
		if n == 0 {
			return nil
		}
		if err := l.store.LogRuns(ctx, batch); err != nil {
			l.requeue(batch)
			return err
		}
	}
}

// flushTally writes the runs counted since the last time, with those
// counted before that could not be written; what cannot be written now
// waits for the next time.
func (l *logWriter) flushTally(ctx context.Context) error {
	l.mu.Lock()
	t := l.tally
	l.tally = store.Tally{}
	lost := l.lost
	l.lost = 0
	l.mu.Unlock()
	if t.Rows() > 0 && l.counted != nil {
		l.counted(t)
	}
	if !l.count {
		t = store.Tally{}
	}
	l.unwritten.Merge(t)
	if n := l.unwritten.Rows(); n > tallyMax {
		lost += int(l.unwritten.Runs())
		l.unwritten = store.Tally{}
	}
	if lost > 0 {
		l.log.Warn("route analytics: runs not counted while the database could not take them", "runs", lost)
	}
	if l.unwritten.Rows() == 0 {
		return nil
	}
	if err := l.store.CountTally(ctx, l.unwritten); err != nil {
		return err
	}
	l.unwritten = store.Tally{}
	return nil
}

// requeue puts a batch that could not be written back in front of the
// queue, keeping the newest l.max runs.
func (l *logWriter) requeue(batch []store.Run) {
	l.mu.Lock()
	defer l.mu.Unlock()
	all := append(batch, l.pending...)
	if over := len(all) - l.max; over > 0 {
		clear(all[:over])
		all = all[over:]
		l.dropped += over
	}
	l.pending = all
}
