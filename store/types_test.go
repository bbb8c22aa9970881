package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"stencil/schema"
	"stencil/store"
)

// Every type's accepted and refused values at every write path of the
// store — a create, an insert (a route's CREATE, a project file), an
// update whole, a grid cell, an update of many (UPDATE and
// SIMPLE_UPDATE), an import: each accepted value is written, each refused
// one is a violation of its field (1e400 the number range) and writes
// nothing (docs/collections.md, "Typed collections").
func TestEveryTypeAtEveryWritePath(t *testing.T) {
	t.Parallel()
	st, ctx := collectionStore(t)
	book := putRecord(t, st, "shop", "books", `{"title":"Dune"}`)
	c := store.Collection{ProjectID: "shop", ID: "typed", Name: "Typed", Schema: typedSchema(t, `[
		{"name":"t","type":"text","max_length":5},{"name":"i","type":"integer","min":0},{"name":"n","type":"number","max":10},
		{"name":"b","type":"boolean"},{"name":"d","type":"datetime"},{"name":"e","type":"email"},{"name":"u","type":"url"},
		{"name":"s","type":"select","values":["a","b"]},{"name":"m","type":"select","values":["a","b"],"multiple":true},
		{"name":"r","type":"reference","collection":"books"},{"name":"j","type":"json"}]`, false)}
	if err := st.CreateCollection(ctx, &c, 1); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ field, good, bad string }{
		{"t", `"abc"`, `"abcdef"`}, {"t", `"abc"`, `5`},
		{"i", `3`, `3.5`}, {"i", `0`, `-1`}, {"i", `3`, `"3"`},
		{"n", `2.5`, `"2.5"`}, {"n", `10`, `10.5`},
		{"b", `true`, `"true"`},
		{"d", `"2024-05-01T20:30:00Z"`, `"2024-05-01"`},
		{"e", `"ada@example.com"`, `"ada"`},
		{"u", `"https://example.com/x"`, `"ftp://example.com"`},
		{"s", `"a"`, `"c"`}, {"m", `["a","b"]`, `["a","c"]`}, {"m", `["b"]`, `"b"`},
		{"r", fmt.Sprint(book.ID), `999999999`}, {"r", fmt.Sprint(book.ID), `"1"`},
		{"j", `{"any":[1,"x"]}`, `1e400`},
	}
	refused := func(t *testing.T, err error, field string) {
		t.Helper()
		var v *schema.Violation
		switch {
		case field == "j" && errors.Is(err, store.ErrNumberRange):
		case field == "j" && errors.As(err, &v) && v.Field == "" && strings.Contains(v.Message, "64-bit float"): // an import's problem of the record
		case errors.As(err, &v) && v.Field == field:
		default:
			t.Fatalf("got %v, want a violation of %s", err, field)
		}
	}
	doc := func(field, value string) json.RawMessage { return json.RawMessage(`{"` + field + `":` + value + `}`) }
	existing := putRecord(t, st, "shop", "typed", `{"t":"x"}`)
	paths := []struct {
		name  string
		write func(field, value string) error
	}{
		{"create", func(f, v string) error {
			return st.CreateRecord(ctx, &store.Record{ProjectID: "shop", CollectionID: "typed", Data: doc(f, v)})
		}},
		{"insert", func(f, v string) error {
			return st.InsertRecord(ctx, &store.Record{ProjectID: "shop", CollectionID: "typed", Data: doc(f, v)})
		}},
		{"update", func(f, v string) error {
			return st.UpdateRecord(ctx, &store.Record{ProjectID: "shop", CollectionID: "typed", ID: existing.ID, Data: doc(f, v)})
		}},
		{"cell", func(f, v string) error {
			return st.SetRecordField(ctx, &store.Record{ProjectID: "shop", CollectionID: "typed", ID: existing.ID}, f, []byte(v))
		}},
		{"update many", func(f, v string) error {
			_, err := st.UpdateRecords(ctx, "shop", "typed", []store.Record{{ID: existing.ID, Data: doc(f, v)}})
			return err
		}},
		{"import", func(f, v string) error {
			p, problems, err := st.PrepareImport(ctx, "shop", "typed", [][]byte{doc(f, v)})
			switch {
			case err != nil:
				return err
			case len(problems) > 0:
				return &schema.Violation{Field: problems[0].Field, Message: problems[0].Message}
			}
			_, err = st.ImportRecords(ctx, "shop", "typed", p)
			return err
		}},
	}
	for _, p := range paths {
		for _, tc := range cases {
			t.Run(p.name+"/"+tc.field+"="+tc.bad, func(t *testing.T) {
				before := snapshot(t, st, ctx)
				refused(t, p.write(tc.field, tc.bad), tc.field)
				if after := snapshot(t, st, ctx); after != before {
					t.Fatalf("a refused write changed the records:\n%s\n%s", before, after)
				}
				if err := p.write(tc.field, tc.good); err != nil {
					t.Fatalf("%s = %s: %v", tc.field, tc.good, err)
				}
			})
		}
	}
}

// snapshot is the typed collection's records as text.
func snapshot(t *testing.T, st *store.Store, ctx context.Context) string {
	t.Helper()
	recs, err := st.Records(ctx, "shop", "typed", nil, 0, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	out := ""
	for _, r := range recs {
		out += fmt.Sprintf("%d %s %s\n", r.ID, r.Data, r.UpdatedAt)
	}
	return out
}
