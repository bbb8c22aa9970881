package flow

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"testing"
)

func loadAll(t testing.TB) Template {
	t.Helper()
	raw, err := os.ReadFile("testdata/all_blocks.json")
	if err != nil {
		t.Fatal(err)
	}
	tmpl, p := DecodeTemplate(raw, "")
	if len(p) > 0 {
		t.Fatalf("fixture: %v", p)
	}
	tmpl.Normalize()
	if p := ValidateTemplate(tmpl, ""); len(p) > 0 {
		t.Fatalf("fixture is invalid: %v", p)
	}
	return tmpl
}

func TestRoundTripIsLossless(t *testing.T) {
	raw, _ := os.ReadFile("testdata/all_blocks.json")
	tmpl := loadAll(t)
	if len(tmpl.Flow.Blocks) != len(BlockTypes) {
		t.Fatalf("fixture has %d blocks, want one of each of the %d types", len(tmpl.Flow.Blocks), len(BlockTypes))
	}
	once, err := json.Marshal(tmpl)
	if err != nil {
		t.Fatal(err)
	}
	again, p := DecodeTemplate(once, "")
	if len(p) > 0 {
		t.Fatalf("re-decode: %v", p)
	}
	twice, _ := json.Marshal(again)
	if !bytes.Equal(once, twice) || !reflect.DeepEqual(tmpl, again) {
		t.Fatalf("encoding is not stable:\n%s\n%s", once, twice)
	}
	// Same JSON value as the hand-written document, key for key.
	var a, b any
	_ = json.Unmarshal(raw, &a)
	_ = json.Unmarshal(once, &b)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("round trip changed the document:\n%s", once)
	}
}

func TestDecodeNamesThePath(t *testing.T) {
	for name, tc := range map[string]struct{ doc, path, msg string }{
		"unknown block field":  {`{"flow":{"blocks":[{"type":"FETCH","depth":0,"local_name":"a","ref_col":"b","pairs":[]}]}}`, "flow.blocks[0].pairs", "is not a field of a FETCH block"},
		"unknown block type":   {`{"flow":{"blocks":[{"type":"GOTO","depth":0}]}}`, "flow.blocks[0].type", "must be one of"},
		"missing block type":   {`{"flow":{"blocks":[{"depth":0}]}}`, "flow.blocks[0].type", "is required"},
		"missing depth":        {`{"flow":{"blocks":[{"type":"VAULT","local_name":"a","key":"K"}]}}`, "flow.blocks[0].depth", "is required"},
		"depth not a number":   {`{"flow":{"blocks":[{"type":"VAULT","depth":"x"}]}}`, "flow.blocks[0].depth", "must be an integer"},
		"operand not object":   {`{"flow":{"blocks":[{},{"type":"PROPERTY","depth":0,"data":"x"}]}}`, "flow.blocks[1].data", "must be an object"},
		"nested type":          {`{"flow":{"blocks":[{"type":"RETURN","depth":0,"pairs":[{"id":"a","data":{"ref_var":"yes"}}]}]}}`, "flow.blocks[0].pairs[0].data.ref_var", "must be true or false"},
		"unknown top field":    {`{"colour":"red"}`, "colour", "is not a known field"},
		"a field without name": {`{"":1}`, `""`, "is not a known field"},
		"variables not a list": {`{"variables":{}}`, "variables", "must be an array"},
		"not JSON":             {`{"flow":`, "", "is not valid JSON"},
	} {
		t.Run(name, func(t *testing.T) {
			_, p := DecodeTemplate([]byte(tc.doc), "")
			if !strings.HasPrefix(p[tc.path], tc.msg) {
				t.Fatalf("problems = %v, want %q at %q", p, tc.msg, tc.path)
			}
		})
	}
	_, p := DecodeRoute([]byte(`{"flow":{"blocks":[{"type":"FETCH","depth":0,"bogus":1}]}}`), "route")
	if _, ok := p["route.flow.blocks[0].bogus"]; !ok {
		t.Fatalf("prefix: %v", p)
	}
}

func TestValidation(t *testing.T) {
	valid := loadAll(t)
	for name, tc := range map[string]struct {
		change func(*Template)
		path   string
		msg    string
	}{
		"required text":          {func(t *Template) { t.Flow.Blocks[0].RefCol = "" }, "flow.blocks[0].ref_col", "is required"},
		"enum":                   {func(t *Template) { t.Flow.Blocks[3].Action = "RETRY" }, "flow.blocks[3].action", "must be one of FAIL, BREAK, CONTINUE"},
		"required operand":       {func(t *Template) { t.Flow.Blocks[4].Min = nil }, "flow.blocks[4].min", "is required"},
		"operand rtype":          {func(t *Template) { t.Flow.Blocks[6].PropertyData.RType = "DATE" }, "flow.blocks[6].data.rtype", "must be one of"},
		"condition type":         {func(t *Template) { t.Flow.Blocks[1].Conditions[0].ConditionType = "LIKE" }, "flow.blocks[1].conditions[0].condition_type", "must be one of"},
		"next":                   {func(t *Template) { t.Flow.Blocks[1].Operations[0].Next = "XOR" }, "flow.blocks[1].operations[0].next", "must be one of"},
		"filter op":              {func(t *Template) { t.Flow.Blocks[5].Filters[0].OperationType = "?" }, "flow.blocks[5].filters[0].operation_type", "must be one of"},
		"fail status":            {func(t *Template) { t.Flow.Blocks[3].Fail.Status = 42 }, "flow.blocks[3].fail.status", "must be an error status"},
		"fail status 1xx":        {func(t *Template) { t.Flow.Blocks[3].Fail.Status = 100 }, "flow.blocks[3].fail.status", "must be an error status"},
		"fail status 399":        {func(t *Template) { t.Flow.Blocks[3].Fail.Status = 399 }, "flow.blocks[3].fail.status", "must be an error status"},
		"fail status 600":        {func(t *Template) { t.Flow.Blocks[3].Fail.Status = 600 }, "flow.blocks[3].fail.status", "must be an error status"},
		"DELETE without targets": {func(t *Template) { t.Flow.Blocks[15].SimpleTargets = nil }, "flow.blocks[15].targets", "must not be empty"},
		"sort without property":  {func(t *Template) { t.Flow.Blocks[0].Sort.Property = "" }, "flow.blocks[0].sort.property", "is required"},
		"limit of no type":       {func(t *Template) { t.Flow.Blocks[0].Limit.RType = "NUMBER" }, "flow.blocks[0].limit.rtype", "must be one of"},
		"target field":           {func(t *Template) { t.Flow.Blocks[9].UpdateTargets[0].Field = "" }, "flow.blocks[9].targets[0].field", "is required"},
		"pair id":                {func(t *Template) { t.Flow.Blocks[12].Pairs[0].ID = "" }, "flow.blocks[12].pairs[0].id", "is required"},
		"ref without name":       {func(t *Template) { t.Flow.Blocks[12].Pairs[0].Data.Data = "" }, "flow.blocks[12].pairs[0].data.data", "must name a variable"},
		"depth without loop":     {func(t *Template) { t.Flow.Blocks[1].Depth = 1 }, "flow.blocks[1].depth", "must be at most 0"},
		"depth jump":             {func(t *Template) { t.Flow.Blocks[5].Depth = 2 }, "flow.blocks[5].depth", "must be at most 1"},
		"method":                 {func(t *Template) { t.Method = "FETCH" }, "method", "must be one of"},
		"body on GET":            {func(t *Template) { t.Method = "GET" }, "body", "is only for POST, PUT and PATCH"},
		"bdtype":                 {func(t *Template) { t.Body[0].BDType = "TEXT" }, "body[0].bdtype", "must be one of"},
		"delimiter":              {func(t *Template) { t.Params.Delimiter = "&&&&&&" }, "params.delimiter", "must be 1–5 characters"},
		"jwt field":              {func(t *Template) { t.AuthJWT.Field = "" }, "auth_jwt.field", "is required when"},
		"name":                   {func(t *Template) { t.Name = "-bad" }, "name", "must be 1–100"},
		"description":            {func(t *Template) { t.Description = " " }, "description", "is required"},
		"variable key":           {func(t *Template) { t.Variables[0].Key = "9v" }, "variables[0].key", "must be 1–64"},
		"variable twice":         {func(t *Template) { t.Variables = append(t.Variables, t.Variables[0]) }, "variables[1].key", "is declared twice"},
		"variable needs text":    {func(t *Template) { t.Variables[0].Description = "" }, "variables[0].description", "is required"},
		"return status 199":      {func(t *Template) { t.Flow.Blocks[12].Status = 199 }, "flow.blocks[12].status", "must be a success or redirect status"},
		"return status 309":      {func(t *Template) { t.Flow.Blocks[12].Status = 309 }, "flow.blocks[12].status", "must be a success or redirect status"},
		"return status 404":      {func(t *Template) { t.Flow.Blocks[12].Status = 404 }, "flow.blocks[12].status", "must be a success or redirect status"},
		"header not a token": {func(t *Template) {
			t.Flow.Blocks[12].Headers = []Pair{{ID: "X Bad", Data: Operand{RType: "STRING", Data: "x"}}}
		}, "flow.blocks[12].headers[0].id", "must be a header name"},
		"header with colon": {func(t *Template) {
			t.Flow.Blocks[12].Headers = []Pair{{ID: "X:y", Data: Operand{RType: "STRING", Data: "x"}}}
		}, "flow.blocks[12].headers[0].id", "must be a header name"},
		"header empty": {func(t *Template) {
			t.Flow.Blocks[12].Headers = []Pair{{ID: "", Data: Operand{RType: "STRING", Data: "x"}}}
		}, "flow.blocks[12].headers[0].id", "is required"},
		"Content-Length": {func(t *Template) {
			t.Flow.Blocks[12].Headers = []Pair{{ID: "content-length", Data: Operand{RType: "STRING", Data: "x"}}}
		}, "flow.blocks[12].headers[0].id", "content-length is set by the platform"},
		"Set-Cookie": {func(t *Template) {
			t.Flow.Blocks[12].Headers = []Pair{{ID: "Set-Cookie", Data: Operand{RType: "STRING", Data: "x"}}}
		}, "flow.blocks[12].headers[0].id", "Set-Cookie is set by the platform"},
		"Access-Control-*": {func(t *Template) {
			t.Flow.Blocks[12].Headers = []Pair{{ID: "Access-Control-Allow-Origin", Data: Operand{RType: "STRING", Data: "x"}}}
		}, "flow.blocks[12].headers[0].id", "Access-Control-Allow-Origin is set by the platform"},
		"CSP": {func(t *Template) {
			t.Flow.Blocks[12].Headers = []Pair{{ID: "Content-Security-Policy", Data: Operand{RType: "STRING", Data: "x"}}}
		}, "flow.blocks[12].headers[0].id", "Content-Security-Policy is set"},
		"HSTS": {func(t *Template) {
			t.Flow.Blocks[12].Headers = []Pair{{ID: "Strict-Transport-Security", Data: Operand{RType: "STRING", Data: "x"}}}
		}, "flow.blocks[12].headers[0].id", "Strict-Transport-Security is set"},
		"Transfer-Encoding": {func(t *Template) {
			t.Flow.Blocks[12].Headers = []Pair{{ID: "Transfer-Encoding", Data: Operand{RType: "STRING", Data: "x"}}}
		}, "flow.blocks[12].headers[0].id", "Transfer-Encoding is set"},
		"Connection": {func(t *Template) {
			t.Flow.Blocks[12].Headers = []Pair{{ID: "Connection", Data: Operand{RType: "STRING", Data: "x"}}}
		}, "flow.blocks[12].headers[0].id", "Connection is set"},
		"Host": {func(t *Template) {
			t.Flow.Blocks[12].Headers = []Pair{{ID: "Host", Data: Operand{RType: "STRING", Data: "x"}}}
		}, "flow.blocks[12].headers[0].id", "Host is set"},
		"x-content-type-options (a browser acts on it)": {func(t *Template) {
			t.Flow.Blocks[12].Headers = []Pair{{ID: "X-Content-Type-Options", Data: Operand{RType: "STRING", Data: "x"}}}
		}, "flow.blocks[12].headers[0].id", "X-Content-Type-Options is set by the platform"},
		"clear-site-data (a browser acts on it)": {func(t *Template) {
			t.Flow.Blocks[12].Headers = []Pair{{ID: "Clear-Site-Data", Data: Operand{RType: "STRING", Data: "x"}}}
		}, "flow.blocks[12].headers[0].id", "Clear-Site-Data is set by the platform"},
		"refresh (a browser acts on it)": {func(t *Template) {
			t.Flow.Blocks[12].Headers = []Pair{{ID: "Refresh", Data: Operand{RType: "STRING", Data: "x"}}}
		}, "flow.blocks[12].headers[0].id", "Refresh is set by the platform"},
		"link (a browser acts on it)": {func(t *Template) {
			t.Flow.Blocks[12].Headers = []Pair{{ID: "Link", Data: Operand{RType: "STRING", Data: "x"}}}
		}, "flow.blocks[12].headers[0].id", "Link is set by the platform"},
		"content-encoding (a browser acts on it)": {func(t *Template) {
			t.Flow.Blocks[12].Headers = []Pair{{ID: "Content-Encoding", Data: Operand{RType: "STRING", Data: "x"}}}
		}, "flow.blocks[12].headers[0].id", "Content-Encoding is set by the platform"},
		"upgrade (a browser acts on it)": {func(t *Template) {
			t.Flow.Blocks[12].Headers = []Pair{{ID: "Upgrade", Data: Operand{RType: "STRING", Data: "x"}}}
		}, "flow.blocks[12].headers[0].id", "Upgrade is set by the platform"},
		"trailer (a browser acts on it)": {func(t *Template) {
			t.Flow.Blocks[12].Headers = []Pair{{ID: "Trailer", Data: Operand{RType: "STRING", Data: "x"}}}
		}, "flow.blocks[12].headers[0].id", "Trailer is set by the platform"},
		"set-cookie2 (a browser acts on it)": {func(t *Template) {
			t.Flow.Blocks[12].Headers = []Pair{{ID: "Set-Cookie2", Data: Operand{RType: "STRING", Data: "x"}}}
		}, "flow.blocks[12].headers[0].id", "Set-Cookie2 is set by the platform"},
		"content-security-policy-report-only (a browser acts on it)": {func(t *Template) {
			t.Flow.Blocks[12].Headers = []Pair{{ID: "Content-Security-Policy-Report-Only", Data: Operand{RType: "STRING", Data: "x"}}}
		}, "flow.blocks[12].headers[0].id", "Content-Security-Policy-Report-Only is set by the platform"},
		"permissions-policy (a browser acts on it)": {func(t *Template) {
			t.Flow.Blocks[12].Headers = []Pair{{ID: "Permissions-Policy", Data: Operand{RType: "STRING", Data: "x"}}}
		}, "flow.blocks[12].headers[0].id", "Permissions-Policy is set by the platform"},
		"cross-origin-opener-policy (a browser acts on it)": {func(t *Template) {
			t.Flow.Blocks[12].Headers = []Pair{{ID: "Cross-Origin-Opener-Policy", Data: Operand{RType: "STRING", Data: "x"}}}
		}, "flow.blocks[12].headers[0].id", "Cross-Origin-Opener-Policy is set by the platform"},
		"cross-origin-resource-policy (a browser acts on it)": {func(t *Template) {
			t.Flow.Blocks[12].Headers = []Pair{{ID: "Cross-Origin-Resource-Policy", Data: Operand{RType: "STRING", Data: "x"}}}
		}, "flow.blocks[12].headers[0].id", "Cross-Origin-Resource-Policy is set by the platform"},
		"x-frame-options (a browser acts on it)": {func(t *Template) {
			t.Flow.Blocks[12].Headers = []Pair{{ID: "X-Frame-Options", Data: Operand{RType: "STRING", Data: "x"}}}
		}, "flow.blocks[12].headers[0].id", "X-Frame-Options is set by the platform"},
		"referrer-policy (a browser acts on it)": {func(t *Template) {
			t.Flow.Blocks[12].Headers = []Pair{{ID: "Referrer-Policy", Data: Operand{RType: "STRING", Data: "x"}}}
		}, "flow.blocks[12].headers[0].id", "Referrer-Policy is set by the platform"},
		"service-worker-allowed (a browser acts on it)": {func(t *Template) {
			t.Flow.Blocks[12].Headers = []Pair{{ID: "Service-Worker-Allowed", Data: Operand{RType: "STRING", Data: "x"}}}
		}, "flow.blocks[12].headers[0].id", "Service-Worker-Allowed is set by the platform"},
		"origin-agent-cluster (a browser acts on it)": {func(t *Template) {
			t.Flow.Blocks[12].Headers = []Pair{{ID: "Origin-Agent-Cluster", Data: Operand{RType: "STRING", Data: "x"}}}
		}, "flow.blocks[12].headers[0].id", "Origin-Agent-Cluster is set by the platform"},
		"stencil-hop (a browser acts on it)": {func(t *Template) {
			t.Flow.Blocks[12].Headers = []Pair{{ID: "Stencil-Hop", Data: Operand{RType: "STRING", Data: "x"}}}
		}, "flow.blocks[12].headers[0].id", "Stencil-Hop is set by the platform"},
		"header twice": {func(t *Template) {
			t.Flow.Blocks[12].Headers = append([]Pair{{ID: "X-A", Data: Operand{RType: "STRING", Data: "x"}}}, []Pair{{ID: "x-a", Data: Operand{RType: "STRING", Data: "x"}}}...)
		}, "flow.blocks[12].headers[1].id", "is given twice"},
		"redirect without Location": {func(t *Template) { t.Flow.Blocks[12].Status = 302 }, "flow.blocks[12].headers", "must have a Location header"},
		"HTTP method":               {func(t *Template) { t.Flow.Blocks[16].CallMethod = "OPTIONS" }, "flow.blocks[16].method", "must be one of GET, HEAD, POST, PUT, PATCH, DELETE"},
		"HTTP url":                  {func(t *Template) { t.Flow.Blocks[16].URL = nil }, "flow.blocks[16].url", "is required"},
		"HTTP Host header": {func(t *Template) {
			t.Flow.Blocks[16].Headers = []Pair{{ID: "Host", Data: Operand{RType: "STRING", Data: "x"}}}
		}, "flow.blocks[16].headers[0].id", "Host is set by the HTTP client"},
		"HTTP header token": {func(t *Template) {
			t.Flow.Blocks[16].Headers = []Pair{{ID: "a(b)", Data: Operand{RType: "STRING", Data: "x"}}}
		}, "flow.blocks[16].headers[0].id", "must be a header name"},
		"HTTP query id": {func(t *Template) { t.Flow.Blocks[16].Query[0].ID = "" }, "flow.blocks[16].query[0].id", "is required"},
	} {
		t.Run(name, func(t *testing.T) {
			tmpl := valid
			raw, _ := json.Marshal(valid)
			tmpl, _ = DecodeTemplate(raw, "") // a deep copy to change
			tc.change(&tmpl)
			p := ValidateTemplate(tmpl, "")
			if !strings.HasPrefix(p[tc.path], tc.msg) {
				t.Fatalf("problems = %v, want %q at %q", p, tc.msg, tc.path)
			}
		})
	}
	if msg := (Problems{"flow.blocks[3].ref_col": "is required"}).Error(); msg != "flow.blocks[3].ref_col is required" {
		t.Fatalf("message = %q", msg)
	}
}

// TestReturnStatusAndHeaders: a RETURN saved before status and headers
// existed reads and writes the same bytes (both left out when empty, null
// read as absent); a redirect with a Location is valid; a header name with
// a placeholder waits for the route made from the template.
func TestReturnStatusAndHeaders(t *testing.T) {
	old := `{"type":"RETURN","depth":0,"pairs":[],"conditions":[]}`
	r, p := DecodeRoute([]byte(`{"flow":{"blocks":[`+old+`,{"type":"RETURN","depth":0,"pairs":[],"conditions":[],"status":null,"headers":null}]}}`), "")
	if len(p) > 0 {
		t.Fatal(p)
	}
	for i, b := range r.Flow.Blocks {
		if raw, _ := json.Marshal(b); string(raw) != old {
			t.Fatalf("block %d = %s, want %s", i, raw, old)
		}
	}
	redirect := Block{Type: "RETURN", Status: 303, Headers: []Pair{{ID: "Location", Data: Operand{RType: "STRING", Data: "/books/1"}}}}
	notModified := Block{Type: "RETURN", Status: 304}
	for _, b := range []Block{redirect, notModified, {Type: "RETURN", Status: 204}, {Type: "RETURN", Status: 201}} {
		route := Route{RouteID: "r", RoutePath: "/r", Method: "GET", Flow: Flow{Blocks: []Block{b}}}
		route.Normalize()
		if p := ValidateRoute(route, ""); len(p) > 0 {
			t.Fatalf("status %d: %v", b.Status, p)
		}
	}
	tmpl := loadAll(t)
	tmpl.Flow.Blocks[12].Headers[0].ID = "{v} x"
	if p := ValidateTemplate(tmpl, ""); len(p) > 0 {
		t.Fatalf("a placeholder header name is checked in the route: %v", p)
	}
	before, _ := json.Marshal(tmpl)
	route, p := Apply(tmpl, "shop", map[string]string{"v": "X"})
	if len(p) > 0 {
		t.Fatal(p)
	}
	if p := ValidateRoute(route, ""); !strings.HasPrefix(p["flow.blocks[12].headers[0].id"], "must be a header name") {
		t.Fatalf("route made with a bad header name: %v", p)
	}
	if after, _ := json.Marshal(tmpl); !bytes.Equal(before, after) {
		t.Fatalf("Apply changed the template:\n%s\n%s", before, after)
	}
}

func TestValidateRouteRules(t *testing.T) {
	r, _ := Apply(loadAll(t), "shop", map[string]string{"v": "ok"})
	if p := ValidateRoute(r, "route"); len(p) > 0 {
		t.Fatalf("valid route: %v", p)
	}
	for _, tc := range []struct{ id, path, field string }{
		{"has space", "/x", "route.route_id"}, {strings.Repeat("a", 101), "/x", "route.route_id"}, {"", "/x", "route.route_id"},
		{"ok", "x", "route.route_path"}, {"ok", "/a b", "route.route_path"}, {"ok", "/" + strings.Repeat("a", 200), "route.route_path"},
	} {
		r.RouteID, r.RoutePath = tc.id, tc.path
		if p := ValidateRoute(r, "route"); p[tc.field] == "" {
			t.Errorf("route_id %q path %q: %v", tc.id, tc.path, p)
		}
	}
	r.RouteID, r.RoutePath = "ok", "/{id}/a-b_c:d"
	if p := ValidateRoute(r, "route"); len(p) > 0 {
		t.Fatalf("braces and colons are allowed in paths: %v", p)
	}
}

// substitutedPath lists, independently of walk.go, every field docs/routes.md
// says is substituted.
var substitutedPath = regexp.MustCompile(`^(route_id|route_path|auth_jwt\.field|auth_jwt\.ref_col|params\.delimiter|params\.pairs\[\d+\]\.id|body\[\d+\]\.id|` +
	`flow\.blocks\[\d+\]\.(local_name|route_id|ref_col|ref_property|ref_object|source|templatestring|key|additional|template|fail\.message|` +
	`targets\[\d+\]\.field|pairs\[\d+\]\.id|match\[\d+\]\.id|query\[\d+\]\.id|headers\[\d+\]\.id|sort\.property))$`)

// leaves flattens a JSON value into path → leaf.
func leaves(v any, path string, out map[string]any) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			leaves(e, join(path, k), out)
		}
	case []any:
		for i, e := range v {
			leaves(e, fmt.Sprintf("%s[%d]", path, i), out)
		}
	default:
		out[path] = v
	}
}

func TestSubstitutionTouchesExactlyTheListedFields(t *testing.T) {
	tmpl := loadAll(t)
	// Enum fields set to a placeholder too: they must survive untouched.
	tmpl.Method = "{v}"
	tmpl.Flow.Blocks[3].Action = "{v}"
	tmpl.Flow.Blocks[1].Conditions[0].ConditionType = "{v}"
	tmpl.Flow.Blocks[1].Operations[0].Next = "{v}"
	tmpl.Flow.Blocks[6].Apply = "{v}"
	tmpl.Flow.Blocks[7].Func = "{v}"
	tmpl.Body[0].BDType = "{v}"
	tmpl.Flow.Blocks[0].Type = "FETCH"
	before := map[string]any{}
	raw, _ := json.Marshal(tmpl)
	var doc any
	_ = json.Unmarshal(raw, &doc)
	leaves(doc, "", before)

	route, p := Apply(tmpl, "shop", map[string]string{"v": "X"})
	if len(p) > 0 {
		t.Fatal(p)
	}
	after := map[string]any{}
	raw, _ = json.Marshal(route)
	_ = json.Unmarshal(raw, &doc)
	leaves(doc, "", after)

	checked := map[string]bool{}
	for path, old := range before {
		now, ok := after[path]
		if !ok || path == "project_id" {
			continue // template-only fields (id, name, variables…); project_id is the target's
		}
		checked[path] = true
		s, isString := old.(string)
		want := old
		switch {
		case isString && substitutedPath.MatchString(path):
			want = strings.ReplaceAll(s, "{v}", "X")
		case isString && strings.HasSuffix(path, ".data") && after[strings.TrimSuffix(path, "data")+"ref_var"] == false:
			want = strings.ReplaceAll(s, "{v}", "X")
		}
		if !reflect.DeepEqual(now, want) {
			t.Errorf("%s = %v, want %v", path, now, want)
		}
	}
	var paths []string
	for p := range checked {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	if len(paths) < 90 {
		t.Fatalf("only %d fields compared", len(paths))
	}
	if route.Flow.Blocks[2].TemplateString != "{} and X" {
		t.Errorf("templatestring = %q: {} must survive", route.Flow.Blocks[2].TemplateString)
	}
	if ref := route.Template; ref.ID != 7 || ref.Name != "all_blocks" || ref.Version != 0 || ref.Values != nil || route.ProjectID != "shop" {
		t.Errorf("template ref %v, project %q", route.Template, route.ProjectID)
	}
	if tmpl.Flow.Blocks[0].LocalName != "{v}" || tmpl.Flow.Blocks[9].UpdateTargets[0].Conditions[0].Left.Data != "{v}" {
		t.Error("Apply wrote into the template")
	}
}

func TestValuesAreInsertedLiterally(t *testing.T) {
	tmpl := loadAll(t)
	tmpl.Variables = append(tmpl.Variables, Variable{Key: "w", Description: "another"})
	tmpl.RoutePath = "/{v}/{w}/{undeclared}/{}/{v"
	for _, value := range []string{`a"b`, `{`, `}`, `\`, `{w}`, `{v}`, `"},{"type":"X`, "line\nbreak"} {
		route, p := Apply(tmpl, "shop", map[string]string{"v": value, "w": "W"})
		if len(p) > 0 {
			t.Fatal(p)
		}
		if want := "/" + value + "/W/{undeclared}/{}/{v"; route.RoutePath != want {
			t.Errorf("value %q: route_path = %q, want %q", value, route.RoutePath, want)
		}
		if route.Flow.Blocks[0].LocalName != value || len(route.Flow.Blocks) != len(tmpl.Flow.Blocks) {
			t.Errorf("value %q: local_name %q", value, route.Flow.Blocks[0].LocalName)
		}
		raw, _ := json.Marshal(route)
		if back, p := DecodeRoute(raw, ""); len(p) > 0 || back.Flow.Blocks[0].LocalName != value {
			t.Errorf("value %q does not survive encoding: %v", value, p)
		}
	}
}

func TestApplyValues(t *testing.T) {
	tmpl := loadAll(t)
	def := "posts"
	tmpl.Variables = append(tmpl.Variables, Variable{Key: "collection", Description: "c", DefaultValue: &def})
	if _, p := Apply(tmpl, "shop", map[string]string{}); p["values.v"] != "has no value and the variable has no default" {
		t.Fatalf("missing value: %v", p)
	}
	if _, p := Apply(tmpl, "shop", map[string]string{"v": "x", "nope": "y"}); p["values.nope"] != "is not a variable of this template" {
		t.Fatalf("unknown key: %v", p)
	}
	tmpl.RoutePath = "/{collection}/{v}"
	r, p := Apply(tmpl, "shop", map[string]string{"v": ""})
	if len(p) > 0 || r.RoutePath != "/posts/" {
		t.Fatalf("default and empty value: %q %v", r.RoutePath, p)
	}
	r, _ = Apply(tmpl, "shop", map[string]string{"v": "a", "collection": "users"})
	if r.RoutePath != "/users/a" {
		t.Fatalf("supplied value over default: %q", r.RoutePath)
	}
}

func TestLint(t *testing.T) {
	tmpl := loadAll(t)
	if w := Lint(tmpl); len(w) != 0 {
		t.Fatalf("clean template: %v", w)
	}
	tmpl.Variables = append(tmpl.Variables, Variable{Key: "unused", Description: "d"})
	tmpl.Flow.Blocks[0].RefCol = "{table}"
	tmpl.Flow.Blocks[12].Pairs[0].Data = Operand{RefVar: true, RType: "STRING", Data: "{ignored_ref}"}
	w := Lint(tmpl)
	want := []string{"placeholder {table} is used but not declared (flow.blocks[0].ref_col)", "variable unused is declared but never used"}
	if !reflect.DeepEqual(Lines(w), want) {
		t.Fatalf("lint = %q, want %q", Lines(w), want)
	}
	// The editor reads each by its place, not by its words.
	if w[0].Path != "flow.blocks[0].ref_col" || w[0].Block != "Block 1 (FETCH)" || w[0].Message != "placeholder {table} is used but not declared" || w[1].Path != "" {
		t.Fatalf("structured: %+v", w)
	}
}

// TestWarningLines: a warning's line is the text answers have always given,
// its place kept apart for the editor.
func TestWarningLines(t *testing.T) {
	many := Warn("a", "placeholder {x} is used but not declared")
	many.Also, many.More = []string{"b", "c"}, 2
	blocks := []Block{{Type: "FETCH"}, {Type: "CONDITION"}}
	for _, c := range []struct {
		w          Warning
		line, path string
		block      string
	}{
		{Warn("flow.blocks[1].conditions[0].left.data", "n is used before any block sets it").Under("route."),
			"n is used before any block sets it (route.flow.blocks[1].conditions[0].left.data)", "route.flow.blocks[1].conditions[0].left.data", "Block 2 (CONDITION)"},
		{WarnBlock("flow.blocks[1].conditions", "CONDITION", "has no conditions: it does FAIL on every request").Under("route."),
			"Block 2 (CONDITION) has no conditions: it does FAIL on every request (route.flow.blocks[1].conditions)", "route.flow.blocks[1].conditions", "Block 2 (CONDITION)"},
		{many.Under("route."), "placeholder {x} is used but not declared (route.a, route.b, route.c and 2 more)", "route.a", ""},
		{Warn("", "variable v is declared but never used"), "variable v is declared but never used", "", ""},
		{Warn("flow.blocks[7].key", "beyond the flow"), "beyond the flow (flow.blocks[7].key)", "flow.blocks[7].key", ""},
	} {
		w := Named([]Warning{c.w}, blocks)[0]
		if w.String() != c.line || w.Path != c.path || w.Block != c.block {
			t.Errorf("%+v: line %q, path %q, block %q; want %q, %q, %q", c.w, w.String(), w.Path, w.Block, c.line, c.path, c.block)
		}
	}
	if Lines(nil) != nil {
		t.Error("no warnings are no lines")
	}
}

// TestApplyStopsAtTheLimit: a result over 1 MiB is refused while it is
// being made, so a small request cannot make the server build a huge one.
func TestApplyStopsAtTheLimit(t *testing.T) {
	tmpl := Template{RouteID: "r", RoutePath: "/r", Method: "GET", Variables: []Variable{{Key: "col", Description: "c"}},
		Flow: Flow{Blocks: []Block{{Type: "TEMPLATE", LocalName: "x", TemplateString: strings.Repeat("{col}", 20000)}}}}
	tmpl.Normalize()
	value := strings.Repeat("v", 40<<10)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, p := Apply(tmpl, "shop", map[string]string{"col": value})
	runtime.ReadMemStats(&after)
	if !strings.HasPrefix(p[""], "the route would be larger than 1 MiB") {
		t.Fatalf("problems: %v", p)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 8<<20 {
		t.Fatalf("refusing allocated %d MiB", grew>>20)
	}
	// Escaping counts: 200,000 quotes are 400,000 bytes of JSON.
	tmpl.Flow.Blocks[0].TemplateString = strings.Repeat("{col}", 3)
	if _, p := Apply(tmpl, "shop", map[string]string{"col": strings.Repeat(`"`, 200_000)}); len(p) == 0 {
		t.Fatal("escaped size not counted")
	}
	if r, p := Apply(tmpl, "shop", map[string]string{"col": strings.Repeat("v", 300_000)}); len(p) > 0 || len(r.Flow.Blocks[0].TemplateString) != 900_000 {
		t.Fatalf("a result under the limit: %v", p)
	}
}

// TestStoredDocumentsDecodePlainly: what MarshalJSON writes, plain
// json.Unmarshal reads back to the same template, every block type included.
func TestStoredDocumentsDecodePlainly(t *testing.T) {
	tmpl := loadAll(t)
	raw, err := json.Marshal(tmpl)
	if err != nil {
		t.Fatal(err)
	}
	var back Template
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	back.Normalize()
	if !reflect.DeepEqual(back, tmpl) {
		again, _ := json.Marshal(back)
		t.Fatalf("round trip changed the template:\n%s\n%s", raw, again)
	}
	if err := json.Unmarshal([]byte(`{"flow":{"blocks":[{"type":"FETCH","depth":"x"}]}}`), &back); err == nil {
		t.Fatal("a wrong type must not decode")
	}
}

// A route's auth_signature is decoded strictly and checked: a scheme of
// the list, a vault key, a header for hmac-sha256 alone, a tolerance of
// at most a day (docs/webhooks.md).
func TestAuthSignature(t *testing.T) {
	base := `{"route_id":"hook","route_path":"/hook","method":"POST","auth_jwt":{"active":false,"field":"","ref_col":""},"params":{"delimiter":"&","pairs":[]},"body":[],"flow":{"blocks":[]},"auth_signature":`
	r, p := DecodeRoute([]byte(base+`{"active":true,"scheme":"stripe","vault_key":"STRIPE_SECRET","tolerance_s":600}}`), "route")
	if len(p) > 0 || !r.AuthSignature.Checks() || r.AuthSignature.VaultKey != "STRIPE_SECRET" || r.AuthSignature.ToleranceS != 600 {
		t.Fatalf("decoded %+v, problems %v", r.AuthSignature, p)
	}
	if p := ValidateRoute(r, "route"); len(p) > 0 {
		t.Fatalf("a good auth_signature: %v", p)
	}
	if _, p := DecodeRoute([]byte(base+`{"active":true,"scheme":"stripe","vault_key":"K","secret":"x"}}`), "route"); p["route.auth_signature.secret"] == "" {
		t.Fatalf("an unknown field of auth_signature: %v", p)
	}
	for doc, want := range map[string]string{
		`{"active":true,"scheme":"sha1","vault_key":"K"}`:                                "route.auth_signature.scheme",
		`{"active":true,"scheme":"github","vault_key":"lower"}`:                          "route.auth_signature.vault_key",
		`{"active":true,"scheme":"hmac-sha256","vault_key":"K"}`:                         "route.auth_signature.header",
		`{"active":true,"scheme":"hmac-sha256","vault_key":"K","header":"X Sig"}`:        "route.auth_signature.header",
		`{"active":true,"scheme":"github","vault_key":"K","header":"X-Sig"}`:             "route.auth_signature.header",
		`{"active":true,"scheme":"stripe","vault_key":"K","tolerance_s":86401}`:          "route.auth_signature.tolerance_s",
		`{"active":false,"scheme":"standard-webhooks","vault_key":"K","tolerance_s":-1}`: "route.auth_signature.tolerance_s",
	} {
		r, p := DecodeRoute([]byte(base+doc+`}`), "route")
		if len(p) == 0 {
			p = ValidateRoute(r, "route")
		}
		if p[want] == "" {
			t.Errorf("%s: problems %v, want one at %s", doc, p, want)
		}
	}
}

func TestEnqueueFields(t *testing.T) {
	base := `{"route_id":"signup","route_path":"/signup","method":"POST","auth_jwt":{"active":false,"field":"","ref_col":""},"params":{"delimiter":"&","pairs":[]},"body":[],"flow":{"blocks":[`
	block := func(fields string) string {
		return base + `{"type":"ENQUEUE","depth":0,"route_id":"remind","query":[],"body":null,"delay_ms":null,"conditions":[],"local_name":"job"` + fields + `}]}}`
	}
	r, p := DecodeRoute([]byte(block("")), "route")
	if len(p) > 0 || r.Flow.Blocks[0].MaxAttempts != DefaultJobAttempts {
		t.Fatalf("no max_attempts: %d, problems %v", r.Flow.Blocks[0].MaxAttempts, p)
	}
	if p := ValidateRoute(r, "route"); len(p) > 0 {
		t.Fatalf("a good ENQUEUE: %v", p)
	}
	raw, _ := json.Marshal(r.Flow.Blocks[0])
	if want := `{"type":"ENQUEUE","depth":0,"route_id":"remind","query":[],"body":null,"delay_ms":null,"max_attempts":5,"conditions":[],"local_name":"job"}`; string(raw) != want {
		t.Fatalf("encoded\n%s\nwant\n%s", raw, want)
	}
	for fields, want := range map[string]string{
		`,"max_attempts":0`:   "must be from 1 to 25",
		`,"max_attempts":26`:  "must be from 1 to 25",
		`,"max_attempts":2.5`: "must be an integer",
	} {
		r, p := DecodeRoute([]byte(block(fields)), "route")
		if len(p) == 0 {
			p = ValidateRoute(r, "route")
		}
		if got := p["route.flow.blocks[0].max_attempts"]; !strings.HasPrefix(got, want) {
			t.Errorf("%s: %q, want %q (all: %v)", fields, got, want, p)
		}
	}
	r, _ = DecodeRoute([]byte(strings.Replace(block(""), `"route_id":"remind"`, `"route_id":""`, 1)), "route")
	if p := ValidateRoute(r, "route"); p["route.flow.blocks[0].route_id"] != "is required" {
		t.Fatalf("no route: %v", p)
	}
}
