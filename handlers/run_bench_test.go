package handlers

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"stencil/store"
)

// BenchmarkRunRoute answers GET /x/… of a route that FETCHes 100 records,
// FILTERs them and RETURNs 10, through the app, on PostgreSQL.
func BenchmarkRunRoute(b *testing.B) {
	ta := benchShop(b, func(i int) []byte {
		return fmt.Appendf(nil, `{"title":"Book %d","genre":%q,"year":%d,"tags":["t%d"]}`, i, [...]string{"sf", "classic"}[i%2], 1900+i, i%7)
	})
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

// BenchmarkRouteTests100 runs a project's 100 tests of simple routes (10
// routes, each a FETCH of 100 records and a RETURN, 10 tests each with a
// status, a body subset and a path check) through POST /route/test/run:
// SPEC 18's goal is under a second (docs/tests.md).
func BenchmarkRouteTests100(b *testing.B) {
	ta := benchShop(b, func(i int) []byte { return fmt.Appendf(nil, `{"title":"Book %d","year":%d}`, i, 1900+i) })
	h := as(ta.token(b, ta.root))
	for r := range 10 {
		route := runnable{id: fmt.Sprintf("list_%d", r), method: "GET", path: fmt.Sprintf("/books/%d", r), params: `[{"id":"n","bdtype":"INTEGER"}]`,
			blocks: []string{fetchBooks, `{"type":"RETURN","depth":0,"pairs":` + pairsOf("items", ref("rows"), "n", ref("n")) + `,"conditions":[]}`}}
		if status, body := ta.call(b, "POST", "/route/create", `{"project_id":"shop","route":`+route.JSON()+`}`, h); status != 201 {
			b.Fatal(status, body)
		}
		for i := range 10 {
			test := fmt.Sprintf(`{"project_id":"shop","route_id":"list_%d","name":"t%d","request":{"path":"/books/%d","query":"n=%d","caller":"anonymous"},
				"expect":{"status":200,"body":{"n":%d},"paths":[{"path":"items","op":"length","value":100},{"path":"items.99.year","op":"equals","value":1999}]}}`, r, i, r, i, i)
			if status, body := ta.call(b, "POST", "/route/test/create", test, h); status != 201 {
				b.Fatal(status, body)
			}
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		status, body := ta.call(b, "POST", "/route/test/run", `{"project_id":"shop"}`, h)
		if status != 200 || !strings.Contains(body, `"passed":100,"failed":0`) {
			b.Fatal(status, body[:min(len(body), 400)])
		}
	}
}

// benchShop is an app with project shop and its collection books of 100
// records, record i's data made by data.
func benchShop(b *testing.B, data func(i int) []byte) *testApp {
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
		r := store.Record{ProjectID: "shop", CollectionID: "books", Data: data(i)}
		if err := ta.h.store.CreateRecord(ctx, &r); err != nil {
			b.Fatal(err)
		}
	}
	return ta
}
