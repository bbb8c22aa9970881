package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"stencil/store/storetest"
)

// TestProjectFileGitWalk walks a project's file through git as a team's
// CI would (docs/projects.md, docs/tests.md): export and commit; edit;
// plan (exit 2, the change in words); plan -o; apply that plan; plan
// again (exit 0); the file's tests (exit 0); then drift and a missing
// secret each exit 2.
func TestProjectFileGitWalk(t *testing.T) {
	t.Parallel()
	app := startInstance(t, map[string]string{"DATABASE_URL": storetest.URL(t),
		"ROOT_USERNAME": "root", "ROOT_PASSWORD": "root-password-1", "ROOT_EMAIL": "root@example.com"})
	root := apiLogin(t, app.URL, "root", "root-password-1")
	for _, call := range [][2]string{
		{"/project/create", `{"id":"shop","name":"Shop","api_path":"/shop"}`},
		{"/collection/create", `{"project_id":"shop","id":"books","name":"Books"}`},
		{"/data/create", `{"project_id":"shop","collection_id":"books","data":{"title":"Dune"}}`},
		{"/data/create", `{"project_id":"shop","collection_id":"books","data":{"title":"Emma"}}`},
		{"/route/create", `{"project_id":"shop","route":{"route_id":"books","route_path":"/books","method":"GET",
			"auth_jwt":{"active":false,"field":"","ref_col":""},"params":{"delimiter":"&","pairs":[]},"body":[],
			"flow":{"blocks":[{"type":"FETCH","depth":0,"local_name":"rows","ref_col":"books","match":[],"sort":{"property":"title","descending":false}},
			{"type":"RETURN","depth":0,"pairs":[{"id":"items","data":{"ref_var":true,"rtype":"OTHER","data":"rows"}}],"conditions":[]}]}}}`},
		{"/route/test/create", `{"project_id":"shop","route_id":"books","name":"lists both","request":{"caller":"anonymous"},
			"expect":{"status":200,"paths":[{"path":"items","op":"length","value":2}]}}`},
	} {
		if status, body := api(t, "POST", app.URL+call[0], root, call[1]); status >= 300 {
			t.Fatalf("POST %s: %d %s", call[0], status, body)
		}
	}
	env := []string{"STENCIL_URL=" + app.URL, "STENCIL_TOKEN=" + personalToken(t, app.URL, root), "NO_COLOR="}
	repo := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", repo, "-c", "user.name=CI", "-c", "user.email=ci@example.com"}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	file := filepath.Join(repo, "shop.stencil.json")
	git("init", "-q")
	if r := runCLI(t, env, "export", "shop", "-o", file); r.code != 0 {
		t.Fatalf("export: %+v", r)
	}
	git("add", "shop.stencil.json")
	git("commit", "-q", "-m", "shop as it is")

	// An edit: the list newest title first.
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(raw), `"descending": false`, `"descending": true`, 1)
	if edited == string(raw) {
		t.Fatalf("the file has no sort to change:\n%s", raw)
	}
	if err := os.WriteFile(file, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	if diff := git("diff", "--stat"); !strings.Contains(diff, "1 insertion(+), 1 deletion(-)") {
		t.Fatalf("git diff: %s", diff)
	}
	r := runCLI(t, env, "plan", file)
	if r.code != 2 || !strings.Contains(r.stdout, "~ route books\n    Block 1 (FETCH) · Sort by: title → title, descending") {
		t.Fatalf("plan of the edit: %+v", r)
	}
	planFile := filepath.Join(t.TempDir(), "plan.json")
	if r := runCLI(t, env, "plan", file, "-o", planFile); r.code != 2 {
		t.Fatalf("plan -o: %+v", r)
	}
	if r := runCLI(t, env, "test", file); r.code != 0 || !strings.Contains(r.stdout, "ok   books/lists both") {
		t.Fatalf("the file's tests before applying it: %+v", r)
	}
	if r := runCLI(t, env, "apply", planFile, "--yes"); r.code != 0 || !strings.Contains(r.stdout, "Applied to project shop: 0 added, 1 changed, 0 removed.") {
		t.Fatalf("apply plan.json: %+v", r)
	}
	git("commit", "-q", "-am", "newest first")
	if r := runCLI(t, env, "plan", file); r.code != 0 || !strings.Contains(r.stdout, "Project shop matches the file: nothing to change") {
		t.Fatalf("plan after the apply: %+v", r)
	}
	if r := runCLI(t, env, "test", "shop"); r.code != 0 || !strings.Contains(r.stdout, "1 passed, 0 failed.") {
		t.Fatalf("the project's tests after the apply: %+v", r)
	}
	if _, body := api(t, "GET", app.URL+"/x/shop/books", "", ""); !strings.Contains(body, `"Emma"`) || strings.Index(body, `"Emma"`) > strings.Index(body, `"Dune"`) {
		t.Fatalf("the route after the apply: %s", body)
	}

	// Drift: a route made by hand, which the file does not name.
	if status, body := api(t, "POST", app.URL+"/route/create", root, `{"project_id":"shop","route":{"route_id":"health","route_path":"/health","method":"GET",
		"auth_jwt":{"active":false,"field":"","ref_col":""},"params":{"delimiter":"&","pairs":[]},"body":[],
		"flow":{"blocks":[{"type":"RETURN","depth":0,"pairs":[],"conditions":[]}]}}}`); status != 201 {
		t.Fatalf("route/create: %d %s", status, body)
	}
	if r := runCLI(t, env, "plan", file); r.code != 2 || !strings.Contains(r.stdout, "! not in the file: route health (kept; --prune removes it)") {
		t.Fatalf("plan with drift: %+v", r)
	}
	// A secret a route of the file reads and the vault lacks.
	withSecret := strings.Replace(edited, `"routes": [`, `"routes": [{"route_id":"sync","route_path":"/sync","method":"GET","auth_jwt":{"active":false,"field":"","ref_col":""},
		"params":{"delimiter":"&","pairs":[]},"body":[],"flow":{"blocks":[{"type":"VAULT","depth":0,"local_name":"tok","key":"UP_TOKEN"},
		{"type":"RETURN","depth":0,"pairs":[],"conditions":[]}]}},`, 1)
	if err := os.WriteFile(file, []byte(withSecret), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := runCLI(t, env, "plan", file, "--prune"); r.code != 2 || !strings.Contains(r.stdout, "! the vault lacks UP_TOKEN: routes sync fault until it is set") {
		t.Fatalf("plan with a missing secret: %+v", r)
	}
}
