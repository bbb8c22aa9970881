package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"stencil/schema"
	"stencil/store"
)

// Imports into a collection with a unique field, eight at once, each of
// 50 records of which one holds the same address: exactly one import is
// written, whole; the others are refused — by the check of the stored
// records when one was written before theirs was prepared, else by the
// unique index — and write nothing (docs/collections.md, "CSV").
func TestImportsBesideEachOther(t *testing.T) {
	t.Parallel()
	st, ctx := collectionStore(t)
	c := store.Collection{ProjectID: "shop", ID: "people", Name: "People",
		Schema: typedSchema(t, `[{"name":"email","type":"email","unique":true},{"name":"n","type":"integer"}]`, false)}
	if err := st.CreateCollection(ctx, &c, 1); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	results := make(chan error, 8)
	for w := range 8 {
		docs := [][]byte{[]byte(`{"email":"shared@example.com","n":0}`)}
		for i := 1; i < 50; i++ {
			docs = append(docs, fmt.Appendf(nil, `{"email":"w%d-%d@example.com","n":%d}`, w, i, i))
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			prepared, problems, err := st.PrepareImport(context.Background(), "shop", "people", docs)
			if err == nil && len(problems) == 1 && problems[0].Message == "must be unique: a stored record holds it" {
				// Checked after another import was written.
				results <- &schema.Violation{Field: "email", Message: "must be unique", Conflict: true}
				return
			}
			if err != nil || len(problems) > 0 {
				results <- fmt.Errorf("prepare: %v %v", problems, err)
				return
			}
			n, err := st.ImportRecords(context.Background(), "shop", "people", prepared)
			if err == nil && n != 50 {
				err = fmt.Errorf("%d records written of 50", n)
			}
			results <- err
		}()
	}
	wg.Wait()
	close(results)
	won := 0
	for err := range results {
		var v *schema.Violation
		switch {
		case err == nil:
			won++
		case errors.As(err, &v) && v.Conflict && v.Error() == "data.email must be unique":
		default:
			t.Fatalf("an import got %v", err)
		}
	}
	if won != 1 {
		t.Fatalf("%d imports of one address were written", won)
	}
	recs, err := st.Records(ctx, "shop", "people", nil, 0, 0, 1000)
	if err != nil || len(recs) != 50 {
		t.Fatalf("%d records after the imports (want the 50 of one): %v", len(recs), err)
	}
}
