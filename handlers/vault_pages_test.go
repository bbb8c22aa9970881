package handlers

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"stencil/store"
)

// TestVaultCanary: a unique value written through the API never appears in
// an HTML page of the vault (list, log, rows, forms after errors), in the
// server's log, in an error message, or in plain text in any database column.
func TestVaultCanary(t *testing.T) {
	t.Parallel()
	ta, _, h := vaultApp(t)
	const canary = "canary-Zq81-unique-secret"
	ta.expectStatus(t, "create", "POST", "/vault/create", fmt.Sprintf(`{"project_id":"shop","key":"CANARY","value":%q}`, canary), h, 201)
	ta.expectStatus(t, "update to itself", "PATCH", "/vault/update", fmt.Sprintf(`{"project_id":"shop","key":"CANARY","value":%q}`, canary), h, 200)
	cookie, csrf := ta.signIn(t, "keeper")
	b := browser(cookie, csrf)
	for _, req := range []struct{ method, path, body string }{
		{"GET", "/web/vaults", ""},
		{"GET", "/web/vault?project_id=shop", ""},
		{"GET", "/web/vault?project_id=shop&filter=CAN", ""},
		{"GET", "/web/vault/log?project_id=shop", ""},
		{"GET", "/web/vault/row?project_id=shop&key=CANARY", ""},
		{"GET", "/vault/log?project_id=shop", ""},
		{"POST", "/vault/create", "project_id=shop&key=bad+key&value=" + url.QueryEscape(canary)},
		{"POST", "/vault/create", "project_id=shop&key=CANARY&value=" + url.QueryEscape(canary)},
		{"PATCH", "/vault/update", "project_id=shop&key=CANARY&value=" + url.QueryEscape(canary+strings.Repeat("x", 65536))},
		{"POST", "/vault/create", "project_id=nope&key=K&value=" + url.QueryEscape(canary)},
	} {
		for _, headers := range []map[string]string{b, merge(b, asHTMXHeaders), merge(b, asJSONHeaders), h} {
			req := httptest.NewRequest(req.method, req.path, strings.NewReader(req.body))
			if req.Method != "GET" {
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			}
			for k, v := range headers {
				req.Header.Set(k, v)
			}
			_, body := ta.do(t, req)
			if strings.Contains(body, canary) {
				t.Errorf("%s %s with %v shows the value: %s", req.Method, req.URL, headers["Accept"], body)
			}
		}
	}
	if strings.Contains(ta.logs.String(), canary) {
		t.Error("the value reached the server log")
	}
	ctx := context.Background()
	rows, err := ta.pool.Query(ctx, "SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var name string
		_ = rows.Scan(&name)
		tables = append(tables, name)
	}
	if len(tables) < 8 {
		t.Fatalf("only %d tables found: %v", len(tables), tables)
	}
	for _, table := range tables {
		var dump string
		if err := ta.pool.QueryRow(ctx, fmt.Sprintf("SELECT coalesce(string_agg(t::text, ' '), '') FROM %q t", table)).Scan(&dump); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(dump, canary) || strings.Contains(dump, fmt.Sprintf("%x", canary)) {
			t.Errorf("table %s holds the value in plain text", table)
		}
	}
	// The value was written: reading it back through the API works.
	ta.expectStatus(t, "still readable", "GET", "/vault/fetch/one?project_id=shop&key=CANARY", "", h, 200)
}

func TestVaultPages(t *testing.T) {
	t.Parallel()
	ta, keeper, _ := vaultApp(t)
	for i := 1; i <= 25; i++ {
		ta.putSecret(t, "shop", fmt.Sprintf("KEY_%02d", i), fmt.Sprintf("value-%02d", i), keeper)
	}
	ta.putSecret(t, "shop", "STRIPE_SECRET", "sk_live_page", keeper)
	cookie, csrf := ta.signIn(t, "keeper")
	b := browser(cookie, csrf)
	author := ta.newUser(t, "author", store.RoleAuthor)
	if err := ta.h.store.AddMember(context.Background(), "shop", author.ID, store.MembershipRole(author.Role)); err != nil {
		t.Fatal(err)
	}
	ta.run(t, []scenario{
		{name: "vaults", method: "GET", path: "/web/vaults", headers: b, status: 200, want: []string{"Shop", ">26<", "/web/vault?project_id=shop"}},
		{name: "vaults filtered out", method: "GET", path: "/web/vaults?filter=zzz", headers: b, status: 200, want: []string{"No projects match."}},
		{name: "first page: 10 of 26, masked", method: "GET", path: "/web/vault?project_id=shop", headers: b, status: 200,
			want:     []string{"1–10 of 26", "KEY_01", "KEY_10", "••••••••", `hx-get="/vault/fetch/one?project_id=shop&amp;key=KEY_01"`},
			unwanted: []string{"KEY_11", "value-0", "sk_live"}},
		{name: "third page", method: "GET", path: "/web/vault?project_id=shop&offset=20", headers: b, status: 200,
			want: []string{"21–26 of 26", "KEY_25", "STRIPE_SECRET"}, unwanted: []string{"KEY_20<"}},
		{name: "filter by a fragment in the middle", method: "GET", path: "/web/vault?project_id=shop&filter=ipe_s", headers: b, status: 200,
			want: []string{"1–1 of 1", "STRIPE_SECRET"}, unwanted: []string{"KEY_01"}},
		{name: "filter paged", method: "GET", path: "/web/vault?project_id=shop&filter=key_&offset=10", headers: b, status: 200,
			want: []string{"11–20 of 25", "project_id=shop", "filter=key_"}},
		{name: "no match", method: "GET", path: "/web/vault?project_id=shop&filter=nothing", headers: b, status: 200, want: []string{"No keys match"}},
		{name: "htmx navigation", method: "GET", path: "/web/vault?project_id=shop", headers: merge(b, asHTMXHeaders), status: 200,
			want: []string{`id="vault-table"`, "<nav"}, unwanted: []string{"<!DOCTYPE"}},
		{name: "JSON of the page has no values", method: "GET", path: "/web/vault?project_id=shop", headers: merge(b, asJSONHeaders), status: 200,
			want: []string{`"amount":26`, `"key":"KEY_01"`}, unwanted: []string{`"value"`}},
		{name: "reveal (htmx) gives the cell with the value and a hide button", method: "GET", path: "/vault/fetch/one?project_id=shop&key=KEY_03",
			headers: merge(b, asHTMXHeaders), status: 200, want: []string{"value-03", `aria-label="Hide KEY_03"`, `hx-get="/web/vault/row?project_id=shop&key=KEY_03"`}, unwanted: []string{"<nav"}},
		{name: "reveal (page)", method: "GET", path: "/vault/fetch/one?project_id=shop&key=KEY_04", headers: b, status: 200,
			want: []string{"<!DOCTYPE", "value-04", "This view was logged."}},
		// Editing starts from the current value, on one line, its read logged
		// (counted below).
		{name: "edit row", method: "GET", path: "/web/vault/row?project_id=shop&key=KEY_05&edit=true", headers: merge(b, asHTMXHeaders), status: 200,
			want:     []string{`hx-patch="/vault/update"`, `data-testid="readonly-key">KEY_05<`, `name="value" type="text" value="value-05"`, "data-multiline>"},
			unwanted: []string{"<nav", "<textarea"}},
		{name: "edit row as JSON has no value", method: "GET", path: "/web/vault/row?project_id=shop&key=KEY_05&edit=true", headers: merge(b, asJSONHeaders), status: 200,
			want: []string{`"key":"KEY_05"`}, unwanted: []string{"value-05"}},
		{name: "row", method: "GET", path: "/web/vault/row?project_id=shop&key=KEY_05", headers: merge(b, asHTMXHeaders), status: 200,
			want: []string{`id="row-KEY_05"`, "Reveal"}, unwanted: []string{"value-05"}},
		{name: "log page", method: "GET", path: "/web/vault/log?project_id=shop&action=read", headers: b, status: 200,
			want: []string{"Access log", "KEY_03", "KEY_04", `<option value="read" selected>`}},
		{name: "an AUTHOR member may not see the vault", method: "GET", path: "/web/vault?project_id=shop", headers: browser(ta.signIn(t, "author")), status: 403},
		{name: "vault of an unknown project", method: "GET", path: "/web/vault?project_id=nope", headers: b, status: 404},
		{name: "vault without project", method: "GET", path: "/web/vault", headers: merge(b, asJSONHeaders), status: 400},
	})
	var web int
	if err := ta.pool.QueryRow(context.Background(), "SELECT count(*) FROM vault_access_log WHERE action = 'read' AND channel = 'web'").Scan(&web); err != nil || web != 4 {
		t.Fatalf("reveals and edits logged on the web channel: %d (%v), want 4", web, err)
	}

	// Forms: errors beside the field, the value never echoed.
	// form sends an htmx request and returns the status, the HX-Trigger
	// header and the body.
	form := func(method, path string, v url.Values) (int, string, string) {
		req := httptest.NewRequest(method, path, strings.NewReader(v.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for k, val := range merge(b, asHTMXHeaders) {
			req.Header.Set(k, val)
		}
		resp, body := ta.do(t, req)
		if resp.Header.Get("HX-Location") != "" {
			t.Fatalf("%s %s navigates away (HX-Location) instead of changing the page in place", method, path)
		}
		return resp.StatusCode, resp.Header.Get("HX-Trigger"), body
	}
	status, _, body := form("POST", "/vault/create", url.Values{"project_id": {"shop"}, "key": {"lower"}, "value": {"typed-secret"}})
	if status != 422 || !strings.Contains(body, `id="vault-create"`) || !strings.Contains(body, "upper-case letters") ||
		!strings.Contains(body, `value="lower"`) || strings.Contains(body, "typed-secret") {
		t.Fatalf("create error: %d %s", status, body)
	}
	status, trigger, body := form("POST", "/vault/create", url.Values{"project_id": {"shop"}, "key": {"NEW_ONE"}, "value": {"v"}})
	if status != 201 || trigger != `{"vault-changed":{"key":"NEW_ONE"}}` || !strings.Contains(body, `id="vault-create"`) || strings.Contains(body, `value="NEW_ONE"`) ||
		!strings.Contains(body, `hx-swap-oob="innerHTML"`) || !strings.Contains(body, "Entry NEW_ONE created.") {
		t.Fatalf("create must answer a fresh form, the flash out of band and the refresh event: %d %q %s", status, trigger, body)
	}
	status, trigger, body = form("PATCH", "/vault/update", url.Values{"project_id": {"shop"}, "key": {"NEW_ONE"}, "value": {"v2-secret"}})
	if status != 200 || trigger != "" || !strings.Contains(body, `id="row-NEW_ONE"`) || strings.Contains(body, "v2-secret") ||
		!strings.Contains(body, "Value of NEW_ONE updated.") {
		t.Fatalf("update must answer the masked row in place, with no table reload: %d %q %s", status, trigger, body)
	}
	status, trigger, body = form("DELETE", "/vault/delete?project_id=shop&key=KEY_01", nil)
	if status != 200 || trigger != "vault-changed" || strings.Contains(body, "KEY_01<") || !strings.Contains(body, "Entry KEY_01 deleted with every version.") {
		t.Fatalf("delete must answer an empty row: %d %q %s", status, trigger, body)
	}
	ta.run(t, []scenario{{name: "the table reloads where the user is", method: "GET", path: "/web/vault?project_id=shop&filter=key&offset=10",
		headers: b, status: 200, want: []string{`hx-get="/web/vault?project_id=shop&amp;filter=key&amp;offset=10"`, `hx-trigger="vault-changed from:body"`}}})
	status, _, body = form("PATCH", "/vault/update", url.Values{"project_id": {"shop"}, "key": {"NEW_ONE"}, "value": {""}})
	if status != 422 || !strings.Contains(body, `id="row-NEW_ONE"`) || !strings.Contains(body, "must not be empty") {
		t.Fatalf("update error: %d %s", status, body)
	}
}

// TestCachedPagePartsCarryEachResponsesToken: parts of the vault page are
// kept (Renderer.Cached) for every reader, yet each response carries its own
// masked CSRF token everywhere the page has one, each reader's navigation
// names that reader, the token works, and a change shows on the next page.
func TestCachedPagePartsCarryEachResponsesToken(t *testing.T) {
	t.Parallel()
	ta, keeper, _ := vaultApp(t)
	ta.putSecret(t, "shop", "FIRST_KEY", "v1", keeper)
	other := ta.newUser(t, "other", store.RoleAdmin)
	if err := ta.h.store.AddMember(context.Background(), "shop", other.ID, store.MembershipRole(other.Role)); err != nil {
		t.Fatal(err)
	}
	tokenField := regexp.MustCompile(`name="csrf_token" value="([^"]+)"`)
	type reader struct{ name, cookie string }
	var readers []reader
	for _, name := range []string{"keeper", "other"} {
		cookie, _ := ta.signIn(t, name)
		readers = append(readers, reader{name, cookie})
	}
	page := func(r reader) (string, string) {
		t.Helper()
		req := httptest.NewRequest("GET", "/web/vault?project_id=shop", nil)
		req.Header.Set("Accept", "text/html")
		req.Header.Set("Cookie", r.cookie)
		resp, body := ta.do(t, req)
		if resp.StatusCode != 200 {
			t.Fatalf("vault page for %s: %d", r.name, resp.StatusCode)
		}
		if strings.Contains(body, ta.h.csrf.placeholder) {
			t.Fatalf("the page for %s holds the CSRF placeholder", r.name)
		}
		meta := csrfMeta.FindStringSubmatch(body)
		fields := tokenField.FindAllStringSubmatch(body, -1)
		if meta == nil || len(fields) != 3 { // the sign-out form twice (wide and narrow navigation), the create form
			t.Fatalf("page for %s: meta %v, %d token fields", r.name, meta, len(fields))
		}
		for _, f := range fields {
			if f[1] != meta[1] {
				t.Fatalf("page for %s carries two tokens: %s and %s", r.name, meta[1], f[1])
			}
		}
		return body, meta[1]
	}
	seen := map[string]bool{}
	for i := range 6 {
		r := readers[i%2]
		body, token := page(r)
		if seen[token] {
			t.Fatalf("response %d repeats a CSRF token", i)
		}
		seen[token] = true
		signedIn := regexp.MustCompile(`title="Your account">([^<]+)<`).FindAllStringSubmatch(body, -1)
		if len(signedIn) != 2 || signedIn[0][1] != r.name || signedIn[1][1] != r.name {
			t.Fatalf("page for %s names %v", r.name, signedIn)
		}
	}
	// The last page's token, as the form sends it, creates an entry, and
	// the next page of either reader shows it.
	_, token := page(readers[0])
	form := url.Values{"project_id": {"shop"}, "key": {"SECOND_KEY"}, "value": {"v2"}, "csrf_token": {token}}
	req := httptest.NewRequest("POST", "/vault/create", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "text/html")
	req.Header.Set("Cookie", readers[0].cookie)
	if resp, body := ta.do(t, req); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("create with the page's token: %d %s", resp.StatusCode, body)
	}
	for _, r := range readers {
		if body, _ := page(r); !strings.Contains(body, "SECOND_KEY") || !strings.Contains(body, "1–2 of 2") {
			t.Fatalf("the page for %s after a create does not show it", r.name)
		}
	}
}
