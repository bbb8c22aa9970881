// Package cli is the client side of the stencil command: `stencil project
// export|plan|apply|test` talks to a running service over its API with a
// personal access token (docs/projects.md, docs/tests.md). It prints for people, in
// colour only on a terminal, and says how it went by its exit code: 0 done
// (or nothing to do), 2 a plan with changes, 1 an error, in one line.
package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"stencil/flow"
	"stencil/projectfile"
)

// Exit codes.
const (
	ExitOK      = 0
	ExitError   = 1
	ExitChanges = 2
)

// Env is what a command reads and writes: its arguments after `project`,
// the environment, and the standard streams. Terminal says stdout is a
// terminal (colour, and apply may ask).
type Env struct {
	Args           []string
	Getenv         func(string) string
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Terminal       bool
}

// IsTerminal says whether f is a terminal (a character device).
func IsTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// usage is each command's line.
var usage = map[string]string{
	"export": "stencil project export <project> [-o file] [--records] [--url URL] [--token TOKEN]",
	"plan":   "stencil project plan <file> [--project id] [--prune] [-o plan.json] [--url URL] [--token TOKEN]",
	"apply":  "stencil project apply <file | plan.json> [--project id] [--prune] [--test] [--yes] [--url URL] [--token TOKEN]",
	"test":   "stencil project test <project | file> [--project id] [--route id] [--junit file] [--url URL] [--token TOKEN]",
}

// Usage is what `stencil help` and `stencil project --help` print of the
// project client's commands.
const Usage = `Commands of the project client (a running service's API, docs/projects.md):
  project export <project> [-o file] [--records]
                        write a project as a file
  project plan <file> [--project id] [--prune] [-o plan.json]
                        say what applying the file would change (exit 2: changes,
                        drift or a missing secret); -o keeps the plan to apply
  project apply <file | plan.json> [--project id] [--prune] [--test] [--yes]
                        apply the file, or exactly the plan kept by plan -o;
                        --test: only when the file's tests pass
  project test <project | file> [--project id] [--route id] [--junit file]
                        run a project's route tests, or a file's against its
                        routes before it is applied (exit 1: a test failed)
  Each takes --url URL (STENCIL_URL) and --token TOKEN (STENCIL_TOKEN), and
  --help for its flags.
`

// IsHelp says whether arg asks for help (help, --help, -h).
func IsHelp(arg string) bool {
	return arg == "help" || arg == "--help" || arg == "-h" || arg == "-help"
}

// Project runs `stencil project …` and returns the exit code.
func Project(ctx context.Context, env Env) int {
	err := project(ctx, env)
	var done exitError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &done):
		return int(done)
	}
	msg := flow.Printable(strings.ReplaceAll(err.Error(), "\n", " "))
	if !strings.HasPrefix(msg, "Error: ") {
		msg = "Error: " + msg
	}
	fmt.Fprintln(env.Stderr, msg)
	return ExitError
}

// exitError ends a command with a code and nothing more to say.
type exitError int

func (e exitError) Error() string { return fmt.Sprintf("exit %d", int(e)) }

// options are a command's flags.
type options struct {
	url, token, project, output, route, junit string
	prune, yes, records, test                 bool
}

func project(ctx context.Context, env Env) error {
	if len(env.Args) == 1 && IsHelp(env.Args[0]) {
		_, err := io.WriteString(env.Stdout, Usage)
		return err
	}
	if len(env.Args) == 0 || usage[env.Args[0]] == "" {
		return errors.New("stencil project takes export, plan, apply or test (docs/projects.md)")
	}
	verb := env.Args[0]
	var o options
	fs := flag.NewFlagSet("stencil project "+verb, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&o.url, "url", env.Getenv("STENCIL_URL"), "the service's address")
	fs.StringVar(&o.token, "token", env.Getenv("STENCIL_TOKEN"), "a personal access token")
	switch verb {
	case "export":
		fs.StringVar(&o.output, "o", "", "write the file here instead of to standard output")
		fs.BoolVar(&o.records, "records", false, "with each collection's records")
	case "plan", "apply":
		fs.StringVar(&o.project, "project", "", "the project to change (default: the file's id)")
		fs.BoolVar(&o.prune, "prune", false, "remove what the project holds and the file does not name")
		if verb == "plan" {
			fs.StringVar(&o.output, "o", "", "also write the plan here, for apply to apply exactly it")
		}
		if verb == "apply" {
			fs.BoolVar(&o.yes, "yes", false, "apply without asking")
			fs.BoolVar(&o.test, "test", false, "apply only when the file's route tests pass")
		}
	case "test":
		fs.StringVar(&o.project, "project", "", "with a file: the project to test it against (default: the file's id)")
		fs.StringVar(&o.route, "route", "", "only this route's tests")
		fs.StringVar(&o.junit, "junit", "", "also write the results here as JUnit XML")
	}
	args, err := parseInterspersed(fs, env.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(env.Stdout, "Usage: %s\n\n", usage[verb])
		fs.SetOutput(env.Stdout)
		fs.PrintDefaults()
		return nil
	}
	if err != nil {
		return fmt.Errorf("%v (usage: %s)", err, usage[verb])
	}
	if len(args) != 1 {
		return fmt.Errorf("one argument, please (usage: %s)", usage[verb])
	}
	c, err := newClient(o)
	if err != nil {
		return err
	}
	switch verb {
	case "export":
		return export(ctx, c, env, args[0], o)
	case "test":
		return runTests(ctx, c, env, args[0], o)
	}
	file, id, err := readFile(args[0])
	if err != nil {
		return err
	}
	if kept, ok, err := readPlan(file); ok || err != nil {
		if err != nil {
			return fmt.Errorf("%s: %v", args[0], err)
		}
		if verb != "apply" || o.project != "" || o.prune {
			return fmt.Errorf("%s is a plan: only apply takes it, without --project or --prune (usage: %s)", args[0], usage["apply"])
		}
		return applyPlan(ctx, c, env, kept, o)
	}
	if o.project != "" {
		id = o.project
	}
	if id == "" {
		return fmt.Errorf("%s names no project (its id is empty): give --project", args[0])
	}
	return planAndApply(ctx, c, env, file, id, o, verb == "apply")
}

// parseInterspersed parses flags before and after the arguments, as
// `stencil project apply shop.json --yes` writes them.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var rest []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return rest, nil
		}
		rest = append(rest, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// readFile reads a project's file and the project id it names.
func readFile(path string) (json.RawMessage, string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, "", err
	}
	var head struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return nil, "", fmt.Errorf("%s is not a project file: %v", path, err)
	}
	return raw, head.ID, nil
}

// client calls the service's API with a token.
type client struct {
	base  *url.URL
	token string
	http  *http.Client
}

func newClient(o options) (*client, error) {
	if o.url == "" {
		return nil, errors.New("no service: give --url or set STENCIL_URL (http://127.0.0.1:8080)")
	}
	base, err := url.Parse(o.url)
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, fmt.Errorf("--url %q is not an http(s) address", o.url)
	}
	if o.token == "" {
		return nil, errors.New("no token: give --token or set STENCIL_TOKEN (a personal access token, from your account's Access tokens page)")
	}
	return &client{base: base, token: o.token, http: &http.Client{Timeout: 2 * time.Minute}}, nil
}

// call sends a request and returns the answer's body; an answer that is
// not a success is an error with the service's message.
func (c *client) call(ctx context.Context, method, path string, body any) ([]byte, int, error) {
	var reader io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return nil, 0, err
		}
		reader = bytes.NewReader(raw)
	}
	u := c.base.JoinPath(path)
	if i := strings.IndexByte(path, '?'); i >= 0 {
		u = c.base.JoinPath(path[:i])
		u.RawQuery = path[i+1:]
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), reader)
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Authorization", "Bearer "+c.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, 0, fmt.Errorf("cannot reach %s: %v", c.base.Host, errors.Unwrap(err))
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, 0, err
	}
	if resp.StatusCode >= 300 {
		var env struct{ Message string }
		if json.Unmarshal(raw, &env) != nil || env.Message == "" {
			env.Message = fmt.Sprintf("the service answered %d", resp.StatusCode)
		}
		if resp.StatusCode == http.StatusUnauthorized {
			env.Message += " (check --token or STENCIL_TOKEN)"
		}
		return nil, resp.StatusCode, errors.New(env.Message)
	}
	return raw, resp.StatusCode, nil
}

func export(ctx context.Context, c *client, env Env, id string, o options) error {
	path := "/project/export?project_id=" + url.QueryEscape(id)
	if o.records {
		path += "&records=true"
	}
	raw, _, err := c.call(ctx, http.MethodGet, path, nil)
	if err != nil {
		return err
	}
	if o.output == "" {
		_, err := env.Stdout.Write(raw)
		return err
	}
	if err := writeFile(o.output, raw); err != nil {
		return err
	}
	fmt.Fprintf(env.Stderr, "Exported project %s to %s.\n", flow.Printable(id), o.output)
	return nil
}

// writeFile replaces path with data whole: a reader never sees half a
// file.
func writeFile(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// plan is the data of /project/plan and /project/apply.
type plan struct {
	projectfile.Plan
	PlanID string `json:"plan_id"`
}

func (c *client) plan(ctx context.Context, path string, body map[string]any) (plan, int, error) {
	raw, status, err := c.call(ctx, http.MethodPost, path, body)
	if err != nil {
		return plan{}, status, err
	}
	var env struct{ Data plan }
	if err := json.Unmarshal(raw, &env); err != nil {
		return plan{}, status, fmt.Errorf("the service's answer does not read as a plan: %v", err)
	}
	return env.Data, status, nil
}

func planAndApply(ctx context.Context, c *client, env Env, file json.RawMessage, id string, o options, apply bool) error {
	body := map[string]any{"project_id": id, "document": file, "prune": o.prune}
	p, _, err := c.plan(ctx, "/project/plan", body)
	if err != nil {
		return err
	}
	out := &printer{w: env.Stdout, colour: env.Terminal && env.Getenv("NO_COLOR") == ""}
	out.plan(id, p)
	if o.output != "" {
		raw, err := json.MarshalIndent(planFile{Kind: planKind, ProjectID: id, Prune: o.prune, Plan: p, Document: file}, "", "  ")
		if err != nil {
			return err
		}
		if err := writeFile(o.output, append(raw, '\n')); err != nil {
			return err
		}
		fmt.Fprintf(env.Stderr, "Wrote the plan to %s: stencil project apply %s applies exactly it.\n", o.output, o.output)
	}
	if !apply {
		if p.Settled() {
			return nil
		}
		return exitError(ExitChanges)
	}
	if p.Empty() {
		return nil
	}
	if o.test {
		results, err := c.tests(ctx, map[string]any{"project_id": id, "draft": file})
		if err != nil {
			return err
		}
		fmt.Fprintln(env.Stdout)
		printResults(env.Stdout, results)
		if results.Failed > 0 {
			return fmt.Errorf("not applied: %d of the file's tests failed", results.Failed)
		}
	}
	if err := confirm(env, id, o); err != nil {
		return err
	}
	body["plan_id"] = p.PlanID
	return applied(ctx, c, env, id, body)
}

// confirm asks on a terminal before applying, unless --yes.
func confirm(env Env, id string, o options) error {
	if o.yes {
		return nil
	}
	if !env.Terminal {
		return errors.New("not applied: give --yes to apply without a terminal to ask on")
	}
	fmt.Fprint(env.Stdout, "\nApply these changes to project "+flow.Printable(id)+"? Only yes applies: ")
	answer, _ := bufio.NewReader(env.Stdin).ReadString('\n')
	if strings.TrimSpace(answer) != "yes" {
		return errors.New("not applied")
	}
	return nil
}

// applied applies body's plan (its plan_id) and says what was done.
func applied(ctx context.Context, c *client, env Env, id string, body map[string]any) error {
	done, status, err := c.plan(ctx, "/project/apply", body)
	if err != nil { // 409: the project changed since the plan
		return err
	}
	verb := "Applied to"
	if status == http.StatusCreated {
		verb = "Created"
	}
	fmt.Fprintf(env.Stdout, "\n%s project %s: %d added, %d changed, %d removed.\n", verb, flow.Printable(id), len(done.Add), len(done.Change), len(done.Remove))
	return nil
}

// planKind marks a file of `plan -o`.
const planKind = "stencil-plan"

// planFile is what `plan -o` writes: the plan as it was shown, and what
// `apply` sends to apply exactly it (the file, the project, prune and
// the plan's id).
type planFile struct {
	Kind      string          `json:"kind"`
	ProjectID string          `json:"project_id"`
	Prune     bool            `json:"prune"`
	Plan      plan            `json:"plan"`
	Document  json.RawMessage `json:"document"`
}

// readPlan reads raw as a plan file when it is one (ok).
func readPlan(raw json.RawMessage) (planFile, bool, error) {
	var head struct {
		Kind string `json:"kind"`
	}
	if json.Unmarshal(raw, &head) != nil || head.Kind != planKind {
		return planFile{}, false, nil
	}
	var p planFile
	if err := json.Unmarshal(raw, &p); err != nil {
		return p, true, fmt.Errorf("not a plan of stencil project plan -o: %v", err)
	}
	if p.ProjectID == "" || p.Plan.PlanID == "" || len(p.Document) == 0 {
		return p, true, errors.New("not a plan of stencil project plan -o: project_id, plan.plan_id or document is missing")
	}
	return p, true, nil
}

// applyPlan applies a plan kept by `plan -o`: the service makes the plan
// again and applies it only when its id is the kept one (else 409).
func applyPlan(ctx context.Context, c *client, env Env, kept planFile, o options) error {
	out := &printer{w: env.Stdout, colour: env.Terminal && env.Getenv("NO_COLOR") == ""}
	out.plan(kept.ProjectID, kept.Plan)
	if kept.Plan.Empty() {
		return nil
	}
	if err := confirm(env, kept.ProjectID, o); err != nil {
		return err
	}
	return applied(ctx, c, env, kept.ProjectID, map[string]any{"project_id": kept.ProjectID, "document": kept.Document, "prune": kept.Prune, "plan_id": kept.Plan.PlanID})
}

// printer writes a plan for people: + added, ~ changed, - removed, one
// object a line with what differs beneath, coloured on a terminal.
type printer struct {
	w      io.Writer
	colour bool
}

const (
	green  = "\x1b[32m"
	yellow = "\x1b[33m"
	red    = "\x1b[31m"
	reset  = "\x1b[0m"
)

func (pr *printer) paint(colour, s string) string {
	if !pr.colour {
		return s
	}
	return colour + s + reset
}

func (pr *printer) plan(id string, p plan) {
	kept := ""
	if len(p.Kept) > 0 {
		kept = fmt.Sprintf(", %d not in the file", len(p.Kept))
	}
	if p.Empty() {
		fmt.Fprintf(pr.w, "Project %s matches the file: nothing to change (%d unchanged%s).\n", flow.Printable(id), p.Unchanged, kept)
	} else {
		fmt.Fprintf(pr.w, "Project %s: %d to add, %d to change, %d to remove, %d unchanged%s.\n", flow.Printable(id), len(p.Add), len(p.Change), len(p.Remove), p.Unchanged, kept)
	}
	if !p.Empty() || len(p.Kept) > 0 {
		fmt.Fprintln(pr.w)
	}
	for _, group := range []struct {
		mark, colour string
		items        []projectfile.Item
	}{{"+", green, p.Add}, {"~", yellow, p.Change}, {"-", red, p.Remove}} {
		for _, it := range group.items {
			// What the service sends is printed with its control
			// characters escaped: a name cannot drive the terminal.
			fmt.Fprintln(pr.w, pr.paint(group.colour, group.mark+" "+flow.Printable(strings.ReplaceAll(it.Kind, "_", " ")+" "+it.ID)))
			for _, f := range it.Fields {
				fmt.Fprintln(pr.w, "    "+flow.Printable(f))
			}
		}
	}
	for _, it := range p.Kept {
		fmt.Fprintln(pr.w, pr.paint(yellow, "! not in the file: "+flow.Printable(strings.ReplaceAll(it.Kind, "_", " ")+" "+it.ID)+" (kept; --prune removes it)"))
	}
	if len(p.MissingSecrets) > 0 {
		fmt.Fprintln(pr.w)
		for _, k := range p.MissingSecrets {
			line := "! the vault lacks " + k
			if routes := p.SecretRoutes[k]; len(routes) > 0 {
				line += ": routes " + strings.Join(routes, ", ") + " fault until it is set"
			}
			fmt.Fprintln(pr.w, pr.paint(yellow, flow.Printable(line)))
		}
		fmt.Fprintln(pr.w, "Set them on the project's vault page (a file never carries a value).")
	}
}
