package store_test

import (
	"context"
	"errors"
	"testing"

	"stencil/store"
)

// beginRunsOfTwo adds two records to shop's books and begins a BeginRuns
// transaction, rolled back when the test ends unless committed.
func beginRunsOfTwo(t *testing.T, st *store.Store) (*store.Tx, store.Record, store.Record) {
	t.Helper()
	ctx := context.Background()
	a := putRecord(t, st, "shop", "books", `{"n":0}`)
	b := putRecord(t, st, "shop", "books", `{"n":0}`)
	tx, err := st.BeginRuns(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(ctx) })
	return tx, a, b
}

// A run whose statement never reached the server (its time was up before
// it was sent) leaves what the run before it held back to be sent, and
// its undo takes nothing of that run back (docs/engine.md, batches).
func TestRunsTxKeepsWhatAStatementNotSentCarried(t *testing.T) {
	t.Parallel()
	st, ctx := collectionStore(t)
	tx, a, b := beginRunsOfTwo(t, st)
	// Run 0 writes a and b; the write of b is held back.
	if _, err := tx.UpdateRecords(ctx, "shop", "books", []store.Record{{ID: a.ID, Data: []byte(`{"n":1}`)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.UpdateRecords(ctx, "shop", "books", []store.Record{{ID: b.ID, Data: []byte(`{"n":1}`)}}); err != nil {
		t.Fatal(err)
	}
	tx.NextRun()
	over, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := tx.RunRecords(over, "shop", "books", store.RecordQuery{Limit: 10}); !errors.Is(err, context.Canceled) {
		t.Fatalf("a statement whose time is up: %v", err)
	}
	if late := tx.LateFailure(); late != nil {
		t.Fatalf("nothing was sent, yet %v", late)
	}
	if err := tx.UndoRun(ctx); err != nil {
		t.Fatal(err)
	}
	if err := tx.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	for _, id := range []int64{a.ID, b.ID} {
		if r, err := st.Record(ctx, "shop", "books", id); err != nil || string(r.Data) != `{"n": 1}` {
			t.Fatalf("run 0's write of %d: %s %v", id, r.Data, err)
		}
	}
}

// A held-back write that fails with the next run's statement is told to
// the batch as that earlier run's failure, once, whatever the next run
// made of its error.
func TestRunsTxLateFailureIsTheEarlierRuns(t *testing.T) {
	t.Parallel()
	st, ctx := collectionStore(t)
	if _, err := st.Pool().Exec(ctx, `CREATE FUNCTION refuse_boom() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN IF NEW.data->>'boom' = 'true' THEN RAISE EXCEPTION 'boom refused'; END IF; RETURN NEW; END $$;
		CREATE TRIGGER refuse_boom BEFORE UPDATE ON records FOR EACH ROW EXECUTE FUNCTION refuse_boom()`); err != nil {
		t.Fatal(err)
	}
	tx, a, b := beginRunsOfTwo(t, st)
	if _, err := tx.UpdateRecords(ctx, "shop", "books", []store.Record{{ID: a.ID, Data: []byte(`{"boom":true}`)}}); err != nil {
		t.Fatal(err)
	}
	tx.NextRun()
	_, err := tx.RunRecords(ctx, "shop", "books", store.RecordQuery{Limit: 10})
	var earlier *store.EarlierRunError
	if !errors.As(err, &earlier) || earlier.Run != 0 {
		t.Fatalf("run 1's statement: %v", err)
	}
	if late := tx.LateFailure(); late == nil || late.Run != 0 {
		t.Fatalf("the late failure: %v", late)
	}
	if late := tx.LateFailure(); late != nil {
		t.Fatalf("told twice: %v", late)
	}
	if err := tx.UndoEarlierRun(ctx); err != nil {
		t.Fatal(err)
	}
	// Run 1 begins again within run 0's savepoint, and commits.
	if _, err := tx.UpdateRecords(ctx, "shop", "books", []store.Record{{ID: b.ID, Data: []byte(`{"n":2}`)}}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[int64]string{a.ID: `{"n": 0}`, b.ID: `{"n": 2}`} {
		if r, err := st.Record(ctx, "shop", "books", id); err != nil || string(r.Data) != want {
			t.Fatalf("record %d: %s %v, want %s", id, r.Data, err, want)
		}
	}
}
