package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"stencil/store"
	"stencil/store/storetest"
)

// TestFetchNewestOpen: a route reading "the 20 newest records with status
// open" of a collection of 100,000 answers them, in order, and its read
// is planned on the collection's GIN index (docs/engine.md); a FETCH without a
// limit of such a collection is still the fault it was.
func TestFetchNewestOpen(t *testing.T) {
	t.Parallel()
	ta, h := runApp(t)
	ctx := context.Background()
	if err := ta.h.store.CreateCollection(ctx, &store.Collection{ProjectID: "shop", ID: "tickets", Name: "Tickets"}, ta.root.ID); err != nil {
		t.Fatal(err)
	}
	// 100,000 tickets, one in 25 open, created one a minute.
	if _, err := ta.pool.Exec(ctx, `INSERT INTO records (project_id, collection_id, data)
		SELECT 'shop', 'tickets', jsonb_build_object('n', i, 'status', CASE WHEN i % 25 = 0 THEN 'open' ELSE 'closed' END,
			'created', to_char(timestamp '2026-01-01' + i * interval '1 minute', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'))
		FROM generate_series(1, 100000) i;
		ANALYZE records`); err != nil {
		t.Fatal(err)
	}
	newestRoute("newest_open", "/tickets/open", "created").save(t, ta, h)
	status, body := ta.call(t, "GET", "/x/shop/tickets/open?status=open", "", nil)
	var got struct{ Rows []struct{ N int } }
	if err := json.Unmarshal([]byte(body), &got); status != 200 || err != nil || len(got.Rows) != 20 {
		t.Fatalf("%d %.300s", status, body)
	}
	for i, r := range got.Rows {
		if want := 100000 - 25*i; r.N != want {
			t.Fatalf("row %d is ticket %d, want %d", i, r.N, want)
		}
	}
	// The same by _id: the newest first. Open tickets are found among the
	// nearest records in that order; the three escalated ones, rare, only
	// through the GIN index, and all of them.
	if _, err := ta.pool.Exec(ctx, `UPDATE records SET data = data || '{"status":"escalated"}'
		WHERE project_id = 'shop' AND collection_id = 'tickets' AND (data->>'n')::int IN (7, 77, 777)`); err != nil {
		t.Fatal(err)
	}
	newestRoute("newest_by_id", "/tickets/newest", "_id").save(t, ta, h)
	for status, want := range map[string][]int{"open": {100000, 99975, 99950}, "escalated": {777, 77, 7}} {
		code, body := ta.call(t, "GET", "/x/shop/tickets/newest?status="+status, "", nil)
		var got struct{ Rows []struct{ N int } }
		if err := json.Unmarshal([]byte(body), &got); code != 200 || err != nil || len(got.Rows) < len(want) {
			t.Fatalf("%s: %d %.300s", status, code, body)
		}
		if status == "open" && len(got.Rows) != 20 || status == "escalated" && len(got.Rows) != 3 {
			t.Fatalf("%s: %d rows", status, len(got.Rows))
		}
		for i, n := range want {
			if got.Rows[i].N != n {
				t.Fatalf("%s: row %d is ticket %d, want %d", status, i, got.Rows[i].N, n)
			}
		}
	}
	near := storetest.Explain(t, ta.pool, store.RunRecordsSQLFor(store.RecordQuery{Where: []byte("x"), Sort: []string{"_id"}, Descending: true, Limit: 20}),
		"shop", "tickets", 20, `{"status":"open"}`)
	if !strings.Contains(near, "Index Scan Backward using records_") || !strings.Contains(near, "records_scope_idx") {
		t.Fatalf("the read of the newest is not planned on both indexes:\n%s", near)
	}
	// The statement the route ran, as PostgreSQL plans it.
	if plan := storetest.Explain(t, ta.pool, store.RunRecordsSQLFor(store.RecordQuery{Where: []byte("x"), Sort: []string{"created"}, Descending: true}),
		"shop", "tickets", 20, `{"status":"open"}`, []string{"created"}); !strings.Contains(plan, "records_scope_idx") {
		t.Fatalf("the read is not planned on the GIN index:\n%s", plan)
	}
	// The three books beside the 100,000 tickets are read on the
	// collection's index, never by walking the table in id order: so a
	// prepared statement plans it, after many executions too; and so its
	// read of the newest matches.
	tx, err := ta.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if plan := preparedPlan(t, tx, "books", store.RunRecordsSQL, "('shop', 'books', 10001)"); !strings.Contains(plan, "records_collection_idx") {
		t.Fatalf("a small collection's read is not planned on its index:\n%s", plan)
	}
	newest := store.RunRecordsSQLFor(store.RecordQuery{Where: []byte("x"), Sort: []string{"_id"}, Descending: true, Limit: 20})
	if plan := preparedPlan(t, tx, "newest", newest, `('shop', 'books', 20, '{"title":"Dune"}')`); !strings.Contains(plan, "Index Scan Backward using records_collection_idx") {
		t.Fatalf("a small collection's read of its newest is not planned on its index:\n%s", plan)
	}
	runnable{id: "everything", method: "GET", path: "/tickets/all", blocks: []string{
		`{"type":"FETCH","depth":0,"local_name":"rows","ref_col":"tickets"}`,
	}}.save(t, ta, h)
	if status, body := ta.call(t, "GET", "/x/shop/tickets/all", "", nil); status != 500 || !strings.Contains(body, "more than 10000 records") {
		t.Fatalf("a FETCH without a limit: %d %s", status, body)
	}
}

// TestDeleteThroughHTTP: a route that deletes the record a caller names,
// and a DELETE without targets refused at save.
func TestDeleteThroughHTTP(t *testing.T) {
	t.Parallel()
	ta, h := runApp(t)
	runnable{id: "drop", method: "DELETE", path: "/books/:title", blocks: []string{
		`{"type":"DELETE","depth":0,"ref_col":"books","targets":[{"field":"title","value":` + ref("title") + `}],"conditions":[],"save":true,"local_name":"n"}`,
		`{"type":"RETURN","depth":0,"pairs":` + pairsOf("deleted", ref("n")) + `,"conditions":[]}`,
	}}.save(t, ta, h)
	if status, body := ta.call(t, "DELETE", "/x/shop/books/Emma", "", nil); status != 200 || body != `{"deleted":1}` {
		t.Fatalf("%d %s", status, body)
	}
	if status, body := ta.call(t, "DELETE", "/x/shop/books/Emma", "", nil); status != 200 || body != `{"deleted":0}` {
		t.Fatalf("again: %d %s", status, body)
	}
	if got := ta.records(t, "books"); strings.Contains(got, "Emma") || !strings.Contains(got, "Dune") {
		t.Fatalf("books: %s", got)
	}
	r := runnable{id: "all", method: "DELETE", path: "/books", blocks: []string{
		`{"type":"DELETE","depth":0,"ref_col":"books","targets":[],"conditions":[],"save":true}`,
	}}
	status, body := ta.call(t, "POST", "/route/create", `{"project_id":"shop","route":`+r.JSON()+`}`, h)
	if status != 422 || !strings.Contains(body, `"route.flow.blocks[0].targets":"must not be empty`) {
		t.Fatalf("a DELETE without targets: %d %s", status, body)
	}
	r.blocks[0] = `{"type":"DELETE","depth":0,"ref_col":"books","targets":[{"field":"title","value":` + lit("STRING", "Dune") + `}],"conditions":[],"save":false}`
	status, body = ta.call(t, "POST", "/route/create", `{"project_id":"shop","route":`+r.JSON()+`}`, h)
	if status != 201 || !strings.Contains(body, "has save: false: it writes nothing") {
		t.Fatalf("save false: %d %s", status, body)
	}
}

// TestDeleteInATemplate: a template holding a DELETE (and a FETCH with
// match and sort) shows them in its outline, applies into a route with
// its placeholders filled, and the route deletes what it says.
func TestDeleteInATemplate(t *testing.T) {
	t.Parallel()
	ta, h := runApp(t)
	tmpl := `{"name":"remove_by","description":"Delete by a field","project_id":"shop","method":"DELETE",
		"route_id":"remove_{collection}","route_path":"/{collection}/:key",
		"auth_jwt":{"active":false,"field":"","ref_col":""},"params":{"delimiter":"&","pairs":[]},"body":[],
		"variables":[{"key":"collection","description":"Collection"},{"key":"field","description":"Field to match","default_value":"title"}],
		"flow":{"blocks":[
		  {"type":"DELETE","depth":0,"ref_col":"{collection}","targets":[{"field":"{field}","value":{"ref_var":true,"rtype":"STRING","data":"key"}}],"conditions":[],"save":true,"local_name":"gone"},
		  {"type":"FETCH","depth":0,"local_name":"left","ref_col":"{collection}","match":[{"id":"{field}","data":{"ref_var":true,"rtype":"STRING","data":"key"}}],"sort":{"property":"{field}","descending":true},"limit":null},
		  {"type":"RETURN","depth":0,"pairs":[{"id":"deleted","data":{"ref_var":true,"rtype":"INTEGER","data":"gone"}},{"id":"left","data":{"ref_var":true,"rtype":"ARRAY","data":"left"}}],"conditions":[]}]}}`
	status, body := ta.call(t, "POST", "/route/template/create", tmpl, h)
	if status != 201 {
		t.Fatalf("%d %s", status, body)
	}
	id := dataID(t, body)
	b := browser(ta.signIn(t, "author"))
	status, page := ta.call(t, "GET", fmt.Sprintf("/web/routes/templates/view?id=%d", id), "", b)
	for _, want := range []string{"DELETE", `Targets: <mark class="placeholder">{field}</mark> = key`,
		`Sort by: <mark class="placeholder">{field}</mark>, descending`, `Match (property = value): <mark class="placeholder">{field}</mark> = key`} {
		if status != 200 || !strings.Contains(html.UnescapeString(page), want) {
			t.Errorf("the outline lacks %q", want)
		}
	}
	status, body = ta.call(t, "POST", "/route/template/apply", fmt.Sprintf(`{"id":%d,"project_id":"shop","values":{"collection":"books"}}`, id), h)
	if status != 200 || !strings.Contains(body, `"targets":[{"field":"title"`) || !strings.Contains(body, `"match":[{"id":"title"`) {
		t.Fatalf("apply: %d %s", status, body)
	}
	var applied struct{ Data json.RawMessage }
	if err := json.Unmarshal([]byte(body), &applied); err != nil {
		t.Fatal(err)
	}
	if status, body := ta.call(t, "POST", "/route/create", `{"project_id":"shop","route":`+string(applied.Data)+`}`, h); status != 201 {
		t.Fatalf("create from the template: %d %s", status, body)
	}
	if status, body := ta.call(t, "DELETE", "/x/shop/books/Dune", "", nil); status != 200 || body != `{"deleted":1,"left":[]}` {
		t.Fatalf("run: %d %s", status, body)
	}
}

// TestRecordsByID: a record's _id selects it in a FETCH's match and in the
// targets of SIMPLE_UPDATE and DELETE, and orders a FETCH's sort, although
// the stored data never holds it (it is the record's own id).
func TestRecordsByID(t *testing.T) {
	t.Parallel()
	ta, h := runApp(t)
	recs, err := ta.h.store.Records(context.Background(), "shop", "books", nil, 0, 0, 10)
	if err != nil || len(recs) != 3 {
		t.Fatal(len(recs), err)
	}
	emma := strconv.FormatInt(recs[1].ID, 10)
	idParam := `[{"id":"id","bdtype":"INTEGER"}]`
	runnable{id: "one", method: "GET", path: "/books/one", params: idParam, blocks: []string{
		`{"type":"FETCH","depth":0,"local_name":"rows","ref_col":"books","match":[{"id":"_id","data":` + ref("id") + `}],"sort":null,"limit":null}`,
		`{"type":"RETURN","depth":0,"pairs":` + pairsOf("rows", ref("rows")) + `,"conditions":[]}`,
	}}.save(t, ta, h)
	if status, body := ta.call(t, "GET", "/x/shop/books/one?id="+emma, "", nil); status != 200 || !strings.Contains(body, `"title":"Emma"`) || strings.Contains(body, "Dune") {
		t.Fatalf("match by _id: %d %s", status, body)
	}
	if status, body := ta.call(t, "GET", "/x/shop/books/one?id=999999", "", nil); status != 200 || body != `{"rows":[]}` {
		t.Fatalf("match by an _id no record has: %d %s", status, body)
	}
	runnable{id: "newest", method: "GET", path: "/books/newest", blocks: []string{
		`{"type":"FETCH","depth":0,"local_name":"rows","ref_col":"books","match":null,"sort":{"property":"_id","descending":true},"limit":` + lit("INTEGER", "1") + `}`,
		`{"type":"RETURN","depth":0,"pairs":` + pairsOf("rows", ref("rows")) + `,"conditions":[]}`,
	}}.save(t, ta, h)
	if status, body := ta.call(t, "GET", "/x/shop/books/newest", "", nil); status != 200 || !strings.Contains(body, `"title":"Solaris"`) {
		t.Fatalf("sort by _id descending: %d %s", status, body)
	}
	runnable{id: "rename", method: "PATCH", path: "/books/rename", params: idParam, blocks: []string{
		`{"type":"SIMPLE_UPDATE","depth":0,"ref_col":"books","ref_property":"title","save":true,"targets":[{"field":"_id","value":` + ref("id") + `}],"set":` + lit("STRING", "Persuasion") + `}`,
	}}.save(t, ta, h)
	if status, body := ta.call(t, "PATCH", "/x/shop/books/rename?id="+emma, "", nil); status != 200 {
		t.Fatalf("update by _id: %d %s", status, body)
	}
	if got := ta.records(t, "books"); !strings.Contains(got, "Persuasion") || strings.Contains(got, "Emma") {
		t.Fatalf("after the update by _id: %s", got)
	}
	runnable{id: "drop", method: "DELETE", path: "/books/drop", params: idParam, blocks: []string{
		`{"type":"DELETE","depth":0,"ref_col":"books","targets":[{"field":"_id","value":` + ref("id") + `}],"conditions":[],"save":true,"local_name":"n"}`,
		`{"type":"RETURN","depth":0,"pairs":` + pairsOf("deleted", ref("n")) + `,"conditions":[]}`,
	}}.save(t, ta, h)
	if status, body := ta.call(t, "DELETE", "/x/shop/books/drop?id="+emma, "", nil); status != 200 || body != `{"deleted":1}` {
		t.Fatalf("delete by _id: %d %s", status, body)
	}
	if got := ta.records(t, "books"); strings.Contains(got, "Persuasion") || !strings.Contains(got, "Dune") || !strings.Contains(got, "Solaris") {
		t.Fatalf("after the delete by _id: %s", got)
	}
}

// TestRecordsByIDInThePath: a path parameter is text, and an _id is always
// an integer: "42" selects record 42 in a FETCH's match and in the targets
// of SIMPLE_UPDATE and DELETE; text that is not an id selects none.
func TestRecordsByIDInThePath(t *testing.T) {
	t.Parallel()
	ta, h := runApp(t)
	recs, err := ta.h.store.Records(context.Background(), "shop", "books", nil, 0, 0, 10)
	if err != nil || len(recs) != 3 {
		t.Fatal(len(recs), err)
	}
	emma := strconv.FormatInt(recs[1].ID, 10)
	runnable{id: "one", method: "GET", path: "/books/:id", blocks: []string{
		`{"type":"FETCH","depth":0,"local_name":"rows","ref_col":"books","match":[{"id":"_id","data":` + ref("id") + `}]}`,
		`{"type":"RETURN","depth":0,"pairs":` + pairsOf("rows", ref("rows")) + `,"conditions":[]}`,
	}}.save(t, ta, h)
	runnable{id: "rename", method: "PATCH", path: "/books/:id", blocks: []string{
		`{"type":"SIMPLE_UPDATE","depth":0,"ref_col":"books","ref_property":"title","save":true,"targets":[{"field":"_id","value":` + ref("id") + `}],"set":` + lit("STRING", "Persuasion") + `}`,
	}}.save(t, ta, h)
	runnable{id: "drop", method: "DELETE", path: "/books/:id", blocks: []string{
		`{"type":"DELETE","depth":0,"ref_col":"books","targets":[{"field":"_id","value":` + ref("id") + `}],"conditions":[],"save":true,"local_name":"gone"}`,
		`{"type":"RETURN","depth":0,"pairs":` + pairsOf("gone", ref("gone")) + `,"conditions":[]}`,
	}}.save(t, ta, h)
	ta.run(t, []scenario{
		{name: "match", method: "GET", path: "/x/shop/books/" + emma, status: 200, want: []string{`"title":"Emma"`}, unwanted: []string{"Dune"}},
		{name: "not an id", method: "GET", path: "/x/shop/books/" + emma + "x", status: 200, want: []string{`{"rows":[]}`}},
		{name: "a negative", method: "GET", path: "/x/shop/books/-" + emma, status: 200, want: []string{`{"rows":[]}`}},
		{name: "past 2^53", method: "GET", path: "/x/shop/books/99999999999999999", status: 200, want: []string{`{"rows":[]}`}},
		{name: "update", method: "PATCH", path: "/x/shop/books/" + emma, status: 200},
		{name: "delete nothing for text", method: "DELETE", path: "/x/shop/books/one", status: 200, want: []string{`{"gone":0}`}},
		{name: "delete", method: "DELETE", path: "/x/shop/books/" + emma, status: 200, want: []string{`{"gone":1}`}},
	})
	if got := ta.records(t, "books"); strings.Contains(got, "Emma") || strings.Contains(got, "Persuasion") || !strings.Contains(got, "Dune") {
		t.Fatalf("after the update and delete by a path's _id: %s", got)
	}
}

// TestFetchLimitFromTheQuery: a limit the caller chose out of range is the
// route's fault, and says what it was; a literal one is refused at save.
func TestFetchLimitFromTheQuery(t *testing.T) {
	t.Parallel()
	ta, h := runApp(t)
	runnable{id: "some", method: "GET", path: "/books/some", params: `[{"id":"n","bdtype":"INTEGER"}]`, blocks: []string{
		`{"type":"FETCH","depth":0,"local_name":"rows","ref_col":"books","limit":` + ref("n") + `}`,
		`{"type":"RETURN","depth":0,"pairs":` + pairsOf("rows", ref("rows")) + `,"conditions":[]}`,
	}}.save(t, ta, h)
	zero := runnable{id: "zero", method: "GET", path: "/books/zero", blocks: []string{
		`{"type":"FETCH","depth":0,"local_name":"rows","ref_col":"books","limit":` + lit("INTEGER", "0") + `}`,
	}}
	ta.run(t, []scenario{
		{name: "a limit of 0", method: "GET", path: "/x/shop/books/some?n=0", status: 500,
			want: []string{`"Error: flow.blocks[0] (FETCH): limit must be a whole number from 1 to 10000, not 0"`}},
		{name: "a limit of 1", method: "GET", path: "/x/shop/books/some?n=1", status: 200, want: []string{`"title":"Dune"`}, unwanted: []string{"Emma"}},
		{name: "a literal limit of 0", method: "POST", path: "/route/create", headers: h, body: `{"project_id":"shop","route":` + zero.JSON() + `}`, status: 422,
			want: []string{`"route.flow.blocks[0].limit.data":"must be a whole number from 1 to 10000"`}},
	})
}

// newestRoute reads the 20 newest tickets whose status is the query's,
// newest by the property sort.
func newestRoute(id, path, sort string) runnable {
	return runnable{id: id, method: "GET", path: path, params: `[{"id":"status","bdtype":"STRING"}]`, blocks: []string{
		`{"type":"FETCH","depth":0,"local_name":"rows","ref_col":"tickets","match":[{"id":"status","data":` + ref("status") + `}],` +
			`"sort":{"property":"` + sort + `","descending":true},"limit":` + lit("INTEGER", "20") + `}`,
		`{"type":"RETURN","depth":0,"pairs":` + pairsOf("rows", ref("rows")) + `,"conditions":[]}`,
	}}
}

// preparedPlan prepares sql as name, executes it ten times with args (a
// parenthesised list), and returns the plan PostgreSQL then keeps for it.
func preparedPlan(t *testing.T, tx pgx.Tx, name, sql, args string) string {
	t.Helper()
	ctx := context.Background()
	if _, err := tx.Exec(ctx, "PREPARE "+name+" AS "+sql); err != nil {
		t.Fatal(err)
	}
	for range 10 {
		if _, err := tx.Exec(ctx, "EXECUTE "+name+args); err != nil {
			t.Fatal(err)
		}
	}
	return storetest.Explain(t, tx, "EXECUTE "+name+args)
}
