package main

import (
	"fmt"
	"net"
	"net/http"
	"time"
)

// The upstream the HTTP block's row calls: a service on loopback that
// answers a small JSON object after upstreamDelay, as a nearby API would.
// The service reaches it because EGRESS_ALLOW lists it (docs/engine.md).

// upstreamDelay is how long the upstream takes to answer each request.
const upstreamDelay = 2 * time.Millisecond

// startUpstream serves the upstream on a free loopback port and returns
// its address (host:port) and how to stop it.
func startUpstream() (addr string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(upstreamDelay)
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `{"rate":1.0842,"currency":%q}`, r.URL.Query().Get("to"))
	})}
	go func() { _ = srv.Serve(ln) }()
	return ln.Addr().String(), func() { _ = srv.Close() }, nil
}

// seedUpstream makes the route that calls the upstream once: GET
// /x/bench/rate asks it for a rate and answers it.
func (b *bench) seedUpstream(operand func(bool, string, string) string) error {
	route := `{"project_id":"bench","route":{"route_id":"rate","route_path":"/rate","method":"GET","auth_jwt":{"active":false,"field":"","ref_col":""},
		"params":{"delimiter":"&","pairs":[]},"body":[],"flow":{"blocks":[
		{"type":"HTTP","depth":0,"local_name":"res","method":"GET","url":` + operand(false, "STRING", "http://"+b.upstream+"/rates") + `,
			"query":[{"id":"to","data":` + operand(false, "STRING", "EUR") + `}],"headers":[],"body":null,"timeout_ms":null,"conditions":[]},
		{"type":"RETURN","depth":0,"pairs":[{"id":"rate","data":` + operand(true, "OTHER", "res.body.rate") + `},{"id":"status","data":` + operand(true, "OTHER", "res.status") + `}],"conditions":[]}]}}}`
	_, err := b.must(201, "POST", "/route/create", b.jwt, route)
	return err
}
