package store

import (
	"context"
	"errors"
	"strings"
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
}

func (r runRead) query() RecordQuery {
	q := RecordQuery{Where: []byte(r.where), ByID: r.byID, ID: r.id, Descending: r.descending, Limit: r.limit}
	if r.sort != "" {
		q.Sort = strings.Split(r.sort, ".")
	}
	return q
}

// SharedRunRecords reads as EachRunRecord does without a lock, for a run
// outside a transaction. Reads that overlap in time are grouped (see
// group), and the same read asked by several requests of a group runs
// once: each of them gets the records of one statement that began after
// it asked, which is what a statement of its own would have read, or
// newer. The data given to each are shared between those requests and
// must not be changed.
func (s *Store) SharedRunRecords(ctx context.Context, project, collection string, q RecordQuery, each func(id int64, data []byte)) error {
	read := runRead{project: project, collection: collection, where: string(q.Where), sort: strings.Join(q.Sort, "."),
		byID: q.ByID, id: q.ID, descending: q.Descending, limit: q.Limit}
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

// readRunRecords runs each distinct read of qs once and gives each query
// its records (nil for a collection that does not exist), in their order.
func readRunRecords(ctx context.Context, db DB, qs []runRead) ([]*[]runRecord, error) {
	found := make([]*[]runRecord, len(qs))
	done := make(map[runRead]*[]runRecord, 1)
	for i, q := range qs {
		if recs, ok := done[q]; ok {
			found[i] = recs
			continue
		}
		recs := make([]runRecord, 0, min(q.limit, 128))
		err := eachRunRecord(ctx, db, q.project, q.collection, q.query(), func(id int64, data []byte) {
			recs = append(recs, runRecord{ID: id, Data: data})
		})
		switch {
		case errors.Is(err, ErrNotFound):
			done[q] = nil
		case err != nil:
			return nil, err
		default:
			done[q], found[i] = &recs, &recs
		}
	}
	return found, nil
}
