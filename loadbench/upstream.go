package main

import (
	"fmt"
	"net"
	"net/http"
	"time"
)

// The upstream the HTTP block's rows call: a service on loopback that
// answers a small JSON object after the milliseconds its query's ms asks
// (an API in the same region answers in about 10; 0 measures the cost of
// the call itself on a machine whose cores wrk, the service and the
// upstream share). The service reaches it because EGRESS_ALLOW lists it
// (docs/engine.md).

// upstreamDelay is how long the upstream of the row with a goal takes.
const upstreamDelay = 10 * time.Millisecond

// startUpstream serves the upstream on a free loopback port and returns
// its address (host:port) and how to stop it.
func startUpstream() (addr string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ms, err := time.ParseDuration(r.URL.Query().Get("ms") + "ms"); err == nil && ms > 0 {
			time.Sleep(ms)
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `{"rate":1.0842,"currency":%q}`, r.URL.Query().Get("to"))
	})}
	go func() { _ = srv.Serve(ln) }()
	return ln.Addr().String(), func() { _ = srv.Close() }, nil
}

// upstreamPath is the upstream's path and query for a delay.
func upstreamPath(delay time.Duration) string {
	return fmt.Sprintf("/rates?ms=%d", delay.Milliseconds())
}

// seedUpstream makes the routes that call the upstream once: GET
// /x/bench/rate (the upstream answering in upstreamDelay) and
// /x/bench/rate_now (at once) ask it for a rate and answer it.
func (b *bench) seedUpstream(operand func(bool, string, string) string) error {
	for id, delay := range map[string]time.Duration{"rate": upstreamDelay, "rate_now": 0} {
		route := `{"project_id":"bench","route":{"route_id":"` + id + `","route_path":"/` + id + `","method":"GET","auth_jwt":{"active":false,"field":"","ref_col":""},
		"params":{"delimiter":"&","pairs":[]},"body":[],"flow":{"blocks":[
		{"type":"HTTP","depth":0,"local_name":"res","method":"GET","url":` + operand(false, "STRING", "http://"+b.upstream+upstreamPath(delay)) + `,
			"query":[{"id":"to","data":` + operand(false, "STRING", "EUR") + `}],"headers":[],"body":null,"timeout_ms":null,"conditions":[]},
		{"type":"RETURN","depth":0,"pairs":[{"id":"rate","data":` + operand(true, "OTHER", "res.body.rate") + `},{"id":"status","data":` + operand(true, "OTHER", "res.status") + `}],"conditions":[]}]}}}`
		if _, err := b.must(201, "POST", "/route/create", b.jwt, route); err != nil {
			return err
		}
	}
	return nil
}
