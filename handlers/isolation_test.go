package handlers

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"stencil/store"
)

// TestAPIPathTakeover: an ADMIN of another project cannot take project
// shop's URL space under /x, by spelling its path another way or by a path
// inside it (issue: /pa/, //pa, /pa//, /pa/wr took /x/pa/…).
func TestAPIPathTakeover(t *testing.T) {
	t.Parallel()
	ta, h := runApp(t)
	runnable{id: "wr", method: "POST", path: "/wr", body: `[{"id":"note","bdtype":"STRING"}]`, blocks: []string{
		`{"type":"RETURN","depth":0,"pairs":` + pairsOf("owner", lit("STRING", "shop"), "note", ref("note")) + `,"conditions":[]}`,
	}}.save(t, ta, h)
	if status, body := ta.call(t, "POST", "/x/shop/wr", `{"note":"n1"}`, nil); status != 200 || !strings.Contains(body, `"owner":"shop"`) {
		t.Fatalf("shop's route: %d %s", status, body)
	}
	mallory := ta.newUser(t, "mallory", store.RoleAdmin)
	mh := as(ta.token(t, mallory))
	for i, path := range []string{"/shop/", "//shop", "/shop//", "/SHOP", "/Shop/", "/shop/wr", "/shop/wr/deeper", "/"} {
		status, body := ta.call(t, "POST", "/project/create", fmt.Sprintf(`{"id":"evil%d","name":"Evil","api_path":%q}`, i, path), mh)
		if status != 422 || !strings.Contains(body, `"api_path"`) {
			t.Errorf("create with api_path %q: %d %s", path, status, body)
		}
	}
	// /sh is no prefix of /shop by whole segments: it is free.
	if status, body := ta.call(t, "POST", "/project/create", `{"id":"evil","name":"Evil","api_path":"/sh//"}`, mh); status != 201 || !strings.Contains(body, `"api_path":"/sh"`) {
		t.Fatalf("a free path, stored canonical: %d %s", status, body)
	}
	for _, path := range []string{"/shop", "/SHOP/wr", "/sh/../shop"} {
		status, body := ta.call(t, "PATCH", "/project/update", `{"project_id":"evil","api_path":"`+path+`"}`, mh)
		if status != 422 || !strings.Contains(body, `"api_path"`) {
			t.Errorf("update to api_path %q: %d %s", path, status, body)
		}
	}
	// Saved unchanged (a new name only), the path is not checked again.
	if status, body := ta.call(t, "PATCH", "/project/update", `{"project_id":"evil","name":"Evil 2","api_path":"/SH/"}`, mh); status != 200 || !strings.Contains(body, `"api_path":"/SH"`) {
		t.Fatalf("same path, other case: %d %s", status, body)
	}
	if status, body := ta.call(t, "POST", "/x/shop/wr", `{"note":"n2"}`, nil); status != 200 || !strings.Contains(body, `"owner":"shop"`) {
		t.Fatalf("shop's route after the attempts: %d %s", status, body)
	}
	// /x compares the api_path without regard to case, like the rule.
	if status, body := ta.call(t, "POST", "/x/SHOP/wr", `{"note":"n3"}`, nil); status != 200 || !strings.Contains(body, `"owner":"shop"`) {
		t.Fatalf("shop's route in capitals: %d %s", status, body)
	}
}

// TestAPIPathClashesFromBefore: projects whose paths overlapped before the
// rule keep their paths; the older answers, and deleting or moving the
// newer never leaves the older without its routes.
func TestAPIPathClashesFromBefore(t *testing.T) {
	t.Parallel()
	ta, h := runApp(t)
	runnable{id: "wr", method: "GET", path: "/wr", blocks: []string{
		`{"type":"RETURN","depth":0,"pairs":` + pairsOf("owner", lit("STRING", "shop")) + `,"conditions":[]}`,
	}}.save(t, ta, h)
	ctx := context.Background()
	// As if made before migration 013: the trigger is left out.
	if _, err := ta.pool.Exec(ctx, `ALTER TABLE projects DISABLE TRIGGER projects_api_path_exclusive;
		INSERT INTO projects (id, name, api_path) VALUES ('evil', 'Evil', '/shop/'), ('evil_wr', 'Evil', '/shop/wr');
		ALTER TABLE projects ENABLE TRIGGER projects_api_path_exclusive`); err != nil {
		t.Fatal(err)
	}
	clashes, err := ta.h.store.APIPathClashes(ctx)
	if err != nil || len(clashes) != 3 || clashes[0].Older != "evil" && clashes[0].Older != "shop" {
		t.Fatalf("clashes: %+v %v", clashes, err)
	}
	for _, id := range []string{"evil", "evil_wr"} {
		ta.h.runs.RoutesChanged(ctx, id)
	}
	check := func(when string) {
		t.Helper()
		if status, body := ta.call(t, "GET", "/x/shop/wr", "", nil); status != 200 || !strings.Contains(body, `"owner":"shop"`) {
			t.Fatalf("%s: %d %s", when, status, body)
		}
	}
	check("beside the clashing projects")
	if err := ta.h.runs.ReloadAll(ctx); err != nil {
		t.Fatal(err)
	}
	check("after a full load")
	if err := ta.h.store.DeleteProject(ctx, "evil"); err != nil {
		t.Fatal(err)
	}
	ta.h.runs.RoutesChanged(ctx, "evil")
	check("after the newer project went")
	// The newer one may move away; moving back into shop's space is refused.
	if _, err := ta.pool.Exec(ctx, `UPDATE projects SET api_path = '/elsewhere' WHERE id = 'evil_wr'`); err != nil {
		t.Fatal(err)
	}
	ta.h.runs.RoutesChanged(ctx, "evil_wr")
	check("after the other moved")
	if _, err := ta.pool.Exec(ctx, `UPDATE projects SET api_path = '/shop/wr' WHERE id = 'evil_wr'`); err == nil {
		t.Fatal("moving back into shop's space was allowed")
	}
}
