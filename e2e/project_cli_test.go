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
	return runBinary(t, env, append([]string{"project"}, args...)...)
}

// runBinary runs the built binary with args (runCLI's, without project).
func runBinary(t *testing.T, env []string, args ...string) cliRun {
	t.Helper()
	cmd := exec.Command(stencilBinary(t), args...)
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

// personalToken makes a personal access token for the user of session
// token bearer, for the command to use.
func personalToken(t *testing.T, url, bearer string) string {
	t.Helper()
	_, body := api(t, "POST", url+"/pat/create", bearer, `{"name":"deploy"}`)
	var pat struct{ Data struct{ Token string } }
	if err := json.Unmarshal([]byte(body), &pat); err != nil || pat.Data.Token == "" {
		t.Fatalf("token: %s", body)
	}
	return pat.Data.Token
}

// TestHelp: every way of asking the command for help prints its usage on
// standard output and exits 0; the project commands' --help prints their
// flags.
func TestHelp(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"help"}, {"--help"}, {"-h"}, {"project", "--help"}, {"project", "help"},
		{"project", "plan", "--help"}, {"project", "apply", "-h"}, {"project", "export", "--help"}} {
		r := runBinary(t, nil, args...)
		want := "project plan <file>"
		if len(args) == 3 {
			want = "Usage: stencil project " + args[1] + " "
		}
		if r.code != 0 || r.stderr != "" || !strings.Contains(r.stdout, want) {
			t.Errorf("stencil %s: exit %d, stdout %q, stderr %q; want exit 0 and %q on stdout", strings.Join(args, " "), r.code, r.stdout, r.stderr, want)
		}
		if len(args) == 3 && !strings.Contains(r.stdout, "-token") {
			t.Errorf("stencil %s names no flag: %q", strings.Join(args, " "), r.stdout)
		}
	}
	if r := runBinary(t, nil, "help"); !strings.Contains(r.stdout, "vault rotate") || !strings.Contains(r.stdout, "restore <file>") {
		t.Errorf("stencil help names not the service's commands: %q", r.stdout)
	}
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
	token := personalToken(t, app.URL, apiLogin(t, app.URL, "ann", "ann-password-1"))
	env := []string{"STENCIL_URL=" + app.URL, "STENCIL_TOKEN=" + token, "NO_COLOR="}
	dir := t.TempDir()
	file := filepath.Join(dir, "shop.stencil.json")
	oneLine := func(r cliRun, want string) {
		t.Helper()
		if r.code != 1 || strings.Count(r.stderr, "\n") != 1 || !strings.HasPrefix(r.stderr, "Error: ") || !strings.Contains(r.stderr, want) {
			t.Fatalf("want exit 1 and one line with %q, got %d: %q %q", want, r.code, r.stdout, r.stderr)
		}
	}

	// Export, with the flags instead of the environment.
	r := runCLI(t, nil, "export", "shop", "-o", file, "--url", app.URL, "--token", token)
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
		"~ route books\n    Block 1 (FETCH) · Collection: books → shelves"} {
		if r.code != 2 || !strings.Contains(r.stdout, want) {
			t.Fatalf("plan of a change lacks %q: %+v", want, r)
		}
	}
	if strings.Contains(r.stdout, "\x1b[") {
		t.Fatalf("colour without a terminal: %q", r.stdout)
	}
	oneLine(runCLI(t, env, "apply", file), "not applied: give --yes")
	health := `{"project_id":"shop","route":{"route_id":"health","route_path":"/health","method":"GET","auth_jwt":{"active":false,"field":"","ref_col":""},
		"params":{"delimiter":"&","pairs":[]},"body":[],"flow":{"blocks":[{"type":"RETURN","depth":0,"pairs":[],"conditions":[]}]}}}`
	// The plan kept by plan -o is applied as it was reviewed, or not at
	// all once the project changed since.
	planPath := filepath.Join(dir, "plan.json")
	if r := runCLI(t, env, "plan", file, "-o", planPath); r.code != 2 || !strings.Contains(r.stderr, "Wrote the plan to "+planPath) {
		t.Fatalf("plan -o: %+v", r)
	}
	oneLine(runCLI(t, env, "apply", planPath, "--prune", "--yes"), "is a plan: only apply takes it, without --project or --prune")
	oneLine(runCLI(t, env, "plan", planPath), "is a plan: only apply takes it")
	tmp := strings.ReplaceAll(health, "health", "tmp")
	if status, body := api(t, "POST", app.URL+"/route/create", root, tmp); status != 201 {
		t.Fatalf("route/create: %d %s", status, body)
	}
	oneLine(runCLI(t, env, "apply", planPath, "--yes"), "changed since that plan: nothing was applied; plan again")
	if status, body := api(t, "DELETE", app.URL+"/route/delete?project_id=shop&route_id=tmp", root, ""); status != 200 {
		t.Fatalf("route/delete: %d %s", status, body)
	}
	r = runCLI(t, env, "apply", planPath, "--yes")
	if r.code != 0 || !strings.Contains(r.stdout, "~ route books") || !strings.Contains(r.stdout, "Applied to project shop: 0 added, 2 changed, 0 removed.") {
		t.Fatalf("apply plan.json --yes: %+v", r)
	}
	if r := runCLI(t, env, "plan", file); r.code != 0 {
		t.Fatalf("plan after apply: %+v", r)
	}
	// Drift: a route the file does not name is listed and exits 2, with
	// nothing to write; --prune would remove it.
	if status, body := api(t, "POST", app.URL+"/route/create", root, health); status != 201 {
		t.Fatalf("route/create: %d %s", status, body)
	}
	r = runCLI(t, env, "plan", file)
	for _, want := range []string{"Project shop matches the file: nothing to change (", ", 1 not in the file).", "! not in the file: route health (kept; --prune removes it)"} {
		if r.code != 2 || !strings.Contains(r.stdout, want) {
			t.Fatalf("plan with drift lacks %q or exit 2: %+v", want, r)
		}
	}
	if r := runCLI(t, env, "plan", file, "--prune"); r.code != 2 || !strings.Contains(r.stdout, "- route health") || strings.Contains(r.stdout, "not in the file") {
		t.Fatalf("plan --prune with drift: %+v", r)
	}
	if status, body := api(t, "DELETE", app.URL+"/route/delete?project_id=shop&route_id=health", root, ""); status != 200 {
		t.Fatalf("route/delete: %d %s", status, body)
	}
	// A secret the file's routes read and the vault lacks: exit 2 before
	// and after applying, naming the route that needs it.
	vaultRoute := `{"route_id":"sync","route_path":"/sync","method":"GET","auth_jwt":{"active":false,"field":"","ref_col":""},
		"params":{"delimiter":"&","pairs":[]},"body":[],"flow":{"blocks":[{"type":"VAULT","depth":0,"local_name":"tok","key":"UP_TOKEN"},
		{"type":"RETURN","depth":0,"pairs":[],"conditions":[]}]}},`
	secretFile := filepath.Join(dir, "secret.json")
	if err := os.WriteFile(secretFile, []byte(strings.Replace(changed, `"routes": [`, `"routes": [`+vaultRoute, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, verb := range []string{"plan", "apply"} {
		args := []string{verb, secretFile}
		if verb == "apply" {
			args = append(args, "--yes")
		}
		r = runCLI(t, env, args...)
		if want := "! the vault lacks UP_TOKEN: routes sync fault until it is set"; !strings.Contains(r.stdout, want) || (verb == "plan") != (r.code == 2) || (verb == "apply") != (r.code == 0) {
			t.Fatalf("%s with a missing secret lacks %q or its exit code: %+v", verb, want, r)
		}
	}
	if r := runCLI(t, env, "plan", secretFile); r.code != 2 || !strings.Contains(r.stdout, "nothing to change") || !strings.Contains(r.stdout, "! the vault lacks UP_TOKEN") {
		t.Fatalf("plan after applying a file whose secret is missing: %+v", r)
	}
	if status, body := api(t, "DELETE", app.URL+"/route/delete?project_id=shop&route_id=sync", root, ""); status != 200 {
		t.Fatalf("route/delete: %d %s", status, body)
	}
	// Route tests: a project's, then a file's against its routes before
	// it is applied, with JUnit XML; apply --test applies nothing when
	// the file breaks one.
	hello := `{"project_id":"shop","route":{"route_id":"hello","route_path":"/hello","method":"GET","auth_jwt":{"active":false,"field":"","ref_col":""},
		"params":{"delimiter":"&","pairs":[]},"body":[],"flow":{"blocks":[{"type":"RETURN","depth":0,
		"pairs":[{"id":"hi","data":{"ref_var":false,"rtype":"BOOLEAN","data":"true"}}],"conditions":[]}]}}}`
	for _, call := range [][2]string{{"/route/create", hello},
		{"/route/test/create", `{"project_id":"shop","route_id":"hello","name":"says hi","request":{"caller":"anonymous"},"expect":{"status":200,"body":{"hi":true}}}`}} {
		if status, body := api(t, "POST", app.URL+call[0], root, call[1]); status != 201 {
			t.Fatalf("%s: %d %s", call[0], status, body)
		}
	}
	if r := runCLI(t, env, "test", "shop"); r.code != 0 || !strings.Contains(r.stdout, "ok   hello/says hi (") || !strings.Contains(r.stdout, "1 passed, 0 failed.") {
		t.Fatalf("test shop: %+v", r)
	}
	testFile := filepath.Join(dir, "tested.json")
	if r := runCLI(t, env, "export", "shop", "-o", testFile); r.code != 0 {
		t.Fatalf("export: %+v", r)
	}
	raw, err := os.ReadFile(testFile)
	if err != nil {
		t.Fatal(err)
	}
	breaking := strings.Replace(string(raw), `"data": "true"`, `"data": "false"`, 1)
	if err := os.WriteFile(testFile, []byte(breaking), 0o644); err != nil {
		t.Fatal(err)
	}
	junitFile := filepath.Join(dir, "junit.xml")
	r = runCLI(t, env, "test", testFile, "--junit", junitFile)
	if r.code != 1 || !strings.Contains(r.stdout, "FAIL hello/says hi\n     body.hi: expected true, got false") || !strings.Contains(r.stdout, "0 passed, 1 failed.") {
		t.Fatalf("test of a file that breaks a test: %+v", r)
	}
	if x, err := os.ReadFile(junitFile); err != nil || !strings.Contains(string(x), `<testsuites tests="1" failures="1"`) || !strings.Contains(string(x), `<failure message="body.hi: expected true, got false"`) {
		t.Fatalf("JUnit XML: %v %s", err, x)
	}
	r = runCLI(t, env, "apply", testFile, "--test", "--yes")
	if r.code != 1 || !strings.Contains(r.stderr, "not applied: 1 of the file's tests failed") || !strings.Contains(r.stdout, "FAIL hello/says hi") {
		t.Fatalf("apply --test of a file that breaks a test: %+v", r)
	}
	if r := runCLI(t, env, "test", "shop", "--route", "hello"); r.code != 0 {
		t.Fatalf("the project after a refused apply --test: %+v", r)
	}
	if status, body := api(t, "DELETE", app.URL+"/route/delete?project_id=shop&route_id=hello", root, ""); status != 200 {
		t.Fatalf("route/delete: %d %s", status, body)
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
