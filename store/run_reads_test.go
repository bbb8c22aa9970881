package store_test

import (
	"errors"
	"sync"
	"testing"

	"stencil/store"
)

// TestSharedRunRecords: reads asked while a statement of the same read is
// under way are answered together by the next one, once for all who asked
// it (its records' data shared); a filtered read, an empty and a missing
// collection each as on their own.
func TestSharedRunRecords(t *testing.T) {
	t.Parallel()
	ctx, pool, st := groupedStore(t)
	if _, err := pool.Exec(ctx, `INSERT INTO projects (id, name, api_path) VALUES ('shop', 'Shop', '/shop');
		INSERT INTO collections (project_id, id, name) VALUES ('shop', 'books', 'Books'), ('shop', 'empty', 'Empty');
		INSERT INTO records (project_id, collection_id, data) SELECT 'shop', 'books', jsonb_build_object('n', i, 'odd', i % 2 = 1) FROM generate_series(1, 20) AS i`); err != nil {
		t.Fatal(err)
	}
	release := holdLock(t, ctx, pool, "LOCK TABLE records IN ACCESS EXCLUSIVE MODE")
	type read struct {
		collection, where string
		recs              []store.Record
		err               error
	}
	var wg sync.WaitGroup
	ask := func(r *read) {
		wg.Go(func() {
			r.err = st.SharedRunRecords(ctx, "shop", r.collection, store.RecordQuery{Where: []byte(r.where), Limit: 10}, func(id int64, data []byte) {
				r.recs = append(r.recs, store.Record{ID: id, Data: data})
			})
		})
	}
	// One read of each kind begins its statement, which waits for the
	// lock; then 40 more are asked while those are under way.
	kinds := []read{{collection: "books"}, {collection: "books", where: `{"odd":true}`}, {collection: "empty"}, {collection: "nope"}}
	for i := range kinds {
		ask(&kinds[i])
	}
	until(t, "a statement of each read under way", func() bool { return st.RunReadStatements() == int64(len(kinds)) })
	queued := make([]read, 40)
	for i := range queued {
		queued[i].collection = []string{"books", "books", "books", "empty", "nope"}[i%5]
		if i%10 == 1 {
			queued[i].where = `{"odd":true}`
		}
		ask(&queued[i])
	}
	until(t, "every read queued", func() bool { return st.QueuedRunReadsForTest() == len(queued) })
	release()
	wg.Wait()

	// Each read ran once more, for all who asked it meanwhile.
	if n := st.RunReadStatements(); n != 2*int64(len(kinds)) {
		t.Errorf("%d statements for %d reads of %d kinds, want %d", n, len(queued)+len(kinds), len(kinds), 2*len(kinds))
	}
	datas := map[*byte]int{} // reads of all of books, by where their data are
	for i, r := range queued {
		switch {
		case r.collection == "nope":
			if !errors.Is(r.err, store.ErrNotFound) {
				t.Errorf("read %d of a missing collection: %v", i, r.err)
			}
		case r.err != nil:
			t.Errorf("read %d: %v", i, r.err)
		case r.collection == "empty":
			if len(r.recs) != 0 {
				t.Errorf("read %d of an empty collection: %d records", i, len(r.recs))
			}
		case r.where != "":
			if len(r.recs) != 10 || string(r.recs[0].Data) != `{"n": 1, "odd": true}` || string(r.recs[9].Data) != `{"n": 19, "odd": true}` {
				t.Errorf("read %d, odd records: %d, first %s", i, len(r.recs), r.recs[0].Data)
			}
		default:
			if len(r.recs) != 10 || string(r.recs[0].Data) != `{"n": 1, "odd": true}` || string(r.recs[1].Data) != `{"n": 2, "odd": false}` {
				t.Fatalf("read %d of books: %d records, first %s", i, len(r.recs), r.recs[0].Data)
			}
			datas[&r.recs[0].Data[0]]++
		}
	}
	if len(datas) != 1 {
		t.Errorf("20 queued reads of books ran %d times, want once", len(datas))
	}
}
