package handlers

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"stencil/store"
)

// TestVaultEnvImportExport: a .env file with comments, export, quotes and
// escapes previews as keys only, applies in one go with every write
// logged, and round-trips through the export (=, #, quotes, line breaks,
// unicode); invalid keys refuse the whole file; delete_missing moves the
// others deleted for good; an AUTHOR may do none of it.
func TestVaultEnvImportExport(t *testing.T) {
	t.Parallel()
	ta, _, h := vaultApp(t)
	author := ta.newUser(t, "writer", store.RoleAuthor)
	if err := ta.h.store.AddMember(context.Background(), "shop", author.ID, store.MembershipRole(author.Role)); err != nil {
		t.Fatal(err)
	}
	if status, body := ta.call(t, "POST", "/vault/create", `{"project_id":"shop","key":"KEEP","value":"same"}`, h); status != 201 {
		t.Fatalf("create: %d %s", status, body)
	}
	if status, body := ta.call(t, "POST", "/vault/create", `{"project_id":"shop","key":"OLD","value":"before"}`, h); status != 201 {
		t.Fatalf("create: %d %s", status, body)
	}
	if status, body := ta.call(t, "POST", "/vault/create", `{"project_id":"shop","key":"GONE","value":"x"}`, h); status != 201 {
		t.Fatalf("create: %d %s", status, body)
	}
	env := "# the shop's secrets\n" +
		"export API_KEY=\"abc=def#notcomment\"\n" +
		"BACKSLASH=\"it's \\\\ $5\"\n" +
		"KEEP=same\n" +
		"OLD='after $HOME # kept'\n" +
		`PEM="-----BEGIN-----\nline two\n-----END-----"` + "\n" +
		`QUOTED="say \"hi\"" # a comment` + "\n" +
		"UNICODE=ünïcødé ☃\n"
	importJSON := func(env string, extra string) string {
		raw, _ := json.Marshal(env)
		return `{"project_id":"shop","env":` + string(raw) + extra + `}`
	}
	logged := func() int {
		var n int
		if err := ta.pool.QueryRow(context.Background(), "SELECT count(*)::int FROM vault_access_log WHERE project_id = 'shop'").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	var before int
	cookie, csrf := ta.signIn(t, "keeper")
	page := browser(cookie, csrf)
	ta.run(t, []scenario{
		{name: "the import page", method: "GET", path: "/web/vault/import?project_id=shop", headers: page, status: 200,
			want: []string{"Import a .env file", `name="env"`, `data-file-into="#import-env"`, `name="delete_missing"`}},
		{name: "the vault page links import and export", method: "GET", path: "/web/vault?project_id=shop", headers: page, status: 200,
			want: []string{`/web/vault/import?project_id=shop`, `/vault/export?project_id=shop`}},
		{name: "the page's preview", method: "POST", path: "/vault/import", headers: merge(page, asHTMXHeaders, map[string]string{"Content-Type": "application/x-www-form-urlencoded"}),
			body: "project_id=shop&dry_run=true&env=NEW_KEY%3D1%0AKEEP%3Dsame%0A", status: 200,
			want: []string{`data-testid="import-added"`, "NEW_KEY", `data-testid="import-unchanged"`, "Apply: 1 added, 0 changed, 0 deleted"}},
	})
	before = logged()
	ta.run(t, []scenario{
		{name: "the preview names keys only", method: "POST", path: "/vault/import", headers: h, body: importJSON(env, `,"dry_run":true,"delete_missing":true`), status: 200,
			want:     []string{`"added":["API_KEY","BACKSLASH","PEM","QUOTED","UNICODE"]`, `"changed":["OLD"]`, `"unchanged":["KEEP"]`, `"deleted":["GONE"]`, `"invalid":[]`, `"applied":false`},
			unwanted: []string{"abc=def", "after", "line two", "same"}},
		{name: "an author may not import", method: "POST", path: "/vault/import", headers: as(ta.token(t, author)), body: importJSON(env, ""), status: 403},
		{name: "an author may not export", method: "GET", path: "/vault/export?project_id=shop", headers: as(ta.token(t, author)), status: 403},
		{name: "an empty file", method: "POST", path: "/vault/import", headers: h, body: importJSON(" \n", ""), status: 422, want: []string{`"env":"is empty`}},
		{name: "a file that is no .env", method: "POST", path: "/vault/import", headers: h, body: importJSON("not a line\n", ""), status: 422,
			want: []string{`"env":"cannot be read as a .env file`}},
		{name: "invalid keys refuse the whole file", method: "POST", path: "/vault/import", headers: h, body: importJSON(env+"lower=1\nEMPTY=\n", ""), status: 422,
			want: []string{`"env.lower":"a key must be 1–255 upper-case letters`, `"env.EMPTY":"the value must be 1 to 65,536 bytes"`}},
		{name: "an unquoted # starts a comment; the last of a key counts", method: "POST", path: "/vault/import", headers: h,
			body: importJSON("NEW=a#b\nNEW=c # d\n", `,"dry_run":true`), status: 200, want: []string{`"added":["NEW"]`}},
		{name: "invalid keys in the preview", method: "POST", path: "/vault/import", headers: h, body: importJSON(env+"lower=1\n", `,"dry_run":true`), status: 200,
			want: []string{`"invalid":[{"key":"lower","reason":"a key must be 1–255`}},
	})
	// Compared values were read (KEEP, OLD: twice each over the previews
	// and the refused import), nothing else was written.
	var entries int
	if err := ta.pool.QueryRow(context.Background(), "SELECT count(*)::int FROM vault_entries WHERE project_id = 'shop'").Scan(&entries); err != nil || entries != 3 {
		t.Fatalf("after refusals: %d entries, %v", entries, err)
	}
	if got := logged() - before; got != 4 {
		t.Errorf("the previews logged %d reads, want 4 (KEEP and OLD twice)", got)
	}

	before = logged()
	status, body := ta.call(t, "POST", "/vault/import", importJSON(env, `,"delete_missing":true`), h)
	if status != 200 || !strings.Contains(body, `"applied":true`) {
		t.Fatalf("import: %d %s", status, body)
	}
	// Two reads (KEEP, OLD), five creates, one update, one delete.
	var creates, updates, deletes, reads int
	if err := ta.pool.QueryRow(context.Background(), `SELECT count(*) FILTER (WHERE action = 'create'), count(*) FILTER (WHERE action = 'update'),
		count(*) FILTER (WHERE action = 'delete'), count(*) FILTER (WHERE action = 'read') FROM vault_access_log WHERE project_id = 'shop' AND id > (SELECT max(id) - $1 FROM vault_access_log)`,
		logged()-before).Scan(&creates, &updates, &deletes, &reads); err != nil {
		t.Fatal(err)
	}
	if creates != 5 || updates != 1 || deletes != 1 || reads != 2 {
		t.Errorf("logged %d creates, %d updates, %d deletes, %d reads; want 5, 1, 1, 2", creates, updates, deletes, reads)
	}
	// The import is one row of its own too (7 keys written), which the
	// rows it wrote and read name as their batch; the page shows that row
	// alone, and its link the batch.
	importRow := oneBatch(t, ta, h, "import", 7, 10)
	if _, page := ta.call(t, "GET", "/web/vault/log?project_id=shop", "", merge(h, map[string]string{"Accept": "text/html"})); !strings.Contains(page, `batch=`+importRow+`">7 written`) ||
		strings.Contains(page, ">API_KEY<") {
		t.Errorf("the log page does not fold the import into one row:\n%s", page)
	}
	if _, body := ta.call(t, "GET", "/vault/versions?project_id=shop&key=OLD", "", h); !strings.Contains(body, `"version":2`) || !strings.Contains(body, `"version":1`) {
		t.Errorf("the update kept no version: %s", body)
	}
	var gone int
	if err := ta.pool.QueryRow(context.Background(), "SELECT (SELECT count(*) FROM vault_entries WHERE key = 'GONE') + (SELECT count(*) FROM vault_versions WHERE key = 'GONE')").Scan(&gone); err != nil || gone != 0 {
		t.Errorf("GONE left %d rows behind (%v): a delete is permanent", gone, err)
	}

	// The export reads back what was imported.
	before = logged()
	req := httptest.NewRequest("GET", "/vault/export?project_id=shop", nil)
	for k, v := range h {
		req.Header.Set(k, v)
	}
	resp, text := ta.do(t, req)
	if resp.StatusCode != 200 || resp.Header.Get("Cache-Control") != "no-store" || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") ||
		!strings.Contains(resp.Header.Get("Content-Disposition"), `filename="shop.env"`) {
		t.Fatalf("export: %d %v", resp.StatusCode, resp.Header)
	}
	if got := logged() - before; got != 8 {
		t.Errorf("the export logged %d rows, want 7 reads and the export's own", got)
	}
	oneBatch(t, ta, h, "export", 7, 8)
	// HEAD returns no value: the same headers, nothing read or logged.
	before = logged()
	head := httptest.NewRequest("HEAD", "/vault/export?project_id=shop", nil)
	for k, v := range h {
		head.Header.Set(k, v)
	}
	if resp, body := ta.do(t, head); resp.StatusCode != 200 || body != "" || resp.Header.Get("Cache-Control") != "no-store" ||
		!strings.Contains(resp.Header.Get("Content-Disposition"), `filename="shop.env"`) {
		t.Fatalf("HEAD of the export: %d %v %q", resp.StatusCode, resp.Header, body)
	}
	if got := logged() - before; got != 0 {
		t.Errorf("HEAD of the export logged %d reads", got)
	}
	want := map[string]string{"API_KEY": "abc=def#notcomment", "BACKSLASH": `it's \ $5`, "KEEP": "same", "OLD": "after $HOME # kept", "PEM": "-----BEGIN-----\nline two\n-----END-----",
		"QUOTED": `say "hi"`, "UNICODE": "ünïcødé ☃"}
	// Imported again, the export is all unchanged.
	raw, _ := json.Marshal(text)
	status, body = ta.call(t, "POST", "/vault/import", `{"project_id":"shop","dry_run":true,"env":`+string(raw)+`}`, h)
	if status != 200 || !strings.Contains(body, `"unchanged":["API_KEY","BACKSLASH","KEEP","OLD","PEM","QUOTED","UNICODE"]`) || !strings.Contains(body, `"added":[],"changed":[]`) {
		t.Fatalf("the export imported again: %d %s\n%s", status, body, text)
	}
	for k, v := range want {
		status, body := ta.call(t, "GET", "/vault/fetch/one?project_id=shop&key="+k, "", h)
		raw, _ := json.Marshal(v)
		if status != 200 || !strings.Contains(body, `"value":`+string(raw)) {
			t.Errorf("%s: %d %s, want %s", k, status, body, raw)
		}
	}
	// From the page's form.
	status, body = ta.call(t, "POST", "/vault/import", "project_id=shop&env=NEW_ONE%3D1%0A", merge(h, map[string]string{"Content-Type": "application/x-www-form-urlencoded"}))
	if status != 200 || !strings.Contains(body, `"added":["NEW_ONE"]`) {
		t.Fatalf("by form: %d %s", status, body)
	}
}

// oneBatch asserts that the newest row of action (export or import) says
// keys and that it and the rows naming it as their batch are rows in all,
// each row of the batch being a read or a write; it returns the row's id.
func oneBatch(t *testing.T, ta *testApp, h map[string]string, action string, keys, rows int) string {
	t.Helper()
	var got struct {
		Data []struct {
			ID     int64  `json:"id"`
			Action string `json:"action"`
			Key    string `json:"key"`
			Keys   *int   `json:"keys"`
			Batch  *int64 `json:"batch"`
		} `json:"data"`
		Amount int `json:"amount"`
	}
	_, body := ta.call(t, "GET", "/vault/log?project_id=shop&limit=1&action="+action, "", h)
	if err := json.Unmarshal([]byte(body), &got); err != nil || len(got.Data) != 1 || got.Data[0].Keys == nil || *got.Data[0].Keys != keys || got.Data[0].Key != "" {
		t.Fatalf("the %s's row: %v %s", action, err, body)
	}
	id := strconv.FormatInt(got.Data[0].ID, 10)
	_, body = ta.call(t, "GET", "/vault/log?project_id=shop&limit=100&batch="+id, "", h)
	if err := json.Unmarshal([]byte(body), &got); err != nil || got.Amount != rows {
		t.Fatalf("the %s's batch: %v %s", action, err, body)
	}
	for _, r := range got.Data {
		if r.ID != got.Data[len(got.Data)-1].ID && (r.Batch == nil || *r.Batch != got.Data[len(got.Data)-1].ID || r.Action == action) {
			t.Errorf("a row of the %s's batch: %+v", action, r)
		}
	}
	return id
}

// TestVaultImportsAtOnce: six clients import the same file of 50 new keys
// at the same moment: every import succeeds, each key exists once, and
// each was created — and logged as created — once. A file past 5,000 keys
// is refused whole.
func TestVaultImportsAtOnce(t *testing.T) {
	t.Parallel()
	ta, _, h := vaultApp(t)
	var env strings.Builder
	for i := range 50 {
		env.WriteString("KEY_" + strings.Repeat("X", i%3) + string(rune('A'+i%26)) + "_" + strconv.Itoa(i) + "=v\n")
	}
	raw, _ := json.Marshal(env.String())
	body := `{"project_id":"shop","env":` + string(raw) + `}`
	const clients = 6
	statuses := make([]int, clients)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			statuses[i], _ = ta.call(t, "POST", "/vault/import", body, h)
		}()
	}
	close(start)
	wg.Wait()
	for i, s := range statuses {
		if s != 200 {
			t.Errorf("import %d answered %d", i, s)
		}
	}
	var entries, created int
	if err := ta.pool.QueryRow(context.Background(), `SELECT (SELECT count(*) FROM vault_entries WHERE project_id = 'shop'),
		(SELECT count(*) FROM vault_access_log WHERE project_id = 'shop' AND action = 'create')`).Scan(&entries, &created); err != nil {
		t.Fatal(err)
	}
	if entries != 50 || created != 50 {
		t.Errorf("%d entries, %d logged creates; want 50 and 50", entries, created)
	}

	var big strings.Builder
	for i := range 5001 {
		big.WriteString("K" + strconv.Itoa(i) + "=1\n")
	}
	raw, _ = json.Marshal(big.String())
	ta.run(t, []scenario{{name: "more than 5,000 keys", method: "POST", path: "/vault/import", headers: h,
		body: `{"project_id":"shop","dry_run":true,"env":` + string(raw) + `}`, status: 422, want: []string{`"env":"has 5001 keys: at most 5000`}}})
}

// TestVaultExportOfLargeValuesImports: values of 65,530 and 65,536 bytes
// (the most a value may be), with characters the export must escape,
// export and import back unchanged; a bad line is named by its number in
// the service's words, never a library's.
func TestVaultExportOfLargeValuesImports(t *testing.T) {
	t.Parallel()
	ta, _, h := vaultApp(t)
	values := map[string]string{
		"PLAIN": strings.Repeat("p", 65536),
		"LINES": strings.Repeat("line\n", 13106), // 65,530 bytes
		"QUOTE": strings.Repeat("it's \"quoted\"\t", 4681) + "xx",
	}
	for k, v := range values {
		raw, _ := json.Marshal(v)
		if status, body := ta.call(t, "POST", "/vault/create", `{"project_id":"shop","key":"`+k+`","value":`+string(raw)+`}`, h); status != 201 {
			t.Fatalf("create %s (%d bytes): %d %.200s", k, len(v), status, body)
		}
	}
	req := httptest.NewRequest("GET", "/vault/export?project_id=shop", nil)
	for k, v := range h {
		req.Header.Set(k, v)
	}
	resp, text := ta.do(t, req)
	if resp.StatusCode != 200 {
		t.Fatalf("export: %d", resp.StatusCode)
	}
	raw, _ := json.Marshal(text)
	status, body := ta.call(t, "POST", "/vault/import", `{"project_id":"shop","dry_run":true,"env":`+string(raw)+`}`, h)
	if status != 200 || !strings.Contains(body, `"unchanged":["LINES","PLAIN","QUOTE"]`) {
		t.Fatalf("the export imported again: %d %.300s", status, body)
	}
	bad, _ := json.Marshal(text + "\nnot a line\n")
	status, body = ta.call(t, "POST", "/vault/import", `{"project_id":"shop","env":`+string(bad)+`}`, h)
	if status != 422 || !strings.Contains(body, `"env":"cannot be read as a .env file: line 5 is not KEY=value: it has no ="`) ||
		strings.Contains(body, "bufio") || strings.Contains(body, "error on line") {
		t.Fatalf("a bad line after large values: %d %.300s", status, body)
	}
}
