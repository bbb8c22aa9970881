package handlers

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing"

	"stencil/store"
)

// BenchmarkRunRoute answers GET /x/… of a route that FETCHes 100 records,
// FILTERs them and RETURNs 10, through the app, on PostgreSQL.
func BenchmarkRunRoute(b *testing.B) {
	ta := newTestApp(b)
	ctx := context.Background()
	p := store.Project{ID: "shop", Name: "Shop", APIPath: "/shop"}
	if err := ta.h.store.CreateProject(ctx, &p, ta.root.ID); err != nil {
		b.Fatal(err)
	}
	if err := ta.h.store.CreateCollection(ctx, &store.Collection{ProjectID: "shop", ID: "books", Name: "Books"}, ta.root.ID); err != nil {
		b.Fatal(err)
	}
	for i := range 100 {
		r := store.Record{ProjectID: "shop", CollectionID: "books", Data: fmt.Appendf(nil, `{"title":"Book %d","genre":%q,"year":%d,"tags":["t%d"]}`, i, [...]string{"sf", "classic"}[i%2], 1900+i, i%7)}
		if err := ta.h.store.CreateRecord(ctx, &r); err != nil {
			b.Fatal(err)
		}
	}
	route := runnable{id: "sf", method: "GET", path: "/books/sf", blocks: []string{fetchBooks,
		`{"type":"FILTER","depth":0,"local_name":"sf","source":"rows","ref_property":"genre","filters":[{"right":` + lit("STRING", "sf") + `,"operation_type":"EQUAL_TO","not":false,"next":"NONE"}]}`,
		`{"type":"FUNCTION","depth":0,"local_name":"page","func":"PAGINATE","params":[` + ref("sf") + `,` + lit("INTEGER", "10") + `]}`,
		`{"type":"RETURN","depth":0,"pairs":` + pairsOf("items", ref("page")) + `,"conditions":[]}`}}
	if status, body := ta.call(b, "POST", "/route/create", `{"project_id":"shop","route":`+route.JSON()+`}`, as(ta.token(b, ta.root))); status != 201 {
		b.Fatal(status, body)
	}
	b.ReportAllocs()
	for b.Loop() {
		resp, err := ta.app.Test(httptest.NewRequest("GET", "/x/shop/books/sf", nil), -1)
		if err != nil || resp.StatusCode != 200 {
			b.Fatal(err)
		}
		resp.Body.Close()
	}
}
