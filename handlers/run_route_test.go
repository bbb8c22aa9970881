package handlers

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"stencil/store"
)

// Flow JSON shorthands for the tests of running routes.

func lit(rtype, data string) string {
	return fmt.Sprintf(`{"ref_var":false,"rtype":%q,"data":%q}`, rtype, data)
}

func ref(name string) string { return fmt.Sprintf(`{"ref_var":true,"rtype":"OTHER","data":%q}`, name) }

func cond(left, op, right string) string {
	return fmt.Sprintf(`{"left":%s,"right":%s,"condition_type":%q,"not":false,"next":"NONE"}`, left, right, op)
}

func pairsOf(kv ...string) string {
	var out []string
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, fmt.Sprintf(`{"id":%q,"data":%s}`, kv[i], kv[i+1]))
	}
	return "[" + strings.Join(out, ",") + "]"
}

// runnable is a route document: method, path, params, body, auth and
// blocks.
type runnable struct {
	id, method, path string
	params, body     string // JSON lists; "" is []
	auth             string // the auth_jwt object; "" is off
	signature        string // the auth_signature object; "" is none
	blocks           []string
}

func (r runnable) JSON() string {
	params, body, auth := r.params, r.body, r.auth
	if params == "" {
		params = "[]"
	}
	if body == "" {
		body = "[]"
	}
	if auth == "" {
		auth = `{"active":false,"field":"","ref_col":""}`
	}
	signature := ""
	if r.signature != "" {
		signature = `"auth_signature":` + r.signature + `,`
	}
	return fmt.Sprintf(`{"route_id":%q,"route_path":%q,"method":%q,"auth_jwt":%s,%s"params":{"delimiter":"&","pairs":%s},"body":%s,"flow":{"blocks":[%s]}}`,
		r.id, r.path, r.method, auth, signature, params, body, strings.Join(r.blocks, ","))
}

// save creates the route in project shop and fails the test if it cannot.
func (r runnable) save(t *testing.T, ta *testApp, h map[string]string) {
	t.Helper()
	if status, body := ta.call(t, "POST", "/route/create", `{"project_id":"shop","route":`+r.JSON()+`}`, h); status != 201 {
		t.Fatalf("create route %s: %d %s", r.id, status, body)
	}
}

// runApp has project shop (api_path /shop), its member author (AUTHOR) and
// a collection books of three records.
func runApp(t *testing.T) (*testApp, map[string]string) {
	t.Helper()
	ta, h := templateApp(t)
	ctx := context.Background()
	if err := ta.h.store.CreateCollection(ctx, &store.Collection{ProjectID: "shop", ID: "books", Name: "Books"}, ta.root.ID); err != nil {
		t.Fatal(err)
	}
	for _, rec := range []string{
		`{"title":"Dune","year":1965,"tags":["sf"]}`,
		`{"title":"Emma","year":1815,"tags":["classic"]}`,
		`{"title":"Solaris","year":1961,"tags":["sf"]}`,
	} {
		r := store.Record{ProjectID: "shop", CollectionID: "books", Data: []byte(rec)}
		if err := ta.h.store.CreateRecord(ctx, &r); err != nil {
			t.Fatal(err)
		}
	}
	return ta, h
}

func (ta *testApp) records(t *testing.T, col string) string {
	t.Helper()
	recs, err := ta.h.store.Records(context.Background(), "shop", col, nil, 0, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range recs {
		out = append(out, string(r.Data))
	}
	return strings.Join(out, " ")
}

var (
	fetchBooks = `{"type":"FETCH","depth":0,"local_name":"rows","ref_col":"books"}`
	sfOnly     = `{"type":"FILTER","depth":0,"local_name":"sf","source":"rows","ref_property":"tags","filters":[{"right":` + lit("STRING", "sf") + `,"operation_type":"INCLUDES","not":false,"next":"NONE"}]}`
)

func TestRunPublicGet(t *testing.T) {
	t.Parallel()
	ta, h := runApp(t)
	runnable{id: "sf_books", method: "GET", path: "/books/sf", params: `[{"id":"limit","bdtype":"INTEGER"}]`, blocks: []string{
		fetchBooks, sfOnly,
		`{"type":"FUNCTION","depth":0,"local_name":"page","func":"PAGINATE","params":[` + ref("sf") + `,` + ref("limit") + `]}`,
		`{"type":"RETURN","depth":0,"pairs":` + pairsOf("items", ref("page"), "limit", ref("limit")) + `,"conditions":[]}`,
	}}.save(t, ta, h)
	runnable{id: "one_book", method: "GET", path: "/books/:id", blocks: []string{
		`{"type":"RETURN","depth":0,"pairs":` + pairsOf("id", ref("id")) + `,"conditions":[]}`,
	}}.save(t, ta, h)
	ta.run(t, []scenario{
		{name: "FETCH, FILTER, RETURN", method: "GET", path: "/x/shop/books/sf", status: 200,
			want: []string{`{"items":[{"_id":1,"tags":["sf"],"title":"Dune","year":1965},{"_id":3,"tags":["sf"],"title":"Solaris","year":1961}],"limit":null}`}},
		{name: "a typed query parameter", method: "GET", path: "/x/shop/books/sf?limit=1", status: 200, want: []string{`"title":"Dune"`, `"limit":1}`}, unwanted: []string{"Solaris"}},
		{name: "a query parameter of the wrong type", method: "GET", path: "/x/shop/books/sf?limit=many", status: 400,
			want: []string{`{"status":400,"message":"Error: query parameter limit must be an integer`}},
		{name: "a literal segment wins", method: "GET", path: "/x/shop/books/sf/", status: 200, want: []string{`"items"`}},
		{name: "a path parameter", method: "GET", path: "/x/shop/books/42", status: 200, want: []string{`{"id":"42"}`}},
		{name: "another method", method: "POST", path: "/x/shop/books/42", status: 405, want: []string{"Error: method not allowed"},
			header: map[string]string{"Allow": "GET"}},
		{name: "no such route", method: "GET", path: "/x/shop/authors", status: 404, want: []string{`{"status":404,"message":"Error: route not found"}`}},
		{name: "no such project", method: "GET", path: "/x/nowhere/books/sf", status: 404, want: []string{"Error: route not found"}},
		{name: "a browser gets JSON too", method: "GET", path: "/x/shop/books/42", headers: asBrowserHeaders, status: 200, want: []string{`{"id":"42"}`}},
	})
	// An escaped slash stays in its segment. (app.Test unescapes the path
	// it is given, so this goes through a listener.)
	conn, err := net.Dial("tcp", strings.TrimPrefix(ta.listen(t), "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprint(conn, "GET /x/shop/books/a%2Fb HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if got, _ := io.ReadAll(resp.Body); resp.StatusCode != 200 || string(got) != `{"id":"a/b"}` {
		t.Fatalf("an escaped path parameter: %d %s", resp.StatusCode, got)
	}
}

func TestRunPostCreatesAndFailRollsBack(t *testing.T) {
	t.Parallel()
	ta, h := runApp(t)
	create := `{"type":"CREATE","depth":0,"ref_col":"books","ref_object":"book","save":true,"conditions":[]}`
	object := `{"type":"OBJECT","depth":0,"local_name":"book","pairs":` + pairsOf("title", ref("title"), "year", ref("year")) + `}`
	runnable{id: "add_book", method: "POST", path: "/books", body: `[{"id":"title","bdtype":"STRING"},{"id":"year","bdtype":"INTEGER"}]`, blocks: []string{
		object, create,
		`{"type":"CONDITION","depth":0,"conditions":[` + cond(ref("year"), "LESS_THAN", lit("INTEGER", "0")) + `],"action":"FAIL","fail":{"status":422,"message":"year must not be negative"}}`,
		`{"type":"RETURN","depth":0,"pairs":` + pairsOf("created", ref("book")) + `,"conditions":[]}`,
	}}.save(t, ta, h)
	before := ta.records(t, "books")
	ta.run(t, []scenario{
		{name: "a body field missing", method: "POST", path: "/x/shop/books", body: `{"title":"Kim"}`, status: 400, want: []string{"Error: body field year is required"}},
		{name: "a body field of the wrong type", method: "POST", path: "/x/shop/books", body: `{"title":"Kim","year":"1901"}`, status: 400,
			want: []string{"Error: body field year must be an integer"}},
		{name: "a body that is not an object", method: "POST", path: "/x/shop/books", body: `[1]`, status: 400, want: []string{"Error: the body must be a JSON object"}},
		{name: "a FAIL after the CREATE", method: "POST", path: "/x/shop/books", body: `{"title":"Kim","year":-5}`, status: 422,
			want: []string{`{"status":422,"message":"Error: year must not be negative"}`}},
		{name: "a body over 1 MiB", method: "POST", path: "/x/shop/books", body: `{"title":"` + strings.Repeat("k", 1<<20) + `","year":1}`, status: 413},
	})
	if after := ta.records(t, "books"); after != before {
		t.Fatalf("refused and failed runs wrote: %s", after)
	}
	ta.run(t, []scenario{
		{name: "CREATE", method: "POST", path: "/x/shop/books", body: `{"title":"Kim","year":1901,"ignored":true}`, status: 200,
			want: []string{`{"created":{"_id":`, `,"title":"Kim","year":1901}}`}},
	})
	if after := ta.records(t, "books"); !strings.HasSuffix(after, ` {"year": 1901, "title": "Kim"}`) {
		t.Fatalf("the record was not written: %s", after)
	}
}

func TestRunAuthJWT(t *testing.T) {
	t.Parallel()
	ta, h := runApp(t)
	ctx := context.Background()
	if err := ta.h.store.CreateCollection(ctx, &store.Collection{ProjectID: "shop", ID: "members", Name: "Members"}, ta.root.ID); err != nil {
		t.Fatal(err)
	}
	author, err := ta.h.store.UserByUsername(ctx, "author")
	if err != nil {
		t.Fatal(err)
	}
	r := store.Record{ProjectID: "shop", CollectionID: "members", Data: []byte(fmt.Sprintf(`{"uid":%d,"plan":"gold"}`, author.ID))}
	if err := ta.h.store.CreateRecord(ctx, &r); err != nil {
		t.Fatal(err)
	}
	runnable{id: "me", method: "GET", path: "/me", auth: `{"active":true,"field":"uid","ref_col":"members"}`, blocks: []string{
		`{"type":"RETURN","depth":0,"pairs":` + pairsOf("plan", ref("auth.plan"), "id", ref("auth._id")) + `,"conditions":[]}`,
	}}.save(t, ta, h)
	status, body := ta.call(t, "POST", "/pat/create", `{"name":"runner","valid_from":null,"valid_to":null}`, h)
	var pat struct{ Data struct{ Token string } }
	if err := json.Unmarshal([]byte(body), &pat); status != 201 || err != nil || pat.Data.Token == "" {
		t.Fatalf("make a PAT: %d %s", status, body)
	}
	stranger := ta.newUser(t, "stranger", store.RoleViewer)
	ta.run(t, []scenario{
		{name: "with a JWT", method: "GET", path: "/x/shop/me", headers: h, status: 200, want: []string{fmt.Sprintf(`{"plan":"gold","id":%d}`, r.ID)}},
		{name: "with a PAT", method: "GET", path: "/x/shop/me", headers: as(pat.Data.Token), status: 200, want: []string{fmt.Sprintf(`{"plan":"gold","id":%d}`, r.ID)}},
		{name: "without a token", method: "GET", path: "/x/shop/me", status: 401, want: []string{"Error: this route needs a bearer token"}},
		{name: "with a forged token", method: "GET", path: "/x/shop/me", headers: as("not-a-token"), status: 401, want: []string{"Error: invalid, expired or revoked token"}},
		{name: "a user missing from ref_col", method: "GET", path: "/x/shop/me", headers: as(ta.token(t, stranger)), status: 403,
			want: []string{fmt.Sprintf("Error: uid %d is not among this route's callers", stranger.ID)}},
	})
	// The playground runs it for whoever asks, for no one, or for the
	// user of a token pasted in, as /x would.
	for _, tc := range []struct{ caller, token, want string }{
		{"", "", fmt.Sprintf(`"body":{"plan":"gold","id":%d}`, r.ID)},
		{"none", "", `"status":401`},
		{"token", ta.token(t, stranger), fmt.Sprintf("uid %d is not among this route", stranger.ID)},
		{"token", pat.Data.Token, `"plan":"gold"`},
		{"token", "not-a-token", "invalid, expired or revoked token"},
	} {
		body := fmt.Sprintf(`{"project_id":"shop","route_id":"me","path":"/me","dry_run":true,"caller":%q,"token":%q}`, tc.caller, tc.token)
		if tc.caller == "" {
			body = `{"project_id":"shop","route_id":"me","path":"/me","dry_run":true}`
		}
		if status, out := ta.call(t, "POST", "/route/run", body, h); status != 200 || !strings.Contains(out, tc.want) {
			t.Errorf("/route/run as %s: %d %s", tc.caller, status, out)
		}
	}
	ta.run(t, []scenario{{name: "caller token without a token", method: "POST", path: "/route/run", headers: h,
		body: `{"project_id":"shop","route_id":"me","path":"/me","caller":"token"}`, status: 400, want: []string{"Error: token is required"}}})
}

func TestRunLoopBreakContinue(t *testing.T) {
	t.Parallel()
	ta, h := runApp(t)
	add := `{"type":"ASSIGNMENT","depth":1,"local_name":"sum","conditions":[],"operations":[{"left":` + ref("sum") + `,"right":` + ref("i") + `,"operation_type":"ADDITION","not":false,"next":"NONE"}]}`
	runnable{id: "sum", method: "GET", path: "/sum", params: `[{"id":"to","bdtype":"INTEGER"}]`, blocks: []string{
		`{"type":"ASSIGNMENT","depth":0,"local_name":"sum","conditions":[],"operations":[{"left":` + lit("INTEGER", "0") + `,"right":` + lit("INTEGER", "0") + `,"operation_type":"NONE","not":false,"next":"NONE"}]}`,
		`{"type":"LOOP","depth":0,"local_name":"i","min":` + lit("INTEGER", "0") + `,"max":` + lit("INTEGER", "100") + `,"step":` + lit("INTEGER", "1") + `}`,
		`{"type":"CONDITION","depth":1,"conditions":[` + cond(ref("i"), "GREATER_THAN", ref("to")) + `],"action":"BREAK","fail":null}`,
		`{"type":"CONDITION","depth":1,"conditions":[{"left":` + ref("i") + `,"right":` + lit("INTEGER", "2") + `,"condition_type":"EQUAL_TO","not":false,"next":"OR"},` + cond(ref("i"), "EQUAL_TO", lit("INTEGER", "4")) + `],"action":"CONTINUE","fail":null}`,
		add,
		`{"type":"RETURN","depth":0,"pairs":` + pairsOf("sum", ref("sum")) + `,"conditions":[]}`,
	}}.save(t, ta, h)
	// 0+1+3+5 (2 and 4 skipped, the loop left after 5).
	ta.run(t, []scenario{{name: "loop", method: "GET", path: "/x/shop/sum?to=5", status: 200, want: []string{`{"sum":9}`}}})
}

func TestRunVault(t *testing.T) {
	t.Parallel()
	ta, h := runApp(t)
	ctx := context.Background()
	admin := ta.newUser(t, "ada", store.RoleAdmin)
	if err := ta.h.store.AddMember(ctx, "shop", admin.ID, store.MembershipRole(admin.Role)); err != nil {
		t.Fatal(err)
	}
	ta.putSecret(t, "shop", "API_KEY", "sk-live-7781", admin)
	route := runnable{id: "secret", method: "GET", path: "/secret", blocks: []string{
		`{"type":"VAULT","depth":0,"local_name":"key","key":"API_KEY"}`,
		`{"type":"RETURN","depth":0,"pairs":` + pairsOf("length", ref("key_length")) + `,"conditions":[]}`,
	}}
	route.blocks = append(route.blocks[:1], `{"type":"PROPERTY","depth":0,"local_name":"key_length","data":`+ref("key")+`,"apply":"LENGTH","additional":""}`, route.blocks[1])
	ta.run(t, []scenario{
		{name: "an AUTHOR cannot save a route that reads the vault", method: "POST", path: "/route/create", headers: h,
			body: `{"project_id":"shop","route":` + route.JSON() + `}`, status: 403, want: []string{"Block 1 (VAULT) reads the vault: only an ADMIN or ROOT member"}},
	})
	route.save(t, ta, as(ta.token(t, admin)))
	// A VAULT block whose key the vault does not hold: saved, with a
	// warning, since every run of it would fault.
	missing := runnable{id: "missing", method: "GET", path: "/missing", blocks: []string{`{"type":"VAULT","depth":0,"local_name":"k","key":"NOT_THERE"}`}}
	ta.run(t, []scenario{
		{name: "a vault key the project lacks is a warning", method: "POST", path: "/route/create", headers: as(ta.token(t, admin)),
			body: `{"project_id":"shop","route":` + missing.JSON() + `}`, status: 201,
			want: []string{`"warnings":["vault key NOT_THERE does not exist in this project yet: every run would fault (route.flow.blocks[0].key)"]`}},
		{name: "a vault key the project holds is none", method: "POST", path: "/web/routes/lint", headers: as(ta.token(t, admin)),
			body: `{"project_id":"shop","route":` + route.JSON() + `}`, status: 200, want: []string{`"warnings":[]`}},
		{name: "an AUTHOR's checks name the VAULT block", method: "POST", path: "/web/routes/lint", headers: h,
			body: `{"project_id":"shop","route":` + route.JSON() + `}`, status: 403, want: []string{"Block 1 (VAULT) reads the vault",
				`"data":{"refused":{"path":"route.flow.blocks[0]","message":"reads the vault: only an ADMIN or ROOT member of the project can save or try a route that does","block":"Block 1 (VAULT)","type":"VAULT"}}`}},
		{name: "the checks give each warning by its place", method: "POST", path: "/web/routes/lint", headers: as(ta.token(t, admin)),
			body: `{"project_id":"shop","route":` + missing.JSON() + `}`, status: 200,
			want: []string{`"data":{"checks":[{"path":"route.flow.blocks[0].key","message":"vault key NOT_THERE does not exist in this project yet: every run would fault","block":"Block 1 (VAULT)"}]}`,
				`"warnings":["vault key NOT_THERE does not exist in this project yet: every run would fault (route.flow.blocks[0].key)"]`}},
	})
	ta.run(t, []scenario{
		{name: "an AUTHOR cannot change it either", method: "PATCH", path: "/route/update", headers: h,
			body: `{"project_id":"shop","route_id":"secret","route":` + route.JSON() + `}`, status: 403},
		{name: "the route reads the value", method: "GET", path: "/x/shop/secret", status: 200, want: []string{`{"length":12}`}},
	})
	var channel, routeID, username string
	if err := ta.pool.QueryRow(ctx, `SELECT channel, route_id, username FROM vault_access_log WHERE action = 'read' ORDER BY id DESC LIMIT 1`).
		Scan(&channel, &routeID, &username); err != nil || channel != "route" || routeID != "secret" || username != "" {
		t.Fatalf("the read's log row: %q %q %q %v", channel, routeID, username, err)
	}
	// A key that is not there is a fault that names it, not a value.
	route.blocks[0] = `{"type":"VAULT","depth":0,"local_name":"key","key":"MISSING"}`
	ta.expectStatus(t, "admin", "PATCH", "/route/update", `{"project_id":"shop","route_id":"secret","route":`+route.JSON()+`}`, as(ta.token(t, admin)), 200)
	ta.run(t, []scenario{{name: "a missing key", method: "GET", path: "/x/shop/secret", status: 500,
		want: []string{`{"status":500,"message":"Error: flow.blocks[0] (VAULT): vault key MISSING does not exist"}`}}})
}

func TestRunFromTemplateAndChanges(t *testing.T) {
	t.Parallel()
	ta, h := runApp(t)
	doc := `{"name":"count_col","description":"count a collection","project_id":null,"method":"GET","route_id":"count_{col}","route_path":"/{col}/count",
		"auth_jwt":{"active":false,"field":"","ref_col":""},"params":{"delimiter":"&","pairs":[]},"body":[],
		"variables":[{"key":"col","description":"the collection","default_value":null}],
		"flow":{"blocks":[{"type":"FETCH","depth":0,"local_name":"rows","ref_col":"{col}"},
			{"type":"PROPERTY","depth":0,"local_name":"n","data":` + ref("rows") + `,"apply":"LENGTH","additional":""},
			{"type":"RETURN","depth":0,"pairs":` + pairsOf("{col}", ref("n")) + `,"conditions":[]}]}}`
	status, body := ta.call(t, "POST", "/route/template/create", doc, h)
	if status != 201 {
		t.Fatalf("template: %d %s", status, body)
	}
	id := dataID(t, body)
	status, applied := ta.call(t, "POST", "/route/template/apply", fmt.Sprintf(`{"id":%d,"project_id":"shop","values":{"col":"books"}}`, id), h)
	if status != 200 {
		t.Fatalf("apply: %d %s", status, applied)
	}
	var env struct{ Data json.RawMessage }
	if err := json.Unmarshal([]byte(applied), &env); err != nil {
		t.Fatal(err)
	}
	if status, body := ta.call(t, "POST", "/route/create", fmt.Sprintf(`{"project_id":"shop","route":%s}`, env.Data), h); status != 201 {
		t.Fatalf("create: %d %s", status, body)
	}
	ta.run(t, []scenario{{name: "the applied route answers", method: "GET", path: "/x/shop/books/count", status: 200, want: []string{`{"books":3}`}}})

	// A change answers at once; a deleted route is gone.
	changed := strings.Replace(string(env.Data), `"/books/count"`, `"/books/total"`, 1)
	ta.expectStatus(t, "author", "PATCH", "/route/update", `{"project_id":"shop","route_id":"count_books","route":`+changed+`}`, h, 200)
	ta.run(t, []scenario{
		{name: "the old path", method: "GET", path: "/x/shop/books/count", status: 404},
		{name: "the new path", method: "GET", path: "/x/shop/books/total", status: 200, want: []string{`{"books":3}`}},
	})
	ta.expectStatus(t, "author", "DELETE", "/route/delete?project_id=shop&route_id=count_books", "", h, 200)
	ta.run(t, []scenario{{name: "deleted", method: "GET", path: "/x/shop/books/total", status: 404}})
}

func TestRunSaveChecks(t *testing.T) {
	t.Parallel()
	ta, h := runApp(t)
	create := func(blocks ...string) string {
		return `{"project_id":"shop","route":` + runnable{id: "bad", method: "GET", path: "/bad", blocks: blocks}.JSON() + `}`
	}
	ta.run(t, []scenario{
		{name: "a literal that does not convert", method: "POST", path: "/route/create", headers: h, status: 422,
			body: create(`{"type":"RETURN","depth":0,"pairs":` + pairsOf("n", lit("INTEGER", "ten")) + `,"conditions":[]}`),
			want: []string{`"route.flow.blocks[0].pairs[0].data.data":"\"ten\" must be an integer`}},
		{name: "BREAK outside a LOOP", method: "POST", path: "/route/create", headers: h, status: 422,
			body: create(`{"type":"CONDITION","depth":0,"conditions":[],"action":"BREAK","fail":null}`),
			want: []string{`"route.flow.blocks[0].action":"BREAK must be inside a LOOP"`}},
		{name: "doubts are warnings; the route is saved", method: "POST", path: "/route/create", headers: h, status: 201,
			body: create(`{"type":"FETCH","depth":0,"local_name":"rows","ref_col":"shelves"}`, `{"type":"RETURN","depth":0,"pairs":`+pairsOf("n", ref("count"), "rows", ref("rows"))+`,"conditions":[]}`),
			want: []string{`"warnings":["count is used before any block sets it (route.flow.blocks[1].pairs[0].data.data)","collection shelves does not exist in this project yet (route.flow.blocks[0].ref_col)"]`}},
		{name: "an update without doubts", method: "PATCH", path: "/route/update", headers: h, status: 200,
			body: `{"project_id":"shop","route_id":"bad","route":` + runnable{id: "bad", method: "GET", path: "/bad", blocks: []string{fetchBooks}}.JSON() + `}`,
			want: []string{`"warnings":[]`}},
	})
}

func TestRunLog(t *testing.T) {
	t.Parallel()
	ta, h := runApp(t)
	runnable{id: "fails", method: "GET", path: "/fails", blocks: []string{
		`{"type":"FILTER","depth":0,"local_name":"f","source":"nothing","ref_property":"","filters":[]}`}}.save(t, ta, h)
	ta.call(t, "GET", "/x/shop/fails", "", nil)
	ta.call(t, "GET", "/x/shop/fails", "", h)
	if err := ta.h.runs.FlushLog(context.Background()); err != nil {
		t.Fatal(err)
	}
	runs, total, err := ta.h.store.ListRuns(context.Background(), "shop", store.RunQuery{Page: store.Page{Limit: 10}})
	if err != nil || total != 2 {
		t.Fatalf("%d runs, %v", total, err)
	}
	last := runs[0]
	if last.RouteID != "fails" || last.Status != 500 || last.Ended != "FAULT" || last.Path != "/x/shop/fails" ||
		last.Fault != "flow.blocks[0] (FILTER): source is null, not an array" || last.Duration <= 0 || last.Version != 1 {
		t.Fatalf("the run: %+v", last)
	}
	// The caller is known only on routes that read it.
	if last.UserID != nil || runs[1].UserID != nil {
		t.Fatalf("a public route's run names a caller: %+v", last)
	}

	// The log over HTTP: every member reads it, by route and by status.
	runnable{id: "fine", method: "GET", path: "/fine", blocks: []string{`{"type":"RETURN","depth":0,"pairs":[],"conditions":[]}`}}.save(t, ta, h)
	ta.call(t, "GET", "/x/shop/fine", "", nil)
	ta.call(t, "POST", "/x/shop/fine", `{"a":1}`, nil) // 405: no run, and a request that reuses the buffers of the one before
	if err := ta.h.runs.FlushLog(context.Background()); err != nil {
		t.Fatal(err)
	}
	viewer := ta.newUser(t, "viewer", store.RoleViewer)
	if err := ta.h.store.AddMember(context.Background(), "shop", viewer.ID, store.MembershipRole(viewer.Role)); err != nil {
		t.Fatal(err)
	}
	outsider := as(ta.token(t, ta.newUser(t, "outsider", store.RoleAuthor)))
	v := as(ta.token(t, viewer))
	ta.run(t, []scenario{
		{name: "all runs", method: "GET", path: "/route/runs?project_id=shop", headers: v, status: 200,
			want: []string{`"amount":3`, `"route_id":"fine","method":"GET","path":"/x/shop/fine","status":200,"ended":"RETURN"`,
				`"fault":"flow.blocks[0] (FILTER): source is null, not an array","attempts":1,"query":"","message":"","dry_run":false,"route_version":1`}},
		{name: "one route", method: "GET", path: "/route/runs?project_id=shop&route_id=fails", headers: v, status: 200,
			want: []string{`"amount":2`}, unwanted: []string{`"route_id":"fine"`}},
		{name: "a status class", method: "GET", path: "/route/runs?project_id=shop&status=2xx", headers: v, status: 200,
			want: []string{`"amount":1`, `"status":200`}, unwanted: []string{`"status":500`}},
		{name: "one status", method: "GET", path: "/route/runs?project_id=shop&status=500", headers: v, status: 200,
			want: []string{`"amount":2`}},
		{name: "a status of no run", method: "GET", path: "/route/runs?project_id=shop&status=404", headers: v, status: 200,
			want: []string{`"amount":0`, `"data":[]`}},
		{name: "a page", method: "GET", path: "/route/runs?project_id=shop&limit=1&offset=1", headers: v, status: 200,
			want: []string{`"amount":3`, `"route_id":"fails"`}},
		{name: "a status that is no status", method: "GET", path: "/route/runs?project_id=shop&status=5x", headers: v, status: 422,
			want: []string{"Error: status must be a class such as 4xx or a status such as 404"}},
		{name: "status 600", method: "GET", path: "/route/runs?project_id=shop&status=600", headers: v, status: 422},
		{name: "no project", method: "GET", path: "/route/runs", headers: v, status: 400, want: []string{"project_id"}},
		{name: "not a member", method: "GET", path: "/route/runs?project_id=shop", headers: outsider, status: 403},
		{name: "no token", method: "GET", path: "/route/runs?project_id=shop", headers: asJSONHeaders, status: 401},
		{name: "the page", method: "GET", path: "/web/routes/runs?project_id=shop&status=5xx", headers: map[string]string{"Accept": "text/html", "Authorization": v["Authorization"]}, status: 200,
			// A fault's block is named as the editor names it, linked to that
			// block of the version that ran.
			want: []string{"<h1", "Runs", `<option value="5xx" selected>`, `route_id=fails`,
				`route_id=fails&amp;version=1#block-1" data-testid="fault-block">Block 1 (FILTER)</a>: source is null, not an array`, "(version 1)"}},
	})

	// Once the route has changed, the link shows the flow that ran.
	changed := runnable{id: "fails", method: "GET", path: "/fails", blocks: []string{`{"type":"RETURN","depth":0,"pairs":[],"conditions":[]}`}}
	if status, body := ta.call(t, "PATCH", "/route/update", `{"project_id":"shop","route_id":"fails","route":`+changed.JSON()+`}`, h); status != 200 {
		t.Fatalf("update: %d %s", status, body)
	}
	page := map[string]string{"Accept": "text/html", "Authorization": v["Authorization"]}
	ta.run(t, []scenario{
		{name: "the version that ran", method: "GET", path: "/web/routes/view?project_id=shop&route_id=fails&version=1", headers: page, status: 200,
			want: []string{"The flow of version 1, as it ran; the live version is 2", `id="block-1"`, "FILTER"}},
		{name: "the live version asked by number", method: "GET", path: "/web/routes/view?project_id=shop&route_id=fails&version=2", headers: page, status: 200,
			unwanted: []string{"as it ran"}},
		{name: "a version that is no number", method: "GET", path: "/web/routes/view?project_id=shop&route_id=fails&version=one", headers: page, status: 422},
		{name: "a version that never was", method: "GET", path: "/web/routes/view?project_id=shop&route_id=fails&version=9", headers: page, status: 404},
	})
}

// TestRoutesFollowOtherInstances: a second instance on the same database
// answers a route created, changed and deleted through the first, by the
// database's notice alone (the first instance's own reload does not reach
// it), a route renamed too, and so does a project's new api_path.
func TestRoutesFollowOtherInstances(t *testing.T) {
	t.Parallel()
	ta, h := runApp(t)
	other := newTestAppOn(t, ta.pool)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	other.h.runs.Start(ctx)
	defer other.h.runs.Stop(5 * time.Second)
	eventually := func(what, path string, status int, want string) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			got, body := other.call(t, "GET", path, "", nil)
			if got == status && strings.Contains(body, want) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: the other instance answers %d %s", what, got, body)
			}
		}
	}
	eventually("before", "/x/shop/hello", 404, "route not found") // the table is loaded now
	hello := runnable{id: "hello", method: "GET", path: "/hello", blocks: []string{`{"type":"RETURN","depth":0,"pairs":` + pairsOf("v", lit("INTEGER", "1")) + `,"conditions":[]}`}}
	hello.save(t, ta, h)
	eventually("created", "/x/shop/hello", 200, `{"v":1}`)
	hello.blocks = []string{`{"type":"RETURN","depth":0,"pairs":` + pairsOf("v", lit("INTEGER", "2")) + `,"conditions":[]}`}
	if status, body := ta.call(t, "PATCH", "/route/update", `{"project_id":"shop","route_id":"hello","route":`+hello.JSON()+`}`, h); status != 200 {
		t.Fatalf("update: %d %s", status, body)
	}
	eventually("changed", "/x/shop/hello", 200, `{"v":2}`)
	if err := ta.h.store.AddMember(context.Background(), "shop", ta.root.ID, store.MembershipRole(ta.root.Role)); err != nil {
		t.Fatal(err)
	}
	if status, body := ta.call(t, "PATCH", "/project/update", `{"project_id":"shop","name":"Shop","api_path":"/store"}`, as(ta.token(t, ta.root))); status != 200 {
		t.Fatalf("project update: %d %s", status, body)
	}
	eventually("moved", "/x/store/hello", 200, `{"v":2}`)
	eventually("moved away", "/x/shop/hello", 404, "route not found")
	// The project's CORS origins and rate limit reach it too.
	if status, body := ta.call(t, "PATCH", "/project/update", `{"project_id":"shop","x_rate_limit":0,"x_cors_origins":["https://app.example.com"]}`, as(ta.token(t, ta.root))); status != 200 {
		t.Fatalf("project update: %d %s", status, body)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		req := httptest.NewRequest("GET", "/x/store/hello", nil)
		req.Header.Set("Origin", "https://app.example.com")
		resp, _ := other.do(t, req)
		if resp.Header.Get("Access-Control-Allow-Origin") == "https://app.example.com" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the other instance answers without the origin: %v", resp.Header)
		}
	}
	// A route renamed and moved: one notice for each id, and the old
	// path answers no more.
	greet := hello
	greet.id, greet.path = "greet", "/greet"
	if status, body := ta.call(t, "PATCH", "/route/update", `{"project_id":"shop","route_id":"hello","route":`+greet.JSON()+`}`, h); status != 200 {
		t.Fatalf("rename: %d %s", status, body)
	}
	eventually("renamed", "/x/store/greet", 200, `{"v":2}`)
	eventually("renamed away", "/x/store/hello", 404, "route not found")
	ta.expectStatus(t, "delete", "DELETE", "/route/delete?project_id=shop&route_id=greet", "", h, 200)
	eventually("deleted", "/x/store/greet", 404, "route not found")
}

// TestRunPathParameterText: a path parameter holding NUL or bytes that
// are not UTF-8 is refused with 400 naming it, as a query parameter or a
// body field is (docs/architecture.md), before the run reaches PostgreSQL; the run
// log has it. (app.Test unescapes the path, so these go through a
// listener as sent.)
func TestRunPathParameterText(t *testing.T) {
	t.Parallel()
	ta, h := runApp(t)
	runnable{id: "by_title", method: "GET", path: "/books/:title", blocks: []string{
		`{"type":"FETCH","depth":0,"local_name":"rows","ref_col":"books","match":[{"id":"title","data":` + ref("title") + `}]}`,
		`{"type":"RETURN","depth":0,"pairs":` + pairsOf("rows", ref("rows")) + `,"conditions":[]}`,
	}}.save(t, ta, h)
	base := ta.listen(t)
	raw := func(path string) (int, string) {
		t.Helper()
		conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", path)
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		got, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(got)
	}
	for _, path := range []string{"/x/shop/books/a%00b", "/x/shop/books/%FF", "/x/shop/books/ok%C3"} {
		status, body := raw(path)
		if status != 400 || body != `{"status":400,"message":"Error: path parameter title contains a NUL character or invalid UTF-8"}` {
			t.Errorf("GET %s: %d %s", path, status, body)
		}
	}
	if status, body := raw("/x/shop/books/Dune"); status != 200 || !strings.Contains(body, `"title":"Dune"`) {
		t.Fatalf("a clean path parameter: %d %s", status, body)
	}
	if status, body := raw("/x/shop/books/%C3%A9t%C3%A9"); status != 200 || body != `{"rows":[]}` {
		t.Fatalf("an escaped UTF-8 path parameter: %d %s", status, body)
	}
	if err := ta.h.runs.FlushLog(context.Background()); err != nil {
		t.Fatal(err)
	}
	var logged int
	if err := ta.pool.QueryRow(context.Background(), "SELECT count(*) FROM route_runs WHERE route_id = 'by_title' AND status = 400").Scan(&logged); err != nil {
		t.Fatal(err)
	}
	if logged != 3 {
		t.Errorf("the run log has %d refusals, want 3", logged)
	}
}

// TestLoopStepDefaults: a LOOP's step may be absent or null, and counts by
// 1 (docs/engine.md); a step of 0 is still a fault.
func TestLoopStepDefaults(t *testing.T) {
	t.Parallel()
	ta, h := runApp(t)
	body := func(step string) []string {
		return []string{
			`{"type":"LOOP","depth":0,"local_name":"i","min":` + lit("INTEGER", "0") + `,"max":` + lit("INTEGER", "3") + step + `}`,
			`{"type":"ASSIGNMENT","depth":1,"local_name":"last","conditions":[],"operations":[{"left":` + ref("i") + `,"right":` + lit("INTEGER", "0") + `,"operation_type":"ADDITION","not":false,"next":"NONE"}]}`,
			`{"type":"RETURN","depth":0,"pairs":` + pairsOf("last", ref("last")) + `,"conditions":[]}`,
		}
	}
	runnable{id: "absent", method: "GET", path: "/absent", blocks: body("")}.save(t, ta, h)
	runnable{id: "null", method: "GET", path: "/null", blocks: body(`,"step":null`)}.save(t, ta, h)
	runnable{id: "zero", method: "GET", path: "/zero", blocks: body(`,"step":` + lit("INTEGER", "0"))}.save(t, ta, h)
	ta.run(t, []scenario{
		{name: "no step", method: "GET", path: "/x/shop/absent", status: 200, want: []string{`{"last":2}`}},
		{name: "a null step", method: "GET", path: "/x/shop/null", status: 200, want: []string{`{"last":2}`}},
		{name: "a step of 0", method: "GET", path: "/x/shop/zero", status: 500, want: []string{"step is 0"}},
		{name: "the saved route says null", method: "GET", path: "/route/fetch/one?project_id=shop&route_id=absent", headers: h, status: 200,
			want: []string{`"step":null`}},
	})
}
