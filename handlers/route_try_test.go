package handlers

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"stencil/runs"
	"stencil/store"
)

// tryRun posts body to /route/run and decodes the answer's data.
func tryRun(t *testing.T, ta *testApp, h map[string]string, body string) routeRunDTO {
	t.Helper()
	status, raw := ta.call(t, "POST", "/route/run", body, h)
	if status != 200 {
		t.Fatalf("/route/run: %d %s", status, raw)
	}
	var env struct{ Data routeRunDTO }
	if err := json.Unmarshal([]byte(raw), &env); err != nil {
		t.Fatal(err)
	}
	return env.Data
}

func traceLines(rows []runs.TraceRow) string {
	var out []string
	for _, r := range rows {
		out = append(out, r.String())
	}
	return strings.Join(out, "\n")
}

// TestRouteRunTraces: POST /route/run answers the route's answer, the time
// and the trace, with the route's own inputs and checks; a dry run leaves
// the collections as they were; the run goes to the run log.
func TestRouteRunTraces(t *testing.T) {
	t.Parallel()
	ta, h := runApp(t)
	runnable{id: "add_book", method: "POST", path: "/books/:shelf", body: `[{"id":"title","bdtype":"STRING"},{"id":"year","bdtype":"INTEGER"}]`, blocks: []string{
		`{"type":"OBJECT","depth":0,"local_name":"book","pairs":` + pairsOf("title", ref("title"), "year", ref("year"), "shelf", ref("shelf")) + `}`,
		`{"type":"CREATE","depth":0,"ref_col":"books","ref_object":"book","save":true,"conditions":[]}`,
		`{"type":"UPDATE","depth":0,"ref_col":"books","ref_property":"seen","save":true,"targets":[],"set":` + lit("BOOLEAN", "true") + `,"add":null,"filter":null,"conditions":[]}`,
		`{"type":"EMAIL","depth":0,"template":"added","recipients":[` + lit("STRING", "a@example.com") + `],"pairs":[],"conditions":[]}`,
		`{"type":"CONDITION","depth":0,"conditions":[` + cond(ref("year"), "LESS_THAN", lit("INTEGER", "0")) + `],"action":"FAIL","fail":{"status":422,"message":"a year before 0"}}`,
		`{"type":"LOOP","depth":0,"local_name":"i","min":` + lit("INTEGER", "0") + `,"max":` + lit("INTEGER", "10") + `,"step":` + lit("INTEGER", "1") + `}`,
		`{"type":"ASSIGNMENT","depth":1,"local_name":"last","conditions":[],"operations":[{"left":` + ref("i") + `,"right":` + lit("INTEGER", "0") + `,"operation_type":"NONE","not":false,"next":"NONE"}]}`,
		`{"type":"RETURN","depth":0,"pairs":` + pairsOf("book", ref("book"), "last", ref("last")) + `,"conditions":[]}`,
	}}.save(t, ta, h)
	before := ta.records(t, "books")
	run := `{"project_id":"shop","route_id":"add_book","path":"/books/A3","body":{"title":"Kim","year":1901},"dry_run":true}`
	got := tryRun(t, ta, h, run)
	if got.Response.Status != 200 || string(got.Response.Body) != `{"book":{"_id":4,"shelf":"A3","title":"Kim","year":1901},"last":9}` || got.Ended != "RETURN" || !got.DryRun {
		t.Fatalf("dry run: %+v %s", got, got.Response.Body)
	}
	wantTrace := strings.Join([]string{
		`0 OBJECT 0 book={"shelf":"A3","title":"Kim","year":1901}`,
		`1 CREATE 0`, `2 UPDATE 0`, `3 EMAIL 0`, `4 CONDITION 0 not held`,
		`5 LOOP 0 turn 1 i=0`, `6 ASSIGNMENT 1 last=0`,
		`5 LOOP 0 turn 2 i=1`, `6 ASSIGNMENT 1 last=1`,
		`5 LOOP 0 turn 3 i=2`, `6 ASSIGNMENT 1 last=2`,
		`5 LOOP 0 +7 turns (7 blocks)`,
		`7 RETURN 0 RETURN`,
	}, "\n")
	if traceLines(got.Trace) != wantTrace {
		t.Errorf("trace:\n%s\nwant\n%s", traceLines(got.Trace), wantTrace)
	}
	if after := ta.records(t, "books"); after != before {
		t.Errorf("a dry run wrote: %s", after)
	}
	if out, _, err := ta.h.store.Outbox(context.Background(), "shop", "", store.Page{Limit: 10}); err != nil || len(out) != 0 {
		t.Errorf("a dry run queued %d messages (%v)", len(out), err)
	}
	// The same run, for real, writes; the run log has both.
	got = tryRun(t, ta, h, strings.Replace(run, `"dry_run":true`, `"dry_run":false`, 1))
	if got.Ended != "RETURN" || !strings.Contains(ta.records(t, "books"), `"title": "Kim"`) {
		t.Fatalf("a real run: %+v; books %s", got, ta.records(t, "books"))
	}
	if out, _, _ := ta.h.store.Outbox(context.Background(), "shop", "", store.Page{Limit: 10}); len(out) != 1 {
		t.Errorf("the real run queued %d messages", len(out))
	}
	ta.h.runs.FlushLog(context.Background())
	runs, _, err := ta.h.store.ListRuns(context.Background(), "shop", store.RunQuery{Page: store.Page{Limit: 10}, RouteID: "add_book"})
	if err != nil || len(runs) != 2 || runs[0].Path != "/x/shop/books/A3" || runs[0].Method != "POST" || runs[0].Username != "author" {
		t.Fatalf("run log: %+v %v", runs, err)
	}

	// A FAIL is marked where it happened, with its message.
	got = tryRun(t, ta, h, `{"project_id":"shop","route_id":"add_book","path":"/books/A3","body":{"title":"Kim","year":-5},"dry_run":true}`)
	last := got.Trace[len(got.Trace)-1]
	if got.Response.Status != 422 || got.Ended != "FAIL" || last.Block != 4 || last.Outcome != "FAIL" || last.Message != "a year before 0" {
		t.Fatalf("FAIL: %+v", got)
	}
	// Inputs are checked as at /x: the 400 is the route's answer.
	got = tryRun(t, ta, h, `{"project_id":"shop","route_id":"add_book","path":"/books/A3","body":{"title":"Kim","year":"old"},"dry_run":true}`)
	if got.Response.Status != 400 || got.Ended != "REFUSED" || len(got.Trace) != 0 || !strings.Contains(string(got.Response.Body), "body field year must be an integer") {
		t.Fatalf("bad body field: %+v %s", got, got.Response.Body)
	}

	viewer := ta.newUser(t, "viewer", store.RoleViewer)
	if err := ta.h.store.AddMember(context.Background(), "shop", viewer.ID, store.MembershipRole(viewer.Role)); err != nil {
		t.Fatal(err)
	}
	ta.run(t, []scenario{
		{name: "a path that is not the route's", method: "POST", path: "/route/run", headers: h, status: 422,
			body: `{"project_id":"shop","route_id":"add_book","path":"/authors/A3","body":{}}`, want: []string{`"path":"does not match the route's path /books/:shelf"`}},
		{name: "no path for a route with parameters", method: "POST", path: "/route/run", headers: h, status: 422,
			body: `{"project_id":"shop","route_id":"add_book","body":{}}`, want: []string{`"path":"is required`}},
		{name: "no such route", method: "POST", path: "/route/run", headers: h, status: 404,
			body: `{"project_id":"shop","route_id":"nope"}`, want: []string{`route \"nope\" not found`}},
		{name: "route_id missing", method: "POST", path: "/route/run", headers: h, status: 400,
			body: `{"project_id":"shop"}`, want: []string{`"route_id"`}},
		{name: "not a member", method: "POST", path: "/route/run", headers: as(ta.token(t, ta.newUser(t, "outsider", store.RoleAuthor))), status: 403,
			body: `{"project_id":"shop","route_id":"add_book","path":"/books/A3"}`},
		{name: "a VIEWER member cannot run", method: "POST", path: "/route/run", headers: as(ta.token(t, viewer)), status: 403,
			body: `{"project_id":"shop","route_id":"add_book","path":"/books/A3"}`},
		{name: "no credential", method: "POST", path: "/route/run", status: 401,
			body: `{"project_id":"shop","route_id":"add_book","path":"/books/A3"}`},
	})
}

// TestRouteRunHidesVaultValues: the canary check. A route that reads a
// vault value and passes it through TEMPLATE, OBJECT and RETURN shows it
// nowhere in what /route/run answers.
func TestRouteRunHidesVaultValues(t *testing.T) {
	t.Parallel()
	ta, _ := runApp(t)
	ctx := context.Background()
	admin, h := adminOf(t, ta, "ada")
	const canary = "canary-5f2d9c"
	ta.putSecret(t, "shop", "API_KEY", canary, admin)
	runnable{id: "secret", method: "GET", path: "/secret", blocks: []string{
		`{"type":"VAULT","depth":0,"local_name":"key","key":"API_KEY"}`,
		`{"type":"TEMPLATE","depth":0,"local_name":"header","templatestring":"Bearer {}","data":[` + ref("key") + `],"conditions":[]}`,
		`{"type":"OBJECT","depth":0,"local_name":"o","pairs":` + pairsOf("auth", ref("header"), "n", lit("INTEGER", "1")) + `}`,
		`{"type":"RETURN","depth":0,"pairs":` + pairsOf("o", ref("o"), "raw", ref("key")) + `,"conditions":[]}`,
	}}.save(t, ta, h)
	status, raw := ta.call(t, "POST", "/route/run", `{"project_id":"shop","route_id":"secret"}`, h)
	if status != 200 || strings.Contains(raw, canary) || strings.Contains(raw, "5f2d9c") {
		t.Fatalf("the canary shows: %d %s", status, raw)
	}
	for _, want := range []string{`"preview":"••••••"`, `"variable":"header","preview":"•••••• (from a vault value)"`, `"body":{"o":"••••••","raw":"••••••"}`} {
		if !strings.Contains(raw, want) {
			t.Errorf("no %s in %s", want, raw)
		}
	}
	// The read is logged like any other run's.
	var channel, routeID, username string
	if err := ta.pool.QueryRow(ctx, `SELECT channel, route_id, username FROM vault_access_log WHERE action = 'read' ORDER BY id DESC LIMIT 1`).
		Scan(&channel, &routeID, &username); err != nil || channel != "route" || routeID != "secret" || username != "ada" {
		t.Fatalf("the read's log row: %q %q %q %v", channel, routeID, username, err)
	}
}

// TestRouteRunDraft: POST /route/run runs an unsaved route document, as a
// dry run whatever dry_run says, checked as saving would check it.
func TestRouteRunDraft(t *testing.T) {
	t.Parallel()
	ta, h := runApp(t)
	draft := runnable{id: "draft", method: "POST", path: "/books/:shelf", body: `[{"id":"title","bdtype":"STRING"}]`, blocks: []string{
		`{"type":"OBJECT","depth":0,"local_name":"o","pairs":` + pairsOf("title", ref("title"), "shelf", ref("shelf")) + `}`,
		`{"type":"CREATE","depth":0,"ref_col":"books","ref_object":"o","save":true,"conditions":[]}`,
		`{"type":"RETURN","depth":0,"pairs":` + pairsOf("made", ref("o")) + `,"conditions":[]}`,
	}}
	status, body := ta.call(t, "POST", "/route/run", `{"project_id":"shop","route":`+draft.JSON()+`,"path":"/books/C9","body":{"title":"Ubik"},"dry_run":false}`, h)
	if status != 200 || !strings.Contains(body, `"dry_run":true`) || !strings.Contains(body, `"shelf":"C9"`) || !strings.Contains(body, `"title":"Ubik"`) ||
		!strings.Contains(body, `"attempts":1`) {
		t.Fatalf("%d %s", status, body)
	}
	if strings.Contains(ta.records(t, "books"), "Ubik") {
		t.Fatal("a draft's run wrote")
	}
	viewer := ta.newUser(t, "vic", store.RoleViewer)
	if err := ta.h.store.AddMember(context.Background(), "shop", viewer.ID, store.MembershipRole(viewer.Role)); err != nil {
		t.Fatal(err)
	}
	vaultDraft := runnable{id: "v", method: "GET", path: "/v", blocks: []string{`{"type":"VAULT","depth":0,"local_name":"k","key":"API_KEY"}`}}
	broken := runnable{id: "b", method: "GET", path: "/b", blocks: []string{`{"type":"FETCH","depth":0,"local_name":"rows"}`}}
	ta.run(t, []scenario{
		{name: "both route_id and route", method: "POST", path: "/route/run", headers: h, status: 422,
			body: `{"project_id":"shop","route_id":"x","route":` + draft.JSON() + `}`, want: []string{`"route_id":"must be left out with route`}},
		{name: "neither", method: "POST", path: "/route/run", headers: h, status: 400, body: `{"project_id":"shop"}`, want: []string{"route_id is required"}},
		{name: "a draft that does not save", method: "POST", path: "/route/run", headers: h, status: 422,
			body: `{"project_id":"shop","route":` + broken.JSON() + `}`, want: []string{`"route.flow.blocks[0].ref_col":"is required"`}},
		{name: "an AUTHOR's draft reading the vault", method: "POST", path: "/route/run", headers: h, status: 403,
			body: `{"project_id":"shop","route":` + vaultDraft.JSON() + `}`, want: []string{"Block 1 (VAULT) reads the vault", "(route.flow.blocks[0])"}},
		{name: "a VIEWER", method: "POST", path: "/route/run", headers: as(ta.token(t, viewer)), status: 403,
			body: `{"project_id":"shop","route":` + draft.JSON() + `}`},
	})
}

// TestRouteRunTemplateDraft: POST /route/run runs an unsaved template with
// the values given (defaults where left out), as the route applying it
// would make, dry; bad values and a template of another project are 422.
func TestRouteRunTemplateDraft(t *testing.T) {
	t.Parallel()
	ta, h := runApp(t)
	tmpl := func(project string) string {
		return `{"name":"greeter","description":"says hello","project_id":` + project + `,"method":"GET","route_id":"hello_{who}","route_path":"/hello/{who}",
			"auth_jwt":{"active":false,"field":"","ref_col":""},"params":{"delimiter":"&","pairs":[]},"body":[],
			"variables":[{"key":"who","description":"whom","default_value":"world"},{"key":"word","description":"the greeting","default_value":null}],
			"flow":{"blocks":[{"type":"RETURN","depth":0,"pairs":[{"id":"{word}","data":{"ref_var":false,"rtype":"STRING","data":"{who}"}}],"conditions":[]}]}}`
	}
	ta.run(t, []scenario{
		{name: "a global template with a value and a default", method: "POST", path: "/route/run", headers: h, status: 200,
			body: `{"project_id":"shop","template":` + tmpl("null") + `,"values":{"word":"hi"},"path":"/hello/world","dry_run":false}`,
			want: []string{`"body":{"hi":"world"}`, `"dry_run":true`}},
		{name: "the project's own template", method: "POST", path: "/route/run", headers: h, status: 200,
			body: `{"project_id":"shop","template":` + tmpl(`"shop"`) + `,"values":{"word":"yo","who":"you"},"path":"/hello/you"}`,
			want: []string{`"body":{"yo":"you"}`}},
		{name: "a value missing", method: "POST", path: "/route/run", headers: h, status: 422,
			body: `{"project_id":"shop","template":` + tmpl("null") + `,"path":"/hello/world"}`, want: []string{`"values.word":"has no value and the variable has no default"`}},
		{name: "a value of no variable", method: "POST", path: "/route/run", headers: h, status: 422,
			body: `{"project_id":"shop","template":` + tmpl("null") + `,"values":{"word":"hi","x":"1"}}`, want: []string{`"values.x":"is not a variable of this template"`}},
		{name: "another project's template", method: "POST", path: "/route/run", headers: h, status: 422,
			body: `{"project_id":"shop","template":` + tmpl(`"mall"`) + `,"values":{"word":"hi"}}`, want: []string{`"template.project_id"`}},
		{name: "a template and a route", method: "POST", path: "/route/run", headers: h, status: 422,
			body: `{"project_id":"shop","route_id":"x","template":` + tmpl("null") + `,"values":{"word":"hi"}}`, want: []string{`"template":"must be the only document`}},
		{name: "values without a template", method: "POST", path: "/route/run", headers: h, status: 422,
			body: `{"project_id":"shop","route_id":"x","values":{"word":"hi"}}`, want: []string{`"values":"are a template's`}},
		// The document a client is about to save, its save's note included
		// (TemplateInput in the API document), runs as it is.
		{name: "a template with its save's note", method: "POST", path: "/route/run", headers: h, status: 200,
			body: `{"project_id":"shop","template":` + strings.Replace(tmpl("null"), `{"name"`, `{"note":"first draft","name"`, 1) + `,"values":{"word":"hi"}}`,
			want: []string{`"body":{"hi":"world"}`}},
		{name: "a note a save refuses", method: "POST", path: "/route/run", headers: h, status: 422,
			body: `{"project_id":"shop","template":` + strings.Replace(tmpl("null"), `{"name"`, `{"note":"`+strings.Repeat("n", 501)+`","name"`, 1) + `,"values":{"word":"hi"}}`,
			want: []string{`"template.note":"must be at most 500 characters"`}},
		{name: "a template that does not save", method: "POST", path: "/route/run", headers: h, status: 422,
			body: `{"project_id":"shop","template":{"name":"x","method":"GET"}}`, want: []string{`"template.description"`}},
	})
}
