package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
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
		Add, Change, Remove []struct {
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
