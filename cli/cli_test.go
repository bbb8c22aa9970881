package cli

import (
	"encoding/json"
	"encoding/xml"
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

// TestJUnit: the results of a run as JUnit XML that a JUnit reader
// reads back: the counts, a case a test with its route as class, a
// failure whose message is its first line and whose text every line.
func TestJUnit(t *testing.T) {
	var r testResults
	if err := json.Unmarshal([]byte(`{"passed":1,"failed":1,"results":[
		{"route_id":"list_books","test":"lists three","passed":true,"status":200,"duration_ms":1.5,"failures":[]},
		{"route_id":"list_books","test":"first is <Emma> & co","passed":false,"status":200,"duration_ms":2.5,
		 "failures":["status: expected 201, got 200","body.items.0.title: expected \"Emma\", got \"Dune\""]}]}`), &r); err != nil {
		t.Fatal(err)
	}
	raw, err := junit("shop", r)
	if err != nil {
		t.Fatal(err)
	}
	var read struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Suites   []struct {
			Name  string `xml:"name,attr"`
			Cases []struct {
				Class   string `xml:"classname,attr"`
				Name    string `xml:"name,attr"`
				Time    string `xml:"time,attr"`
				Failure *struct {
					Message string `xml:"message,attr"`
					Text    string `xml:",chardata"`
				} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(raw, &read); err != nil {
		t.Fatalf("%v\n%s", err, raw)
	}
	if read.Tests != 2 || read.Failures != 1 || len(read.Suites) != 1 || read.Suites[0].Name != "shop" || len(read.Suites[0].Cases) != 2 {
		t.Fatalf("%+v\n%s", read, raw)
	}
	ok, failed := read.Suites[0].Cases[0], read.Suites[0].Cases[1]
	if ok.Failure != nil || ok.Class != "list_books" || ok.Time != "0.0015" || failed.Failure == nil || failed.Name != "first is <Emma> & co" ||
		failed.Failure.Message != "status: expected 201, got 200" || !strings.Contains(failed.Failure.Text, `got "Dune"`) {
		t.Fatalf("cases %+v %+v\n%s", ok, failed.Failure, raw)
	}
	if !strings.HasPrefix(string(raw), "<?xml") {
		t.Fatalf("no XML declaration:\n%s", raw)
	}
}
