package runs

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"stencil/egress"
	"stencil/engine"
)

// The HTTP block's requests (docs/engine.md): sent through the egress
// guard's client, EGRESS_CONCURRENCY at once for the whole service, each
// with an Idempotency-Key that the same request to /x keeps across its
// attempts.

// callKey is the base of the Idempotency-Keys of one request to /x.
func callKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Call sends c for the run, under its project's host list.
func (e *runEnv) Call(ctx context.Context, c engine.Call) (engine.Reply, error) {
	if e.s.client == nil {
		return engine.Reply{}, &engine.CallError{Status: http.StatusBadGateway, Reason: "this service sends no requests (no egress client)"}
	}
	release, err := e.s.egress.Enter(ctx)
	if err != nil {
		return engine.Reply{}, err
	}
	defer release()
	callCtx, cancel := context.WithTimeout(egress.WithHosts(ctx, e.hosts), c.Timeout)
	defer cancel()
	var body io.Reader
	if c.Body != nil {
		body = bytes.NewReader(c.Body)
	}
	req, err := http.NewRequestWithContext(callCtx, c.Method, c.URL, body)
	if err != nil {
		return engine.Reply{}, &engine.CallError{Status: http.StatusBadGateway, Reason: "the URL is not valid"}
	}
	for _, h := range c.Header {
		req.Header.Add(h.Name, h.Value)
	}
	if req.Header.Get("Idempotency-Key") == "" {
		req.Header.Set("Idempotency-Key", fmt.Sprintf("%s-%d-%d", e.key, c.Block, c.Seq))
	}
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", "Stencil")
	}
	host := req.URL.Host
	resp, err := e.s.client.Do(req)
	if err != nil {
		return engine.Reply{}, callError(ctx, callCtx, err, host, c)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, engine.MaxAnswerBytes+1))
	if err != nil {
		return engine.Reply{}, callError(ctx, callCtx, err, host, c)
	}
	if len(raw) > engine.MaxAnswerBytes {
		return engine.Reply{}, &engine.CallError{Status: http.StatusBadGateway, Reason: host + " answered more than 1 MiB"}
	}
	reply := engine.Reply{Status: resp.StatusCode, Header: make(map[string]string, len(resp.Header)), Body: raw}
	for k, v := range resp.Header {
		reply.Header[strings.ToLower(k)] = strings.Join(v, ", ")
	}
	if t, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type")); err == nil {
		reply.JSON = t == "application/json" || strings.HasSuffix(t, "+json")
	}
	return reply, nil
}

// callError is what a request that got no answer says: the guard's
// refusal, a redirect refused, a timeout (504) or a connection that failed
// (502). The run's own time running out is the run's error, not the
// block's. The text names the host, never the URL's path or query.
func callError(run, call context.Context, err error, host string, c engine.Call) error {
	if run.Err() != nil {
		return run.Err()
	}
	var refused *egress.Error
	var redirect *egress.RedirectError
	var ue *url.Error
	switch {
	case errors.As(err, &refused):
		return &engine.CallError{Status: http.StatusBadGateway, Reason: refused.Error()}
	case errors.As(err, &redirect):
		return &engine.CallError{Status: http.StatusBadGateway, Reason: host + " answered " + redirect.Error()}
	case call.Err() != nil:
		return &engine.CallError{Status: http.StatusGatewayTimeout, Reason: fmt.Sprintf("%s did not answer within %d ms", host, c.Timeout.Milliseconds())}
	case errors.As(err, &ue):
		err = ue.Err // without the URL, which may hold what the route sent
	}
	return &engine.CallError{Status: http.StatusBadGateway, Reason: fmt.Sprintf("could not reach %s: %s", host, err)}
}
