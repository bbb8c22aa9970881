package flow

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Route tests (docs/tests.md): a request saved with a route and what its
// answer must be. This file holds their shape, their checks and how an
// answer is judged; running them is the runtime's.

// RouteTest is one test of a route: its name, unique within the route,
// the request it sends and what the answer must be.
type RouteTest struct {
	Name    string      `json:"name"`
	Request TestRequest `json:"request"`
	Expect  Expectation `json:"expect"`
}

// TestRequest is what a test sends: a path after the project's API path
// ("" for the route's own path when it has no parameters), a query
// string, headers (literal pairs), a JSON body (null: none) and who calls:
// TestAnonymous or TestSelf (the member who runs the tests).
type TestRequest struct {
	Path    string          `json:"path"`
	Query   string          `json:"query"`
	Headers []Pair          `json:"headers"`
	Body    json.RawMessage `json:"body,omitempty"`
	Caller  string          `json:"caller"`
}

// The callers of a test's request.
const (
	TestAnonymous = "anonymous"
	TestSelf      = "self"
)

// Expectation is what a test's answer must be: its status (0: any),
// headers (each literal pair present with that value, names without
// regard to case), body as a subset (null: not checked), dot-path checks
// into the body, and a time bound in milliseconds (0: none).
type Expectation struct {
	Status  int             `json:"status"`
	Headers []Pair          `json:"headers"`
	Body    json.RawMessage `json:"body,omitempty"`
	Paths   []PathCheck     `json:"paths"`
	MaxMS   int             `json:"max_ms"`
}

// PathCheck checks the value at a dot path of the body ("items.0.title":
// an object's key or an array's index at each step).
type PathCheck struct {
	Path  string          `json:"path"`
	Op    string          `json:"op"`
	Value json.RawMessage `json:"value,omitempty"`
}

// Normalize writes t one way, as the store and a project file keep it:
// empty lists as [], a null JSON value as none (left out), JSON values
// compact with their keys sorted (the store's jsonb reorders them).
func (t *RouteTest) Normalize() {
	if t.Request.Headers == nil {
		t.Request.Headers = []Pair{}
	}
	if t.Expect.Headers == nil {
		t.Expect.Headers = []Pair{}
	}
	if t.Expect.Paths == nil {
		t.Expect.Paths = []PathCheck{}
	}
	t.Request.Body = canonicalJSON(t.Request.Body)
	t.Expect.Body = canonicalJSON(t.Expect.Body)
	for i := range t.Expect.Paths {
		t.Expect.Paths[i].Value = canonicalJSON(t.Expect.Paths[i].Value)
	}
}

// canonicalJSON is a JSON value compact with its objects' keys sorted and
// numbers as written; null (or nothing, or what is not JSON) is nil.
func canonicalJSON(raw json.RawMessage) json.RawMessage {
	var v any
	if len(bytes.TrimSpace(raw)) == 0 || decodeJSON(raw, &v) != nil || v == nil {
		return nil
	}
	out, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return out
}

// PathOps are the checks a PathCheck makes: equals (the same JSON value),
// exists, not_exists, matches (a string matching a regular expression),
// lt and gt (a number below or above), length (of an array, a string in
// characters, or an object's keys).
var PathOps = []string{"equals", "exists", "not_exists", "matches", "lt", "gt", "length"}

// Limits of a test.
const (
	MaxTestName   = 100
	MaxTestMS     = 60_000
	MaxTestChecks = 100
	MaxTestBody   = 64 << 10
)

// Check says what is wrong with t, by path ("expect.paths[1].op"); a
// test that passes its check may still fail when run.
func (t RouteTest) Check() Problems {
	p := Problems{}
	switch {
	case strings.TrimSpace(t.Name) == "":
		p.add("name", "is required")
	case utf8.RuneCountInString(t.Name) > MaxTestName:
		p.add("name", fmt.Sprintf("must be at most %d characters", MaxTestName))
	case strings.ContainsFunc(t.Name, isControl):
		p.add("name", "must not hold control characters")
	}
	r := t.Request
	if r.Path != "" && !strings.HasPrefix(r.Path, "/") {
		p.add("request.path", "must start with / (the path after the project's API path) or be empty")
	}
	if len(r.Path) > 2048 {
		p.add("request.path", "must be at most 2048 bytes")
	}
	if len(r.Query) > 8192 {
		p.add("request.query", "must be at most 8192 bytes")
	}
	if r.Caller != TestAnonymous && r.Caller != TestSelf {
		p.add("request.caller", "must be one of: anonymous, self")
	}
	checkBody(p, "request.body", r.Body)
	checkHeaders(p, "request.headers", r.Headers)
	e := t.Expect
	if e.Status != 0 && (e.Status < 100 || e.Status > 599) {
		p.add("expect.status", "must be an HTTP status from 100 to 599, or 0 for any")
	}
	if e.MaxMS < 0 || e.MaxMS > MaxTestMS {
		p.add("expect.max_ms", fmt.Sprintf("must be from 0 (no bound) to %d", MaxTestMS))
	}
	checkBody(p, "expect.body", e.Body)
	checkHeaders(p, "expect.headers", e.Headers)
	if len(e.Paths) > MaxTestChecks {
		p.add("expect.paths", fmt.Sprintf("must hold at most %d checks", MaxTestChecks))
	}
	for i, c := range e.Paths {
		at := fmt.Sprintf("expect.paths[%d]", i)
		if c.Path == "" || len(c.Path) > 500 {
			p.add(at+".path", "must be a dot path of 1 to 500 bytes (items.0.title)")
		}
		if !slices.Contains(PathOps, c.Op) {
			p.add(at+".op", "must be one of: "+strings.Join(PathOps, ", "))
			continue
		}
		v := bytes.TrimSpace(c.Value)
		some := len(v) > 0 && string(v) != "null"
		switch c.Op {
		case "exists", "not_exists":
			if some {
				p.add(at+".value", "must be left out with "+c.Op)
			}
		case "equals":
			if len(v) == 0 || !json.Valid(v) {
				p.add(at+".value", "is required: the JSON value the path must hold")
			}
		case "matches":
			var pattern string
			if json.Unmarshal(v, &pattern) != nil || pattern == "" {
				p.add(at+".value", "must be a regular expression, as a string")
			} else if _, err := regexp.Compile(pattern); err != nil {
				p.add(at+".value", "is not a regular expression: "+strings.TrimPrefix(err.Error(), "error parsing regexp: "))
			}
		case "lt", "gt":
			if _, ok := number(v); !ok {
				p.add(at+".value", "must be a number")
			}
		case "length":
			if n, err := strconv.Atoi(string(v)); err != nil || n < 0 {
				p.add(at+".value", "must be a whole number from 0")
			}
		}
	}
	return p
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 }

// checkBody checks a test's body: left out, null or a JSON value of at
// most MaxTestBody bytes.
func checkBody(p Problems, at string, b json.RawMessage) {
	if len(b) > MaxTestBody {
		p.add(at, fmt.Sprintf("must be at most %d KiB", MaxTestBody>>10))
	} else if len(bytes.TrimSpace(b)) > 0 && !json.Valid(b) {
		p.add(at, "must be JSON")
	}
}

// checkHeaders checks a test's headers: names that are tokens, literal
// values.
func checkHeaders(p Problems, at string, hs []Pair) {
	for i, h := range hs {
		if !token(h.ID) {
			p.add(fmt.Sprintf("%s[%d].id", at, i), "must be a header name (letters, digits and !#$%&'*+-.^_`|~)")
		}
		if h.Data.RefVar {
			p.add(fmt.Sprintf("%s[%d].data.ref_var", at, i), "must be false: a test's header is a value, not a variable")
		}
		if strings.ContainsFunc(h.Data.Data, func(r rune) bool { return r == '\r' || r == '\n' || r == 0 }) {
			p.add(fmt.Sprintf("%s[%d].data.data", at, i), "must not hold a line break or NUL")
		}
	}
}

// token says whether s is an HTTP token (a header name).
func token(s string) bool {
	if s == "" || len(s) > 100 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("!#$%&'*+-.^_`|~", r)) {
			return false
		}
	}
	return true
}

// TestAnswer is the answer a test's request got.
type TestAnswer struct {
	Status   int
	Header   func(name string) string
	Body     []byte
	Duration time.Duration
}

// Failures says how a falls short of e, one line a failure in the words
// of docs/tests.md ("status: expected 201, got 200", "body.items.0.title:
// expected "Dune", got "Emma""); none when it passes.
func (e Expectation) Failures(a TestAnswer) []string {
	out := []string{}
	if e.Status != 0 && a.Status != e.Status {
		out = append(out, fmt.Sprintf("status: expected %d, got %d", e.Status, a.Status))
	}
	for _, h := range e.Headers {
		got := ""
		if a.Header != nil {
			got = a.Header(h.ID)
		}
		if got != h.Data.Data {
			out = append(out, fmt.Sprintf("header %s: expected %q, got %s", h.ID, h.Data.Data, quoteOrNone(got)))
		}
	}
	var body any
	hasBody := len(bytes.TrimSpace(a.Body)) > 0 && decodeJSON(a.Body, &body) == nil
	if want := bytes.TrimSpace(e.Body); len(want) > 0 && string(want) != "null" {
		var w any
		if decodeJSON(want, &w) == nil {
			if !hasBody {
				out = append(out, "body: expected JSON, got none")
			} else {
				out = subset(out, "body", w, body)
			}
		}
	}
	for _, c := range e.Paths {
		got, found := at(body, c.Path, hasBody)
		out = append(out, c.failure(got, found)...)
	}
	if e.MaxMS > 0 && a.Duration > time.Duration(e.MaxMS)*time.Millisecond {
		out = append(out, fmt.Sprintf("time: expected at most %d ms, took %s ms", e.MaxMS, strconv.FormatFloat(float64(a.Duration.Microseconds())/1000, 'f', 1, 64)))
	}
	return out
}

func quoteOrNone(s string) string {
	if s == "" {
		return "none"
	}
	return strconv.Quote(s)
}

// decodeJSON decodes with numbers kept as written (json.Number).
func decodeJSON(raw []byte, v *any) error {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	return d.Decode(v)
}

// subset adds to out where got does not hold want at path: an object's
// listed keys must match (others may be there), an array must match item
// by item and in length, any other value must be equal.
func subset(out []string, path string, want, got any) []string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return append(out, fmt.Sprintf("%s: expected an object, got %s", path, show(got)))
		}
		keys := make([]string, 0, len(w))
		for k := range w {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			v, ok := g[k]
			if !ok {
				out = append(out, fmt.Sprintf("%s.%s: expected %s, got none", path, k, show(w[k])))
				continue
			}
			out = subset(out, path+"."+k, w[k], v)
		}
		return out
	case []any:
		g, ok := got.([]any)
		if !ok {
			return append(out, fmt.Sprintf("%s: expected an array, got %s", path, show(got)))
		}
		if len(g) != len(w) {
			out = append(out, fmt.Sprintf("%s: expected %d items, got %d", path, len(w), len(g)))
		}
		for i := range min(len(w), len(g)) {
			out = subset(out, path+"."+strconv.Itoa(i), w[i], g[i])
		}
		return out
	}
	if !equalJSON(want, got) {
		out = append(out, fmt.Sprintf("%s: expected %s, got %s", path, show(want), show(got)))
	}
	return out
}

// equalJSON says whether two decoded JSON values are the same (numbers by
// value: 1 and 1.0 are equal).
func equalJSON(a, b any) bool {
	if x, ok := a.(json.Number); ok {
		y, ok := b.(json.Number)
		if !ok {
			return false
		}
		fx, okx := new(big.Float).SetString(x.String())
		fy, oky := new(big.Float).SetString(y.String())
		return okx && oky && fx.Cmp(fy) == 0
	}
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			if w, ok := y[k]; !ok || !equalJSON(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equalJSON(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	return a == b
}

// show is a decoded JSON value as a failure line shows it, at most 80
// characters.
func show(v any) string {
	raw, _ := json.Marshal(v)
	s := Printable(string(raw))
	if utf8.RuneCountInString(s) > 80 {
		s = string([]rune(s)[:79]) + "…"
	}
	return s
}

// at is the value at dot path in body, and whether there is one.
func at(body any, path string, hasBody bool) (any, bool) {
	if !hasBody {
		return nil, false
	}
	v := body
	for _, step := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			next, ok := x[step]
			if !ok {
				return nil, false
			}
			v = next
		case []any:
			i, err := strconv.Atoi(step)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// failure says how the value at c's path (got, found) fails c, if it
// does.
func (c PathCheck) failure(got any, found bool) []string {
	where := "body." + c.Path
	if c.Op == "not_exists" {
		if found {
			return []string{fmt.Sprintf("%s: expected none, got %s", where, show(got))}
		}
		return nil
	}
	if !found {
		return []string{where + ": expected a value, got none"}
	}
	switch c.Op {
	case "equals":
		var want any
		if decodeJSON(c.Value, &want) == nil && !equalJSON(want, got) {
			return []string{fmt.Sprintf("%s: expected %s, got %s", where, show(want), show(got))}
		}
	case "matches":
		var pattern string
		_ = json.Unmarshal(c.Value, &pattern)
		s, ok := got.(string)
		if re, err := regexp.Compile(pattern); err == nil && (!ok || !re.MatchString(s)) {
			return []string{fmt.Sprintf("%s: expected text matching %s, got %s", where, strconv.Quote(pattern), show(got))}
		}
	case "lt", "gt":
		want, _ := number(c.Value)
		n, ok := got.(json.Number)
		var g *big.Float
		if ok {
			g, ok = new(big.Float).SetString(n.String())
		}
		if !ok {
			return []string{fmt.Sprintf("%s: expected a number %s %s, got %s", where, map[string]string{"lt": "below", "gt": "above"}[c.Op], want.Text('g', -1), show(got))}
		}
		if cmp := g.Cmp(want); c.Op == "lt" && cmp >= 0 || c.Op == "gt" && cmp <= 0 {
			return []string{fmt.Sprintf("%s: expected a number %s %s, got %s", where, map[string]string{"lt": "below", "gt": "above"}[c.Op], want.Text('g', -1), show(got))}
		}
	case "length":
		want, _ := strconv.Atoi(strings.TrimSpace(string(c.Value)))
		n := -1
		switch x := got.(type) {
		case []any:
			n = len(x)
		case string:
			n = utf8.RuneCountInString(x)
		case map[string]any:
			n = len(x)
		}
		if n < 0 {
			return []string{fmt.Sprintf("%s: expected a length of %d, got %s, which has none", where, want, show(got))}
		}
		if n != want {
			return []string{fmt.Sprintf("%s: expected a length of %d, got %d", where, want, n)}
		}
	}
	return nil
}

// number reads a JSON number.
func number(raw []byte) (*big.Float, bool) {
	var n json.Number
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if d.Decode(&n) != nil {
		return nil, false
	}
	f, ok := new(big.Float).SetString(n.String())
	return f, ok
}
