package handlers

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"stencil/store"
)

// TestVaultVersionsAndDelete: updates keep the values they replace (the
// newest VAULT_VERSIONS of them); an older one reads with its log row and
// restores as a new version; delete removes the entry and every version at
// once and frees its key; an AUTHOR may do none of it; bad input changes
// nothing.
func TestVaultVersionsAndDelete(t *testing.T) {
	t.Parallel()
	ta, _, h := vaultAppKeeping(t, 3)
	author := ta.newUser(t, "writer", store.RoleAuthor)
	if err := ta.h.store.AddMember(context.Background(), "shop", author.ID, store.MembershipRole(author.Role)); err != nil {
		t.Fatal(err)
	}
	a := as(ta.token(t, author))
	if status, body := ta.call(t, "POST", "/vault/create", `{"project_id":"shop","key":"API_KEY","value":"v1"}`, h); status != 201 || !strings.Contains(body, `"version":1`) {
		t.Fatalf("create: %d %s", status, body)
	}
	for i := 2; i <= 5; i++ {
		if status, body := ta.call(t, "PATCH", "/vault/update", fmt.Sprintf(`{"project_id":"shop","key":"API_KEY","value":"v%d"}`, i), h); status != 200 ||
			!strings.Contains(body, fmt.Sprintf(`"version":%d`, i)) {
			t.Fatalf("update %d: %d %s", i, status, body)
		}
	}
	logged := func(where string) int {
		var n int
		if err := ta.pool.QueryRow(context.Background(), "SELECT count(*)::int FROM vault_access_log WHERE key = 'API_KEY' AND "+where).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	ta.run(t, []scenario{
		{name: "the live version and the three kept", method: "GET", path: "/vault/versions?project_id=shop&key=API_KEY", headers: h, status: 200,
			want: []string{`"version":5`, `"live":true`, `"version":4`, `"version":2`, `"set_by_name":"keeper"`}, unwanted: []string{`"version":1,`, `"value"`, "v3"}},
		{name: "an older value, read", method: "GET", path: "/vault/fetch/one?project_id=shop&key=API_KEY&version=3", headers: h, status: 200,
			want: []string{`"value":"v3"`, `"version":3`}},
		{name: "the live one by its number", method: "GET", path: "/vault/fetch/one?project_id=shop&key=API_KEY&version=5", headers: h, status: 200,
			want: []string{`"value":"v5"`}},
		{name: "a version no longer kept", method: "GET", path: "/vault/fetch/one?project_id=shop&key=API_KEY&version=1", headers: h, status: 404,
			want: []string{`vault entry \"API_KEY\" has no version 1`}},
		{name: "version 0", method: "GET", path: "/vault/fetch/one?project_id=shop&key=API_KEY&version=0", headers: h, status: 422},
		{name: "an author may not list versions", method: "GET", path: "/vault/versions?project_id=shop&key=API_KEY", headers: a, status: 403},
		{name: "an author may not restore", method: "POST", path: "/vault/restore", headers: a, body: `{"project_id":"shop","key":"API_KEY","version":3}`, status: 403},
		{name: "the live version is no older one", method: "POST", path: "/vault/restore", headers: h, body: `{"project_id":"shop","key":"API_KEY","version":5}`, status: 404,
			want: []string{"keeps no older version 5"}},
		{name: "versions of a key that does not exist", method: "GET", path: "/vault/versions?project_id=shop&key=NOPE", headers: h, status: 404},
		{name: "restore of a key that does not exist", method: "POST", path: "/vault/restore", headers: h, body: `{"project_id":"shop","key":"NOPE","version":1}`, status: 404,
			want: []string{`vault entry \"NOPE\" not found`}},
	})
	if n := logged("action = 'read' AND version = 3"); n != 1 {
		t.Fatalf("the read of version 3 logged %d times", n)
	}
	status, body := ta.call(t, "POST", "/vault/restore", `{"project_id":"shop","key":"API_KEY","version":3}`, h)
	if status != 200 || !strings.Contains(body, `"version":6`) || strings.Contains(body, `"value"`) {
		t.Fatalf("restore: %d %s", status, body)
	}
	if _, body := ta.call(t, "GET", "/vault/fetch/one?project_id=shop&key=API_KEY", "", h); !strings.Contains(body, `"value":"v3"`) {
		t.Fatalf("the live value after the restore: %s", body)
	}
	if n := logged("action = 'restore' AND version = 3"); n != 1 {
		t.Fatalf("the restore logged %d times", n)
	}

	// Delete is permanent: the entry and every version go at once, and
	// the key is free again (docs/vaults.md).
	if status, body := ta.call(t, "DELETE", "/vault/delete?project_id=shop&key=API_KEY", "", a); status != 403 {
		t.Fatalf("an author deleted: %d %s", status, body)
	}
	if status, body := ta.call(t, "DELETE", "/vault/delete?project_id=shop&key=API_KEY", "", h); status != 200 || !strings.Contains(body, `"Entry deleted"`) {
		t.Fatalf("delete: %d %s", status, body)
	}
	var left int
	if err := ta.pool.QueryRow(context.Background(), "SELECT count(*)::int FROM vault_versions").Scan(&left); err != nil || left != 0 {
		t.Fatalf("versions left after the delete: %d %v", left, err)
	}
	ta.run(t, []scenario{
		{name: "a deleted entry does not read", method: "GET", path: "/vault/fetch/one?project_id=shop&key=API_KEY", headers: h, status: 404},
		{name: "nor does a version it kept", method: "GET", path: "/vault/fetch/one?project_id=shop&key=API_KEY&version=4", headers: h, status: 404},
		{name: "deleted twice", method: "DELETE", path: "/vault/delete?project_id=shop&key=API_KEY", headers: h, status: 404},
		{name: "there is no undelete", method: "POST", path: "/vault/undelete", headers: h, body: `{"project_id":"shop","key":"API_KEY"}`, status: 404},
		{name: "nor a destroy", method: "DELETE", path: "/vault/destroy?project_id=shop&key=API_KEY", headers: h, status: 404},
		{name: "the key is free again at once", method: "POST", path: "/vault/create", headers: h, body: `{"project_id":"shop","key":"API_KEY","value":"new"}`, status: 201,
			want: []string{`"version":1`}},
		{name: "and keeps no older version", method: "GET", path: "/vault/versions?project_id=shop&key=API_KEY", headers: h, status: 200,
			want: []string{`"version":1`}, unwanted: []string{`"version":2`}},
		{name: "the new value is the one read", method: "GET", path: "/vault/fetch/one?project_id=shop&key=API_KEY", headers: h, status: 200,
			want: []string{`"value":"new"`}},
	})
	if n := logged("action = 'delete'"); n != 1 {
		t.Fatalf("the delete logged %d rows", n)
	}
}

// TestVaultUpdatesAtOnce: sixteen updates of one entry at once, through
// HTTP on real PostgreSQL: sixteen versions, each keeping the value the one
// before it replaced — no value lost, none kept twice.
func TestVaultUpdatesAtOnce(t *testing.T) {
	t.Parallel()
	ta, _, h := vaultAppKeeping(t, 100)
	if status, body := ta.call(t, "POST", "/vault/create", `{"project_id":"shop","key":"K","value":"start"}`, h); status != 201 {
		t.Fatalf("%d %s", status, body)
	}
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			if status, body := ta.call(t, "PATCH", "/vault/update", fmt.Sprintf(`{"project_id":"shop","key":"K","value":"v%d"}`, i), h); status != 200 {
				t.Errorf("update %d: %d %s", i, status, body)
			}
		})
	}
	wg.Wait()
	seen := map[string]bool{}
	for v := 1; v <= 17; v++ {
		status, body := ta.call(t, "GET", fmt.Sprintf("/vault/fetch/one?project_id=shop&key=K&version=%d", v), "", h)
		if status != 200 {
			t.Fatalf("version %d: %d %s", v, status, body)
		}
		value := body[strings.Index(body, `"value":"`)+9:]
		value = value[:strings.IndexByte(value, '"')]
		if seen[value] {
			t.Fatalf("value %s kept twice", value)
		}
		seen[value] = true
	}
	if len(seen) != 17 || !seen["start"] {
		t.Fatalf("values kept: %v", seen)
	}
}
