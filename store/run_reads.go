package store

import (
	"context"
	"errors"
	"slices"
)

// RunRecord is a record as a run reads it: its id and its data, the stored
// JSON.
type RunRecord struct {
	ID   int64
	Data []byte
}

// runRead is one read of a run outside a transaction: a collection of a
// project, a containment filter ("" for none) and a limit.
type runRead struct {
	project, collection, where string
	limit                      int
}

// SharedRunRecords reads as RunRecords does without a lock, for a run
// outside a transaction. Reads that overlap in time are grouped (see
// group), and the same read asked by several requests of a group runs
// once: each of them gets the records of one statement that began after
// it asked, which is what a statement of its own would have read, or
// newer. The records' data are shared between those requests and must
// not be changed; the slice is each caller's own.
func (s *Store) SharedRunRecords(ctx context.Context, project, collection string, where []byte, limit int) ([]RunRecord, error) {
	recs, err := s.groups.runReads.do(ctx, s.db, runRead{project: project, collection: collection, where: string(where), limit: limit})
	return slices.Clone(recs), err
}

// RunReadStatements is how many statements the shared run reads have run.
func (s *Store) RunReadStatements() int64 {
	return s.groups.runReads.statements.Load()
}

// readRunRecords runs each distinct read of qs once and gives each query
// its records (nil for a collection that does not exist), in their order.
func readRunRecords(ctx context.Context, db DB, qs []runRead) ([]*[]RunRecord, error) {
	found := make([]*[]RunRecord, len(qs))
	done := make(map[runRead]*[]RunRecord, 1)
	for i, q := range qs {
		if recs, ok := done[q]; ok {
			found[i] = recs
			continue
		}
		recs := []RunRecord{}
		err := eachRunRecord(ctx, db, q.project, q.collection, []byte(q.where), q.limit, false, func(id int64, data []byte) {
			recs = append(recs, RunRecord{ID: id, Data: data})
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
