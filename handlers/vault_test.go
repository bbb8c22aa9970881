package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"stencil/store"
	"stencil/store/storetest"
)

func TestVaultPermissionTable(t *testing.T) {
	t.Parallel()
	admins := func(member int) map[string]int { return byRole(member, member, 403, 403) }
	none := byRole(403, 403, 403, 403)
	runPermissionTable(t, []permCase{
		{name: "create", anon: 401, member: admins(201), nonMember: none, request: func(f cellFixture) (string, string, string) {
			return "POST", "/vault/create", fmt.Sprintf(`{"project_id":%q,"key":"NEW_KEY","value":"v"}`, f.project)
		}},
		{name: "fetch", anon: 401, member: admins(200), nonMember: none, request: func(f cellFixture) (string, string, string) {
			return "GET", "/vault/fetch?project_id=" + f.project, ""
		}},
		{name: "fetch one", anon: 401, member: admins(200), nonMember: none, request: func(f cellFixture) (string, string, string) {
			return "GET", "/vault/fetch/one?project_id=" + f.project + "&key=" + f.secret, ""
		}},
		{name: "update", anon: 401, member: admins(200), nonMember: none, request: func(f cellFixture) (string, string, string) {
			return "PATCH", "/vault/update", fmt.Sprintf(`{"project_id":%q,"key":%q,"value":"new"}`, f.project, f.secret)
		}},
		{name: "delete", anon: 401, member: admins(200), nonMember: none, request: func(f cellFixture) (string, string, string) {
			return "DELETE", "/vault/delete?project_id=" + f.project + "&key=" + f.secret, ""
		}},
		{name: "log", anon: 401, member: admins(200), nonMember: none, request: func(f cellFixture) (string, string, string) {
			return "GET", "/vault/log?project_id=" + f.project, ""
		}},
	})
}

// vaultApp is a test app with a project "shop" whose member "keeper" is an
// ADMIN, and keeper's API headers.
func vaultApp(t *testing.T) (*testApp, store.User, map[string]string) {
	t.Helper()
	return vaultAppKeeping(t, testConfig(t).VaultVersions)
}

// vaultAppKeeping is vaultApp whose entries keep versions older values
// (VAULT_VERSIONS).
func vaultAppKeeping(t *testing.T, versions int) (*testApp, store.User, map[string]string) {
	t.Helper()
	cfg := testConfig(t)
	cfg.VaultVersions = versions
	ta := newTestAppWith(t, storetest.Pool(t), cfg)
	ta.root = ta.newUser(t, "root", store.RoleRoot)
	keeper := ta.newUser(t, "keeper", store.RoleAdmin)
	p := store.Project{ID: "shop", Name: "Shop", APIPath: "/shop"}
	if err := ta.h.store.CreateProject(context.Background(), &p, keeper.ID); err != nil {
		t.Fatal(err)
	}
	return ta, keeper, as(ta.token(t, keeper))
}

func TestVaultBadInputs(t *testing.T) {
	t.Parallel()
	ta, _, h := vaultApp(t)
	entry := func(key, value string) string {
		b, _ := json.Marshal(map[string]string{"project_id": "shop", "key": key, "value": value})
		return string(b)
	}
	ta.run(t, []scenario{
		{name: "create", method: "POST", path: "/vault/create", headers: h, body: entry("API_KEY", "v1"), status: 201,
			want: []string{`"key":"API_KEY"`, `"project_id":"shop"`}, unwanted: []string{`"value"`}},
		{name: "lower-case key", method: "POST", path: "/vault/create", headers: h, body: entry("api_key", "v"), status: 422,
			want: []string{`"key":"must be 1–255 upper-case letters, digits or _, starting with a letter"`}},
		{name: "leading digit", method: "POST", path: "/vault/create", headers: h, body: entry("1KEY", "v"), status: 422},
		{name: "leading underscore", method: "POST", path: "/vault/create", headers: h, body: entry("_KEY", "v"), status: 422},
		{name: "256 characters", method: "POST", path: "/vault/create", headers: h, body: entry("K"+strings.Repeat("A", 255), "v"), status: 422},
		{name: "255 characters", method: "POST", path: "/vault/create", headers: h, body: entry("K"+strings.Repeat("A", 254), "v"), status: 201},
		{name: "empty value", method: "POST", path: "/vault/create", headers: h, body: entry("EMPTY", ""), status: 422,
			want: []string{`"value":"must not be empty"`}},
		{name: "65,537-byte value", method: "POST", path: "/vault/create", headers: h, body: entry("BIG", strings.Repeat("x", 65537)), status: 422,
			want: []string{`"value":"must be 1 to 65,536 bytes"`}},
		{name: "65,536 bytes of multi-byte text over the limit", method: "POST", path: "/vault/create", headers: h, body: entry("WIDE", strings.Repeat("é", 32769)), status: 422},
		{name: "65,536-byte value", method: "POST", path: "/vault/create", headers: h, body: entry("MAX", strings.Repeat("x", 65536)), status: 201},
		{name: "duplicate key", method: "POST", path: "/vault/create", headers: h, body: entry("API_KEY", "v2"), status: 422,
			want: []string{`"key":"already exists in this vault"`}},
		{name: "missing value", method: "POST", path: "/vault/create", headers: h, body: `{"project_id":"shop","key":"NOVALUE"}`, status: 400},
		{name: "missing project", method: "POST", path: "/vault/create", headers: h, body: `{"key":"K","value":"v"}`, status: 400},
		{name: "unknown project", method: "POST", path: "/vault/create", headers: h, body: `{"project_id":"nope","key":"K","value":"v"}`, status: 404},
		{name: "value of wrong type", method: "POST", path: "/vault/create", headers: h, body: `{"project_id":"shop","key":"K","value":1}`, status: 400},
		{name: "unknown key", method: "GET", path: "/vault/fetch/one?project_id=shop&key=NOPE", headers: h, status: 404},
		{name: "unknown key, update", method: "PATCH", path: "/vault/update", headers: h, body: entry("NOPE", "v"), status: 404},
		{name: "unknown key, delete", method: "DELETE", path: "/vault/delete?project_id=shop&key=NOPE", headers: h, status: 404},
		{name: "update empty value", method: "PATCH", path: "/vault/update", headers: h, body: entry("API_KEY", ""), status: 422},
		{name: "update too big", method: "PATCH", path: "/vault/update", headers: h, body: entry("API_KEY", strings.Repeat("x", 65537)), status: 422},
		{name: "unknown project, fetch", method: "GET", path: "/vault/fetch?project_id=nope", headers: h, status: 404},
		{name: "unknown project, fetch one", method: "GET", path: "/vault/fetch/one?project_id=nope&key=API_KEY", headers: h, status: 404},
		{name: "unknown project, delete", method: "DELETE", path: "/vault/delete?project_id=nope&key=API_KEY", headers: h, status: 404},
		{name: "unknown project, log", method: "GET", path: "/vault/log?project_id=nope", headers: h, status: 404},
		{name: "missing key, fetch one", method: "GET", path: "/vault/fetch/one?project_id=shop", headers: h, status: 400},
		{name: "bad action, log", method: "GET", path: "/vault/log?project_id=shop&action=peek", headers: h, status: 422},
		{name: "value unchanged after failures", method: "GET", path: "/vault/fetch/one?project_id=shop&key=API_KEY", headers: h, status: 200,
			want: []string{`"value":"v1"`}},
	})
}

func TestVaultLifecycleAndLog(t *testing.T) {
	t.Parallel()
	ta, keeper, h := vaultApp(t)
	ctx := context.Background()
	patStatus, patBody := ta.call(t, "POST", "/pat/create", `{"name":"ci"}`, h)
	var pat struct {
		Data struct {
			ID    int64
			Token string
		}
	}
	if err := json.Unmarshal([]byte(patBody), &pat); err != nil || patStatus != 201 {
		t.Fatalf("pat: %d %s", patStatus, patBody)
	}
	byPAT := as(pat.Data.Token)
	ta.run(t, []scenario{
		{name: "create", method: "POST", path: "/vault/create", headers: h, body: `{"project_id":"shop","key":"DB_PASSWORD","value":"hunter2"}`, status: 201},
		{name: "second", method: "POST", path: "/vault/create", headers: h, body: `{"project_id":"shop","key":"API_TOKEN","value":"tok"}`, status: 201},
		{name: "read by PAT", method: "GET", path: "/vault/fetch/one?project_id=shop&key=DB_PASSWORD", headers: byPAT, status: 200,
			want: []string{`"value":"hunter2"`}},
		{name: "list with values, ordered by key", method: "GET", path: "/vault/fetch?project_id=shop", headers: h, status: 200,
			want: []string{`"amount":2`, `"key":"API_TOKEN","value":"tok"`}},
		{name: "list filtered by a fragment", method: "GET", path: "/vault/fetch?project_id=shop&filter=pass", headers: h, status: 200,
			want: []string{`"amount":1`, `"key":"DB_PASSWORD"`}, unwanted: []string{"API_TOKEN"}},
		{name: "filter wildcards are literal", method: "GET", path: "/vault/fetch?project_id=shop&filter=" + url.QueryEscape("%"), headers: h, status: 200,
			want: []string{`"amount":0`}},
		{name: "update", method: "PATCH", path: "/vault/update", headers: h, body: `{"project_id":"shop","key":"DB_PASSWORD","value":"hunter3"}`, status: 200,
			unwanted: []string{"hunter"}},
		{name: "read the new value", method: "GET", path: "/vault/fetch/one?project_id=shop&key=DB_PASSWORD", headers: h, status: 200,
			want: []string{`"value":"hunter3"`, fmt.Sprintf(`"updated_by":%d`, keeper.ID)}},
		{name: "delete", method: "DELETE", path: "/vault/delete?project_id=shop&key=API_TOKEN", headers: h, status: 200},
		{name: "gone", method: "GET", path: "/vault/fetch/one?project_id=shop&key=API_TOKEN", headers: h, status: 404},
	})
	// The log, newest first: every action, with user, token and channel.
	_, body := ta.call(t, "GET", "/vault/log?project_id=shop&limit=100", "", h)
	var log struct {
		Amount int
		Data   []vaultAccessDTO
	}
	if err := json.Unmarshal([]byte(body), &log); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range log.Data {
		tok := ""
		if a.TokenID != nil {
			tok = fmt.Sprintf("#%d", *a.TokenID)
		}
		got = append(got, fmt.Sprintf("%s %s %s %s%s", a.Action, a.Key, a.Channel, a.Username, tok))
	}
	want := []string{
		"delete API_TOKEN api keeper",
		"read DB_PASSWORD api keeper",
		"update DB_PASSWORD api keeper",
		"read DB_PASSWORD api keeper", // the filtered list
		"read DB_PASSWORD api keeper", // the whole list: one row per entry returned
		"read API_TOKEN api keeper",
		"read DB_PASSWORD api keeper" + fmt.Sprintf("#%d", pat.Data.ID),
		"create API_TOKEN api keeper",
		"create DB_PASSWORD api keeper",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") || log.Amount != len(want) {
		t.Fatalf("log (%d):\n%s\nwant:\n%s", log.Amount, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	ta.run(t, []scenario{
		{name: "log filtered by action", method: "GET", path: "/vault/log?project_id=shop&action=create", headers: h, status: 200, want: []string{`"amount":2`}},
		{name: "log filtered by key", method: "GET", path: "/vault/log?project_id=shop&filter=token", headers: h, status: 200, want: []string{`"amount":3`}},
		{name: "log paged", method: "GET", path: "/vault/log?project_id=shop&offset=8&limit=5", headers: h, status: 200, want: []string{`"amount":9`, `"key":"DB_PASSWORD","action":"create"`}},
	})
	var n int
	if err := ta.pool.QueryRow(ctx, "SELECT count(*) FROM vault_access_log WHERE channel = 'web'").Scan(&n); err != nil || n != 0 {
		t.Fatalf("API calls logged as web: %d (%v)", n, err)
	}
}

// TestVaultReadFailsWithoutItsLogRow: when the read cannot be logged, the
// value is not returned.
func TestVaultReadFailsWithoutItsLogRow(t *testing.T) {
	t.Parallel()
	ta, keeper, h := vaultApp(t)
	ta.putSecret(t, "shop", "GUARDED", "canary-guarded-7731", keeper)
	_, err := ta.pool.Exec(context.Background(), `
		CREATE FUNCTION refuse_reads() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN IF NEW.action = 'read' THEN RAISE EXCEPTION 'log unavailable'; END IF; RETURN NEW; END $$;
		CREATE TRIGGER refuse_reads BEFORE INSERT ON vault_access_log FOR EACH ROW EXECUTE FUNCTION refuse_reads();`)
	if err != nil {
		t.Fatal(err)
	}
	ta.run(t, []scenario{
		{name: "one", method: "GET", path: "/vault/fetch/one?project_id=shop&key=GUARDED", headers: h, status: 500,
			want: []string{"Error: internal error"}, unwanted: []string{"canary-guarded"}},
		{name: "list", method: "GET", path: "/vault/fetch?project_id=shop", headers: h, status: 500, unwanted: []string{"canary-guarded"}},
		{name: "the .env export", method: "GET", path: "/vault/export?project_id=shop", headers: h, status: 500, unwanted: []string{"canary-guarded"}},
		{name: "reveal in the page", method: "GET", path: "/vault/fetch/one?project_id=shop&key=GUARDED", headers: merge(h, asHTMXHeaders), status: 500,
			unwanted: []string{"canary-guarded"}},
		{name: "writes still work", method: "POST", path: "/vault/create", headers: h, body: `{"project_id":"shop","key":"OTHER","value":"x"}`, status: 201},
	})
	if strings.Contains(ta.logs.String(), "canary-guarded") {
		t.Fatal("the value reached the server log")
	}
}

// TestVaultCiphertextMovedFailsToOpen: a sealed value copied to another key
// or another project's entry does not decrypt; the answer is a plain 500.
func TestVaultCiphertextMovedFailsToOpen(t *testing.T) {
	t.Parallel()
	ta, keeper, h := vaultApp(t)
	ctx := context.Background()
	other := store.Project{ID: "blog", Name: "Blog", APIPath: "/blog"}
	if err := ta.h.store.CreateProject(ctx, &other, keeper.ID); err != nil {
		t.Fatal(err)
	}
	ta.putSecret(t, "shop", "SOURCE", "canary-moved-5521", keeper)
	ta.putSecret(t, "shop", "TARGET", "x", keeper)
	ta.putSecret(t, "blog", "SOURCE", "y", keeper)
	for _, dest := range [][2]string{{"shop", "TARGET"}, {"blog", "SOURCE"}} {
		_, err := ta.pool.Exec(ctx, `UPDATE vault_entries d SET sealed = s.sealed, key_id = s.key_id FROM vault_entries s
			WHERE s.project_id = 'shop' AND s.key = 'SOURCE' AND d.project_id = $1 AND d.key = $2`, dest[0], dest[1])
		if err != nil {
			t.Fatal(err)
		}
		ta.expectStatus(t, dest[0]+"/"+dest[1], "GET", "/vault/fetch/one?project_id="+dest[0]+"&key="+dest[1], "", h, 500)
	}
	ta.expectStatus(t, "the original still opens", "GET", "/vault/fetch/one?project_id=shop&key=SOURCE", "", h, 200)
}

// call sends one request and returns the status and body.
func (ta *testApp) call(t testing.TB, method, path, body string, headers map[string]string) (int, string) {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, got := ta.do(t, req)
	return resp.StatusCode, got
}

// TestVaultReadCheckedInItsStatement: a JWT's read of an entry checks its
// caller in the read's own statement (docs/vaults.md), and answers every
// case exactly as the usual checks do — the same request with uid, which
// takes the usual way: the token revoked or its user deleted, a bad query
// (and both at once: 401 first), no such project, not a member, a role too
// low in the project or outside it, no such key, and a read allowed. Only
// the allowed reads are logged, under the reader's name.
func TestVaultReadCheckedInItsStatement(t *testing.T) {
	t.Parallel()
	ta := newTestApp(t)
	ctx := context.Background()
	owner := ta.newUser(t, "owner", store.RoleAdmin)
	if err := ta.h.store.CreateProject(ctx, &store.Project{ID: "shop", Name: "Shop", APIPath: "/shop"}, owner.ID); err != nil {
		t.Fatal(err)
	}
	ta.putSecret(t, "shop", "K", "the value", owner)
	member := func(name, account, membership string) store.User {
		u := ta.newUser(t, name, account)
		if membership != "" {
			if err := ta.h.store.AddMember(ctx, "shop", u.ID, membership); err != nil {
				t.Fatal(err)
			}
		}
		return u
	}
	reader := member("reader", store.RoleAdmin, store.RoleAdmin)
	revoked := member("revoked", store.RoleAdmin, store.RoleAdmin)
	revokedToken := ta.token(t, revoked)
	if _, err := ta.h.store.SetPassword(ctx, revoked.ID, "another hash"); err != nil {
		t.Fatal(err)
	}
	deleted := member("deleted", store.RoleAdmin, store.RoleAdmin)
	deletedToken := ta.token(t, deleted)
	if err := ta.h.store.DeleteUser(ctx, deleted.ID); err != nil {
		t.Fatal(err)
	}
	outsider := member("outsider", store.RoleAdmin, "")
	viewer := member("viewer", store.RoleAdmin, store.RoleViewer)
	author := member("author", store.RoleAuthor, store.RoleAdmin)
	root := member("rooted", store.RoleRoot, store.RoleViewer)
	for _, tc := range []struct {
		name   string
		user   store.User
		token  string
		query  string
		status int
	}{
		{"allowed", reader, "", "project_id=shop&key=K", 200},
		{"ROOT, a VIEWER membership", root, "", "project_id=shop&key=K", 200},
		{"revoked", revoked, revokedToken, "project_id=shop&key=K", 401},
		{"deleted", deleted, deletedToken, "project_id=shop&key=K", 401},
		{"bad query", reader, "", "project_id=shop", 400},
		{"bad query, revoked", revoked, revokedToken, "project_id=shop", 401},
		{"bad query, role too low", author, "", "project_id=shop", 403},
		{"key empty", reader, "", "project_id=shop&key=", 422},
		{"key twice (the last counts)", reader, "", "project_id=shop&key=K&key=NOPE", 404},
		{"project twice (the last counts)", reader, "", "project_id=nope&project_id=shop&key=K", 200},
		{"no such project", reader, "", "project_id=nope&key=K", 404},
		{"not a member", outsider, "", "project_id=shop&key=K", 403},
		{"VIEWER in the project", viewer, "", "project_id=shop&key=K", 403},
		{"AUTHOR account", author, "", "project_id=shop&key=K", 403},
		{"no such key", reader, "", "project_id=shop&key=NOPE", 404},
	} {
		token := tc.token
		if token == "" {
			token = ta.token(t, tc.user)
		}
		answer := func(query string) (int, string) {
			resp, body := ta.do(t, jsonRequest("GET", "/vault/fetch/one?"+query, "", as(token)))
			return resp.StatusCode, body
		}
		status, body := answer(tc.query)
		usualStatus, usual := answer(tc.query + fmt.Sprintf("&uid=%d", tc.user.ID))
		if status != tc.status || usualStatus != tc.status || body != usual {
			t.Errorf("%s: %d %s; the usual way %d %s; want %d, the same", tc.name, status, body, usualStatus, usual, tc.status)
		}
	}
	rows, err := ta.pool.Query(ctx, `SELECT username, count(*) FROM vault_access_log WHERE action = 'read' GROUP BY username ORDER BY username`)
	if err != nil {
		t.Fatal(err)
	}
	var logged []string
	for rows.Next() {
		var name string
		var n int
		if err := rows.Scan(&name, &n); err != nil {
			t.Fatal(err)
		}
		logged = append(logged, fmt.Sprintf("%s×%d", name, n))
	}
	// Each allowed read twice: once checked in its statement, once the usual way.
	if got, want := strings.Join(logged, " "), "reader×4 rooted×2"; got != want || rows.Err() != nil {
		t.Errorf("reads logged: %s, want %s (%v)", got, want, rows.Err())
	}
}
