package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"stencil/store"
)

// Typed collections through the API (docs/collections.md): fields given
// and read back, bad definitions refused by path, records checked on
// every write path — the API and a route's CREATE, UPDATE and
// SIMPLE_UPDATE — and a change of fields refused by stored records or
// filled by a backfill.
func TestTypedCollectionsAPI(t *testing.T) {
	t.Parallel()
	ta, h := runApp(t) // books: three untyped records
	root := shopAdmin(t, ta)
	fields := `[{"name":"title","type":"text","required":true,"max_length":100},{"name":"year","type":"integer","min":0},` +
		`{"name":"in_stock","type":"boolean","default":true},{"name":"genre","type":"select","values":["sf","classic"]}]`
	ta.run(t, []scenario{
		{name: "a typed collection", method: "POST", path: "/collection/create", headers: root,
			body:   `{"project_id":"shop","id":"novels","name":"Novels","fields":` + fields + `,"additional":false}`,
			status: 201, want: []string{`"fields":[{"name":"title","type":"text","required":true,"unique":false,"indexed":false,"max_length":100}`, `"additional":false`}},
		{name: "read back", method: "GET", path: "/collection/fetch/one?project_id=shop&id=novels", headers: h, status: 200,
			want: []string{`{"name":"genre","type":"select","required":false,"unique":false,"indexed":false,"values":["sf","classic"]}`}},
		{name: "an untyped one says so", method: "GET", path: "/collection/fetch/one?project_id=shop&id=books", headers: h, status: 200,
			want: []string{`"fields":[]`, `"additional":true`}},
		{name: "a field of an unknown type", method: "POST", path: "/collection/create", headers: root,
			body:   `{"project_id":"shop","id":"bad_one","name":"Bad","fields":[{"name":"a","type":"string"}]}`,
			status: 422, want: []string{`"Error: fields[0].type must be one of text, integer`}},
		{name: "a reference to no collection", method: "POST", path: "/collection/create", headers: root,
			body:   `{"project_id":"shop","id":"bad_one","name":"Bad","fields":[{"name":"a","type":"reference","collection":"nope"}]}`,
			status: 422, want: []string{`"fields[0].collection":"names collection \"nope\", which does not exist in this project"`}},
		{name: "a good record", method: "POST", path: "/data/create", headers: h,
			body:   `{"project_id":"shop","collection_id":"novels","data":{"title":"Dune","year":1965,"genre":"sf"}}`,
			status: 201, want: []string{`"in_stock":true`}},
		{name: "a year as text", method: "POST", path: "/data/create", headers: h,
			body:   `{"project_id":"shop","collection_id":"novels","data":{"title":"Emma","year":"1815"}}`,
			status: 422, want: []string{`"message":"Error: data.year must be an integer"`, `"data.year":"must be an integer"`}},
		{name: "no title", method: "POST", path: "/data/create", headers: h,
			body: `{"project_id":"shop","collection_id":"novels","data":{"year":1815}}`, status: 422, want: []string{"Error: data.title is required"}},
		{name: "a property not declared", method: "POST", path: "/data/create", headers: h,
			body: `{"project_id":"shop","collection_id":"novels","data":{"title":"Emma","isbn":"x"}}`, status: 422,
			want: []string{"Error: data.isbn is not a field of this collection"}},
		{name: "1e400", method: "POST", path: "/data/create", headers: h,
			body: `{"project_id":"shop","collection_id":"novels","data":{"title":"Emma","year":1e400}}`, status: 422, want: []string{"64-bit float"}},
		{name: "an update breaking a field", method: "PATCH", path: "/data/update", headers: h,
			body: `{"project_id":"shop","collection_id":"novels","id":4,"data":{"title":"Dune","genre":"romance"}}`, status: 422,
			want: []string{"Error: data.genre must be one of sf, classic"}},
		{name: "typing books: records break it", method: "PATCH", path: "/collection/update", headers: root,
			body: `{"project_id":"shop","id":"books","fields":[{"name":"year","type":"integer","max":1900}]}`, status: 409,
			want: []string{`"message":"Error: 2 records do not fit: data.year must be at most 1900 (ids 1, 3)"`, `"count":2`, `"ids":[1,3]`}},
		{name: "a backfill of another type", method: "PATCH", path: "/collection/update", headers: root,
			body: `{"project_id":"shop","id":"books","fields":[{"name":"isbn","type":"text","required":true}],"backfill":{"isbn":5}}`, status: 422,
			want: []string{"Error: backfill.isbn must be text"}},
		{name: "a backfill of no field", method: "PATCH", path: "/collection/update", headers: root,
			body: `{"project_id":"shop","id":"books","fields":[{"name":"isbn","type":"text"}],"backfill":{"other":"x"}}`, status: 422,
			want: []string{"Error: backfill.other is not a field of the collection"}},
		{name: "a required field backfilled", method: "PATCH", path: "/collection/update", headers: root,
			body:   `{"project_id":"shop","id":"books","fields":[{"name":"title","type":"text"},{"name":"year","type":"integer"},{"name":"isbn","type":"text","required":true}],"backfill":{"isbn":"unknown"}}`,
			status: 200, want: []string{`"name":"isbn"`}},
		{name: "the records have it", method: "GET", path: "/data/fetch?project_id=shop&collection_id=books", headers: h, status: 200,
			want: []string{`"isbn":"unknown"`}},
		{name: "a rename of no field", method: "PATCH", path: "/collection/update", headers: root,
			body:   `{"project_id":"shop","id":"books","fields":[{"name":"title","type":"text"},{"name":"released","type":"integer"},{"name":"isbn","type":"text","required":true}],"rename":{"published":"released"}}`,
			status: 422, want: []string{`"message":"Error: rename.published is not a field of the collection"`}},
		{name: "a rename to no field", method: "PATCH", path: "/collection/update", headers: root,
			body:   `{"project_id":"shop","id":"books","fields":[{"name":"title","type":"text"},{"name":"isbn","type":"text","required":true}],"rename":{"year":"released"}}`,
			status: 422, want: []string{"Error: rename.year must name a field of fields (released is not one)"}},
		{name: "a rename that keeps the field", method: "PATCH", path: "/collection/update", headers: root,
			body:   `{"project_id":"shop","id":"books","fields":[{"name":"title","type":"text"},{"name":"year","type":"integer"},{"name":"released","type":"integer"},{"name":"isbn","type":"text","required":true}],"rename":{"year":"released"}}`,
			status: 422, want: []string{"Error: rename.year is still a field: a renamed field leaves the fields"}},
		{name: "year renamed released, with its values", method: "PATCH", path: "/collection/update", headers: root,
			body:   `{"project_id":"shop","id":"books","fields":[{"name":"title","type":"text"},{"name":"released","type":"integer"},{"name":"isbn","type":"text","required":true}],"rename":{"year":"released"}}`,
			status: 200, want: []string{`"name":"released"`}},
		{name: "the records have released", method: "GET", path: "/data/fetch?project_id=shop&collection_id=books&sort=released", headers: h, status: 200,
			want: []string{`"released":1965`}, unwanted: []string{`"year"`}},
		{name: "a unique field", method: "POST", path: "/collection/create", headers: root,
			body: `{"project_id":"shop","id":"members","name":"Members","fields":[{"name":"email","type":"email","unique":true}]}`, status: 201},
		{name: "an address", method: "POST", path: "/data/create", headers: h,
			body: `{"project_id":"shop","collection_id":"members","data":{"email":"ada@example.com"}}`, status: 201},
		{name: "the address again, in capitals", method: "POST", path: "/data/create", headers: h,
			body: `{"project_id":"shop","collection_id":"members","data":{"email":"ADA@example.com"}}`, status: 409,
			want: []string{`"message":"Error: data.email must be unique"`}},
		{name: "unique on a boolean", method: "POST", path: "/collection/create", headers: root,
			body: `{"project_id":"shop","id":"flags","name":"Flags","fields":[{"name":"on","type":"boolean","unique":true}]}`, status: 422,
			want: []string{"Error: fields[0].unique does not apply to a field of type boolean"}},
	})
	if got := ta.records(t, "books"); strings.Count(got, `"isbn": "unknown"`) != 3 {
		t.Fatalf("the backfill: %s", got)
	}

	// A route's writes are checked too: 422 naming the block.
	create := `{"type":"CREATE","depth":0,"ref_col":"novels","ref_object":"book","save":true,"conditions":[]}`
	object := `{"type":"OBJECT","depth":0,"local_name":"book","pairs":` + pairsOf("title", ref("title"), "year", ref("year")) + `}`
	runnable{id: "add_novel", method: "POST", path: "/novels", body: `[{"id":"title","bdtype":"STRING"},{"id":"year","bdtype":"STRING"}]`, blocks: []string{
		object, create, `{"type":"RETURN","depth":0,"pairs":` + pairsOf("created", ref("book")) + `,"conditions":[]}`,
	}}.save(t, ta, h)
	simple := `{"type":"SIMPLE_UPDATE","depth":0,"ref_col":"novels","ref_property":"year","save":true,"targets":[{"field":"title","value":` + ref("title") + `}],"set":` + ref("year") + `}`
	runnable{id: "set_year", method: "PATCH", path: "/novels", body: `[{"id":"title","bdtype":"STRING"},{"id":"year","bdtype":"STRING"}]`, blocks: []string{
		simple, `{"type":"RETURN","depth":0,"pairs":` + pairsOf("ok", lit("BOOLEAN", "true")) + `,"conditions":[]}`,
	}}.save(t, ta, h)
	update := `{"type":"UPDATE","depth":0,"ref_col":"novels","ref_property":"genre","save":true,"set":` + ref("genre") + `,"add":null,"filter":null,"conditions":[],` +
		`"targets":[{"field":"title","conditions":[` + cond(ref("item"), "EQUAL_TO", lit("STRING", "Dune")) + `]}]}`
	runnable{id: "set_genre", method: "PUT", path: "/novels", body: `[{"id":"genre","bdtype":"STRING"}]`, blocks: []string{
		update, `{"type":"RETURN","depth":0,"pairs":` + pairsOf("ok", lit("BOOLEAN", "true")) + `,"conditions":[]}`,
	}}.save(t, ta, h)
	join := `{"type":"CREATE","depth":0,"ref_col":"members","ref_object":"m","save":true,"conditions":[]}`
	runnable{id: "join", method: "POST", path: "/members", body: `[{"id":"email","bdtype":"STRING"}]`, blocks: []string{
		`{"type":"OBJECT","depth":0,"local_name":"m","pairs":` + pairsOf("email", ref("email")) + `}`, join,
		`{"type":"RETURN","depth":0,"pairs":` + pairsOf("ok", lit("BOOLEAN", "true")) + `,"conditions":[]}`,
	}}.save(t, ta, h)
	before := ta.records(t, "novels")
	ta.run(t, []scenario{
		{name: "CREATE of a year as text", method: "POST", path: "/x/shop/novels", body: `{"title":"Emma","year":"1815"}`, status: 422,
			want: []string{`{"status":422,"message":"Error: flow.blocks[1] (CREATE): data.year must be an integer"}`}},
		{name: "SIMPLE_UPDATE of a year as text", method: "PATCH", path: "/x/shop/novels", body: `{"title":"Dune","year":"1965"}`, status: 422,
			want: []string{`"Error: flow.blocks[0] (SIMPLE_UPDATE): data.year must be an integer"`}},
		{name: "CREATE of an address taken", method: "POST", path: "/x/shop/members", body: `{"email":"Ada@Example.com"}`, status: 409,
			want: []string{`"Error: flow.blocks[1] (CREATE): data.email must be unique"`}},
		{name: "UPDATE to a genre not listed", method: "PUT", path: "/x/shop/novels", body: `{"genre":"romance"}`, status: 422,
			want: []string{`"Error: flow.blocks[0] (UPDATE): data.genre must be one of sf, classic"`}},
	})
	if after := ta.records(t, "novels"); after != before {
		t.Fatalf("refused runs wrote: %s → %s", before, after)
	}
	ta.run(t, []scenario{
		{name: "UPDATE to a genre listed", method: "PUT", path: "/x/shop/novels", body: `{"genre":"classic"}`, status: 200},
	})
	if got := ta.records(t, "novels"); !strings.Contains(got, `"genre": "classic"`) {
		t.Fatalf("the UPDATE: %s", got)
	}
}

// Typed filters and sort of /data/fetch: each operator by type, a bad
// filter named, and the order of records without the value.
func TestTypedFiltersAndSort(t *testing.T) {
	t.Parallel()
	ta, h := runApp(t)
	a := shopAdmin(t, ta)
	status, body := ta.call(t, "POST", "/collection/create", `{"project_id":"shop","id":"films","name":"Films","fields":[
		{"name":"title","type":"text","required":true},{"name":"year","type":"integer","indexed":true},{"name":"rating","type":"number"},
		{"name":"seen","type":"boolean"},{"name":"contact","type":"email","unique":true},
		{"name":"tags","type":"select","values":["sf","drama","old"],"multiple":true},{"name":"meta","type":"json"}]}`, a)
	if status != 201 {
		t.Fatalf("create: %d %s", status, body)
	}
	for _, doc := range []string{
		`{"title":"Alien","year":1979,"rating":8.5,"seen":true,"contact":"Ridley@Example.com","tags":["sf","old"]}`,
		`{"title":"Arrival","year":2016,"rating":7.9,"seen":false,"tags":["sf","drama"]}`,
		`{"title":"Brazil","year":1985,"rating":7.9,"tags":["drama","old"]}`,
		`{"title":"Heat","rating":8.3}`,
	} {
		if status, body := ta.call(t, "POST", "/data/create", `{"project_id":"shop","collection_id":"films","data":`+doc+`}`, a); status != 201 {
			t.Fatalf("%s: %d %s", doc, status, body)
		}
	}
	titles := func(query string) string {
		t.Helper()
		status, body := ta.call(t, "GET", "/data/fetch?project_id=shop&collection_id=films&"+query, "", h)
		if status != 200 {
			t.Fatalf("%s: %d %s", query, status, body)
		}
		var ans struct {
			Data []struct {
				Data struct{ Title string }
			}
			Amount int
		}
		if err := json.Unmarshal([]byte(body), &ans); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range ans.Data {
			out = append(out, r.Data.Title)
		}
		return strings.Join(out, ",") + fmt.Sprintf(" (%d)", ans.Amount)
	}
	f := func(filter string) string { return "filter=" + url.QueryEscape(filter) }
	for query, want := range map[string]string{
		f(`[["year","gt",1980]]`):                       "Arrival,Brazil (2)",
		f(`[["year","lte",1985],["rating","gte",7.9]]`): "Alien,Brazil (2)",
		f(`[["year","is_null",true]]`):                  "Heat (1)",
		f(`[["year","in",[1979,2016]]]`):                "Alien,Arrival (2)",
		f(`[["title","contains","RR"]]`):                "Arrival (1)",
		f(`[["title","starts_with","A"]]`):              "Alien,Arrival (2)",
		f(`[["contact","eq","ridley@example.COM"]]`):    "Alien (1)",
		f(`[["tags","eq","drama"]]`):                    "Arrival,Brazil (2)",
		f(`[["tags","in",["old","drama"]]]`):            "Alien,Arrival,Brazil (3)",
		f(`[["seen","eq",false]]`):                      "Arrival (1)",
		f(`[["seen","ne",true]]`):                       "Arrival (1)",
		f(`[["rating","eq",7.90]]`):                     "Arrival,Brazil (2)",
		"sort=year":                                     "Alien,Brazil,Arrival,Heat (4)",
		"sort=-year":                                    "Heat,Arrival,Brazil,Alien (4)",
		"sort=-rating&" + f(`[["rating","lt",8.4]]`):    "Heat,Brazil,Arrival (3)",
		"sort=title&limit=2":                            "Alien,Arrival (4)",
		"sort=-_created&limit=1":                        "Heat (4)",
	} {
		if got := titles(query); got != want {
			t.Errorf("%s: %s, want %s", query, got, want)
		}
	}
	bad := "/data/fetch?project_id=shop&collection_id=films&"
	ta.run(t, []scenario{
		{name: "not an array", method: "GET", path: bad + f(`{"year":1}`), headers: h, status: 400, want: []string{"Error: filter must be a JSON array of [field, op, value]"}},
		{name: "20 conditions", method: "GET", path: bad + f("["+strings.Repeat(`["year","gt",1],`, 19)+`["year","gt",1]]`), headers: h, status: 200},
		{name: "21 conditions", method: "GET", path: bad + f("["+strings.Repeat(`["year","gt",1],`, 20)+`["year","gt",1]]`), headers: h, status: 400,
			want: []string{"Error: filter holds 21 conditions: at most 20"}},
		{name: "a value of another type", method: "GET", path: bad + f(`[["year","gt","1980"]]`), headers: h, status: 400,
			want: []string{"Error: filter[0] the value must be an integer"}},
		{name: "an order of a boolean", method: "GET", path: bad + f(`[["year","gt",1],["seen","lt",true]]`), headers: h, status: 400,
			want: []string{"Error: filter[1] lt does not apply to seen, of type boolean"}},
		{name: "an unknown operator", method: "GET", path: bad + f(`[["year","like",1]]`), headers: h, status: 400,
			want: []string{`Error: filter[0] has the operator \"like\": use one of eq, ne`}},
		{name: "contains of a number", method: "GET", path: bad + f(`[["year","contains","19"]]`), headers: h, status: 400,
			want: []string{"Error: filter[0] contains does not apply to year, of type integer"}},
		{name: "null compared", method: "GET", path: bad + f(`[["title","eq",null]]`), headers: h, status: 400,
			want: []string{"Error: filter[0] the value must not be null (ask with is_null)"}},
		{name: "a sort by json", method: "GET", path: bad + "sort=meta", headers: h, status: 400, want: []string{"Error: sort names meta, a field of type json, which has no order"}},
		{name: "a select value not listed", method: "GET", path: bad + f(`[["tags","in",["old","nothing"]]]`), headers: h, status: 400,
			want: []string{"Error: filter[0] in: each value must be one of sf, drama, old"}},
		{name: "in of nothing", method: "GET", path: bad + f(`[["year","in",[]]]`), headers: h, status: 400, want: []string{"Error: filter[0] in takes a list of 1 to 100 values"}},
	})
}

// CSV out and in (docs/collections.md): an export's header is the fields
// in order then the other properties, its cells read back by the fields'
// types; an import writes all its records or none, naming each problem by
// line and field.
func TestCSVImportExport(t *testing.T) {
	t.Parallel()
	ta, h := runApp(t)
	// What is tested is the body limit of 5 MiB and the import's rules,
	// not its time: under -race on a loaded 2-core CI the 5 MiB import
	// once passed the 15 s every request has and answered 503.
	ta.h.cfg.RequestTimeout = time.Minute
	a := shopAdmin(t, ta)
	if status, body := ta.call(t, "POST", "/collection/create", `{"project_id":"shop","id":"films","name":"Films","fields":[
		{"name":"title","type":"text","required":true},{"name":"year","type":"integer"},{"name":"seen","type":"boolean","default":false},
		{"name":"email","type":"email","unique":true},{"name":"tags","type":"select","values":["sf","old"],"multiple":true}]}`, a); status != 201 {
		t.Fatalf("%d %s", status, body)
	}
	csvAs := func(headers map[string]string) map[string]string {
		out := map[string]string{"Content-Type": "text/csv"}
		for k, v := range headers {
			out[k] = v
		}
		return out
	}
	good := "title,year,seen,email,tags,note\nDune,1965,TRUE,ada@example.com,\"[\"\"sf\"\"]\",first\n\"Emma, a novel\",,false,,,\"{\"\"a\"\":1}\"\nSolaris,1961,,,,42\n"
	imp := "/data/import?project_id=shop&collection_id=films"
	ta.run(t, []scenario{
		{name: "an import", method: "POST", path: imp, headers: csvAs(h), body: good, status: 201, want: []string{`"data":{"created":3}`}},
		{name: "problems by line and field", method: "POST", path: imp, headers: csvAs(h), status: 422,
			body: "title,year,email\nKim,1901,x@example.com\n,1902,\nNostromo,nineteen,\nLost,1904,x@EXAMPLE.com\nTaken,1905,ADA@example.com\n",
			want: []string{`Error: the CSV was not imported: line 3, title: is required; line 4, year: must be an integer; ` +
				`line 5, email: must be unique: line 2 holds it too; line 6, email: must be unique: a stored record holds it"`,
				`"problems":[{"line":3,"field":"title","message":"is required"}`}},
		{name: "a column twice", method: "POST", path: imp, headers: csvAs(h), body: "title,title\na,b\n", status: 422,
			want: []string{"line 1, title: names a column twice"}},
		{name: "a row of another width", method: "POST", path: imp, headers: csvAs(h), body: "title,year\nKim,1901,extra\n", status: 422,
			want: []string{"line 2: is not valid CSV: wrong number of fields"}},
		{name: "nothing below the header", method: "POST", path: imp, headers: csvAs(h), body: "title\n", status: 422,
			want: []string{"the CSV has no records below its header"}},
		{name: "over 100,000 rows", method: "POST", path: imp, headers: csvAs(h), body: "title\n" + strings.Repeat("x\n", 100_001), status: 413,
			want: []string{"Error: the CSV has over 100000 rows: import it in parts"}},
		{name: "JSON is not CSV here", method: "POST", path: imp, headers: h, body: `{"title":"x"}`, status: 415},
		{name: "CSV elsewhere", method: "POST", path: "/data/create", headers: csvAs(h), body: "title\nx\n", status: 415},
		{name: "a NUL in the CSV", method: "POST", path: imp, headers: csvAs(h), body: "title\na\x00b\n", status: 400},
		{name: "a reader may not import", method: "POST", path: imp, headers: csvAs(as(ta.token(t, ta.newUser(t, "reader", store.RoleViewer)))), body: good, status: 403},
	})
	if got := ta.records(t, "films"); strings.Count(got, `"title"`) != 3 {
		t.Fatalf("a refused import wrote: %s", got)
	}
	status, body := ta.call(t, "GET", "/data/export?project_id=shop&collection_id=films&format=csv", "", h)
	want := "title,year,seen,email,tags,note\nDune,1965,true,ada@example.com,\"[\"\"sf\"\"]\",first\n\"Emma, a novel\",,false,,,\"{\"\"a\"\":1}\"\nSolaris,1961,false,,,42\n"
	if status != 200 || body != want {
		t.Fatalf("export: %d\n%s\nwant\n%s", status, body, want)
	}
	// The export imports into another collection as it was.
	if status, body := ta.call(t, "POST", "/collection/create", `{"project_id":"shop","id":"copies","name":"Copies","fields":[
		{"name":"title","type":"text","required":true},{"name":"year","type":"integer"},{"name":"seen","type":"boolean"},
		{"name":"email","type":"email"},{"name":"tags","type":"select","values":["sf","old"],"multiple":true}]}`, a); status != 201 {
		t.Fatalf("%d %s", status, body)
	}
	if status, got := ta.call(t, "POST", "/data/import?project_id=shop&collection_id=copies", body, csvAs(h)); status != 201 {
		t.Fatalf("import of the export: %d %s", status, got)
	}
	if _, again := ta.call(t, "GET", "/data/export?project_id=shop&collection_id=copies&format=csv", "", h); again != want {
		t.Fatalf("the copy exports as\n%s", again)
	}
	ta.run(t, []scenario{
		{name: "5 MiB of CSV, past other bodies' 4 MiB", method: "POST", path: "/data/import?project_id=shop&collection_id=copies", headers: csvAs(h),
			body: "title\n" + strings.Repeat(strings.Repeat("abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz", 32)+"\n", 5<<20/2049+1), status: 201,
			want: []string{`"created":2559`}},
		{name: "another format", method: "GET", path: "/data/export?project_id=shop&collection_id=films&format=xlsx", headers: h, status: 422, want: []string{"Error: format must be one of: csv"}},
	})
}

// The page of a typed collection: its fields are the table's columns in
// their order, even before a record holds them, and a new record is typed
// into one input a field — a checkbox for a boolean, a list for a select,
// a date and time — with a problem beside its input.
func TestTypedRecordForm(t *testing.T) {
	t.Parallel()
	ta, _ := runApp(t)
	a := shopAdmin(t, ta)
	if status, body := ta.call(t, "POST", "/collection/create", `{"project_id":"shop","id":"films","name":"Films","fields":[
		{"name":"title","type":"text","required":true},{"name":"year","type":"integer"},{"name":"seen","type":"boolean"},
		{"name":"shown","type":"datetime"},{"name":"tags","type":"select","values":["sf","old"],"multiple":true}]}`, a); status != 201 {
		t.Fatalf("%d %s", status, body)
	}
	cookie, csrf := ta.signIn(t, "boss")
	status, page := ta.call(t, "GET", "/web/data/collection?project_id=shop&id=films", "", browser(cookie, csrf))
	if status != 200 {
		t.Fatalf("%d %s", status, page)
	}
	for _, want := range []string{`data-sort="title"`, `id="f-data" name="data.title"`, `type="checkbox" name="data.seen" value="true"`,
		`type="datetime-local"`, `<select id="f-data-tags" name="data.tags" class="input" multiple`, `data-csv-import`, `format=csv`,
		// The fields panel, an ADMIN's: a row a field, as defined.
		`data-fields-form`, `data-was="tags"`, `<option selected>select</option>`, `name="values" value="sf, old"`, `name="multiple" class="h-5 w-5 rounded border-slate-400" checked`} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	if strings.Index(page, `data-sort="title"`) > strings.Index(page, `data-sort="year"`) {
		t.Error("the columns are not in the fields' order")
	}
	if !strings.Contains(page, `<option value="year" data-type="integer" data-ops="eq ne lt lte gt gte in is_null">`) {
		t.Error("the filter builder does not offer a year's operators")
	}
	if _, authors := ta.call(t, "GET", "/web/data/collection?project_id=shop&id=films", "", browser(ta.signIn(t, "author"))); !strings.Contains(authors, `id="f-data"`) || strings.Contains(authors, "data-fields-form") {
		t.Error("an AUTHOR's page offers the fields panel, or no form")
	}
	status, page = ta.call(t, "GET", "/web/data/collection?project_id=shop&id=films&filter="+url.QueryEscape(`[["year","gt","x"]]`), "", browser(cookie, csrf))
	if status != 200 || !strings.Contains(page, "This filter cannot be used: filter[0] the value must be an integer.") {
		t.Fatalf("a page with a bad filter: %d", status)
	}
	send := func(form url.Values) (int, string) {
		form.Set("csrf_token", csrf)
		form.Set("project_id", "shop")
		form.Set("collection_id", "films")
		req := httptest.NewRequest("POST", "/web/data/record", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for k, v := range merge(browser(cookie, csrf), map[string]string{"HX-Request": "true"}) {
			req.Header.Set(k, v)
		}
		resp, body := ta.do(t, req)
		return resp.StatusCode, body
	}
	status, body := send(url.Values{"data.title": {"Dune"}, "data.year": {"1965"}, "data.seen": {"false", "true"}, "data.shown": {"2026-01-31T09:30"}, "data.tags": {"sf", "old"}})
	if status != 201 {
		t.Fatalf("a typed record: %d %s", status, body)
	}
	if got := ta.records(t, "films"); !strings.Contains(got, `"seen": true`) || !strings.Contains(got, `"shown": "2026-01-31T09:30:00Z"`) || !strings.Contains(got, `"tags": ["sf", "old"]`) {
		t.Fatalf("the record: %s", got)
	}
	status, body = send(url.Values{"data.title": {"Emma"}, "data.year": {"1965.5"}, "data.seen": {"false"}})
	if status != 422 || !strings.Contains(body, `id="e-f-data-year"`) || !strings.Contains(body, "must be an integer") {
		t.Fatalf("a year of a fraction: %d %s", status, body)
	}
	status, body = send(url.Values{"data.title": {""}, "data.year": {"1965"}, "data.seen": {"false"}})
	if status != 422 || !strings.Contains(body, `id="e-f-data"`) || !strings.Contains(body, "is required") {
		t.Fatalf("no title: %d %s", status, body)
	}
	if got := ta.records(t, "films"); strings.Count(got, `"title"`) != 1 {
		t.Fatalf("refused forms wrote: %s", got)
	}
}

// shopAdmin makes boss, an ADMIN member of project shop, and gives the
// headers of its JSON requests.
func shopAdmin(t *testing.T, ta *testApp) map[string]string {
	t.Helper()
	admin := ta.newUser(t, "boss", store.RoleAdmin)
	if err := ta.h.store.AddMember(context.Background(), "shop", admin.ID, store.MembershipRole(admin.Role)); err != nil {
		t.Fatal(err)
	}
	return as(ta.token(t, admin))
}
