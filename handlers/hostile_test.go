package handlers

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"stencil/authoring"
	"stencil/store"

	"github.com/getkin/kin-openapi/openapi3"
)

// hostileRequest is one attack on one operation.
type hostileRequest struct {
	class       string
	method      string
	path        string // with the query
	contentType string
	body        string
	header      [2]string
	declared    int // a Content-Length sent without the body
	// field: a bad value of one body field, which only a signed-in
	// caller's request reaches (anyone else's stops at authentication,
	// after the checks of the whole body that the body classes make).
	field bool
}

// parserWords are fragments of library or parser text that must never reach
// a client (docs/architecture.md).
var parserWords = []string{"schema:", "multipart:", "json:", "strconv", "unmarshal", "invalid character", "reflect",
	"fasthttp", "struct", "goroutine", "SQLSTATE", "pgx", "listQuery", "Input", ".go:", "runtime error"}

// TestHostileInputOnEveryOperation walks every operation of the served
// OpenAPI document with the classes of hostile input and checks each answer:
// a JSON envelope whose status is the HTTP status, an "Error: " message, no
// 5xx, no parser text, and an answer at all: within 10 s, which no answer
// comes near (the service answers in milliseconds: make bench measures
// it) but which is below the server's 30 s read timeout, so that an answer
// that waited for a body never sent still fails.
func TestHostileInputOnEveryOperation(t *testing.T) {
	t.Parallel()
	ta, keeper, _ := vaultApp(t)
	if err := ta.h.store.AddMember(context.Background(), "shop", ta.root.ID, store.MembershipRole(ta.root.Role)); err != nil {
		t.Fatal(err)
	}
	base := ta.listen(t)
	token := ta.token(t, ta.root)
	values := map[string]string{"project_id": "shop", "key": "API_KEY", "target_uid": itoa(keeper.ID), "uid": itoa(ta.root.ID),
		"id": "1", "route_id": "r1", "name": "t1", "filter": "a", "offset": "0", "limit": "10"}

	// The document as served, its references resolved.
	resp, served := ta.do(t, httptest.NewRequest("GET", "/openapi.json", nil))
	doc, err := openapi3.NewLoader().LoadFromData([]byte(served))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("%d %v", resp.StatusCode, err)
	}
	client := &http.Client{Timeout: hostileWait}
	sent, failures := 0, 0
	for _, path := range doc.Paths.InMatchingOrder() {
		for method, op := range doc.Paths.Value(path).Operations() {
			for _, hr := range hostileRequests(method, path, op, values) {
				// As ROOT, a member of the project named, and as nobody.
				for _, tok := range []string{token, ""} {
					if tok == "" && hr.field {
						continue
					}
					sent++
					status, ctype, raw, err := send(client, base, hr, tok)
					if path == "/project/export" && status == http.StatusOK && bytes.HasPrefix(raw, []byte("{\n  \"format\": 1,")) {
						continue // the file itself, not an envelope (SPEC 15)
					}
					if problem := judge(status, ctype, raw, err); problem != "" {
						failures++
						t.Errorf("%s %s [%s] signed in=%v: %s", hr.method, authoring.Cut(hr.path), hr.class, tok != "", problem)
					}
				}
			}
		}
	}
	t.Logf("hostile requests sent: %d, failures: %d", sent, failures)
	if sent < 3000 {
		t.Fatalf("only %d hostile requests were built", sent)
	}
}

// hostileWait is how long a hostile request may wait for its answer: a
// bound on hangs, not a speed figure.
const hostileWait = 10 * time.Second

// judge returns what is wrong with an answer, or "".
func judge(status int, ctype string, raw []byte, err error) string {
	if err != nil {
		return "no answer: " + err.Error()
	}
	if !strings.HasPrefix(ctype, "application/json") {
		return fmt.Sprintf("%d answered as %q: %.120s", status, ctype, raw)
	}
	var env struct {
		Status  int    `json:"status"`
		Message string `json:"message"`
	}
	if json.Unmarshal(raw, &env) != nil {
		return fmt.Sprintf("not an envelope: %.120s", raw)
	}
	switch {
	case env.Status != status:
		return fmt.Sprintf("envelope status %d, HTTP %d", env.Status, status)
	case status >= 500:
		return fmt.Sprintf("%d: %s", status, env.Message)
	case status >= 400 && !strings.HasPrefix(env.Message, "Error: "):
		return "message without Error: prefix: " + env.Message
	}
	for _, w := range parserWords {
		if strings.Contains(env.Message, w) {
			return "parser text in message: " + env.Message
		}
	}
	return ""
}

func send(client *http.Client, base string, hr hostileRequest, token string) (int, string, []byte, error) {
	if hr.declared > 0 {
		return sendHeadOnly(base, hr, token)
	}
	req, err := http.NewRequest(hr.method, base+hr.path, strings.NewReader(hr.body))
	if err != nil {
		return 0, "", nil, err
	}
	req.Header.Set("Accept", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if hr.contentType != "" {
		req.Header.Set("Content-Type", hr.contentType)
	}
	if hr.header[0] != "" {
		req.Header.Set(hr.header[0], hr.header[1])
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Content-Type"), raw, err
}

// sendHeadOnly declares a body over the limit and sends none of it: the
// answer must come before the body does.
func sendHeadOnly(base string, hr hostileRequest, token string) (int, string, []byte, error) {
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		return 0, "", nil, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(hostileWait))
	fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: x\r\nAccept: application/json\r\nAuthorization: Bearer %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n",
		hr.method, hr.path, token, hr.contentType, hr.declared)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return 0, "", nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Content-Type"), raw, err
}

// hostileRequests builds the attacks on one operation: each parameter and
// each body field in turn gets a wrong type, NUL, invalid UTF-8, a huge
// number and text past its longest (parameters 4 KB); lists get bad paging;
// bodies get wrong media types, 1 MB, deep nesting and over-limit sizes;
// and the request as a whole gets a long URL, a long header and methods the
// path does not take.
func hostileRequests(method, path string, op *openapi3.Operation, values map[string]string) []hostileRequest {
	query := url.Values{}
	var params []*openapi3.Parameter
	for _, p := range op.Parameters {
		if p.Value != nil && p.Value.In == "query" {
			params = append(params, p.Value)
			if v, ok := values[p.Value.Name]; ok {
				query.Set(p.Value.Name, v)
			} else if p.Value.Required {
				query.Set(p.Value.Name, "x")
			}
		}
	}
	fields := bodyFields(op)
	body := map[string]any{}
	for name, f := range fields {
		body[name] = sampleValue(name, f.kind, values)
	}
	with := func(q url.Values) string {
		if len(q) == 0 {
			return path
		}
		return path + "?" + q.Encode()
	}
	jsonBody := func(b map[string]any) string {
		raw, _ := json.Marshal(b)
		return string(raw)
	}
	hasBody := op.RequestBody != nil
	plain := hostileRequest{method: method, path: with(query)}
	if hasBody {
		plain.contentType, plain.body = "application/json", jsonBody(body)
	}
	var out []hostileRequest
	add := func(class string, change func(*hostileRequest)) {
		hr := plain
		hr.class = class
		change(&hr)
		out = append(out, hr)
	}

	for _, p := range params {
		kind := "string"
		if p.Schema != nil && p.Schema.Value != nil && p.Schema.Value.Type != nil {
			kind = (*p.Schema.Value.Type)[0]
		}
		for class, v := range map[string]string{
			"NUL": "a\x00b", "invalid UTF-8": "a\xffb", "4 KB": strings.Repeat("x", 4<<10), "huge number": "99999999999999999999999999",
			"negative": "-1", "empty": "", "wrong type": map[bool]string{true: "abc", false: "1"}[kind == "integer" || kind == "boolean"],
		} {
			q := cloneValues(query)
			q.Set(p.Name, v)
			add(p.Name+" "+class, func(hr *hostileRequest) { hr.path = with(q) })
		}
		q := cloneValues(query)
		q.Add(p.Name, "second")
		add(p.Name+" repeated", func(hr *hostileRequest) { hr.path = with(q) })
	}
	if slices.ContainsFunc(params, func(p *openapi3.Parameter) bool { return p.Name == "limit" }) {
		for _, v := range []string{"0", "1001", "-5", "abc", "1.5", "1e3"} {
			q := cloneValues(query)
			q.Set("limit", v)
			add("limit="+v, func(hr *hostileRequest) { hr.path = with(q) })
		}
		for _, v := range []string{"-1", "abc", "1e9999"} {
			q := cloneValues(query)
			q.Set("offset", v)
			add("offset="+v, func(hr *hostileRequest) { hr.path = with(q) })
		}
	}

	if hasBody {
		for name, f := range fields {
			// Past the longest text the field takes (most take at most
			// 64 KiB): long enough for any column or index, cheap enough
			// to send for every field. A field that takes more than 1 MB
			// (a file's text, within the body's limit) gets 1 MB; bodies
			// past the limit are a class of their own below.
			long := min(max(65536, f.maxLength)+1, 1<<20)
			for class, v := range map[string]any{
				"NUL": "a\x00b", "long text": strings.Repeat("x", long), "huge number": json.Number("1e400"),
				"big integer": json.Number("99999999999999999999999999"), "null": nil,
				"wrong type": map[bool]any{true: "abc", false: 12345}[f.kind != "string"],
				"object":     map[string]any{"a": []any{1, "b"}}, "array": []any{"x"},
			} {
				b := cloneMap(body)
				b[name] = v
				add(name+" "+class, func(hr *hostileRequest) { hr.body, hr.field = jsonBody(b), true })
			}
			b := cloneMap(body)
			b[name] = "INVALID_UTF8"
			add(name+" invalid UTF-8", func(hr *hostileRequest) {
				hr.body, hr.field = strings.Replace(jsonBody(b), "INVALID_UTF8", "a\xffb", 1), true
			})
		}
		for class, change := range map[string]func(*hostileRequest){
			"XML": func(hr *hostileRequest) { hr.contentType, hr.body = "application/xml", "<a><b>1</b></a>" },
			"multipart": func(hr *hostileRequest) {
				hr.contentType, hr.body = "multipart/form-data; boundary=zz", "--zz\r\nbroken"
			},
			"text/plain":       func(hr *hostileRequest) { hr.contentType = "text/plain" },
			"no content type":  func(hr *hostileRequest) { hr.contentType = "" },
			"bad content type": func(hr *hostileRequest) { hr.contentType = ";;;=/" },
			"form":             func(hr *hostileRequest) { hr.contentType, hr.body = "application/x-www-form-urlencoded", "a=%00&b=%ff" },
			"invalid JSON":     func(hr *hostileRequest) { hr.body = `{"a":` },
			"JSON array":       func(hr *hostileRequest) { hr.body = `[1,2,3]` },
			"JSON string":      func(hr *hostileRequest) { hr.body = `"x"` },
			"JSON null":        func(hr *hostileRequest) { hr.body = `null` },
			"trailing data":    func(hr *hostileRequest) { hr.body += `{}` },
			"deep nesting": func(hr *hostileRequest) {
				hr.body = strings.Repeat(`{"a":`, 100000) + "1" + strings.Repeat("}", 100000)
			},
			"deep arrays": func(hr *hostileRequest) { hr.body = strings.Repeat("[", 100000) + strings.Repeat("]", 100000) },
			"1 MB body":   func(hr *hostileRequest) { hr.body = `{"pad":"` + strings.Repeat("y", 1<<20) + `"}` },
			// Past its limit: 4 MiB, an import's 10 MiB.
			"over-limit body": func(hr *hostileRequest) {
				hr.declared = 5 << 20
				if strings.HasPrefix(hr.path, "/data/import") {
					hr.declared = 11 << 20
				}
			},
			"duplicate keys":     func(hr *hostileRequest) { hr.body = strings.TrimSuffix(hr.body, "}") + `,"uid":"zz"}` },
			"escaped NUL in key": func(hr *hostileRequest) { hr.body = `{"a\u0000":1}` },
		} {
			add(class, change)
		}
	}

	add("long URL", func(hr *hostileRequest) { hr.path = path + "?pad=" + strings.Repeat("u", 10<<10) })
	add("long header", func(hr *hostileRequest) { hr.header = [2]string{"X-Pad", strings.Repeat("h", 20<<10)} })
	add("bad bearer", func(hr *hostileRequest) { hr.header = [2]string{"Authorization", "Bearer \xff\xfe"} })
	for _, m := range []string{"FOO", "PROPFIND", http.MethodPut, http.MethodOptions, http.MethodTrace} {
		if !strings.EqualFold(m, method) {
			add("method "+m, func(hr *hostileRequest) { hr.method = m })
		}
	}
	return out
}

// bodyField is a top-level property of an operation's JSON body: its first
// JSON type, and its longest text when the document says.
type bodyField struct {
	kind      string
	maxLength int
}

// bodyFields lists the top-level properties of an operation's JSON body.
func bodyFields(op *openapi3.Operation) map[string]bodyField {
	fields := map[string]bodyField{}
	if op.RequestBody == nil || op.RequestBody.Value == nil {
		return fields
	}
	mt := op.RequestBody.Value.Content.Get("application/json")
	if mt == nil || mt.Schema == nil {
		return fields
	}
	var walk func(s *openapi3.Schema)
	walk = func(s *openapi3.Schema) {
		for name, p := range s.Properties {
			kind := "object"
			if p.Value != nil && p.Value.Type != nil && len(*p.Value.Type) > 0 {
				kind = (*p.Value.Type)[0]
			}
			f := bodyField{kind: kind}
			if p.Value != nil && p.Value.MaxLength != nil {
				f.maxLength = int(*p.Value.MaxLength)
			}
			fields[name] = f
		}
		for _, sub := range s.AllOf {
			if sub.Value != nil {
				walk(sub.Value)
			}
		}
	}
	walk(mt.Schema.Value)
	return fields
}

func sampleValue(name, kind string, values map[string]string) any {
	if v, ok := values[name]; ok {
		if kind == "integer" {
			return json.Number(v)
		}
		return v
	}
	switch kind {
	case "integer", "number":
		return 1
	case "boolean":
		return true
	case "array":
		return []any{}
	case "object":
		return map[string]any{}
	}
	return "x"
}

func cloneValues(v url.Values) url.Values {
	out := url.Values{}
	for k, vs := range v {
		out[k] = slices.Clone(vs)
	}
	return out
}

func cloneMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
