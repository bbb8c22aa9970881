package handlers

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"stencil/store"
)

func TestCollectionsAPI(t *testing.T) {
	t.Parallel()
	ta, h := templateApp(t) // an AUTHOR member of project shop
	admin := ta.newUser(t, "boss", store.RoleAdmin)
	if err := ta.h.store.AddMember(context.Background(), "shop", admin.ID, store.MembershipRole(admin.Role)); err != nil {
		t.Fatal(err)
	}
	a := as(ta.token(t, admin))
	big := `{"project_id":"shop","collection_id":"books","data":{"x":"` + strings.Repeat("a", store.MaxRecordBytes) + `"}}`
	ta.run(t, []scenario{
		{name: "create a collection", method: "POST", path: "/collection/create", headers: a, body: `{"project_id":"shop","id":"books","name":"Books","description":"All"}`,
			status: 201, want: []string{`"id":"books"`, `"record_count":0`}},
		{name: "the same id again", method: "POST", path: "/collection/create", headers: a, body: `{"project_id":"shop","id":"books","name":"Again"}`,
			status: 422, want: []string{`"id":"is already used by another collection of this project"`}},
		{name: "an id of the wrong shape", method: "POST", path: "/collection/create", headers: a, body: `{"project_id":"shop","id":"Books!","name":"x"}`,
			status: 422, want: []string{`"id":"must be 3–50 lowercase letters`}},
		{name: "no name", method: "POST", path: "/collection/create", headers: a, body: `{"project_id":"shop","id":"other"}`, status: 400},
		{name: "an author may not create one", method: "POST", path: "/collection/create", headers: h, body: `{"project_id":"shop","id":"mine","name":"x"}`, status: 403},
		{name: "a record", method: "POST", path: "/data/create", headers: h, body: `{"project_id":"shop","collection_id":"books","data":{"title":"Dune","year":1965,"tags":["sf"]}}`,
			status: 201, want: []string{`"id":1,`, `"tags":["sf"]`, `"title":"Dune"`, `"year":1965`}},
		{name: "another", method: "POST", path: "/data/create", headers: h, body: `{"project_id":"shop","collection_id":"books","data":{"title":"Emma","year":"1815"}}`, status: 201},
		{name: "data that is an array", method: "POST", path: "/data/create", headers: h, body: `{"project_id":"shop","collection_id":"books","data":[1]}`,
			status: 400, want: []string{"Error: data must be a JSON object"}},
		{name: "data that is a string", method: "POST", path: "/data/create", headers: h, body: `{"project_id":"shop","collection_id":"books","data":"{}"}`, status: 400},
		{name: "data that is null", method: "POST", path: "/data/create", headers: h, body: `{"project_id":"shop","collection_id":"books","data":null}`, status: 400},
		{name: "no data", method: "POST", path: "/data/create", headers: h, body: `{"project_id":"shop","collection_id":"books"}`, status: 400, want: []string{"data is required"}},
		{name: "data over 64 KiB", method: "POST", path: "/data/create", headers: h, body: big, status: 422, want: []string{`"data":"must be at most 64 KiB`}},
		// docs/architecture.md: text with NUL or that is not Unicode never reaches the
		// database — also when it is spelled as a JSON escape (PostgreSQL's
		// jsonb refuses \u0000 and a lone surrogate: a 500 before).
		{name: "a lone surrogate in data", method: "POST", path: "/data/create", headers: h, body: `{"project_id":"shop","collection_id":"books","data":{"a":"\ud800"}}`,
			status: 400, want: []string{"Error: data.a contains a NUL character or invalid UTF-8"}},
		{name: "a lone low surrogate in a key", method: "POST", path: "/data/create", headers: h, body: `{"project_id":"shop","collection_id":"books","data":{"\uDC00x":1}}`,
			status: 400, want: []string{"contains a NUL character or invalid UTF-8"}},
		{name: "an escaped NUL in where", method: "GET", path: `/data/fetch?project_id=shop&collection_id=books&where=%7B%22a%22%3A%22%5Cu0000%22%7D`, headers: h,
			status: 400, want: []string{"Error: where.a contains a NUL character or invalid UTF-8"}},
		{name: "a lone surrogate in where", method: "GET", path: `/data/fetch?project_id=shop&collection_id=books&where=%7B%22a%22%3A%22%5Cud83d%22%7D`, headers: h,
			status: 400, want: []string{"Error: where.a contains"}},
		{name: "a surrogate pair is a character", method: "POST", path: "/data/create", headers: h, body: `{"project_id":"shop","collection_id":"books","data":{"emoji":"\ud83d\ude00"}}`,
			status: 201, want: []string{`"emoji":"😀"`}},
		{name: "a number jsonb cannot hold", method: "POST", path: "/data/create", headers: h, body: `{"project_id":"shop","collection_id":"books","data":{"a":1e1000000}}`,
			status: 422, want: []string{`"data":"holds a number a 64-bit float cannot keep`}},
		{name: "a number past float64", method: "POST", path: "/data/create", headers: h, body: `{"project_id":"shop","collection_id":"books","data":{"n":1e400}}`,
			status: 422, want: []string{`"data":"holds a number a 64-bit float cannot keep`}},
		{name: "a whole number a float changes", method: "POST", path: "/data/create", headers: h, body: `{"project_id":"shop","collection_id":"books","data":{"n":12345678901234567890}}`,
			status: 422, want: []string{`"data":"holds a number a 64-bit float cannot keep`}},
		{name: "such a number in where", method: "GET", path: `/data/fetch?project_id=shop&collection_id=books&where=%7B%22a%22%3A1e-999999%7D`, headers: h,
			status: 400, want: []string{"Error: where holds a number a 64-bit float cannot keep"}},
		{name: "a record in no collection", method: "POST", path: "/data/create", headers: h, body: `{"project_id":"shop","collection_id":"nope","data":{}}`,
			status: 404, want: []string{`collection \"nope\" not found`}},
		{name: "collections with counts", method: "GET", path: "/collection/fetch?project_id=shop", headers: h, status: 200,
			want: []string{`"amount":1`, `"record_count":3`}},
		{name: "one collection", method: "GET", path: "/collection/fetch/one?project_id=shop&id=books", headers: h, status: 200, want: []string{`"name":"Books"`}},
		{name: "an unknown collection", method: "GET", path: "/collection/fetch/one?project_id=shop&id=nope", headers: h, status: 404},
		{name: "records by id", method: "GET", path: "/data/fetch?project_id=shop&collection_id=books", headers: h, status: 200,
			want: []string{`"amount":3`, `"title":"Dune"`, `"title":"Emma"`}},
		{name: "records containing", method: "GET", path: `/data/fetch?project_id=shop&collection_id=books&where=%7B%22tags%22%3A%5B%22sf%22%5D%7D`, headers: h, status: 200,
			want: []string{`"amount":1`, `"title":"Dune"`}, unwanted: []string{"Emma"}},
		{name: "a number is not a string", method: "GET", path: `/data/fetch?project_id=shop&collection_id=books&where=%7B%22year%22%3A%221965%22%7D`, headers: h, status: 200,
			want: []string{`"amount":0`}},
		{name: "where that is an array", method: "GET", path: `/data/fetch?project_id=shop&collection_id=books&where=%5B1%5D`, headers: h, status: 400,
			want: []string{"Error: where must be a JSON object"}},
		{name: "where that is not JSON", method: "GET", path: `/data/fetch?project_id=shop&collection_id=books&where=title%3DDune`, headers: h, status: 400},
		{name: "a record id of the wrong shape", method: "GET", path: "/data/fetch/one?project_id=shop&collection_id=books&id=abc", headers: h, status: 400,
			want: []string{"id must be an integer"}},
		{name: "a record through another collection", method: "GET", path: "/data/fetch/one?project_id=shop&collection_id=nope&id=1", headers: h, status: 404},
		{name: "one record", method: "GET", path: "/data/fetch/one?project_id=shop&collection_id=books&id=1", headers: h, status: 200, want: []string{`"id":1,`}},
		{name: "update without id", method: "PATCH", path: "/data/update", headers: h, body: `{"project_id":"shop","collection_id":"books","data":{}}`, status: 400},
		{name: "update of an unknown record", method: "PATCH", path: "/data/update", headers: h, body: `{"project_id":"shop","collection_id":"books","id":999,"data":{}}`, status: 404},
		{name: "update to a number past float64", method: "PATCH", path: "/data/update", headers: h, body: `{"project_id":"shop","collection_id":"books","id":1,"data":{"n":1e400}}`,
			status: 422, want: []string{`"data":"holds a number a 64-bit float cannot keep`}},
		{name: "update replaces", method: "PATCH", path: "/data/update", headers: h, body: `{"project_id":"shop","collection_id":"books","id":1,"data":{"title":"Dune Messiah"}}`,
			status: 200, want: []string{`"data":{"title":"Dune Messiah"}`}},
		{name: "rename", method: "PATCH", path: "/collection/update", headers: a, body: `{"project_id":"shop","id":"books","name":"Library"}`,
			status: 200, want: []string{`"name":"Library"`, `"description":"All"`, `"record_count":3`}},
		{name: "rename to nothing", method: "PATCH", path: "/collection/update", headers: a, body: `{"project_id":"shop","id":"books","name":""}`, status: 422},
		{name: "delete a record", method: "DELETE", path: "/data/delete?project_id=shop&collection_id=books&id=2", headers: h, status: 200},
		{name: "delete it again", method: "DELETE", path: "/data/delete?project_id=shop&collection_id=books&id=2", headers: h, status: 404},
	})
	// Bad input changed nothing: three records were made, one deleted.
	n, _, err := ta.h.store.CountRecords(context.Background(), "shop", "books", nil)
	if err != nil || n != 2 {
		t.Fatalf("%d records left, want 2 (%v)", n, err)
	}
	ta.run(t, []scenario{
		{name: "delete the collection", method: "DELETE", path: "/collection/delete?project_id=shop&id=books", headers: a, status: 200},
		{name: "its records went with it", method: "GET", path: "/data/fetch?project_id=shop&collection_id=books", headers: h, status: 404},
		{name: "delete it again", method: "DELETE", path: "/collection/delete?project_id=shop&id=books", headers: a, status: 404},
	})
}

// TestCollectionPages: the pages, and a record typed into the form as JSON
// whose faults are named beside the box.
func TestCollectionPages(t *testing.T) {
	t.Parallel()
	ta, _ := templateApp(t)
	ctx := context.Background()
	if err := ta.h.store.CreateCollection(ctx, &store.Collection{ProjectID: "shop", ID: "books", Name: "Books"}, 1); err != nil {
		t.Fatal(err)
	}
	for i, title := range []string{"Dune", "Emma", strings.Repeat("Long title ", 10)} {
		r := store.Record{ProjectID: "shop", CollectionID: "books", Data: []byte(fmt.Sprintf(`{"title":%q,"n":%d}`, title, i))}
		if err := ta.h.store.CreateRecord(ctx, &r); err != nil {
			t.Fatal(err)
		}
	}
	b := browser(ta.signIn(t, "author"))
	form := merge(b, map[string]string{"Content-Type": "application/x-www-form-urlencoded", "HX-Request": "true"})
	ta.newUser(t, "viewer", store.RoleViewer)
	ta.run(t, []scenario{
		{name: "choose a project", method: "GET", path: "/web/data", headers: b, status: 200, want: []string{`href="/web/data?project_id=shop"`}},
		{name: "collections", method: "GET", path: "/web/data?project_id=shop", headers: b, status: 200,
			want: []string{"Data of Shop", `href="/web/data/collection?project_id=shop&id=books"`, "1–1 of 1"}, unwanted: []string{"New collection"}},
		{name: "records, columns from their keys, long cells cut", method: "GET", path: "/web/data/collection?project_id=shop&id=books", headers: b, status: 200,
			want: []string{`data-sort="title"`, `data-sort="n"`, `data-sort="Created"`, `data-sort="Updated"`, "Dune", "Long title Long title", "…", "1–3 of 3", "3 records</p>", "New record", `aria-label="Edit record 1"`}},
		// The header counts what the filter matches beside the whole, as the
		// pager does, and a Clear leads back.
		{name: "records filtered", method: "GET", path: "/web/data/collection?project_id=shop&id=books&where=%7B%22n%22%3A1%7D", headers: b, status: 200,
			want: []string{"Emma", "1–1 of 1", "1 of 3 records match the filter", `data-testid="clear-filter"`}, unwanted: []string{">Dune<"}},
		// Sorted by a column, both ways; the heading says how.
		{name: "records sorted by a key, descending", method: "GET", path: "/web/data/collection?project_id=shop&id=books&sort=n&desc=true", headers: b, status: 200,
			want: []string{`aria-sort="descending"><span class="sm:hidden">n</span><a class="inline-flex items-center gap-1 hover:text-slate-900 max-sm:hidden" href="/web/data/collection?id=books&amp;project_id=shop&amp;sort=n" data-sort="n">`}},
		{name: "records sorted by creation", method: "GET", path: "/web/data/collection?project_id=shop&id=books&sort=_created", headers: b, status: 200,
			want: []string{`aria-sort="ascending"`, "Dune"}},
		{name: "a filter that is no object, named beside the box", method: "GET", path: "/web/data/collection?project_id=shop&id=books&where=%5B1%5D", headers: b, status: 200,
			want: []string{"The filter must be a JSON object", `aria-invalid="true"`, "Fix the filter to see records."}},
		{name: "broken JSON typed in", method: "POST", path: "/data/create", headers: form, body: "project_id=shop&collection_id=books&data=%7B%0A%22a%22%3A+1%0A%22b%22%3A+2%7D", status: 422,
			want: []string{"is not valid JSON: look at line 3, column 1", "&#34;b&#34;: 2}"}},
		{name: "an escaped NUL typed in", method: "POST", path: "/data/create", headers: form, body: "project_id=shop&collection_id=books&data=%7B%22a%22%3A%22%5Cu0000%22%7D", status: 400,
			want: []string{"Data.a contains a NUL character or invalid UTF-8"}},
		{name: "an array typed in", method: "POST", path: "/data/create", headers: form, body: "project_id=shop&collection_id=books&data=%5B%5D", status: 422,
			want: []string{"must be a JSON object"}},
		{name: "a record typed in", method: "POST", path: "/data/create", headers: form, body: "project_id=shop&collection_id=books&data=%7B%22title%22%3A%22Kim%22%7D", status: 201,
			want: []string{`id="record-create"`, `hx-swap-oob="innerHTML"`, "Record 4 created."}, header: map[string]string{"HX-Trigger": "data-changed"}},
		{name: "edit opens the record as indented JSON", method: "GET", path: "/data/fetch/one?project_id=shop&collection_id=books&id=4", headers: merge(b, map[string]string{"HX-Request": "true"}), status: 200,
			want: []string{`hx-patch="/data/update"`, "{\n  &#34;title&#34;: &#34;Kim&#34;\n}"}},
		{name: "a broken edit keeps the text", method: "PATCH", path: "/data/update", headers: form, body: "project_id=shop&collection_id=books&id=4&data=%7B%22title%22%3A%7D", status: 422,
			want: []string{"is not valid JSON", "&#34;title&#34;:}", `id="record-edit-4"`}},
	})
	vb := browser(ta.signIn(t, "viewer"))
	ta.run(t, []scenario{{name: "a non-member", method: "GET", path: "/web/data/collection?project_id=shop&id=books", headers: vb, status: 403}})
}
