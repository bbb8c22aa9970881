package cli

import (
	"flag"
	"io"
	"slices"
	"strings"
	"testing"

	"stencil/projectfile"
)

// TestPlanColour: colour on a terminal only, and not with NO_COLOR.
func TestPlanColour(t *testing.T) {
	p := plan{Plan: projectfile.Plan{Add: []projectfile.Item{{Kind: "route", ID: "pong", Fields: []string{"GET /pong"}}},
		Remove: []projectfile.Item{{Kind: "email_template", ID: "old"}}}}
	var b strings.Builder
	(&printer{w: &b, colour: true}).plan("shop", p)
	if !strings.Contains(b.String(), green+"+ route pong"+reset) || !strings.Contains(b.String(), red+"- email template old"+reset) {
		t.Fatalf("on a terminal: %q", b.String())
	}
	b.Reset()
	(&printer{w: &b}).plan("shop", p)
	if strings.Contains(b.String(), "\x1b[") || !strings.Contains(b.String(), "+ route pong\n    GET /pong\n") {
		t.Fatalf("not on a terminal: %q", b.String())
	}
}

// TestFlagsAfterArguments: flags may follow the file, as people type them.
func TestFlagsAfterArguments(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	yes := fs.Bool("yes", false, "")
	project := fs.String("project", "", "")
	args, err := parseInterspersed(fs, []string{"--project", "copy", "shop.json", "--yes"})
	if err != nil || !slices.Equal(args, []string{"shop.json"}) || !*yes || *project != "copy" {
		t.Fatalf("%v %v %v %q", args, err, *yes, *project)
	}
}

// TestPlanEscapesControlCharacters: a name from the service with a
// terminal's escape sequences prints them as text, on a terminal too.
func TestPlanEscapesControlCharacters(t *testing.T) {
	name := "\x1b[31mRED\x1b[0m\x1b]0;TITLE\x07"
	p := plan{Plan: projectfile.Plan{Add: []projectfile.Item{{Kind: "route", ID: name, Fields: []string{"GET /" + name}}}, Kept: []projectfile.Item{{Kind: "route", ID: name}},
		MissingSecrets: []string{name}, SecretRoutes: map[string][]string{name: {name}}}}
	var b strings.Builder
	(&printer{w: &b, colour: true}).plan("shop", p)
	out := b.String()
	for _, colour := range []string{green, yellow, reset} {
		out = strings.ReplaceAll(out, colour, "")
	}
	if strings.ContainsAny(out, "\x1b\x07") || !strings.Contains(out, `\u001b[31mRED`) {
		t.Fatalf("%q", b.String())
	}
}
