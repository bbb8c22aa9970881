package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"stencil/store"
)

// fileApp has project "shop" of ADMIN "ann" (who holds her token in
// admin), with a collection of two records, an email template, a project
// template, a vault entry and three routes, one of which reads the vault.
func fileApp(t *testing.T) (*testApp, map[string]string) {
	t.Helper()
	ta := newTestApp(t)
	ann := ta.newUser(t, "ann", store.RoleAdmin)
	admin := as(ta.token(t, ann))
	for _, req := range [][2]string{
		{"/project/create", `{"id":"shop","name":"Shop","api_path":"/shop","x_rate_limit":20,"x_cors_origins":["https://app.example.com"]}`},
		{"/collection/create", `{"project_id":"shop","id":"books","name":"Books","description":"What we sell"}`},
		{"/data/create", `{"project_id":"shop","collection_id":"books","data":{"title":"Dune","price":9}}`},
		{"/data/create", `{"project_id":"shop","collection_id":"books","data":{"title":"Emma","tags":["classic"]}}`},
		{"/email/template/create", `{"project_id":"shop","name":"welcome","subject":"Hi {name}","text":"Hello {name}","html":"<p>Hello {name}</p>"}`},
		{"/vault/create", `{"project_id":"shop","key":"API_KEY","value":"sk_live_file_secret"}`},
		{"/route/template/create", `{"name":"lister","description":"lists","project_id":"shop","method":"GET","route_id":"list_{c}","route_path":"/{c}",
			"auth_jwt":{"active":false,"field":"","ref_col":""},"params":{"delimiter":"&","pairs":[]},"body":[],
			"flow":{"blocks":[{"type":"RETURN","depth":0,"pairs":[],"conditions":[]}]},"variables":[{"key":"c","description":"the collection","default_value":null}]}`},
		{"/route/create", `{"project_id":"shop","route":` + fileRoute("books", "books") + `}`},
		{"/route/create", `{"project_id":"shop","route":` + plainRoute("ping") + `}`},
		{"/route/create", `{"project_id":"shop","route":` + vaultRoute("secret") + `}`},
	} {
		if status, body := ta.call(t, "POST", req[0], req[1], admin); status != http.StatusCreated {
			t.Fatalf("%s: %d %s", req[0], status, body)
		}
	}
	return ta, admin
}

// fileRoute is a route listing collection col.
func fileRoute(id, col string) string {
	return fmt.Sprintf(`{"route_id":%q,"route_path":"/%s","method":"GET","auth_jwt":{"active":false,"field":"","ref_col":""},
		"params":{"delimiter":"&","pairs":[]},"body":[],"flow":{"blocks":[
		{"type":"FETCH","depth":0,"local_name":"rows","ref_col":%q,"match":[]},
		{"type":"RETURN","depth":0,"pairs":%s,"conditions":[]}]}}`, id, id, col, pairsOf("items", ref("rows")))
}

// vaultRoute is a route answering the vault's API_KEY.
func vaultRoute(id string) string {
	return fmt.Sprintf(`{"route_id":%q,"route_path":"/%s","method":"GET","auth_jwt":{"active":false,"field":"","ref_col":""},
		"params":{"delimiter":"&","pairs":[]},"body":[],"flow":{"blocks":[
		{"type":"VAULT","depth":0,"local_name":"k","key":"API_KEY"},
		{"type":"RETURN","depth":0,"pairs":%s,"conditions":[]}]}}`, id, id, pairsOf("n", ref("k")))
}

// export answers the project's file, checking its download headers.
func export(t *testing.T, ta *testApp, project, query string, headers map[string]string) string {
	t.Helper()
	req, _ := http.NewRequest("GET", "/project/export?project_id="+project+query, nil)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, body := ta.do(t, req)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("export %s: %d %s", project, resp.StatusCode, body)
	}
	if got := resp.Header.Get("Content-Disposition"); got != `attachment; filename="`+project+`.stencil.json"` {
		t.Fatalf("Content-Disposition %q", got)
	}
	return body
}

// fileBody is the body of plan and apply.
func fileBody(project, doc string, extra string) string {
	return fmt.Sprintf(`{"project_id":%q,"document":%s%s}`, project, doc, extra)
}

type planAnswer struct {
	Message string
	Data    struct {
		Add, Change, Remove, Kept []struct {
			Kind, ID string
			Fields   []string
		}
		Unchanged      int
		MissingSecrets []string `json:"missing_secrets"`
		PlanID         string   `json:"plan_id"`
	}
}

func readPlan(t *testing.T, body string) planAnswer {
	t.Helper()
	var p planAnswer
	if err := json.Unmarshal([]byte(body), &p); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	return p
}

// counts is how many route versions, template versions and events the
// database holds.
func counts(t *testing.T, ta *testApp) string {
	t.Helper()
	var versions, templateVersions, events int
	err := ta.pool.QueryRow(context.Background(), `SELECT (SELECT count(*) FROM route_versions), (SELECT count(*) FROM template_versions),
		(SELECT count(*) FROM events)`).Scan(&versions, &templateVersions, &events)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%d route versions, %d template versions, %d events", versions, templateVersions, events)
}

// TestProjectFileRoundTrip: a project exported with its records and
// applied to another service as a new project exports as the same file
// but for its id; applied again, it writes nothing. No vault value ever
// leaves in the file.
func TestProjectFileRoundTrip(t *testing.T) {
	t.Parallel()
	ta, admin := fileApp(t)
	file := export(t, ta, "shop", "&records=true", admin)
	if again := export(t, ta, "shop", "&records=true", admin); again != file {
		t.Fatal("two exports without a change differ")
	}
	for _, want := range []string{`"format": 1`, `"id": "shop"`, `"vault_keys": [
    "API_KEY"
  ]`, `"records": [`, `"title": "Dune"`, `"name": "lister"`, `<p>Hello {name}</p>`} {
		if !strings.Contains(file, want) {
			t.Errorf("the file lacks %s:\n%s", want, file)
		}
	}
	if strings.Contains(file, "sk_live_file_secret") || strings.Contains(file, `"created_at"`) || strings.Contains(file, `"version"`) {
		t.Fatalf("the file holds a vault value or metadata:\n%s", file)
	}

	// Another service: project "copy" does not exist there; its ADMIN
	// makes it from the file.
	tb := newTestApp(t)
	bob := as(tb.token(t, tb.newUser(t, "bob", store.RoleAdmin)))
	// A record made and deleted there first: the records' ids there have
	// moved on, and the file's still take their own.
	for _, call := range [][2]string{
		{"/project/create", `{"id":"scratch","name":"Scratch","api_path":"/scratch"}`},
		{"/collection/create", `{"project_id":"scratch","id":"notes","name":"Notes"}`},
		{"/data/create", `{"project_id":"scratch","collection_id":"notes","data":{"n":1}}`},
	} {
		if status, body := tb.call(t, "POST", call[0], call[1], bob); status != http.StatusCreated {
			t.Fatalf("%s: %d %s", call[0], status, body)
		}
	}
	if status, body := tb.call(t, "DELETE", "/data/delete?project_id=scratch&collection_id=notes&id=1", "", bob); status != http.StatusOK {
		t.Fatalf("data/delete: %d %s", status, body)
	}
	if !strings.Contains(file, `"_id": 1,`) || !strings.Contains(file, `"_id": 2,`) {
		t.Fatalf("the records carry no ids:\n%s", file)
	}
	status, body := tb.call(t, "POST", "/project/plan", fileBody("copy", file, ""), bob)
	plan := readPlan(t, body)
	if status != http.StatusOK || len(plan.Data.Add) != 7+1+3+1+1 || len(plan.Data.Change) != 0 ||
		strings.Join(plan.Data.MissingSecrets, ",") != "API_KEY" || len(plan.Data.PlanID) != 64 {
		t.Fatalf("plan of a new project: %d %s", status, body)
	}
	before := counts(t, tb)
	if status, body := tb.call(t, "POST", "/project/apply", fileBody("copy", file, `,"plan_id":"`+plan.Data.PlanID+`"`), bob); status != http.StatusCreated {
		t.Fatalf("apply to a new project: %d %s", status, body)
	}
	if counts(t, tb) == before {
		t.Fatal("applying wrote no version or event")
	}
	copied := export(t, tb, "copy", "&records=true", bob)
	if want := strings.Replace(file, `"id": "shop"`, `"id": "copy"`, 1); copied != strings.Replace(want, `"vault_keys": [
    "API_KEY"
  ]`, `"vault_keys": []`, 1) {
		t.Fatalf("the copy's file differs:\n%s\nwant:\n%s", copied, want)
	}
	// The routes run there.
	if status, body := tb.call(t, "GET", "/x/shop/books", "", nil); status != http.StatusOK || !strings.Contains(body, "Emma") {
		t.Fatalf("a route of the copy: %d %s", status, body)
	}
	// A record made after takes an id past the file's; the file applied
	// as yet another project finds its ids taken (422, nothing written).
	if status, body := tb.call(t, "POST", "/data/create", `{"project_id":"copy","collection_id":"books","data":{"title":"Heat"}}`, bob); status != http.StatusCreated || !strings.Contains(body, `"id":3`) {
		t.Fatalf("a record after the apply: %d %s", status, body)
	}
	status, body = tb.call(t, "POST", "/project/apply", fileBody("copy2", strings.Replace(file, `"api_path": "/shop"`, `"api_path": "/shop2"`, 1), ""), bob)
	if status != http.StatusUnprocessableEntity || !strings.Contains(body, `"collections[0].records[0]._id":"is the id of another record on this service"`) {
		t.Fatalf("a file whose record ids are taken: %d %s", status, body)
	}
	if status, _ := tb.call(t, "GET", "/project/fetch/one?project_id=copy2", "", bob); status != http.StatusNotFound {
		t.Fatalf("a refused apply made the project: %d", status)
	}

	// Again: nothing to do, nothing written.
	before = counts(t, tb)
	status, body = tb.call(t, "POST", "/project/plan", fileBody("copy", file, `,"prune":true`), bob)
	if p := readPlan(t, body); status != http.StatusOK || len(p.Data.Add)+len(p.Data.Change)+len(p.Data.Remove) != 0 || p.Data.Unchanged != 7+1+3+1+1 {
		t.Fatalf("plan of the same file: %d %s", status, body)
	}
	status, body = tb.call(t, "POST", "/project/apply", fileBody("copy", file, `,"prune":true`), bob)
	if status != http.StatusOK || !strings.Contains(body, "Nothing to change") || counts(t, tb) != before {
		t.Fatalf("applying the same file again: %d %s; %s, was %s", status, body, counts(t, tb), before)
	}
}

// edit changes a file: fn gets its JSON as maps and lists.
func edit(t *testing.T, file string, fn func(doc map[string]any)) string {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal([]byte(file), &doc); err != nil {
		t.Fatal(err)
	}
	fn(doc)
	raw, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// drop and keep filter a list of the file by an object's id field.
func drop(doc map[string]any, list, field, id string) {
	var out []any
	for _, it := range doc[list].([]any) {
		if it.(map[string]any)[field] != id {
			out = append(out, it)
		}
	}
	doc[list] = out
}

func item(doc map[string]any, list, field, id string) map[string]any {
	for _, it := range doc[list].([]any) {
		if m := it.(map[string]any); m[field] == id {
			return m
		}
	}
	panic("no " + id + " in " + list)
}

func raw(s string) any {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		panic(err)
	}
	return v
}

// TestProjectPlanAndApply: each kind added, changed and removed (removed
// only with prune), in the words of the pages; applied with its versions
// and events; a stale plan refused with nothing written.
func TestProjectPlanAndApply(t *testing.T) {
	t.Parallel()
	ta, admin := fileApp(t)
	for _, req := range [][2]string{
		{"/collection/create", `{"project_id":"shop","id":"old","name":"Old"}`},
		{"/email/template/create", `{"project_id":"shop","name":"old","subject":"Old","text":"old"}`},
		{"/route/template/create", `{"name":"old_t","description":"old","project_id":"shop","method":"GET","route_id":"o","route_path":"/o",
			"auth_jwt":{"active":false,"field":"","ref_col":""},"params":{"delimiter":"&","pairs":[]},"body":[],
			"flow":{"blocks":[{"type":"RETURN","depth":0,"pairs":[],"conditions":[]}]},"variables":[]}`},
	} {
		if status, body := ta.call(t, "POST", req[0], req[1], admin); status != http.StatusCreated {
			t.Fatalf("%s: %d %s", req[0], status, body)
		}
	}
	file := edit(t, export(t, ta, "shop", "", admin), func(doc map[string]any) {
		doc["x_rate_limit"] = 30
		item(doc, "collections", "id", "books")["name"] = "All books"
		item(doc, "email_templates", "name", "welcome")["subject"] = "Welcome {name}"
		item(doc, "templates", "name", "lister")["description"] = "lists a collection"
		books := item(doc, "routes", "route_id", "books")
		books["flow"].(map[string]any)["blocks"].([]any)[0].(map[string]any)["ref_col"] = "authors"
		drop(doc, "collections", "id", "old")
		drop(doc, "email_templates", "name", "old")
		drop(doc, "templates", "name", "old_t")
		drop(doc, "routes", "route_id", "ping")
		doc["collections"] = append(doc["collections"].([]any), raw(`{"id":"authors","name":"Authors","description":"","records":[{"name":"Herbert"}]}`))
		doc["email_templates"] = append(doc["email_templates"].([]any), raw(`{"name":"bye","subject":"Bye","text":"Bye","html":""}`))
		doc["routes"] = append(doc["routes"].([]any), raw(plainRoute("pong")))
	})
	words := func(p planAnswer) string {
		var lines []string
		for _, l := range []struct {
			verb  string
			items []struct {
				Kind, ID string
				Fields   []string
			}
		}{{"add", p.Data.Add}, {"change", p.Data.Change}, {"remove", p.Data.Remove}} {
			for _, it := range l.items {
				lines = append(lines, l.verb+" "+it.Kind+" "+it.ID+": "+strings.Join(it.Fields, "; "))
			}
		}
		return strings.Join(lines, "\n")
	}
	status, body := ta.call(t, "POST", "/project/plan", fileBody("shop", file, ""), admin)
	want := `add collection authors: 1 records
add route pong: GET /pong
add email_template bye: 
change setting x_rate_limit: x_rate_limit: 20 → 30
change collection books: name: Books → All books
change route books: Block 1 (FETCH) · Collection: books → authors
change template lister: description: lists → lists a collection
change email_template welcome: subject: Hi {name} → Welcome {name}`
	if got := words(readPlan(t, body)); status != http.StatusOK || got != want {
		t.Fatalf("plan without prune: %d\n%s\nwant:\n%s", status, got, want)
	}
	status, body = ta.call(t, "POST", "/project/plan", fileBody("shop", file, `,"prune":true`), admin)
	plan := readPlan(t, body)
	removed := `remove collection old: 
remove route ping: 
remove template old_t: 
remove email_template old: `
	if got := words(plan); status != http.StatusOK || !strings.HasSuffix(got, want+"\n"+removed) {
		t.Fatalf("plan with prune: %d\n%s", status, got)
	}

	// Someone saves the project by hand: the plan is stale, and applying
	// it writes nothing.
	if status, body := ta.call(t, "PATCH", "/project/update", `{"project_id":"shop","description":"by hand"}`, admin); status != http.StatusOK {
		t.Fatalf("update: %d %s", status, body)
	}
	before := counts(t, ta)
	status, body = ta.call(t, "POST", "/project/apply", fileBody("shop", file, `,"prune":true,"plan_id":"`+plan.Data.PlanID+`"`), admin)
	if status != http.StatusConflict || !strings.Contains(body, "changed since that plan") || counts(t, ta) != before {
		t.Fatalf("stale plan: %d %s; %s, was %s", status, body, counts(t, ta), before)
	}
	if _, body := ta.call(t, "GET", "/route/fetch/one?project_id=shop&route_id=ping", "", admin); !strings.Contains(body, `"route_id":"ping"`) {
		t.Fatalf("a refused apply removed a route: %s", body)
	}

	// Planned again, applied.
	_, body = ta.call(t, "POST", "/project/plan", fileBody("shop", file, `,"prune":true`), admin)
	plan = readPlan(t, body)
	status, body = ta.call(t, "POST", "/project/apply", fileBody("shop", file, `,"prune":true,"plan_id":"`+plan.Data.PlanID+`"`), admin)
	if status != http.StatusOK || !strings.Contains(body, "Applied: 3 added, 6 changed, 4 removed") {
		t.Fatalf("apply: %d %s", status, body)
	}
	var events []string
	rows, _ := ta.pool.Query(context.Background(), `SELECT type || ' ' || object FROM events WHERE project_id = 'shop' AND id > (SELECT max(id) - 12 FROM events) ORDER BY id`)
	for rows.Next() {
		var e string
		_ = rows.Scan(&e)
		events = append(events, e)
	}
	if got := strings.Join(events, ", "); got != "project_update shop, collection_delete old, route_delete ping, template_delete "+
		fmt.Sprint(templateID(t, ta, "old_t"))+", email_template_delete old, collection_create authors, collection_update books, "+
		"email_template_create bye, email_template_update welcome, template_update "+fmt.Sprint(templateID(t, ta, "lister"))+
		", route_update books, route_create pong" {
		t.Errorf("events: %s", got)
	}
	var note string
	var version int
	if err := ta.pool.QueryRow(context.Background(), `SELECT note, version FROM route_versions WHERE project_id = 'shop' AND route_id = 'books'
		ORDER BY version DESC LIMIT 1`).Scan(&note, &version); err != nil || note != "Applied from a project file" || version != 2 {
		t.Fatalf("the route's version: %d %q %v", version, note, err)
	}
	if status, body := ta.call(t, "GET", "/x/shop/books", "", nil); status != http.StatusOK || !strings.Contains(body, "Herbert") {
		t.Fatalf("the changed route at /x: %d %s", status, body)
	}
	status, body = ta.call(t, "POST", "/project/plan", fileBody("shop", file, `,"prune":true`), admin)
	if got := words(readPlan(t, body)); status != http.StatusOK || got != "" {
		t.Fatalf("plan after apply: %s", got)
	}
}

// templateID is the id a template of project shop had, from the events.
func templateID(t *testing.T, ta *testApp, name string) int64 {
	t.Helper()
	var id int64
	if err := ta.pool.QueryRow(context.Background(), `SELECT object::bigint FROM events WHERE type = 'template_create' AND summary LIKE 'template '||$1||' created%' LIMIT 1`, name).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

// TestProjectFileRefusals: who may not, and files that cannot be applied,
// each named by its path in the file; nothing is written.
func TestProjectFileRefusals(t *testing.T) {
	t.Parallel()
	ta, admin := fileApp(t)
	file := export(t, ta, "shop", "", admin)
	author := as(ta.token(t, ta.newUser(t, "author", store.RoleAuthor)))
	other := as(ta.token(t, ta.newUser(t, "other", store.RoleAdmin)))
	if status, body := ta.call(t, "POST", "/project/member/add", `{"project_id":"shop","username":"author"}`, admin); status != http.StatusOK {
		t.Fatalf("member add: %d %s", status, body)
	}
	if status, body := ta.call(t, "POST", "/project/create", `{"id":"mall","name":"Mall","api_path":"/mall"}`, admin); status != http.StatusCreated {
		t.Fatalf("project create: %d %s", status, body)
	}
	before := counts(t, ta)
	for _, who := range []struct {
		name    string
		headers map[string]string
		status  int
	}{{"an AUTHOR member", author, http.StatusForbidden}, {"an ADMIN who is no member", other, http.StatusForbidden}} {
		for _, req := range [][3]string{
			{"GET", "/project/export?project_id=shop", ""},
			{"POST", "/project/plan", fileBody("shop", file, "")},
			{"POST", "/project/apply", fileBody("shop", file, "")},
		} {
			if status, body := ta.call(t, req[0], req[1], req[2], who.headers); status != who.status {
				t.Errorf("%s: %s %s: %d %s", who.name, req[0], req[1], status, body)
			}
		}
	}
	vault := edit(t, file, func(doc map[string]any) {
		doc["routes"] = append(doc["routes"].([]any), raw(strings.ReplaceAll(vaultRoute("other"), "API_KEY", "OTHER_KEY")))
	})
	status, body := ta.call(t, "POST", "/project/plan", fileBody("shop", vault, ""), admin)
	// A path written otherwise than the project stores it is no change.
	same := edit(t, file, func(doc map[string]any) { doc["api_path"] = "//shop/" })
	if status, body := ta.call(t, "POST", "/project/plan", fileBody("shop", same, ""), admin); status != http.StatusOK || !strings.Contains(body, "Nothing to change") {
		t.Fatalf("the API path written otherwise: %d %s", status, body)
	}
	if p := readPlan(t, body); status != http.StatusOK || strings.Join(p.Data.MissingSecrets, ",") != "OTHER_KEY" {
		t.Fatalf("a VAULT block's key the vault lacks: %d %s", status, body)
	}

	for _, c := range []struct {
		name, path string
		change     func(doc map[string]any)
	}{
		{"a route with no collection", "routes[0].flow.blocks[0].ref_col", func(doc map[string]any) {
			item(doc, "routes", "route_id", "books")["flow"].(map[string]any)["blocks"].([]any)[0].(map[string]any)["ref_col"] = ""
		}},
		{"a route that does not compile", "routes[1].flow.blocks[0].action", func(doc map[string]any) {
			item(doc, "routes", "route_id", "ping")["flow"] = raw(`{"blocks":[{"type":"CONDITION","depth":0,"conditions":[],"action":"BREAK","fail":null}]}`)
		}},
		{"a route on a path a route the file leaves holds", "routes[2].route_path", func(doc map[string]any) {
			drop(doc, "routes", "route_id", "ping")
			doc["routes"] = append(doc["routes"].([]any), raw(strings.ReplaceAll(plainRoute("ping"), `"route_id":"ping"`, `"route_id":"pong"`)))
		}},
		{"a bad API path", "api_path", func(doc map[string]any) { doc["api_path"] = "shop" }},
		{"another project's API path", "api_path", func(doc map[string]any) { doc["api_path"] = "/MALL/" }},
		{"an API path inside another project's", "api_path", func(doc map[string]any) { doc["api_path"] = "/mall/shop" }},
		{"a negative rate", "x_rate_limit", func(doc map[string]any) { doc["x_rate_limit"] = -1 }},
		{"a bad origin", "x_cors_origins", func(doc map[string]any) { doc["x_cors_origins"] = []any{"ftp://x"} }},
		{"a collection id", "collections[0].id", func(doc map[string]any) { item(doc, "collections", "id", "books")["id"] = "Bad Id" }},
		{"a record id that is no whole number", "collections[0].records[0]._id", func(doc map[string]any) {
			item(doc, "collections", "id", "books")["records"] = []any{json.RawMessage(`{"_id":"one","title":"Dune"}`)}
		}},
		{"a record id given twice", "collections[0].records[1]._id", func(doc map[string]any) {
			item(doc, "collections", "id", "books")["records"] = []any{json.RawMessage(`{"_id":7,"title":"Dune"}`), json.RawMessage(`{"_id":7,"title":"Emma"}`)}
		}},
		{"a record that is no object", "collections[0].records[0]", func(doc map[string]any) {
			item(doc, "collections", "id", "books")["records"] = []any{1}
		}},
		{"a record with a number past float64", "collections[0].records[0]", func(doc map[string]any) {
			item(doc, "collections", "id", "books")["records"] = []any{json.RawMessage(`{"n":1e400}`)}
		}},
		{"an email subject of two lines", "email_templates[0].subject", func(doc map[string]any) {
			item(doc, "email_templates", "name", "welcome")["subject"] = "a\nb"
		}},
		{"a template with an id", "templates[0].id", func(doc map[string]any) { item(doc, "templates", "name", "lister")["id"] = 4 }},
		{"an unknown field", "colour", func(doc map[string]any) { doc["colour"] = "red" }},
		{"another format", "format", func(doc map[string]any) { doc["format"] = 2 }},
	} {
		bad := edit(t, file, c.change)
		extra := `,"prune":true`
		if strings.Contains(c.name, "the file leaves") {
			extra = "" // with prune, that route would go
		}
		for _, path := range []string{"/project/plan", "/project/apply"} {
			status, body := ta.call(t, "POST", path, fileBody("shop", bad, extra), admin)
			var env struct {
				Data struct{ Fields map[string]string }
			}
			_ = json.Unmarshal([]byte(body), &env)
			if status != http.StatusUnprocessableEntity || env.Data.Fields[c.path] == "" {
				t.Errorf("%s, %s: want 422 at %s, got %d %s", c.name, path, c.path, status, body)
			}
		}
	}
	if status, body := ta.call(t, "POST", "/project/plan", fileBody("shop", "5", ""), admin); status != http.StatusUnprocessableEntity ||
		!strings.Contains(body, `"document":"must be a JSON object"`) {
		t.Errorf("a document that is no object: %d %s", status, body)
	}
	if counts(t, ta) != before {
		t.Fatalf("refusals wrote: %s, was %s", counts(t, ta), before)
	}
}

// TestProjectApplyUnderConcurrency: eight files planned from the same
// project and applied at once with their plan_id: one is applied, the
// others are 409 and write nothing. Hand saves of a route racing applies
// of a file changing it: every save that answered 200 made its version,
// and the route is its newest version (no save is written over unseen).
func TestProjectApplyUnderConcurrency(t *testing.T) {
	t.Parallel()
	ta, admin := fileApp(t)
	file := export(t, ta, "shop", "", admin)
	const n = 8
	files, plans := make([]string, n), make([]string, n)
	for i := range n {
		files[i] = edit(t, file, func(doc map[string]any) { doc["x_rate_limit"] = 100 + i })
		_, body := ta.call(t, "POST", "/project/plan", fileBody("shop", files[i], ""), admin)
		plans[i] = readPlan(t, body).Data.PlanID
	}
	statuses := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			statuses[i], _ = ta.call(t, "POST", "/project/apply", fileBody("shop", files[i], `,"plan_id":"`+plans[i]+`"`), admin)
		})
	}
	wg.Wait()
	winner := -1
	for i, s := range statuses {
		switch {
		case s == http.StatusOK && winner < 0:
			winner = i
		case s != http.StatusConflict:
			t.Fatalf("statuses %v: one 200, the rest 409", statuses)
		}
	}
	var limit int
	if err := ta.pool.QueryRow(context.Background(), "SELECT x_rate_limit FROM projects WHERE id = 'shop'").Scan(&limit); err != nil || winner < 0 || limit != 100+winner {
		t.Fatalf("statuses %v, x_rate_limit %d", statuses, limit)
	}

	// Two files making the same new project at once: one makes it (201).
	// The other is told the id is taken when the two overlap, or, when it
	// began after the first had committed, is applied to the project the
	// first made (200) — never a second 201, never a 500.
	var twins [2]int
	for i := range twins {
		wg.Go(func() {
			twins[i], _ = ta.call(t, "POST", "/project/apply", fileBody("twin", `{"format":1,"api_path":"/twin_`+fmt.Sprint(i)+`"}`, ""), admin)
		})
	}
	wg.Wait()
	creator := slices.Index(twins[:], http.StatusCreated)
	other := twins[1-max(creator, 0)]
	if creator < 0 || (other != http.StatusOK && other != http.StatusConflict && other != http.StatusUnprocessableEntity) {
		t.Fatalf("two files making one project: %v", twins)
	}
	wantPath := fmt.Sprintf("/twin_%d", creator)
	if other == http.StatusOK {
		wantPath = fmt.Sprintf("/twin_%d", 1-creator)
	}
	var apiPath string
	if err := ta.pool.QueryRow(context.Background(), "SELECT api_path FROM projects WHERE id = 'twin'").Scan(&apiPath); err != nil || apiPath != wantPath {
		t.Fatalf("two files making one project %v: api_path %q (%v), want %q", twins, apiPath, err, wantPath)
	}

	saved, applied := 0, 0
	for round := range 6 {
		changed := edit(t, export(t, ta, "shop", "", admin), func(doc map[string]any) {
			item(doc, "routes", "route_id", "ping")["route_path"] = fmt.Sprintf("/ping_file_%d", round)
		})
		_, body := ta.call(t, "POST", "/project/plan", fileBody("shop", changed, ""), admin)
		planID := readPlan(t, body).Data.PlanID
		var hand, file int
		wg.Go(func() {
			hand, _ = ta.call(t, "PATCH", "/route/update", fmt.Sprintf(`{"project_id":"shop","route_id":"ping","route":%s}`,
				strings.ReplaceAll(plainRoute("ping"), `"route_path":"/ping"`, fmt.Sprintf(`"route_path":"/ping_hand_%d"`, round))), admin)
		})
		wg.Go(func() {
			file, _ = ta.call(t, "POST", "/project/apply", fileBody("shop", changed, `,"plan_id":"`+planID+`"`), admin)
		})
		wg.Wait()
		if hand != http.StatusOK || (file != http.StatusOK && file != http.StatusConflict) {
			t.Fatalf("round %d: hand save %d, apply %d", round, hand, file)
		}
		saved++
		if file == http.StatusOK {
			applied++
		}
	}
	var versions int
	var newest, current string
	err := ta.pool.QueryRow(context.Background(), `SELECT (SELECT count(*) FROM route_versions WHERE project_id = 'shop' AND route_id = 'ping'),
		(SELECT document->>'route_path' FROM route_versions WHERE project_id = 'shop' AND route_id = 'ping' ORDER BY version DESC LIMIT 1),
		(SELECT route_path FROM routes WHERE project_id = 'shop' AND route_id = 'ping')`).Scan(&versions, &newest, &current)
	if err != nil || versions != 1+saved+applied || newest != current {
		t.Fatalf("%d versions for 1 + %d saves + %d applies; newest %s, route %s (%v)", versions, saved, applied, newest, current, err)
	}
}

// TestProjectFileLeavesOut: a file may leave out any setting (the
// project's value stays; a new project gets /project/create's defaults)
// and any list (read as empty: with prune, its objects go).
func TestProjectFileLeavesOut(t *testing.T) {
	t.Parallel()
	ta, admin := fileApp(t)
	status, body := ta.call(t, "POST", "/project/plan", fileBody("shop", `{"format":1}`, `,"prune":true`), admin)
	p := readPlan(t, body)
	var removed []string
	for _, it := range p.Data.Remove {
		removed = append(removed, it.Kind+" "+it.ID)
	}
	if status != http.StatusOK || len(p.Data.Add)+len(p.Data.Change) != 0 || p.Data.Unchanged != 7 ||
		strings.Join(removed, ", ") != "collection books, route books, route ping, route secret, template lister, email_template welcome" {
		t.Fatalf("a file of no list, with prune: %d %s", status, body)
	}
	if status, body := ta.call(t, "POST", "/project/plan", fileBody("shop", `{"format":1}`, ""), admin); status != http.StatusOK || !strings.Contains(body, "Nothing to change") {
		t.Fatalf("the same without prune: %d %s", status, body)
	}
	if status, body := ta.call(t, "POST", "/project/apply", fileBody("bare", `{"format":1}`, ""), admin); status != http.StatusCreated {
		t.Fatalf("a new project from an empty file: %d %s", status, body)
	}
	_, body = ta.call(t, "GET", "/project/fetch/one?project_id=bare", "", admin)
	for _, want := range []string{`"name":"bare"`, `"api_path":"/bare"`, `"x_rate_limit":50`, `"x_rate_burst":100`} {
		if !strings.Contains(body, want) {
			t.Fatalf("the new project lacks %s: %s", want, body)
		}
	}
}

// TestProjectFileFields: a typed collection's fields travel in its file,
// a plan says their changes in words, and applying runs the same check as
// the API: records that break a change refuse it, and a file that makes a
// field unique is told to do that on its own.
func TestProjectFileFields(t *testing.T) {
	t.Parallel()
	ta, admin := fileApp(t)
	status, body := ta.call(t, "POST", "/collection/create", `{"project_id":"shop","id":"authors","name":"Authors","additional":false,
		"fields":[{"name":"name","type":"text","required":true},{"name":"born","type":"integer","min":0,"default":1900}]}`, admin)
	if status != http.StatusCreated {
		t.Fatalf("typed collection: %d %s", status, body)
	}
	file := export(t, ta, "shop", "", admin)
	for _, want := range []string{`"fields": [`, `"name": "born",`, `"default": 1900,`, `"additional": false`} {
		if !strings.Contains(file, want) {
			t.Fatalf("the file lacks %s:\n%s", want, file)
		}
	}
	if strings.Count(file, `"fields"`) != 1 {
		t.Fatalf("an untyped collection carries fields:\n%s", file)
	}
	// Unchanged, it plans nothing.
	status, body = ta.call(t, "POST", "/project/plan", fileBody("shop", file, ""), admin)
	if p := readPlan(t, body); status != http.StatusOK || len(p.Data.Change) != 0 {
		t.Fatalf("plan of the exported file: %d %s", status, body)
	}
	// books gains a field its records break: the plan says so in words,
	// and the apply is refused with their ids.
	typed := edit(t, file, func(doc map[string]any) {
		item(doc, "collections", "id", "books")["fields"] = raw(`[{"name":"title","type":"text"},{"name":"price","type":"integer","required":true}]`)
		item(doc, "collections", "id", "authors")["fields"] = raw(`[{"name":"name","type":"text","required":true},{"name":"born","type":"number","min":0,"default":1900}]`)
	})
	status, body = ta.call(t, "POST", "/project/plan", fileBody("shop", typed, ""), admin)
	p := readPlan(t, body)
	words := fmt.Sprint(p.Data.Change)
	if status != http.StatusOK || !strings.Contains(words, "title: added (text)") || !strings.Contains(words, "price: added (integer, required)") ||
		!strings.Contains(words, "born: integer → number") {
		t.Fatalf("plan of typed fields: %d %s", status, body)
	}
	status, body = ta.call(t, "POST", "/project/apply", fileBody("shop", typed, ""), admin)
	if status != http.StatusConflict || !strings.Contains(body, "1 record does not fit: data.price is required (id 2)") {
		t.Fatalf("apply of fields records break: %d %s", status, body)
	}
	if again := export(t, ta, "shop", "", admin); again != file {
		t.Fatalf("a refused apply changed the project:\n%s", again)
	}
	// Fields that fit apply.
	fits := edit(t, typed, func(doc map[string]any) {
		item(doc, "collections", "id", "books")["fields"] = raw(`[{"name":"title","type":"text","required":true},{"name":"price","type":"integer"}]`)
	})
	if status, body := ta.call(t, "POST", "/project/apply", fileBody("shop", fits, ""), admin); status != http.StatusOK {
		t.Fatalf("apply of fields that fit: %d %s", status, body)
	}
	status, body = ta.call(t, "POST", "/data/create", `{"project_id":"shop","collection_id":"books","data":{"price":"9"}}`, admin)
	if status != http.StatusUnprocessableEntity || !strings.Contains(body, "Error: data.title is required") {
		t.Fatalf("a record after the apply: %d %s", status, body)
	}
	// Bad definitions are named by their place in the file.
	bad := edit(t, fits, func(doc map[string]any) {
		item(doc, "collections", "id", "books")["fields"] = raw(`[{"name":"title","type":"string"}]`)
	})
	status, body = ta.call(t, "POST", "/project/plan", fileBody("shop", bad, ""), admin)
	if status != http.StatusUnprocessableEntity || !strings.Contains(body, `"collections[1].fields[0].type":"must be one of text, integer`) {
		t.Fatalf("plan of a bad field: %d %s", status, body)
	}
	unique := edit(t, fits, func(doc map[string]any) {
		item(doc, "collections", "id", "books")["fields"] = raw(`[{"name":"title","type":"text","required":true,"unique":true},{"name":"price","type":"integer"}]`)
	})
	// A field made unique: its index is built before the apply's
	// transaction, and holds after it.
	if status, body := ta.call(t, "POST", "/project/apply", fileBody("shop", unique, ""), admin); status != http.StatusOK {
		t.Fatalf("apply of a unique field: %d %s", status, body)
	}
	for _, doc := range []string{`{"title":"Kim","price":5}`, `{"title":"Nostromo","price":5}`} {
		if status, body := ta.call(t, "POST", "/data/create", `{"project_id":"shop","collection_id":"books","data":`+doc+`}`, admin); status != http.StatusCreated {
			t.Fatalf("a record: %d %s", status, body)
		}
	}
	status, body = ta.call(t, "POST", "/data/create", `{"project_id":"shop","collection_id":"books","data":{"title":"Kim"}}`, admin)
	if status != http.StatusConflict || !strings.Contains(body, "Error: data.title must be unique") {
		t.Fatalf("a second Kim after the apply: %d %s", status, body)
	}
	// A unique field that stored records break refuses the whole apply
	// and leaves no index behind; title stays unique.
	price := edit(t, unique, func(doc map[string]any) {
		item(doc, "collections", "id", "books")["fields"] = raw(`[{"name":"title","type":"text","required":true,"unique":true},{"name":"price","type":"integer","unique":true}]`)
	})
	status, body = ta.call(t, "POST", "/project/apply", fileBody("shop", price, ""), admin)
	if status != http.StatusConflict || !strings.Contains(body, "2 records do not fit: data.price must be unique") {
		t.Fatalf("apply of a unique field records break: %d %s", status, body)
	}
	var left int
	if err := ta.pool.QueryRow(context.Background(), "SELECT count(*) FROM pg_indexes WHERE indexname = $1",
		store.FieldIndex("shop", "books", "price", true)).Scan(&left); err != nil || left != 0 {
		t.Fatalf("the refused unique field's index: %d %v", left, err)
	}
	// No longer unique: its index goes once the apply is made.
	if status, body := ta.call(t, "POST", "/project/apply", fileBody("shop", fits, ""), admin); status != http.StatusOK {
		t.Fatalf("apply of title no longer unique: %d %s", status, body)
	}
	if status, body := ta.call(t, "POST", "/data/create", `{"project_id":"shop","collection_id":"books","data":{"title":"Kim"}}`, admin); status != http.StatusCreated {
		t.Fatalf("a second Kim once title is no longer unique: %d %s", status, body)
	}
	if err := ta.pool.QueryRow(context.Background(), "SELECT count(*) FROM pg_indexes WHERE indexname = $1",
		store.FieldIndex("shop", "books", "title", true)).Scan(&left); err != nil || left != 0 {
		t.Fatalf("the index of a field no longer unique: %d %v", left, err)
	}
	// The records a file adds are checked against their collection's
	// fields: one that breaks them refuses the apply, named by its place.
	withRecords := edit(t, fits, func(doc map[string]any) {
		doc["collections"] = append(doc["collections"].([]any), raw(`{"id":"films","name":"Films","description":"",
			"fields":[{"name":"title","type":"text","required":true},{"name":"year","type":"integer"}],
			"records":[{"title":"Alien","year":1979},{"title":"Heat","year":"1995"}]}`))
	})
	status, body = ta.call(t, "POST", "/project/apply", fileBody("shop", withRecords, ""), admin)
	if status != http.StatusUnprocessableEntity || !strings.Contains(body, `collections[2].records[1].year must be an integer`) {
		t.Fatalf("apply of a record its fields refuse: %d %s", status, body)
	}
	if status, body := ta.call(t, "GET", "/collection/fetch/one?project_id=shop&id=films", "", admin); status != http.StatusNotFound {
		t.Fatalf("a refused apply made the collection: %d %s", status, body)
	}
}

// Schedules travel in a project's file (docs/schedules.md): exported with
// their route ids, applied to another project, paused by a file, removed
// with prune; one that names no route of the file, or a bad expression,
// is a problem at its place.
func TestProjectFileSchedules(t *testing.T) {
	t.Parallel()
	ta, admin := fileApp(t)
	if status, body := ta.call(t, "POST", "/route/schedule/create", `{"project_id":"shop","route_id":"ping","cron":"30 2 * * *","timezone":"Europe/Berlin","body":{"b":1,"a":[2]}}`, admin); status != http.StatusCreated {
		t.Fatalf("schedule: %d %s", status, body)
	}
	file := export(t, ta, "shop", "", admin)
	if !strings.Contains(file, `"schedules": [
    {
      "route_id": "ping",
      "cron": "30 2 * * *",
      "timezone": "Europe/Berlin",
      "body": {`) {
		t.Fatalf("the file's schedules:\n%s", file)
	}
	// Unchanged, it plans nothing: the body's keys in any order.
	if status, body := ta.call(t, "POST", "/project/plan", fileBody("shop", file, ""), admin); status != http.StatusOK || len(readPlan(t, body).Data.Change) != 0 || strings.Contains(body, `"kind":"schedule"`) {
		t.Fatalf("plan of the exported file: %d %s", status, body)
	}
	// Applied to a new project: the schedule comes with its route.
	copied := strings.Replace(strings.Replace(file, `"id": "shop"`, `"id": "copy"`, 1), `"api_path": "/shop"`, `"api_path": "/copy"`, 1)
	if status, body := ta.call(t, "POST", "/project/apply", fileBody("copy", copied, ""), admin); status != http.StatusCreated {
		t.Fatalf("apply to a new project: %d %s", status, body)
	}
	_, list := ta.call(t, "GET", "/route/schedule/fetch?project_id=copy", "", admin)
	if !strings.Contains(list, `"route_id":"ping","cron":"30 2 * * *","timezone":"Europe/Berlin"`) || !strings.Contains(list, `"active":true`) {
		t.Fatalf("the copy's schedules: %s", list)
	}
	// Paused by the file; then gone with prune.
	paused := edit(t, file, func(doc map[string]any) { doc["schedules"].([]any)[0].(map[string]any)["active"] = false })
	status, body := ta.call(t, "POST", "/project/apply", fileBody("shop", paused, ""), admin)
	if status != http.StatusOK || !strings.Contains(body, "active: true → false") {
		t.Fatalf("a file that pauses the schedule: %d %s", status, body)
	}
	none := edit(t, file, func(doc map[string]any) { doc["schedules"] = []any{} })
	if status, body := ta.call(t, "POST", "/project/apply", fileBody("shop", none, `,"prune":true`), admin); status != http.StatusOK {
		t.Fatalf("prune: %d %s", status, body)
	}
	if _, list := ta.call(t, "GET", "/route/schedule/fetch?project_id=shop", "", admin); !strings.Contains(list, `"amount":0`) {
		t.Fatalf("schedules after the prune: %s", list)
	}
	for doc, want := range map[string]string{
		`{"route_id":"nope","cron":"@daily","timezone":"UTC","active":true}`:     `"schedules[0].route_id":"names no route of the file"`,
		`{"route_id":"ping","cron":"* *","timezone":"UTC","active":true}`:        `"schedules[0].cron":"must be five fields`,
		`{"route_id":"ping","cron":"@daily","timezone":"Nowhere","active":true}`: `"schedules[0].timezone":`,
		`{"route_id":"ping","cron":"@daily","body":[1]}`:                         `"schedules[0].body":"must be a JSON object"`,
		`{"route_id":"ping","cron":"@daily","when":"now"}`:                       `"schedules[0].when":"is not a known field"`,
	} {
		bad := edit(t, file, func(d map[string]any) { d["schedules"] = []any{raw(doc)} })
		if status, body := ta.call(t, "POST", "/project/plan", fileBody("shop", bad, ""), admin); status != http.StatusUnprocessableEntity || !strings.Contains(body, want) {
			t.Errorf("%s: %d %s", doc, status, body)
		}
	}
}

// TestProjectFileCarriesTests: a route's tests travel in the project's
// file (docs/tests.md): exported, planned as unchanged when the file says
// the same, changed by a file that changes one, kept or with prune removed
// when the file leaves one out, refused by path when they cannot run.
func TestProjectFileCarriesTests(t *testing.T) {
	t.Parallel()
	ta, admin := fileApp(t)
	if status, body := ta.call(t, "POST", "/route/test/create", `{"project_id":"shop","route_id":"books","name":"lists both",
		"request":{"path":"/books","caller":"anonymous"},"expect":{"status":200,"body":{"items":[{"title": "Dune"},{}]},
		"paths":[{"path":"items","op":"length","value":2}]}}`, admin); status != http.StatusCreated {
		t.Fatalf("test create: %d %s", status, body)
	}
	file := export(t, ta, "shop", "", admin)
	if !strings.Contains(file, `"tests": [`) || !strings.Contains(file, `"name": "lists both"`) || !strings.Contains(file, `"route_id": "books"`) {
		t.Fatalf("the file lacks the test:\n%s", file)
	}
	plan := func(doc, extra string) planAnswer {
		t.Helper()
		status, body := ta.call(t, "POST", "/project/plan", fileBody("shop", doc, extra), admin)
		if status != http.StatusOK {
			t.Fatalf("plan: %d %s", status, body)
		}
		return readPlan(t, body)
	}
	if p := plan(file, ""); len(p.Data.Add)+len(p.Data.Change)+len(p.Data.Remove)+len(p.Data.Kept) != 0 {
		t.Fatalf("the same file plans %+v", p.Data)
	}
	// The file's tests run against its routes before it is applied: a
	// file whose route lists another collection breaks the test the
	// saved route passes.
	broken := strings.Replace(file, `"ref_col": "books"`, `"ref_col": "nothing_here"`, 1)
	if broken == file {
		t.Fatal("the file has no FETCH of books to break")
	}
	for draft, want := range map[string]string{"": `"passed":1,"failed":0`, `,"draft":` + file: `"passed":1,"failed":0`, `,"draft":` + broken: `"passed":0,"failed":1`} {
		status, body := ta.call(t, "POST", "/route/test/run", `{"project_id":"shop"`+draft+`}`, admin)
		if status != http.StatusOK || !strings.Contains(body, want) {
			t.Fatalf("tests run (%d bytes of draft): %d %s", len(draft), status, body)
		}
		if strings.Contains(want, `"failed":1`) && !strings.Contains(body, `"status: expected 200, got 500"`) {
			t.Fatalf("the broken file's failure: %s", body)
		}
	}
	if status, body := ta.call(t, "POST", "/route/test/run", `{"project_id":"shop","draft":{"format":2}}`, admin); status != http.StatusUnprocessableEntity || !strings.Contains(body, `"draft.format"`) {
		t.Fatalf("a draft file that is no file: %d %s", status, body)
	}
	// A file that changes the test's status.
	changed := strings.Replace(file, `"status": 200`, `"status": 201`, 1)
	p := plan(changed, "")
	if len(p.Data.Change) != 1 || p.Data.Change[0].Kind != "test" || p.Data.Change[0].ID != "books/lists both" || !strings.Contains(strings.Join(p.Data.Change[0].Fields, " "), "expect: ") {
		t.Fatalf("a changed test plans %+v", p.Data)
	}
	if status, body := ta.call(t, "POST", "/project/apply", fileBody("shop", changed, ""), admin); status != http.StatusOK {
		t.Fatalf("apply: %d %s", status, body)
	}
	if _, body := ta.call(t, "GET", "/route/test/fetch?project_id=shop", "", admin); !strings.Contains(body, `"status":201`) {
		t.Fatalf("the test after apply: %s", body)
	}
	// A file without it: kept, or with prune removed.
	var doc map[string]any
	if err := json.Unmarshal([]byte(changed), &doc); err != nil {
		t.Fatal(err)
	}
	doc["tests"] = []any{}
	without, _ := json.Marshal(doc)
	if p := plan(string(without), ""); len(p.Data.Kept) != 1 || p.Data.Kept[0].ID != "books/lists both" {
		t.Fatalf("a file without the test plans %+v", p.Data)
	}
	if status, body := ta.call(t, "POST", "/project/apply", fileBody("shop", string(without), `,"prune":true`), admin); status != http.StatusOK || !strings.Contains(body, `"kind":"test"`) {
		t.Fatalf("apply with prune: %d %s", status, body)
	}
	if _, body := ta.call(t, "GET", "/route/test/fetch?project_id=shop", "", admin); !strings.Contains(body, `"amount":0`) {
		t.Fatalf("the test after a pruning apply: %s", body)
	}
	// Tests that cannot be: refused by their path in the file.
	for test, want := range map[string]string{
		`{"route_id":"nope","name":"x","request":{"caller":"anonymous"},"expect":{}}`:                                 `"tests[0].route_id":"names no route of the file"`,
		`{"route_id":"books","name":"x","request":{"caller":"anonymous"},"expect":{"paths":[{"path":"a","op":"?"}]}}`: `"tests[0].expect.paths[0].op":"must be one of`,
		`{"route_id":"books","name":"x","request":{"caller":"anonymous"},"expect":{},"when":"now"}`:                   `"tests[0]":"must be a test: unknown field \"when\""`,
	} {
		doc["tests"] = []any{json.RawMessage(test)}
		bad, _ := json.Marshal(doc)
		if status, body := ta.call(t, "POST", "/project/plan", fileBody("shop", string(bad), ""), admin); status != http.StatusUnprocessableEntity || !strings.Contains(body, want) {
			t.Errorf("%s: %d %s", test, status, body)
		}
	}
}

// TestProjectFileProblemsInWords: the apply page names a file's faults
// in the pages' words — a JSON fault by line and column, a route's block
// by the route's id and the block's number and type, a setting by its
// label — and a plan shows settings by their labels too.
func TestProjectFileProblemsInWords(t *testing.T) {
	t.Parallel()
	ta, admin := fileApp(t)
	file := export(t, ta, "shop", "", admin)
	cookie, csrf := ta.signIn(t, "ann")
	page := merge(browser(cookie, csrf), asHTMXHeaders, map[string]string{"Content-Type": "application/x-www-form-urlencoded"})
	plan := func(doc string) (int, string) {
		return ta.call(t, "POST", "/project/plan", url.Values{"project_id": {"shop"}, "document": {doc}}.Encode(), page)
	}
	status, body := plan(`{"id": "shop", "name": "Shop",}`)
	if status != http.StatusUnprocessableEntity || !strings.Contains(body, "The file</span> is not valid JSON: look at line 1, column 31") {
		t.Errorf("a trailing comma: %d %s", status, body)
	}
	broken := edit(t, file, func(doc map[string]any) {
		route := doc["routes"].([]any)[0].(map[string]any)
		route["flow"] = raw(`{"blocks":[{"type":"FETCH","depth":0,"local_name":"rows","ref_col":"books"},{"type":"FILTER","depth":0,"local_name":"kept","source":"","ref_property":"","filters":[]},{"type":"RETURN","depth":0,"pairs":[],"conditions":[]}]}`)
	})
	if status, body := plan(broken); status != http.StatusUnprocessableEntity || !strings.Contains(body, "Route books · Block 2 (FILTER) · Source list</span> is required") {
		t.Errorf("an empty FILTER source: %d %s", status, body)
	}
	limit := edit(t, file, func(doc map[string]any) { doc["x_rate_limit"] = -1 })
	if status, body := plan(limit); status != http.StatusUnprocessableEntity || !strings.Contains(body, "Rate limit (requests a second)</span> must be") {
		t.Errorf("a rate limit below 0: %d %s", status, body)
	}
	changed := edit(t, file, func(doc map[string]any) { doc["x_rate_limit"] = 10 })
	if status, body := plan(changed); status != http.StatusOK || !strings.Contains(body, `<span class="font-medium">Rate limit (requests a second)</span>`) || !strings.Contains(body, "20 → 10") {
		t.Errorf("a setting in the plan: %d %s", status, body)
	}
}
