package runs

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"stencil/egress"
	"stencil/engine"
)

// upstream is a service on loopback that routes call in these tests: it
// answers what handle says and keeps every request it got.
type upstream struct {
	*httptest.Server
	mu   sync.Mutex
	got  []*http.Request
	sent []string // bodies
}

func newUpstream(t testing.TB, handle http.HandlerFunc) *upstream {
	t.Helper()
	u := &upstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		u.mu.Lock()
		u.got, u.sent = append(u.got, r), append(u.sent, string(body))
		u.mu.Unlock()
		handle(w, r)
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *upstream) requests() []*http.Request {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]*http.Request{}, u.got...)
}

// allow lets the runtime's routes reach the upstreams, as EGRESS_ALLOW
// does; nothing else on loopback.
func (rt *testRuntime) allow(t testing.TB, ups ...*upstream) {
	t.Helper()
	var entries []string
	for _, u := range ups {
		entries = append(entries, u.Listener.Addr().String())
	}
	g, err := egress.New(entries, nil)
	if err != nil {
		t.Fatal(err)
	}
	g.BeforeConnect = egress.LoopbackOnly(t.Errorf)
	rt.client = g.Client()
}

func httpBlock(name, method, url, extra string) string {
	if extra != "" {
		extra = "," + extra
	}
	return `{"type":"HTTP","depth":0,"local_name":"` + name + `","method":"` + method + `","url":` + url +
		`,"query":[],"headers":[],"body":null,"timeout_ms":null,"conditions":[]` + extra + `}`
}

func (rt *testRuntime) serve(t *testing.T, req Request) Answer {
	t.Helper()
	req.Client = "127.0.0.1"
	a, err := rt.Serve(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestHTTPBlockCallsUpstream: a route calls a service with a vault value
// in a header and answers 201 with a Location; the upstream gets the
// request as built, an Idempotency-Key and never the key in the clear in
// what is kept: the trace shows the call with the echoed secret masked.
func TestHTTPBlockCallsUpstream(t *testing.T) {
	rt := newTestRuntime(t)
	const secret = "sk-live-77ab12cd34"
	rt.vault(t, "PAY_KEY", secret)
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"id":"ch_1","echo":"` + r.Header.Get("Authorization") + `"}`))
	})
	rt.allow(t, up)
	rt.route(t, routeDoc("pay", "POST", "/pay", `[{"id":"amount","bdtype":"INTEGER"}]`,
		`{"type":"VAULT","depth":0,"local_name":"k","key":"PAY_KEY"}`,
		`{"type":"TEMPLATE","depth":0,"local_name":"auth","templatestring":"Bearer {}","data":[`+ref("k")+`],"conditions":[]}`,
		`{"type":"OBJECT","depth":0,"local_name":"charge","pairs":`+pairsOf("amount", ref("amount"))+`}`,
		httpBlock("res", "POST", lit("STRING", up.URL+"/charges"), `"headers":`+pairsOf("Authorization", ref("auth"))+`,"body":`+ref("charge")),
		`{"type":"TEMPLATE","depth":0,"local_name":"loc","templatestring":"/charges/{}","data":[`+ref("res.body.id")+`],"conditions":[]}`,
		`{"type":"RETURN","depth":0,"pairs":`+pairsOf("id", ref("res.body.id"), "upstream", ref("res.status"))+`,"conditions":[],"status":201,"headers":`+pairsOf("Location", ref("loc"))+`}`))
	a := rt.serve(t, Request{Method: "POST", Path: "/x/shop/pay", Body: []byte(`{"amount":500}`)})
	if a.Status != 201 || string(a.Body) != `{"id":"ch_1","upstream":201}` || a.Header.Get("Location") != "/charges/ch_1" {
		t.Fatalf("%d %v %s", a.Status, a.Header, a.Body)
	}
	got := up.requests()
	if len(got) != 1 || got[0].Method != "POST" || got[0].URL.Path != "/charges" || got[0].Header.Get("Authorization") != "Bearer "+secret ||
		got[0].Header.Get("Content-Type") != "application/json" || up.sent[0] != `{"amount":500}` || len(got[0].Header.Get("Idempotency-Key")) < 32 {
		t.Fatalf("the upstream got %v %s", got, up.sent)
	}

	// Traced (as the playground runs it): the call is a row of its own;
	// what came back holds the secret, masked.
	plan, _ := rt.Plan(context.Background(), "shop", "pay")
	a = rt.serve(t, Request{Plan: plan, ProjectID: "shop", Path: "/x/shop/pay", Body: []byte(`{"amount":5}`), Trace: true, DryRun: true})
	traced, call := traceOf(a)
	if strings.Contains(traced, secret) || !strings.Contains(traced, `\"echo\":\"`+engine.Mask) ||
		call == nil || call.Method != "POST" || call.URL != up.URL+"/charges" || call.Status != 201 || call.Bytes == 0 {
		t.Fatalf("the trace: %s", traced)
	}
	if keys := []string{up.requests()[0].Header.Get("Idempotency-Key"), up.requests()[1].Header.Get("Idempotency-Key")}; keys[0] == keys[1] {
		t.Fatalf("two requests to /x sent one Idempotency-Key %s", keys[0])
	}

	// A fault that would quote what was sent quotes it masked; the run
	// log keeps no secret in any column.
	up.Close()
	a = rt.serve(t, Request{Plan: plan, ProjectID: "shop", Path: "/x/shop/pay", Body: []byte(`{"amount":5}`), Trace: true, KeepBody: true})
	if a.Status != 502 || strings.Contains(string(a.Body), secret) {
		t.Fatalf("upstream gone: %d %s", a.Status, a.Body)
	}
	if err := rt.FlushLog(context.Background()); err != nil {
		t.Fatal(err)
	}
	var leaks int
	if err := rt.pool.QueryRow(context.Background(), `SELECT count(*) FROM route_runs r WHERE strpos(r::text, $1) > 0`, secret).Scan(&leaks); err != nil || leaks != 0 {
		t.Fatalf("%d run log rows hold the secret (%v)", leaks, err)
	}
}

// TestHTTPBlockFaults: no answer is a fault naming the block — refused by
// the guard (a loopback port not allowed, or a host the project does not
// list) 502, too slow 504, too large 502 — and a fault's text never holds
// what was sent made from a vault value.
func TestHTTPBlockFaults(t *testing.T) {
	rt := newTestRuntime(t)
	release := make(chan struct{})
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/slow":
			select {
			case <-release:
			case <-r.Context().Done():
			}
		case "/large":
			_, _ = w.Write(make([]byte, 2<<20))
		case "/teapot":
			w.WriteHeader(http.StatusTeapot)
			_, _ = w.Write([]byte("short and stout"))
		case "/moved":
			http.Redirect(w, r, "/teapot", http.StatusFound)
		case "/away":
			http.Redirect(w, r, "ftp://files.example.com/", http.StatusFound)
		}
	})
	defer close(release)
	other := newUpstream(t, func(http.ResponseWriter, *http.Request) {})
	rt.allow(t, up)
	n := 0
	call := func(url, timeout string) string {
		n++
		return routeDoc(fmt.Sprintf("c%d", n), "GET", fmt.Sprintf("/c%d", n), "", httpBlock("res", "GET", lit("STRING", url), `"timeout_ms":`+timeout),
			`{"type":"RETURN","depth":0,"pairs":`+pairsOf("s", ref("res.status"))+`,"conditions":[]}`)
	}
	check := func(status int, message string) {
		t.Helper()
		a := rt.serve(t, Request{Method: "GET", Path: fmt.Sprintf("/x/shop/c%d", n)})
		if a.Status != status || !strings.Contains(string(a.Body), `"Error: flow.blocks[0] (HTTP): `) || !strings.Contains(string(a.Body), message) {
			t.Fatalf("%d %s, want %d %q", a.Status, a.Body, status, message)
		}
	}
	_, port, _ := net.SplitHostPort(other.Listener.Addr().String())
	rt.route(t, call("http://127.0.0.1:"+port+"/", "null"))
	check(502, "egress to 127.0.0.1 is not allowed")
	rt.route(t, call("http://169.254.169.254/latest/meta-data/", "null"))
	check(502, "egress to 169.254.169.254 is not allowed")
	rt.route(t, call(up.URL+"/slow", lit("INTEGER", "500")))
	began := time.Now()
	check(504, up.Listener.Addr().String()+" did not answer within 500 ms")
	if waited := time.Since(began); waited > 3*time.Second {
		t.Fatalf("the 504 came after %s: the run waited for the upstream", waited)
	}
	rt.route(t, call(up.URL+"/large", "null"))
	check(502, "answered more than 1 MiB")
	rt.route(t, call(up.URL+"/away", "null"))
	check(502, "answered a redirect not followed: to a URL whose scheme \\\"ftp\\\" is not http or https")
	if len(other.requests()) != 0 {
		t.Fatal("a refused destination got a request")
	}
	// Any status is a value; a redirect to an allowed address is followed.
	for _, path := range []string{"/teapot", "/moved"} {
		rt.route(t, call(up.URL+path, "null"))
		if a := rt.serve(t, Request{Method: "GET", Path: fmt.Sprintf("/x/shop/c%d", n)}); a.Status != 200 || string(a.Body) != `{"s":418}` {
			t.Fatalf("%s: %d %s", path, a.Status, a.Body)
		}
	}

	// A project that lists its hosts reaches only those.
	rt.route(t, call(up.URL+"/", "null"))
	if _, err := rt.pool.Exec(context.Background(), `UPDATE projects SET x_egress_hosts = '{api.example.com}' WHERE id = 'shop'`); err != nil {
		t.Fatal(err)
	}
	if err := rt.RoutesChanged(context.Background(), "shop"); err != nil {
		t.Fatal(err)
	}
	before := len(up.requests())
	check(502, "egress to 127.0.0.1 is not allowed")
	if len(up.requests()) != before {
		t.Fatal("a host the project does not list got a request")
	}
}

// TestHTTPBlockIdempotencyAcrossAttempts: runs of a write route that
// collide begin again and send their requests again, each with the key
// its request to /x had; no two requests to /x share one. Such runs never
// join a batch.
func TestHTTPBlockIdempotencyAcrossAttempts(t *testing.T) {
	rt := newTestRuntime(t)
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(5 * time.Millisecond) // the runs overlap
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ok":true}`))
	})
	rt.allow(t, up)
	rt.collection(t, "counters", `{"name":"c","n":0}`)
	blocks := append([]string{httpBlock("res", "POST", lit("STRING", up.URL+"/notify"), `"body":`+lit("STRING", "hi"))}, counterBlocks...)
	rt.route(t, routeDoc("inc", "POST", "/inc", `[{"id":"spin","bdtype":"INTEGER"}]`, blocks...))
	rt.batches.Collided("shop/inc") // a route whose runs would queue for batches
	const n = 24
	statuses := rt.concurrently(t, 8, n, func(int) (string, string, string) { return "POST", "/x/shop/inc", `{"spin":0}` })
	if statuses[200] != n || rt.records(t, "counters")[0]["n"] != float64(n) {
		t.Fatalf("answers %v; the counter is %v", statuses, rt.records(t, "counters")[0]["n"])
	}
	keys := map[string]int{}
	for _, r := range up.requests() {
		keys[r.Header.Get("Idempotency-Key")]++
	}
	if len(keys) != n || len(up.requests()) <= n {
		t.Fatalf("%d requests with %d keys for %d runs: none began again", len(up.requests()), len(keys), n)
	}
	if rt.batches.Led.Load() != 0 {
		t.Fatalf("%d batches led for runs that call upstream", rt.batches.Led.Load())
	}
	t.Logf("%d runs sent %d requests", n, len(up.requests()))
}

// TestReturnHeadersAndCORS: a RETURN's headers reach the caller, and a
// listed origin's script may read them (Access-Control-Expose-Headers); a
// 204 has no body.
func TestReturnHeadersAndCORS(t *testing.T) {
	rt := newTestRuntime(t)
	rt.route(t, routeDoc("gone", "DELETE", "/gone", "",
		`{"type":"RETURN","depth":0,"pairs":[],"conditions":[],"status":204,"headers":`+pairsOf("X-Request-Cost", lit("INTEGER", "3"))+`}`))
	if _, err := rt.pool.Exec(context.Background(), `UPDATE projects SET x_cors_origins = '{https://app.example.com}' WHERE id = 'shop'`); err != nil {
		t.Fatal(err)
	}
	if err := rt.RoutesChanged(context.Background(), "shop"); err != nil {
		t.Fatal(err)
	}
	a := rt.serve(t, Request{Method: "DELETE", Path: "/x/shop/gone", Origin: "https://app.example.com"})
	if a.Status != 204 || a.Body != nil || a.Header.Get("X-Request-Cost") != "3" ||
		a.Header.Get("Access-Control-Expose-Headers") != "Retry-After, X-Request-Cost" {
		t.Fatalf("%d %q %v", a.Status, a.Body, a.Header)
	}
}

// BenchmarkHTTPBlock is a run of a route whose one HTTP GET reaches an
// upstream on loopback: what the runtime adds to a call.
func BenchmarkHTTPBlock(b *testing.B) {
	rt := newTestRuntime(b)
	up := newUpstream(b, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"rate":1.08}`))
	})
	rt.allow(b, up)
	rt.route(b, routeDoc("rate", "GET", "/rate", "", httpBlock("res", "GET", lit("STRING", up.URL+"/rates"), ""),
		`{"type":"RETURN","depth":0,"pairs":`+pairsOf("rate", ref("res.body.rate"))+`,"conditions":[]}`))
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			a, err := rt.Serve(context.Background(), Request{Method: "GET", Path: "/x/shop/rate", Client: "127.0.0.1"})
			if err != nil || a.Status != 200 {
				b.Fatal(err, a.Status)
			}
		}
	})
}

// TestHTTPBlockLimits: each HTTP block of a request has a key of its own
// under the request's; EGRESS_CONCURRENCY holds under many clients at once
// (the others wait, within their time, and all answer); an upstream
// slower than what is left of the run's 5 s ends the run at its limit, not
// with the block's 504.
func TestHTTPBlockLimits(t *testing.T) {
	rt := newTestRuntime(t)
	var mu sync.Mutex
	inFlight, most := 0, 0
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/never" {
			<-r.Context().Done()
			return
		}
		mu.Lock()
		inFlight++
		most = max(most, inFlight)
		mu.Unlock()
		time.Sleep(20 * time.Millisecond)
		mu.Lock()
		inFlight--
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})
	rt.allow(t, up)
	rt.route(t, routeDoc("two", "GET", "/two", "", httpBlock("a", "GET", lit("STRING", up.URL+"/a"), ""),
		httpBlock("b", "GET", lit("STRING", up.URL+"/b"), ""),
		`{"type":"RETURN","depth":0,"pairs":`+pairsOf("a", ref("a.status"), "b", ref("b.status"))+`,"conditions":[]}`))
	if a := rt.serve(t, Request{Method: "GET", Path: "/x/shop/two"}); a.Status != 200 || string(a.Body) != `{"a":204,"b":204}` {
		t.Fatalf("%d %s", a.Status, a.Body)
	}
	got := up.requests()
	ka, kb := got[0].Header.Get("Idempotency-Key"), got[1].Header.Get("Idempotency-Key")
	if ka == kb || ka[:strings.LastIndex(ka[:strings.LastIndex(ka, "-")], "-")] != kb[:strings.LastIndex(kb[:strings.LastIndex(kb, "-")], "-")] {
		t.Fatalf("keys of two blocks of one request: %s %s", ka, kb)
	}

	rt.egress.taken = make(chan struct{}, 1) // EGRESS_CONCURRENCY=1
	statuses := rt.concurrently(t, 8, 24, func(int) (string, string, string) { return "GET", "/x/shop/two", "" })
	if statuses[200] != 24 || most != 1 {
		t.Fatalf("answers %v; %d requests upstream at once under a limit of 1", statuses, most)
	}

	rt.Limits.Time = 300 * time.Millisecond
	rt.route(t, routeDoc("stall", "GET", "/stall", "", httpBlock("res", "GET", lit("STRING", up.URL+"/never"), "")))
	if a := rt.serve(t, Request{Method: "GET", Path: "/x/shop/stall"}); a.Status != 500 || !strings.Contains(string(a.Body), "the run passed its time limit of 300ms") {
		t.Fatalf("a stalled upstream: %d %s", a.Status, a.Body)
	}
}

// TestSecretsMaskedInEverySpelling: the audit's finding — a vault value
// sent as a query pair showed percent-encoded in the trace's call URL, to
// an AUTHOR. Each part of the URL that holds a secret shows masked whole;
// an upstream echoing the secrets encoded (query, base64, JSON) is masked
// in the traced answer and the trace; the run log keeps no spelling.
func TestSecretsMaskedInEverySpelling(t *testing.T) {
	rt := newTestRuntime(t)
	secrets := []string{"sk_live_Ab+cD/eF0gH1==", "p@ss w/rd+&=?#%é"}
	rt.vault(t, "B64KEY", secrets[0])
	rt.vault(t, "PW", secrets[1])
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		b64 := base64.StdEncoding.EncodeToString([]byte(r.URL.Query().Get("api_key")))
		_, _ = fmt.Fprintf(w, `{"q":%q,"b64":%q,"basic":%q}`, r.URL.RawQuery, b64, base64.StdEncoding.EncodeToString([]byte("me:"+r.URL.Query().Get("pw"))))
	})
	rt.allow(t, up)
	rt.route(t, routeDoc("b64", "GET", "/b64", `[]`,
		`{"type":"VAULT","depth":0,"local_name":"k","key":"B64KEY"}`,
		`{"type":"VAULT","depth":0,"local_name":"p","key":"PW"}`,
		httpBlock("res", "GET", lit("STRING", up.URL+"/v1"), `"query":`+pairsOf("api_key", ref("k"), "pw", ref("p"))),
		`{"type":"RETURN","depth":0,"pairs":`+pairsOf("echo", ref("res.body"))+`,"conditions":[]}`))
	plan, _ := rt.Plan(context.Background(), "shop", "b64")
	a := rt.serve(t, Request{Plan: plan, ProjectID: "shop", Path: "/x/shop/b64", Trace: true})
	traced, call := traceOf(a)
	if call == nil || call.URL != up.URL+"/v1?api_key="+engine.Mask+"&pw="+engine.Mask {
		t.Fatalf("the call: %+v", call)
	}
	var spellings []string
	for _, s := range secrets {
		q := url.QueryEscape(s)
		spellings = append(spellings, s, q, strings.ToLower(q[len(q)-6:]), url.PathEscape(s),
			base64.StdEncoding.EncodeToString([]byte(s)), base64.RawURLEncoding.EncodeToString([]byte(s)))
	}
	spellings = append(spellings, strings.TrimPrefix(base64.StdEncoding.EncodeToString([]byte("me:"+secrets[1])), "bWU6")[:12])
	for _, s := range spellings {
		if strings.Contains(traced, s) || strings.Contains(string(a.Body), s) {
			t.Errorf("%q shows: answer %s\ntrace %s", s, a.Body, traced)
		}
	}
	if err := rt.FlushLog(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, s := range spellings {
		var leaks int
		if err := rt.pool.QueryRow(context.Background(), `SELECT count(*) FROM route_runs r WHERE strpos(r::text, $1) > 0`, s).Scan(&leaks); err != nil || leaks != 0 {
			t.Errorf("%d run log rows hold %q (%v)", leaks, s, err)
		}
	}
}

// TestHTTPBlockFaultsInProductWords: what an anonymous caller reads of a
// failed call names the host and what happened, never a library's text,
// the resolver's address or an internal one: an untrusted certificate, a
// port nobody listens on, a name that is not known, and a header value
// with a control character from the caller's input (refused before
// anything is sent, not reported as a connection failure).
func TestHTTPBlockFaultsInProductWords(t *testing.T) {
	rt := newTestRuntime(t)
	tlsUp := &upstream{Server: httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))}
	t.Cleanup(tlsUp.Close)
	gone := newUpstream(t, func(http.ResponseWriter, *http.Request) {})
	plain := newUpstream(t, func(http.ResponseWriter, *http.Request) {})
	rt.allow(t, tlsUp, gone, plain)
	gone.Close()
	for i, c := range []struct {
		url, header, query, status, want string
	}{
		{tlsUp.URL + "/", "", "", "502", "could not make a secure connection to " + tlsUp.Listener.Addr().String() + ": its certificate is not trusted"},
		{gone.URL + "/", "", "", "502", "could not connect to " + gone.Listener.Addr().String()},
		{plain.URL + "/", `"headers":` + pairsOf("X-Note", ref("note")), "", "500", "header X-Note holds a control character"},
	} {
		extra := `"timeout_ms":null`
		if c.header != "" {
			extra = c.header
		}
		rt.route(t, routeDoc(fmt.Sprintf("w%d", i), "POST", fmt.Sprintf("/w%d", i), `[{"id":"note","bdtype":"STRING"}]`,
			httpBlock("res", "GET", lit("STRING", c.url), extra),
			`{"type":"RETURN","depth":0,"pairs":`+pairsOf("s", ref("res.status"))+`,"conditions":[]}`))
		a := rt.serve(t, Request{Method: "POST", Path: fmt.Sprintf("/x/shop/w%d", i), Body: []byte(`{"note":"a\u0001b"}`)})
		body := string(a.Body)
		if fmt.Sprint(a.Status) != c.status || !strings.Contains(body, c.want) {
			t.Errorf("%s: %d %s, want %s %q", c.url, a.Status, body, c.status, c.want)
		}
		for _, words := range []string{"x509", "dial tcp", "net/http", "connection refused", "could not reach"} {
			if strings.Contains(body, words) {
				t.Errorf("%s: %s says %q", c.url, body, words)
			}
		}
	}
	if len(plain.requests()) != 0 {
		t.Fatal("a header with a control character was sent")
	}
	// A name no resolver knows, as the resolver reports it.
	lookup := &url.Error{Op: "Get", URL: "http://nowhere.example:8080/", Err: &net.OpError{Op: "dial", Net: "tcp",
		Err: &net.DNSError{Err: "no such host", Name: "nowhere.example.", Server: "10.0.0.53:53", IsNotFound: true}}}
	err := callError(context.Background(), context.Background(), lookup, "nowhere.example:8080", engine.Call{})
	if got := err.Error(); !strings.Contains(got, "nowhere.example is not a known host name") || strings.Contains(got, "10.0.0.53") || strings.Contains(got, "lookup") {
		t.Fatalf("an unknown name: %s", got)
	}
}

// xServer serves the runtime's /x over HTTP on loopback, as the service
// does, passing Stencil-Hop on; it counts the requests it got.
func (rt *testRuntime) xServer(t *testing.T) (*upstream, *atomic.Int64) {
	var looped atomic.Int64
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		hop, _ := strconv.Atoi(r.Header.Get("Stencil-Hop"))
		a, err := rt.Serve(r.Context(), Request{Method: r.Method, Path: r.URL.EscapedPath(), Query: r.URL.RawQuery, Client: "127.0.0.1", Hop: hop})
		if err != nil {
			w.WriteHeader(500)
			return
		}
		if a.Status == http.StatusLoopDetected {
			looped.Add(1)
		}
		for k, v := range a.Header {
			w.Header()[k] = v
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(a.Status)
		_, _ = w.Write(a.Body)
	})
	return up, &looped
}

// TestRouteCannotCallItselfForever: the audit's loop — a route whose
// HTTP block calls its own public URL — runs four times for one request:
// each call carries Stencil-Hop one more than the request it runs for,
// and the fifth request, at 4, runs nothing and answers 508.
func TestRouteCannotCallItselfForever(t *testing.T) {
	rt := newTestRuntime(t)
	x, looped := rt.xServer(t)
	rt.allow(t, x)
	rt.route(t, routeDoc("loopa", "GET", "/loopa", "", httpBlock("res", "GET", lit("STRING", x.URL+"/x/shop/loopa"), ""),
		`{"type":"RETURN","depth":0,"pairs":`+pairsOf("inner", ref("res.status"))+`,"conditions":[]}`))
	resp, err := http.Get(x.URL + "/x/shop/loopa")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	got := x.requests()
	var hops []string
	for _, r := range got {
		hops = append(hops, r.Header.Get("Stencil-Hop"))
	}
	if resp.StatusCode != 200 || string(body) != `{"inner":200}` || strings.Join(hops, ",") != ",1,2,3,4" || looped.Load() != 1 {
		t.Fatalf("%d %s; hops %v; %d refused", resp.StatusCode, body, hops, looped.Load())
	}
	a := rt.serve(t, Request{Method: "GET", Path: "/x/shop/loopa", Hop: 9})
	if a.Status != 508 || string(a.Body) != `{"status":508,"message":"Error: loop detected"}` {
		t.Fatalf("hop 9: %d %s", a.Status, a.Body)
	}
}

// TestUpstreamWaitsHoldAQuarterOfTheSlots: a project's runs waiting on
// upstream calls hold at most a quarter of the run slots; the next one
// answers 503 with Retry-After and sends nothing, and the slots come back
// when the calls end.
func TestUpstreamWaitsHoldAQuarterOfTheSlots(t *testing.T) {
	rt := newTestRuntime(t) // 256 run slots: 64 for one project's waits
	release := make(chan struct{})
	var arrived atomic.Int64
	slow := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		arrived.Add(1)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	t.Cleanup(free) // before the upstream closes: a failed test leaves no call hanging
	rt.allow(t, slow)
	rt.route(t, routeDoc("wait", "GET", "/wait", "", httpBlock("res", "GET", lit("STRING", slow.URL+"/"), `"timeout_ms":`+lit("INTEGER", "4000")),
		`{"type":"RETURN","depth":0,"pairs":`+pairsOf("s", ref("res.status"))+`,"conditions":[]}`))
	answers := make(chan Answer, 80)
	for range 80 {
		go func() {
			a, err := rt.Serve(context.Background(), Request{Method: "GET", Path: "/x/shop/wait", Client: "127.0.0.1"})
			if err != nil {
				a.Status = 500
			}
			answers <- a
		}()
	}
	next := func() Answer {
		t.Helper()
		select {
		case a := <-answers:
			return a
		case <-time.After(20 * time.Second):
			t.Fatal("no answer within 20 s")
			return Answer{}
		}
	}
	for range 16 {
		if a := next(); a.Status != 503 || a.Header.Get("Retry-After") == "" {
			t.Fatalf("a run past the quarter: %d %v %s", a.Status, a.Header, a.Body)
		}
	}
	if n := arrived.Load(); n > 64 {
		t.Fatalf("%d calls reached the upstream", n)
	}
	free()
	for range 64 {
		if a := next(); a.Status != 200 {
			t.Fatalf("a waiting run: %d %s", a.Status, a.Body)
		}
	}
	if a := rt.serve(t, Request{Method: "GET", Path: "/x/shop/wait"}); a.Status != 200 {
		t.Fatalf("after the calls ended: %d %s", a.Status, a.Body)
	}
}

// traceOf is a traced answer's trace as JSON text, and its last call.
func traceOf(a Answer) (string, *CallRow) {
	var call *CallRow
	var traced strings.Builder
	for _, row := range a.Trace {
		raw, _ := json.Marshal(row)
		traced.Write(raw)
		if row.Call != nil {
			call = row.Call
		}
	}
	return traced.String(), call
}
