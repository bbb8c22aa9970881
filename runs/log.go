package runs

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"stencil/store"
)

// logWriter collects the runs of routes and writes them in batches (one COPY
// a second, or sooner when many wait), so that a run's answer never waits
// for its log row. While the database cannot take them it keeps at most
// logMax runs, the oldest going first.
type logWriter struct {
	store  *store.Store
	log    *slog.Logger
	count  bool              // count the runs for route analytics (ROUTE_STATS)
	logged func([]store.Run) // told of the runs written, when set

	mu      sync.Mutex
	pending []store.Run
	first   int64 // the sequence number of pending[0]
	dropped int
	kick    chan struct{}
}

const (
	logBatch = 1000
	logMax   = 100_000
)

func newLogWriter(st *store.Store, count bool, logged func([]store.Run), log *slog.Logger) *logWriter {
	return &logWriter{store: st, count: count, logged: logged, log: log, kick: make(chan struct{}, 1)}
}

// add queues a run for writing.
func (l *logWriter) add(r store.Run) {
	l.mu.Lock()
	if len(l.pending) >= logMax {
		l.pending = l.pending[1:]
		l.first++
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

// run writes the queued runs until ctx ends, and then once more.
func (l *logWriter) run(ctx context.Context) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			final, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := l.flush(final); err != nil {
				l.log.Error("run log: final write", "err", err)
			}
			return
		case <-tick.C:
		case <-l.kick:
		}
		if err := l.flush(ctx); err != nil && ctx.Err() == nil {
			l.log.Error("run log: write", "err", err)
		}
	}
}

// flush writes what is queued; what cannot be written waits for the next
// time.
func (l *logWriter) flush(ctx context.Context) error {
	for {
		l.mu.Lock()
		batch := l.pending[:min(len(l.pending), logBatch):min(len(l.pending), logBatch)]
		next := l.first + int64(len(batch)) // the first run after the batch
		dropped := l.dropped
		l.dropped = 0
		l.mu.Unlock()
		if dropped > 0 {
			l.log.Warn("run log: runs dropped while the database could not take them", "runs", dropped)
		}
		if len(batch) == 0 {
			return nil
		}
		if err := l.store.LogRuns(ctx, batch, l.count); err != nil {
			return err
		}
		if l.logged != nil && l.count {
			l.logged(batch)
		}
		l.mu.Lock()
		// What add dropped meanwhile came off the front too.
		if cut := next - l.first; cut > 0 {
			l.pending = l.pending[cut:]
			l.first = next
		}
		l.mu.Unlock()
	}
}
