package store

import (
	"context"
	"slices"
	"stencil/schema"
	"strings"
	"sync"
	"sync/atomic"
)

// runRecord is a record as a run reads it: its id and its data, the stored
// JSON.
type runRecord struct {
	ID   int64
	Data []byte
}

// runRead is one read of a run outside a transaction: a collection of a
// project, a containment filter ("" for none), an id (with byID), an order
// (a dot path joined by ".", "" for none) and a limit.
type runRead struct {
	project, collection, where, sort string
	byID                             bool
	id                               int64
	descending                       bool
	limit                            int
	// by, byValue and sortBy: RecordQuery's (a field's index read).
	by      *schema.Field
	byValue string
	sortBy  *schema.Field
}

func (r runRead) query() RecordQuery {
	q := RecordQuery{Where: []byte(r.where), ByID: r.byID, ID: r.id, Descending: r.descending, Limit: r.limit, by: r.by, byValue: r.byValue, sortBy: r.sortBy}
	if r.sort != "" {
		q.Sort = strings.Split(r.sort, ".")
	}
	return q
}

// SharedRunRecords reads as EachRunRecord does without a lock, for a run
// outside a transaction. The same read asked by requests that overlap in
// time runs once for all of them (see flights): each of them gets the
// records of one statement that began after it asked, which is what a
// statement of its own would have read, or newer. Different reads never
// wait for each other. The data given to each are shared between those
// requests and must not be changed.
func (s *Store) SharedRunRecords(ctx context.Context, project, collection string, q RecordQuery, each func(id int64, data []byte)) (err error) {
	defer wrap(&err, "shared run records", project, collection)
	s.indexedMatch(ctx, project, collection, &q)
	read := runRead{project: project, collection: collection, where: string(q.Where), sort: strings.Join(q.Sort, "."),
		byID: q.ByID, id: q.ID, descending: q.Descending, limit: q.Limit, by: q.by, byValue: q.byValue, sortBy: q.sortBy}
	recs, err := s.groups.runReads.do(ctx, s.db, read)
	for _, r := range recs {
		each(r.ID, r.Data)
	}
	return err
}

// RunReadStatements is how many statements the shared run reads have run.
func (s *Store) RunReadStatements() int64 {
	return s.groups.runReads.statements.Load()
}

// flights runs the shared run reads: one statement at a time for each
// distinct read, which every request that asked it while the statement
// before was under way waits for and shares. Under load, the same read of
// many runs costs one statement after another, each answering all the
// requests that came during the one before; distinct reads run side by
// side, on connections of their own. A flight's goroutine ends when no
// request waits, so a Store owns no goroutine while it is idle.
type flights struct {
	mu         sync.Mutex
	reads      map[runRead]*flight
	statements atomic.Int64
}

// flight is a read's requests waiting for its next statement, and whether
// a goroutine runs its statements.
type flight struct {
	waiting []*sharedRead
	flying  bool
}

// sharedRead is one request of a read, then its outcome.
type sharedRead struct {
	ctx  context.Context
	recs []runRecord
	err  error
	done chan struct{}
}

func newFlights() *flights { return &flights{reads: map[runRead]*flight{}} }

// do returns the records q finds (ErrNotFound for a missing collection)
// from the next statement of q that begins, or ctx's error when it ends
// first.
func (f *flights) do(ctx context.Context, db DB, q runRead) ([]runRecord, error) {
	if inTransaction(db) {
		return f.read(ctx, db, q) // its own, in the transaction
	}
	r := &sharedRead{ctx: ctx, done: make(chan struct{})}
	f.mu.Lock()
	fl := f.reads[q]
	if fl == nil {
		fl = &flight{}
		f.reads[q] = fl
	}
	fl.waiting = append(fl.waiting, r)
	if !fl.flying {
		fl.flying = true
		go f.fly(db, q, fl)
	}
	f.mu.Unlock()
	select {
	case <-r.done:
		return r.recs, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// fly runs q's statements while requests wait for one.
func (f *flights) fly(db DB, q runRead, fl *flight) {
	for {
		f.mu.Lock()
		batch := fl.waiting
		fl.waiting = nil
		if len(batch) == 0 {
			fl.flying = false
			delete(f.reads, q)
			f.mu.Unlock()
			return
		}
		f.mu.Unlock()
		live := slices.DeleteFunc(batch, func(r *sharedRead) bool {
			if err := r.ctx.Err(); err != nil {
				r.err = err
				close(r.done)
				return true
			}
			return false
		})
		if len(live) == 0 {
			continue
		}
		// The statement serves many requests, and so runs under none of
		// their contexts.
		ctx, cancel := context.WithTimeout(context.Background(), groupTimeout)
		recs, err := f.read(ctx, db, q)
		cancel()
		for _, r := range live {
			r.recs, r.err = recs, err
			close(r.done)
		}
	}
}

// read runs one statement of q.
func (f *flights) read(ctx context.Context, db DB, q runRead) ([]runRecord, error) {
	f.statements.Add(1)
	recs := make([]runRecord, 0, min(q.limit, 128))
	err := eachRunRecord(ctx, db, q.project, q.collection, q.query(), func(id int64, data []byte) {
		recs = append(recs, runRecord{ID: id, Data: data})
	})
	return recs, err
}

// waitingForTest is how many requests wait for a statement of their read.
func (f *flights) waitingForTest() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, fl := range f.reads {
		n += len(fl.waiting)
	}
	return n
}
