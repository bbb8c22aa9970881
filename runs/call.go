package runs

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"

	"stencil/egress"
	"stencil/engine"
)

// The HTTP block's requests (docs/engine.md): sent through the egress
// guard's client, EGRESS_CONCURRENCY at once for the whole service and a
// quarter of the run slots for one project's runs, each with an
// Idempotency-Key that the same request to /x keeps across its attempts
// and a Stencil-Hop one more than the request to /x carried.

// MaxHops is the Stencil-Hop from which a request to /x runs nothing: a
// route that calls itself, through any proxy, stops there (508).
const MaxHops = 4

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
	waiting, ok := e.s.upstream.tryEnter(e.project)
	if !ok {
		return engine.Reply{}, engine.ErrBusy
	}
	defer waiting()
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
	req.Header.Set("Stencil-Hop", strconv.Itoa(e.hop+1))
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

// callError is what a request that got no answer says, in the product's
// words (docs/security.md): the guard's refusal, a redirect refused, a
// timeout (504), a name no resolver knows, a certificate not trusted, a
// connection that failed (502). The run's own time running out is the
// run's error, not the block's. The text names the host, never the URL's
// path or query, a library's words, the resolver or an address dialled.
func callError(run, call context.Context, err error, host string, c engine.Call) error {
	if run.Err() != nil {
		return run.Err()
	}
	var refused *egress.Error
	var redirect *egress.RedirectError
	var dns *net.DNSError
	var unknownAuthority x509.UnknownAuthorityError
	var invalid x509.CertificateInvalidError
	var hostname x509.HostnameError
	var verify *tls.CertificateVerificationError
	var record tls.RecordHeaderError
	reason := "could not connect to " + host
	switch {
	case errors.As(err, &refused):
		reason = refused.Error()
	case errors.As(err, &redirect):
		reason = host + " answered " + redirect.Error()
	case call.Err() != nil:
		return &engine.CallError{Status: http.StatusGatewayTimeout, Reason: fmt.Sprintf("%s did not answer within %d ms", host, c.Timeout.Milliseconds())}
	case errors.As(err, &dns) && dns.IsNotFound:
		reason = hostName(host) + " is not a known host name"
	case errors.As(err, &dns):
		reason = "could not look up " + hostName(host)
	case errors.As(err, &hostname):
		reason = "could not make a secure connection to " + host + ": its certificate is for another name"
	case errors.As(err, &unknownAuthority), errors.As(err, &invalid), errors.As(err, &verify):
		reason = "could not make a secure connection to " + host + ": its certificate is not trusted"
	case errors.As(err, &record):
		reason = "could not make a secure connection to " + host + ": it does not speak TLS"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET):
		reason = host + " closed the connection without an answer"
	}
	return &engine.CallError{Status: http.StatusBadGateway, Reason: reason}
}

// hostName is host without its port.
func hostName(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		return h
	}
	return host
}
