package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"stencil/store"
)

// TestRecordCell: the records grid's edit of one cell sets that field and
// leaves the record's others as they are, also when two cells of one
// record are saved at once; a value that is not JSON, a number PostgreSQL
// cannot hold, a record grown past 64 KiB, a missing record, a reader and
// an outsider are refused and change nothing.
func TestRecordCell(t *testing.T) {
	t.Parallel()
	ta, h := runApp(t)
	ctx := context.Background()
	recs, err := ta.h.store.Records(ctx, "shop", "books", nil, 0, 0, 10)
	if err != nil || len(recs) != 3 {
		t.Fatalf("records: %v %v", recs, err)
	}
	id := recs[0].ID
	cell := func(field, value string) string {
		b, _ := json.Marshal(map[string]any{"project_id": "shop", "collection_id": "books", "id": id, "field": field, "value": value})
		return string(b)
	}
	viewer := ta.newUser(t, "reader", store.RoleViewer)
	if err := ta.h.store.AddMember(ctx, "shop", viewer.ID, store.MembershipRole(viewer.Role)); err != nil {
		t.Fatal(err)
	}
	outsider := as(ta.token(t, ta.newUser(t, "stranger", store.RoleAuthor)))
	ta.run(t, []scenario{
		{name: "a number", method: "PATCH", path: "/web/data/cell", body: cell("year", "1966"), headers: h, status: 200,
			want: []string{`"message":"Record ` + fmt.Sprint(id) + `: year set"`, `"text":"1966"`, `"title":"Dune"`, `"tags":["sf"]`}},
		{name: "a new field", method: "PATCH", path: "/web/data/cell", body: cell("price", `"9.99"`), headers: h, status: 200, want: []string{`"text":"9.99"`, `"price":"9.99"`}},
		{name: "not JSON", method: "PATCH", path: "/web/data/cell", body: cell("year", "19 66"), headers: h, status: 422, want: []string{"Error: value is not valid JSON"}},
		{name: "a number too large", method: "PATCH", path: "/web/data/cell", body: cell("year", "1e200000"), headers: h, status: 422, want: []string{"value holds a number a 64-bit float cannot keep"}},
		{name: "a number past float64", method: "PATCH", path: "/web/data/cell", body: cell("year", "1e400"), headers: h, status: 422, want: []string{"value holds a number a 64-bit float cannot keep"}},
		{name: "a record grown past 64 KiB", method: "PATCH", path: "/web/data/cell", body: cell("notes", `"`+strings.Repeat("x", 65530)+`"`), headers: h, status: 422, want: []string{"Error: value would make the record larger than 64 KiB"}},
		{name: "no field", method: "PATCH", path: "/web/data/cell", body: cell("", "1"), headers: h, status: 422, want: []string{"Error: field must not be empty"}},
		{name: "a missing record", method: "PATCH", path: "/web/data/cell", body: strings.Replace(cell("year", "1"), fmt.Sprintf(`"id":%d`, id), `"id":999999`, 1), headers: h, status: 404},
		{name: "a reader", method: "PATCH", path: "/web/data/cell", body: cell("year", "1"), headers: as(ta.token(t, viewer)), status: 403},
		{name: "an outsider", method: "PATCH", path: "/web/data/cell", body: cell("year", "1"), headers: outsider, status: 403},
	})
	got, err := ta.h.store.Record(ctx, "shop", "books", id)
	if err != nil || string(got.Data) != `{"tags": ["sf"], "year": 1966, "price": "9.99", "title": "Dune"}` {
		t.Fatalf("after the refusals the record is %s, %v", got.Data, err)
	}

	// Two cells of one record saved at once, eight times over: each save
	// keeps the other's field.
	for round := range 8 {
		var wg sync.WaitGroup
		for _, field := range []string{"a", "b"} {
			wg.Go(func() {
				if status, body := ta.call(t, "PATCH", "/web/data/cell", cell(field, fmt.Sprint(round)), h); status != 200 {
					t.Errorf("%s in round %d: %d %s", field, round, status, body)
				}
			})
		}
		wg.Wait()
		got, err := ta.h.store.Record(ctx, "shop", "books", id)
		var fields map[string]any
		if err != nil || json.Unmarshal(got.Data, &fields) != nil || fields["a"] != float64(round) || fields["b"] != float64(round) || fields["title"] != "Dune" {
			t.Fatalf("round %d: two cells saved at once leave %s, %v", round, got.Data, err)
		}
	}
}
