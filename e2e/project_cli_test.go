package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"stencil/store/storetest"
)

// cliRun is one run of `stencil project …`.
type cliRun struct {
	code           int
	stdout, stderr string
}

// runCLI runs the built binary with args and env, stdin empty (not a
// terminal), and returns what it said and its exit code.
func runCLI(t *testing.T, env []string, args ...string) cliRun {
	t.Helper()
	cmd := exec.Command(stencilBinary(t), append([]string{"project"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if exit, ok := err.(*exec.ExitError); ok {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return cliRun{code, stdout.String(), stderr.String()}
}

// TestProjectCLI: `stencil project export|plan|apply` as a process
// against a real service, with a personal access token: its exit codes,
// --yes, output without colour when not on a terminal, and errors as one
// line.
func TestProjectCLI(t *testing.T) {
	t.Parallel()
	app := startInstance(t, map[string]string{"DATABASE_URL": storetest.URL(t),
		"ROOT_USERNAME": "root", "ROOT_PASSWORD": "root-password-1", "ROOT_EMAIL": "root@example.com"})
	root := apiLogin(t, app.URL, "root", "root-password-1")
	for _, call := range [][2]string{
		{"/user/register", `{"username":"ann","email":"ann@example.com","password":"ann-password-1","role":"ADMIN"}`},
		{"/project/create", `{"id":"shop","name":"Shop","api_path":"/shop"}`},
		{"/project/member/add", `{"project_id":"shop","username":"ann"}`},
		{"/collection/create", `{"project_id":"shop","id":"books","name":"Books"}`},
		{"/route/create", `{"project_id":"shop","route":{"route_id":"books","route_path":"/books","method":"GET",
			"auth_jwt":{"active":false,"field":"","ref_col":""},"params":{"delimiter":"&","pairs":[]},"body":[],
			"flow":{"blocks":[{"type":"FETCH","depth":0,"local_name":"rows","ref_col":"books","match":[]},
			{"type":"RETURN","depth":0,"pairs":[{"id":"items","data":{"ref_var":true,"rtype":"OTHER","data":"rows"}}],"conditions":[]}]}}}`},
	} {
		if status, body := api(t, "POST", app.URL+call[0], root, call[1]); status >= 300 {
			t.Fatalf("POST %s: %d %s", call[0], status, body)
		}
	}
	_, body := api(t, "POST", app.URL+"/pat/create", apiLogin(t, app.URL, "ann", "ann-password-1"), `{"name":"deploy"}`)
	var pat struct{ Data struct{ Token string } }
	if err := json.Unmarshal([]byte(body), &pat); err != nil || pat.Data.Token == "" {
		t.Fatalf("token: %s", body)
	}
	env := []string{"STENCIL_URL=" + app.URL, "STENCIL_TOKEN=" + pat.Data.Token, "NO_COLOR="}
	dir := t.TempDir()
	file := filepath.Join(dir, "shop.stencil.json")
	oneLine := func(r cliRun, want string) {
		t.Helper()
		if r.code != 1 || strings.Count(r.stderr, "\n") != 1 || !strings.HasPrefix(r.stderr, "Error: ") || !strings.Contains(r.stderr, want) {
			t.Fatalf("want exit 1 and one line with %q, got %d: %q %q", want, r.code, r.stdout, r.stderr)
		}
	}

	// Export, with the flags instead of the environment.
	r := runCLI(t, nil, "export", "shop", "-o", file, "--url", app.URL, "--token", pat.Data.Token)
	if r.code != 0 || !strings.Contains(r.stderr, "Exported project shop to "+file) {
		t.Fatalf("export: %+v", r)
	}
	exported, err := os.ReadFile(file)
	if err != nil || !bytes.HasPrefix(exported, []byte("{\n  \"format\": 1,")) {
		t.Fatalf("the file: %v %s", err, exported)
	}
	if r := runCLI(t, env, "plan", file); r.code != 0 || !strings.Contains(r.stdout, "Project shop matches the file: nothing to change") {
		t.Fatalf("plan of the same file: %+v", r)
	}

	// A change: plan says so (exit 2), in plain text when not on a terminal.
	changed := strings.Replace(string(exported), `"x_rate_limit": 50`, `"x_rate_limit": 75`, 1)
	changed = strings.Replace(changed, `"ref_col": "books"`, `"ref_col": "shelves"`, 1)
	if err := os.WriteFile(file, []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	r = runCLI(t, env, "plan", file)
	for _, want := range []string{"Project shop: 0 to add, 2 to change, 0 to remove", "~ setting x_rate_limit\n    x_rate_limit: 50 → 75",
		"~ route books\n    Block 1 (FETCH) Collection: books → shelves"} {
		if r.code != 2 || !strings.Contains(r.stdout, want) {
			t.Fatalf("plan of a change lacks %q: %+v", want, r)
		}
	}
	if strings.Contains(r.stdout, "\x1b[") {
		t.Fatalf("colour without a terminal: %q", r.stdout)
	}
	oneLine(runCLI(t, env, "apply", file), "not applied: give --yes")
	r = runCLI(t, env, "apply", file, "--yes")
	if r.code != 0 || !strings.Contains(r.stdout, "Applied to project shop: 0 added, 2 changed, 0 removed.") {
		t.Fatalf("apply --yes: %+v", r)
	}
	if r := runCLI(t, env, "plan", file); r.code != 0 {
		t.Fatalf("plan after apply: %+v", r)
	}
	// Another project from the file, at another API path.
	copyFile := filepath.Join(dir, "copy.json")
	if err := os.WriteFile(copyFile, []byte(strings.Replace(changed, `"api_path": "/shop"`, `"api_path": "/copy"`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	r = runCLI(t, env, "apply", copyFile, "--project", "shop_copy", "--yes")
	if r.code != 0 || !strings.Contains(r.stdout, "Created project shop_copy") {
		t.Fatalf("apply to a new project: %+v", r)
	}

	// Errors: one line, exit 1.
	oneLine(runCLI(t, env, "plan", filepath.Join(dir, "missing.json")), "no such file or directory")
	oneLine(runCLI(t, []string{"STENCIL_URL=" + app.URL, "STENCIL_TOKEN=stp_not_a_token"}, "plan", file), "check --token")
	oneLine(runCLI(t, []string{"STENCIL_URL=" + app.URL}, "plan", file), "no token")
	bad := strings.Replace(changed, `"ref_col": "shelves"`, `"ref_col": ""`, 1)
	if err := os.WriteFile(file, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	oneLine(runCLI(t, env, "apply", file, "--yes"), "routes[0].flow.blocks[0].ref_col")
	oneLine(runCLI(t, env, "export", "nope"), fmt.Sprintf("project %q not found", "nope"))
}
