package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// httpBlock writes an HTTP block; extra is more of its fields, JSON.
func httpBlock(name, method, url string, extra string) string {
	if extra != "" {
		extra = "," + extra
	}
	return fmt.Sprintf(`{"type":"HTTP","depth":0,"local_name":%q,"method":%q,"url":%s,"query":[],"headers":[],"body":null,"timeout_ms":null,"conditions":[]%s}`,
		name, method, url, extra)
}

// answer writes a RETURN with a status and headers.
func answer(status int, headers string, kv ...string) string {
	return fmt.Sprintf(`{"type":"RETURN","depth":0,"pairs":%s,"conditions":[],"status":%d,"headers":%s}`, pairs(kv...), status, headers)
}

func TestReturnStatusAndHeaders(t *testing.T) {
	run := func(blocks ...string) Result {
		t.Helper()
		res, err := Run(context.Background(), compile(t, blocks...), nil, books(), DefaultLimits)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	res := run(assign("id", num("7")), `{"type":"TEMPLATE","depth":0,"local_name":"loc","templatestring":"/books/{}","data":[`+ref("id")+`],"conditions":[]}`,
		answer(201, pairs("Location", ref("loc"), "X-Count", num("3"), "X-None", lit("OTHER", "null")), "id", ref("id")))
	if res.Status != 201 || string(res.Body) != `{"id":7}` || fmt.Sprint(res.Header) != "[{Location /books/7} {X-Count 3}]" {
		t.Fatalf("201: %d %s %v", res.Status, res.Body, res.Header)
	}
	for _, status := range []int{204, 304} {
		if res := run(answer(status, "[]", "id", num("1"))); res.Status != status || res.Body != nil || res.Ended != "RETURN" {
			t.Fatalf("%d: %d %q %s", status, res.Status, res.Body, res.Ended)
		}
	}
	if res := run(returns("a", num("1"))); res.Status != 200 || res.Header != nil {
		t.Fatalf("default: %d %v", res.Status, res.Header)
	}
	res = run(assign("v", str("a\r\nSet-Cookie: x=1")), answer(200, pairs("X-Note", ref("v"))))
	if res.Status != 500 || string(res.Body) != `{"status":500,"message":"Error: flow.blocks[1] (RETURN): header X-Note holds a line break"}` {
		t.Fatalf("line break: %d %s", res.Status, res.Body)
	}
}

func TestHTTPBlockSends(t *testing.T) {
	env := books()
	blocks := []string{
		assign("tags", lit("ARRAY", `["a b","c&d"]`)),
		httpBlock("res", "POST", str("https://api.example.com/charge?v=1"), `"query":`+pairs("tag", ref("tags"), "skip", lit("OTHER", "null"), "n", num("2"))+
			`,"headers":`+pairs("X-Trace", str("t1"))+`,"body":`+lit("OTHER", `{"amount":5}`)+`,"timeout_ms":`+num("250")),
		returns("status", ref("res.status"), "sent", ref("res.body"), "type", ref("res.headers.content-type")),
	}
	res, err := Run(context.Background(), compile(t, blocks...), nil, env, DefaultLimits)
	if err != nil || res.Status != 200 {
		t.Fatalf("%v %d %s", err, res.Status, res.Body)
	}
	want := `{"status":200,"sent":{"body":"{\"amount\":5}","headers":{"Content-Type":"application/json","X-Trace":"t1"},"method":"POST",` +
		`"url":"https://api.example.com/charge?v=1&tag=a+b&tag=c%26d&n=2"},"type":"application/json"}`
	if string(res.Body) != want {
		t.Fatalf("body\n%s\nwant\n%s", res.Body, want)
	}
	if c := env.sent[0]; c.Timeout != 250*time.Millisecond || c.Block != 1 || c.Seq != 0 {
		t.Fatalf("call %+v", c)
	}

	// Text with its own Content-Type goes as it is; the answer's text
	// body stays text; each request of a block in a loop has its Seq.
	env = books()
	env.upstream = func(c Call) (Reply, error) {
		return Reply{Status: 404, Header: map[string]string{"x-a": "1"}, Body: []byte("not here")}, nil
	}
	blocks = []string{loop("i", num("0"), num("3"), num("1")),
		at(1, httpBlock("res", "PUT", str("http://api.example.com/x"), `"headers":`+pairs("content-type", str("text/plain"))+`,"body":`+str("hi"))),
		returns("res", ref("res"))}
	res, _ = Run(context.Background(), compile(t, blocks...), nil, env, DefaultLimits)
	if string(res.Body) != `{"res":{"body":"not here","headers":{"x-a":"1"},"status":404}}` {
		t.Fatalf("text: %s", res.Body)
	}
	if len(env.sent) != 3 || string(env.sent[2].Body) != "hi" || env.sent[2].Seq != 2 || len(env.sent[2].Header) != 1 {
		t.Fatalf("sent %+v", env.sent)
	}

	// Conditions that do not hold send nothing.
	env = books()
	blocks = []string{strings.Replace(httpBlock("res", "GET", str("https://a.example.com"), ""), `"conditions":[]`, `"conditions":[`+cond(num("1"), "EQUAL_TO", num("2"), "")+`]`, 1),
		returns("res", ref("res"))}
	res, _ = Run(context.Background(), compile(t, blocks...), nil, env, DefaultLimits)
	if len(env.sent) != 0 || string(res.Body) != `{"res":null}` {
		t.Fatalf("sent %d, %s", len(env.sent), res.Body)
	}
}

func TestHTTPBlockFaults(t *testing.T) {
	get := func(url string) string { return httpBlock("res", "GET", url, "") }
	for name, tc := range map[string]struct {
		blocks   []string
		upstream func(Call) (Reply, error)
		status   int
		message  string
	}{
		"connection refused": {blocks: []string{get(str("https://api.example.com/"))}, status: 502, message: "could not connect to api.example.com",
			upstream: func(Call) (Reply, error) {
				return Reply{}, &CallError{Status: 502, Reason: "could not connect to api.example.com"}
			}},
		"egress refused": {blocks: []string{get(str("https://api.example.com/"))}, status: 502, message: "egress to 10.0.0.1:443 is not allowed",
			upstream: func(Call) (Reply, error) {
				return Reply{}, &CallError{Status: 502, Reason: "egress to 10.0.0.1:443 is not allowed"}
			}},
		"timeout": {blocks: []string{get(str("https://api.example.com/"))}, status: 504, message: "api.example.com did not answer within 5000 ms",
			upstream: func(Call) (Reply, error) {
				return Reply{}, &CallError{Status: 504, Reason: "api.example.com did not answer within 5000 ms"}
			}},
		"JSON that is not": {blocks: []string{get(str("https://api.example.com/"))}, status: 502, message: "api.example.com answered 200 with a body that says it is JSON and is not",
			upstream: func(Call) (Reply, error) { return Reply{Status: 200, Body: []byte("{oops"), JSON: true}, nil }},
		"url not text": {blocks: []string{assign("u", num("3")), get(ref("u"))}, status: 500, message: "url is a number, not text"},
		"url not http": {blocks: []string{assign("u", str("file:///etc/passwd")), get(ref("u"))}, status: 500, message: "url is not an http or https URL"},
		"url with a user": {blocks: []string{assign("u", str("https://me:pw@a.example.com/")), get(ref("u"))}, status: 500,
			message: "url holds a user name: send credentials in a header"},
		"timeout out of bounds": {blocks: []string{assign("t", num("20000")), httpBlock("res", "GET", str("https://a.example.com"), `"timeout_ms":`+ref("t"))},
			status: 500, message: "timeout_ms is 20000, not a number of milliseconds from 100 to 10000"},
		"header line break": {blocks: []string{assign("v", str("a\nb")), httpBlock("res", "GET", str("https://a.example.com"), `"headers":`+pairs("X-A", ref("v")))},
			status: 500, message: "header X-A holds a line break"},
	} {
		t.Run(name, func(t *testing.T) {
			env := books()
			env.upstream = tc.upstream
			res, err := Run(context.Background(), compile(t, append(tc.blocks, returns("res", ref("res")))...), nil, env, DefaultLimits)
			if err != nil {
				t.Fatal(err)
			}
			block := len(tc.blocks) - 1
			want := fmt.Sprintf(`{"status":%d,"message":"Error: flow.blocks[%d] (HTTP): %s"}`, tc.status, block, tc.message)
			if res.Status != tc.status || string(res.Body) != want || res.Ended != "FAULT" {
				t.Fatalf("%d %s\nwant %s", res.Status, res.Body, want)
			}
		})
	}
}

func TestHTTPBlockRefusedAtCompile(t *testing.T) {
	for name, tc := range map[string]struct{ block, path, msg string }{
		"ftp URL":       {httpBlock("r", "GET", str("ftp://a.example.com/"), ""), "flow.blocks[0].url.data", "must be an http or https URL"},
		"relative URL":  {httpBlock("r", "GET", str("/charge"), ""), "flow.blocks[0].url.data", "must be an http or https URL"},
		"timeout 50":    {httpBlock("r", "GET", str("https://a.example.com"), `"timeout_ms":`+num("50")), "flow.blocks[0].timeout_ms.data", "must be a whole number of milliseconds"},
		"timeout 10001": {httpBlock("r", "GET", str("https://a.example.com"), `"timeout_ms":`+num("10001")), "flow.blocks[0].timeout_ms.data", "must be a whole number of milliseconds"},
		"GET with body": {httpBlock("r", "GET", str("https://a.example.com"), `"body":`+str("x")), "flow.blocks[0].body", "must be null: a GET request sends no body"},
	} {
		t.Run(name, func(t *testing.T) {
			_, p := Compile(route(t, "POST", tc.block), nil)
			if !strings.HasPrefix(p[tc.path], tc.msg) {
				t.Fatalf("problems %v, want %q at %s", p, tc.msg, tc.path)
			}
		})
	}
}

// TestHTTPBlockKeepsSecrets: text sent upstream made from a vault value is
// masked in a fault's text, listed in Read for the run log, told to the
// trace as masks; the answer is shown, with the secret masked in it.
func TestHTTPBlockKeepsSecrets(t *testing.T) {
	blocks := []string{`{"type":"VAULT","depth":0,"local_name":"k","key":"API_KEY"}`,
		`{"type":"TEMPLATE","depth":0,"local_name":"auth","templatestring":"Bearer {}","data":[` + ref("k") + `],"conditions":[]}`,
		httpBlock("res", "POST", str("https://pay.example.com/charge"), `"headers":`+pairs("Authorization", ref("auth"))),
		returns("res", ref("res.status"))}
	env := books()
	env.upstream = func(c Call) (Reply, error) {
		return Reply{}, &CallError{Status: 502, Reason: "pay.example.com refused " + c.Header[0].Value}
	}
	res, _ := Run(context.Background(), compile(t, blocks...), nil, env, DefaultLimits)
	if strings.Contains(string(res.Body), "sk-secret-1") || !strings.Contains(string(res.Body), "refused "+Mask+`"`) {
		t.Fatalf("fault: %s", res.Body)
	}
	if read := res.Read.Values(); len(read) != 2 || read[1] != "Bearer sk-secret-1" {
		t.Fatalf("read %q", read)
	}
	var events []Event
	env = books()
	res, _ = RunTraced(context.Background(), compile(t, blocks...), nil, env, DefaultLimits, func(ev Event) { events = append(events, ev) })
	if res.Status != 200 || env.sent[0].Header[0].Value != "Bearer sk-secret-1" {
		t.Fatalf("%d %+v", res.Status, env.sent)
	}
	ev := events[2]
	if ev.Call == nil || ev.Call.Method != "POST" || ev.Call.URL != "https://pay.example.com/charge" || ev.Call.Status != 200 || ev.Call.Bytes == 0 ||
		fmt.Sprint(ev.Masks) != "[Bearer sk-secret-1]" || ev.Derived || ev.Secret {
		t.Fatalf("event %+v %+v", ev, ev.Call)
	}
}

func TestHTTPBlockMemory(t *testing.T) {
	env := books()
	env.upstream = func(Call) (Reply, error) { return Reply{Status: 200, Body: make([]byte, 600<<10)}, nil }
	limits := DefaultLimits
	limits.Memory = 512 << 10
	res, _ := Run(context.Background(), compile(t, httpBlock("res", "GET", str("https://a.example.com"), "")), nil, env, limits)
	if res.Status != 500 || !strings.Contains(string(res.Body), "(HTTP): the run passed its memory limit") {
		t.Fatalf("%d %s", res.Status, res.Body)
	}
}

// TestHTTPURLKeepsItsShape: text a run inserts through TEMPLATE after a
// URL's host is one escaped path segment, so a caller's "?", "#", "/",
// "%", ".." or control character adds no query, fragment or path and
// drops none of the route's query pairs; inserted into the host it must
// be a host name; a URL taken whole from a variable is checked whole.
func TestHTTPURLKeepsItsShape(t *testing.T) {
	text := func(s string) string {
		b, _ := json.Marshal(s)
		return `{"ref_var":false,"rtype":"STRING","data":` + string(b) + `}`
	}
	tmpl := func(s string) string {
		return `{"type":"TEMPLATE","depth":0,"local_name":"u","templatestring":` + fmt.Sprintf("%q", s) + `,"data":[` + ref("id") + `],"conditions":[]}`
	}
	for _, c := range []struct {
		template, id, want string
	}{
		{"https://api.example.com/items/{}", "42", "https://api.example.com/items/42?v=1"},
		{"https://api.example.com/items/{}", "x?q=injected", "https://api.example.com/items/x%3Fq%3Dinjected?v=1"},
		{"https://api.example.com/items/{}", "x#", "https://api.example.com/items/x%23?v=1"},
		{"https://api.example.com/items/{}", "../../admin", "https://api.example.com/items/..%2F..%2Fadmin?v=1"},
		{"https://api.example.com/items/{}", "..", "https://api.example.com/items/%2E%2E?v=1"},
		{"https://api.example.com/items/{}", ".", "https://api.example.com/items/%2E?v=1"},
		{"https://api.example.com/items/{}", "a%2Fb", "https://api.example.com/items/a%252Fb?v=1"},
		{"https://api.example.com/items/{}", "a\x01b c&d=e", "https://api.example.com/items/a%01b%20c%26d%3De?v=1"},
		{"https://api.example.com/items/{}/x", "é", "https://api.example.com/items/%C3%A9/x?v=1"},
		{"https://{}.example.com/items", "eu", "https://eu.example.com/items?v=1"},
	} {
		env := books()
		res, err := Run(context.Background(), compile(t, assign("id", text(c.id)), tmpl(c.template),
			httpBlock("res", "GET", ref("u"), `"query":`+pairs("v", num("1"))), returns("s", ref("res.status"))), nil, env, DefaultLimits)
		if err != nil || res.Status != 200 || len(env.sent) != 1 || env.sent[0].URL != c.want {
			t.Errorf("%s with %q: %d %s, sent %+v\nwant %s", c.template, c.id, res.Status, res.Body, env.sent, c.want)
		}
	}
	for _, c := range []struct{ template, id, want string }{
		{"https://{}.example.com/items", "evil.com/x?", "text inserted into the host of url is not a host name"},
		{"{}", "ftp://a.example.com/", "url is not an http or https URL"},
		{"{}", "https://a.example.com/\x01", "url is not a URL"},
	} {
		env := books()
		res, _ := Run(context.Background(), compile(t, assign("id", text(c.id)), tmpl(c.template),
			httpBlock("res", "GET", ref("u"), ""), returns("s", ref("res.status"))), nil, env, DefaultLimits)
		if len(env.sent) != 0 || !strings.Contains(string(res.Body), c.want) {
			t.Errorf("%s with %q: %d %s", c.template, c.id, res.Status, res.Body)
		}
	}
}
