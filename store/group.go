package store

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// A group runs the statements of requests that overlap in time as one:
// each request's query is queued, and a worker runs statements, each
// taking every query queued when it starts (at most groupBatch) and
// answering each its own row. A query that finds no statement running
// runs alone and at once, so grouping adds no wait; groups form only while
// a statement is already running, which is when a statement per request
// costs most: a round trip, a wake-up of a server process, and for a write
// a commit and its WAL flush. One statement at a time makes the largest
// groups, and so the fewest statements (docs/performance.md: vault reads
// at about 7,500 a second with four at once, 12,900 with one); another
// worker starts only while more than a batch waits for each running,
// up to maxWorkers. Workers end when the queue is empty, so a Store owns
// no goroutine while it is idle.
type group[Q, R any] struct {
	// run answers qs in one statement: one result per query, in their
	// order, nil where the query found nothing.
	run        func(ctx context.Context, db DB, qs []Q) ([]*R, error)
	queue      chan *queued[Q, R]
	maxWorkers int
	mu         sync.Mutex
	workers    int
	statements atomic.Int64
}

const (
	// groupWorkers is how many statements of a group may run at once,
	// when more than a batch waits for each.
	groupWorkers = 4
	groupBatch   = 256
	// groupTimeout bounds a group's statement, which serves many requests
	// and so runs under none of their contexts.
	groupTimeout = 10 * time.Second
)

// queued is one query waiting for its statement and, once done is closed,
// its outcome.
type queued[Q, R any] struct {
	ctx   context.Context
	query Q
	found *R
	err   error
	done  chan struct{}
}

func newGroup[Q, R any](workers int, run func(ctx context.Context, db DB, qs []Q) ([]*R, error)) *group[Q, R] {
	return &group[Q, R]{run: run, maxWorkers: workers, queue: make(chan *queued[Q, R], 4*groupBatch)}
}

// do returns what q finds (ErrNotFound when it finds nothing). On a
// transaction, q runs in it, alone. Otherwise q is queued and do makes sure
// a worker will take it, then waits for its outcome or for ctx to end. A
// query whose context ended before its statement started does not run; one
// whose context ends while the statement runs still runs (a vault read is
// then logged without its value being used, which errs on the audit's
// side).
func (g *group[Q, R]) do(ctx context.Context, db DB, q Q) (R, error) {
	var zero R
	if inTransaction(db) {
		found, err := g.run(ctx, db, []Q{q})
		switch {
		case err != nil:
			return zero, err
		case found[0] == nil:
			return zero, ErrNotFound
		}
		return *found[0], nil
	}
	r := &queued[Q, R]{ctx: ctx, query: q, done: make(chan struct{})}
	select {
	case g.queue <- r:
	case <-ctx.Done():
		return zero, ctx.Err()
	}
	g.mu.Lock()
	if g.workers == 0 || g.workers < g.maxWorkers && len(g.queue) > g.workers*groupBatch {
		g.workers++
		go g.work(db)
	}
	g.mu.Unlock()
	select {
	case <-r.done:
		if r.err != nil {
			return zero, r.err
		}
		return *r.found, nil
	case <-ctx.Done():
		return zero, ctx.Err()
	}
}

// inTransaction reports whether db is a transaction rather than the pool.
func inTransaction(db DB) bool {
	_, ok := db.(pgx.Tx)
	return ok
}

// collectAt reads the rows of a group's statement, each led by the
// position of its query (from 1), into n results, nil where no row came.
func collectAt[R any](rows pgx.Rows, n int, scan func(row pgx.Rows, at *int64, r *R) error) ([]*R, error) {
	defer rows.Close()
	found := make([]*R, n)
	for rows.Next() {
		var at int64
		r := new(R)
		if err := scan(rows, &at, r); err != nil {
			return nil, err
		}
		found[at-1] = r
	}
	return found, rows.Err()
}

// work runs statements while queries are queued. It checks for an empty
// queue under the lock that do takes after queuing, so a query is never
// left without a worker.
func (g *group[Q, R]) work(db DB) {
	batch := make([]*queued[Q, R], 0, groupBatch)
	for {
		var first *queued[Q, R]
		select {
		case first = <-g.queue:
		default:
			g.mu.Lock()
			if len(g.queue) == 0 {
				g.workers--
				g.mu.Unlock()
				return
			}
			g.mu.Unlock()
			continue
		}
		batch = append(batch[:0], first)
	drain:
		for len(batch) < groupBatch {
			select {
			case r := <-g.queue:
				batch = append(batch, r)
			default:
				break drain
			}
		}
		g.runBatch(db, batch)
	}
}

// runBatch runs the batch's live queries in one statement and hands each
// its outcome.
func (g *group[Q, R]) runBatch(db DB, batch []*queued[Q, R]) {
	var live []*queued[Q, R]
	var qs []Q
	for _, r := range batch {
		if err := r.ctx.Err(); err != nil {
			r.err = err
			close(r.done)
			continue
		}
		live, qs = append(live, r), append(qs, r.query)
	}
	if len(live) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), groupTimeout)
	defer cancel()
	g.statements.Add(1)
	found, err := g.run(ctx, db, qs)
	for i, r := range live {
		switch {
		case err != nil:
			r.err = err
		case found[i] == nil:
			r.err = ErrNotFound
		default:
			r.found = found[i]
		}
		close(r.done)
	}
}
