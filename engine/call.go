package engine

import (
	"errors"
	"net/url"
	"strings"
	"time"
)

// The HTTP block and RETURN's status and headers (docs/engine.md).

// callURL checks that u is an absolute http or https URL with a host.
func callURL(u string) error {
	parsed, err := url.Parse(u)
	switch {
	case err != nil:
		return errors.New("is not a URL")
	case parsed.Scheme != "http" && parsed.Scheme != "https":
		return errors.New("is not an http or https URL")
	case parsed.Host == "" || parsed.Hostname() == "":
		return errors.New("has no host")
	case parsed.User != nil:
		return errors.New("holds a user name: send credentials in a header")
	}
	return nil
}

// CallTrace is an HTTP block's request as a trace shows it: the URL with
// the vault values the run read masked.
type CallTrace struct {
	Method string
	URL    string
	Status int // 0: no answer
	Took   time.Duration
	Bytes  int // of the answer's body
}

// headerValue is v as a header's value: text, without the line breaks
// that would end the header or any other control character but tab
// (RFC 9110 §5.5).
// problem says why it is not one, "" when it is.
func headerValue(v any) (t, problem string) {
	t = text(v)
	if strings.ContainsAny(t, "\r\n") {
		return t, "holds a line break"
	}
	for i := 0; i < len(t); i++ {
		if c := t[i]; c < 0x20 && c != '\t' || c == 0x7f {
			return t, "holds a control character"
		}
	}
	return t, ""
}

// secret says whether operand o reads a value computed from a vault value
// (tracked only in runs that need to know: see runner.derived).
func (r *runner) secret(o *operand) bool {
	return o != nil && o.ref && r.derived != nil && r.derived[o.slot]
}

// hide adds text sent upstream that was computed from a vault value to
// what the run masks: in faults, the trace and the run log.
func (r *runner) hide(o *operand, sent string) {
	if len(sent) >= minMasked && r.secret(o) {
		r.secrets.Add(sent)
		if r.trace != nil {
			r.masks = append(r.masks, sent)
		}
	}
}

// minMasked is the shortest computed text masked as a secret: a shorter
// one (a length, a truth) would mask unrelated text everywhere.
const minMasked = 8

// masked is text with the vault values the run read masked, in every
// spelling.
func (r *runner) masked(text string) string { return r.secrets.Mask(text) }

// request builds the request of HTTP step s.
func (r *runner) request(s *step) (Call, error) {
	c := Call{Method: s.name, Block: s.block, Seq: r.calls[s.block], Timeout: DefaultCallTimeout}
	r.calls[s.block]++
	raw, ok := r.value(*s.a).(string)
	if !ok {
		return c, r.fault(s, "url is %s, not text", typeName(r.value(*s.a)))
	}
	r.hide(s.a, raw)
	if err := callURL(raw); err != nil {
		return c, r.fault(s, "url %s", err)
	}
	c.URL = raw
	if query := r.query(s); query != "" {
		sep := "?"
		if strings.Contains(raw, "?") {
			sep = "&"
		}
		c.URL = raw + sep + query
	}
	typed := false
	for _, h := range s.headers {
		v := r.value(h.v)
		if v == nil {
			continue
		}
		t, problem := headerValue(v)
		r.hide(&h.v, t)
		if problem != "" {
			return c, r.fault(s, "header %s %s", h.id, problem)
		}
		typed = typed || strings.EqualFold(h.id, "Content-Type")
		c.Header = append(c.Header, Header{h.id, t})
	}
	if s.b != nil {
		v := r.value(*s.b)
		switch t, isText := v.(string); {
		case v == nil:
		case typed && isText:
			c.Body = []byte(t)
		default:
			body, err := appendJSON(nil, v, MaxAnswerBytes)
			if err != nil {
				return c, r.fault(s, "the body would pass 1 MiB")
			}
			c.Body = body
			if !typed {
				c.Header = append(c.Header, Header{"Content-Type", "application/json"})
			}
		}
		if c.Body != nil {
			r.hide(s.b, string(c.Body))
		}
	}
	if s.c != nil {
		v := r.value(*s.c)
		ms, ok := v.(float64)
		if !ok || ms < float64(MinCallTimeout.Milliseconds()) || ms > float64(MaxCallTimeout.Milliseconds()) {
			shown := typeName(v)
			if ok {
				shown = text(v)
			}
			return c, r.fault(s, "timeout_ms is %s, not a number of milliseconds from 100 to 10000", shown)
		}
		c.Timeout = time.Duration(ms) * time.Millisecond
	}
	if len(c.URL)+len(c.Body) > MaxAnswerBytes {
		return c, r.fault(s, "the request would pass 1 MiB")
	}
	return c, nil
}

// call runs HTTP step s: sends its request and makes the value
// {status, headers, body} of the answer.
func (r *runner) call(s *step) (any, error) {
	c, err := r.request(s)
	if err != nil {
		return nil, err
	}
	if err := r.charge(s, len(c.URL)+len(c.Body)); err != nil {
		return nil, err
	}
	r.callTrace = &CallTrace{Method: c.Method, URL: r.secrets.MaskURL(c.URL)}
	began := time.Now()
	reply, err := r.env.Call(r.ctx, c)
	r.callTrace.Took = time.Since(began)
	var ce *CallError
	switch {
	case errors.As(err, &ce) && r.ctx.Err() == nil:
		f := r.fault(s, "%s", ce.Reason).(*Fault)
		f.Status = ce.Status
		return nil, f
	case err != nil:
		return nil, r.envError(s, err)
	}
	r.callTrace.Status, r.callTrace.Bytes = reply.Status, len(reply.Body)
	n := len(reply.Body)
	for k, v := range reply.Header {
		n += len(k) + len(v)
	}
	if err := r.charge(s, n); err != nil {
		return nil, err
	}
	headers := make(map[string]any, len(reply.Header))
	for k, v := range reply.Header {
		headers[k] = v
	}
	var body any
	switch {
	case reply.JSON && len(reply.Body) > 0:
		if body, err = r.decoder().Value(reply.Body); err != nil {
			f := r.fault(s, "%s answered %d with a body that says it is JSON and is not", host(c.URL), reply.Status).(*Fault)
			f.Status = 502
			return nil, f
		}
	case len(reply.Body) > 0:
		body = string(reply.Body)
	}
	return map[string]any{"status": float64(reply.Status), "headers": headers, "body": body}, nil
}

// query is step s's query pairs encoded (an HTTP block's, an ENQUEUE's):
// an array value repeats the name, a null value leaves its parameter out.
func (r *runner) query(s *step) string {
	var query strings.Builder
	for _, p := range s.pairs {
		v := r.value(p.v)
		items, many := v.([]any)
		if !many {
			items = []any{v}
		}
		for _, item := range items {
			if item == nil {
				continue
			}
			t := text(item)
			r.hide(&p.v, t)
			if query.Len() > 0 {
				query.WriteByte('&')
			}
			query.WriteString(url.QueryEscape(p.id) + "=" + url.QueryEscape(t))
		}
	}
	return query.String()
}

// host is the host of a URL already checked, for messages.
func host(u string) string {
	parsed, err := url.Parse(u)
	if err != nil {
		return "the upstream"
	}
	return parsed.Host
}

// answerHeaders evaluates RETURN step s's headers.
func (r *runner) answerHeaders(s *step) ([]Header, error) {
	var out []Header
	for _, h := range s.headers {
		v := r.value(h.v)
		if v == nil {
			continue // a null value leaves the header out
		}
		t, problem := headerValue(v)
		if problem != "" {
			return nil, r.fault(s, "header %s %s", h.id, problem)
		}
		out = append(out, Header{h.id, t})
	}
	return out, nil
}

// noBody says whether an answer of status carries no body (RFC 9110 §6.4.1).
func noBody(status int) bool { return status == 204 || status == 304 }

// URLs a TEMPLATE builds for an HTTP block (docs/security.md): text
// inserted after the host is one path segment, every byte but the
// unreserved ones percent-encoded and "." and ".." spelled out, so that
// a caller's text adds no path, query or fragment; text inserted into the
// host must be a host name; text that begins the URL is the URL's own,
// checked whole when the block sends it.

// urlHasHost says whether the URL text so far has passed its "://".
func urlHasHost(u []byte) bool { return strings.Contains(string(u), "://") }

// afterHost says whether the URL text so far has ended its host.
func afterHost(u []byte) bool {
	_, rest, _ := strings.Cut(string(u), "://")
	return strings.ContainsAny(rest, "/?#")
}

// hostText says whether t may stand in a host name.
func hostText(t string) bool {
	for i := 0; i < len(t); i++ {
		if c := t[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// appendSegment appends t to u as one path segment.
func appendSegment(u []byte, t string) []byte {
	switch t {
	case ".":
		return append(u, "%2E"...)
	case "..":
		return append(u, "%2E%2E"...)
	}
	for i := 0; i < len(t); i++ {
		c := t[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' {
			u = append(u, c)
			continue
		}
		u = append(u, '%', upperHex[c>>4], upperHex[c&0xf])
	}
	return u
}

const upperHex = "0123456789ABCDEF"
