package cli

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"stencil/flow"
)

// Route tests from the command line (docs/tests.md): stencil project test
// runs a project's tests, or a file's against the file's routes before it
// is applied, prints a line a test and exits 1 when one fails; --junit
// also writes JUnit XML for a CI to show.

// testResults is what POST /route/test/run answers.
type testResults struct {
	Passed  int `json:"passed"`
	Failed  int `json:"failed"`
	Results []struct {
		RouteID    string   `json:"route_id"`
		Test       string   `json:"test"`
		Passed     bool     `json:"passed"`
		Status     int      `json:"status"`
		DurationMS float64  `json:"duration_ms"`
		Failures   []string `json:"failures"`
	} `json:"results"`
}

func (c *client) tests(ctx context.Context, body map[string]any) (testResults, error) {
	raw, _, err := c.call(ctx, http.MethodPost, "/route/test/run", body)
	if err != nil {
		return testResults{}, err
	}
	var env struct {
		Data testResults `json:"data"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		return testResults{}, fmt.Errorf("the service's answer: %v", err)
	}
	return env.Data, nil
}

// runTests runs stencil project test: target is a file when one of that
// name exists, else a project's id.
func runTests(ctx context.Context, c *client, env Env, target string, o options) error {
	body := map[string]any{"project_id": target}
	suite := target
	if st, err := os.Stat(target); err == nil && st.Mode().IsRegular() {
		file, id, err := readFile(target)
		if err != nil {
			return err
		}
		if o.project != "" {
			id = o.project
		}
		if id == "" {
			return fmt.Errorf("%s names no project (its id is empty): give --project", target)
		}
		body = map[string]any{"project_id": id, "draft": file}
		suite = id + " (" + target + ")"
	} else if o.project != "" {
		return fmt.Errorf("--project goes with a file; %s is not one", target)
	}
	if o.route != "" {
		body["route_id"] = o.route
	}
	results, err := c.tests(ctx, body)
	if err != nil {
		return err
	}
	printResults(env.Stdout, results)
	if o.junit != "" {
		raw, err := junit(suite, results)
		if err != nil {
			return err
		}
		if err := writeFile(o.junit, raw); err != nil {
			return err
		}
	}
	if results.Failed > 0 {
		return exitError(ExitError)
	}
	return nil
}

// printResults writes a line a test, its failures beneath, and a count.
func printResults(w io.Writer, r testResults) {
	for _, t := range r.Results {
		name := flow.Printable(t.RouteID + "/" + t.Test)
		if t.Passed {
			fmt.Fprintf(w, "ok   %s (%.1f ms)\n", name, t.DurationMS)
			continue
		}
		fmt.Fprintf(w, "FAIL %s\n", name)
		for _, f := range t.Failures {
			fmt.Fprintln(w, "     "+flow.Printable(f))
		}
	}
	fmt.Fprintf(w, "%d passed, %d failed.\n", r.Passed, r.Failed)
}

// JUnit XML, as CI systems read it: a suite of test cases, each failed
// one with a failure whose message is its first line and whose text is
// every line.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Time     string      `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Class   string        `xml:"classname,attr"`
	Name    string        `xml:"name,attr"`
	Time    string        `xml:"time,attr"`
	Failure *junitFailure `xml:"failure,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// junit writes results as JUnit XML: the suite named name, a test case a
// test (its class the route's id), times in seconds.
func junit(name string, r testResults) ([]byte, error) {
	seconds := func(ms float64) string { return fmt.Sprintf("%.4f", ms/1000) }
	s := junitSuite{Name: name, Tests: len(r.Results), Failures: r.Failed}
	var total float64
	for _, t := range r.Results {
		total += t.DurationMS
		tc := junitCase{Class: t.RouteID, Name: t.Test, Time: seconds(t.DurationMS)}
		if !t.Passed {
			msg := ""
			if len(t.Failures) > 0 {
				msg = t.Failures[0]
			}
			tc.Failure = &junitFailure{Message: msg, Type: "expectation", Text: strings.Join(t.Failures, "\n")}
		}
		s.Cases = append(s.Cases, tc)
	}
	s.Time = seconds(total)
	raw, err := xml.MarshalIndent(junitSuites{Tests: s.Tests, Failures: s.Failures, Time: s.Time, Suites: []junitSuite{s}}, "", "  ")
	if err != nil {
		return nil, err
	}
	return append([]byte(xml.Header), append(raw, '\n')...), nil
}
