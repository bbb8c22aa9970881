package runs

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"stencil/flow"
)

// CORS at /x (docs/engine.md): a project lists the origins whose browsers
// may call its routes. A listed origin gets Access-Control-Allow-Origin on
// every answer of the project's routes, errors included, and preflights
// are answered without running anything. Credentials are bearer tokens,
// never cookies: Access-Control-Allow-Credentials is never sent.

// preflightMaxAge is how long a browser may keep a preflight's answer.
const preflightMaxAge = "600"

// exposed is the header of the platform's a script may read of an
// answer, besides those the route sets: Retry-After.
const exposed = "Retry-After"

// corsOf sets on a the CORS headers of an answer of p to origin: Vary:
// Origin whenever p lists origins, and Access-Control-Allow-Origin with
// the headers a script may read when origin is listed. It says whether
// origin is listed.
func (p *routing) corsOf(a *Answer, origin string) bool {
	if len(p.origins) == 0 {
		return false
	}
	a.set("Vary", "Origin")
	if origin == "" {
		return false
	}
	switch {
	case p.origins[0] == "*":
		a.set("Access-Control-Allow-Origin", "*")
	case slices.Contains(p.origins, strings.ToLower(origin)):
		a.set("Access-Control-Allow-Origin", origin)
	default:
		return false
	}
	a.set("Access-Control-Expose-Headers", strings.Join(append([]string{exposed}, a.exposed...), ", "))
	return true
}

// requestedHeaders is Access-Control-Request-Headers as the answer may
// repeat it: header names (token characters) only, each once, in lower
// case.
func requestedHeaders(list string) string {
	var names []string
	for _, name := range strings.Split(list, ",") {
		name = strings.ToLower(strings.TrimSpace(name))
		if name != "" && flow.Token(name) && !slices.Contains(names, name) && len(names) < 64 {
			names = append(names, name)
		}
	}
	return strings.Join(names, ", ")
}

// CORSHeaders are the CORS headers of an answer at path (under /x) to
// origin when the answer does not come from Serve (the layers in front of
// it refused the request): nil when path is no project's.
func (s *Service) CORSHeaders(ctx context.Context, path, origin string) http.Header {
	segs, err := pathSegments(strings.TrimPrefix(path, "/x"))
	if err != nil {
		return nil
	}
	p, _, err := s.table.find(ctx, segs)
	if err != nil || p == nil {
		return nil
	}
	var a Answer
	p.corsOf(&a, origin)
	return a.Header
}

// maxCORSOrigins bounds a project's CORS origins (the database's check).
const maxCORSOrigins = 100

// Origins are a project's CORS origins as given, normalized (scheme and
// host in lower case, a default port and a trailing "/" dropped, each
// once); otherwise problem says what is wrong with the list, or with its
// entry bad (docs/engine.md).
func Origins(given []string) (out []string, bad, problem string) {
	if len(given) > maxCORSOrigins {
		return nil, "", fmt.Sprintf("has %d origins: at most %d", len(given), maxCORSOrigins)
	}
	out = []string{}
	for _, g := range given {
		origin, problem := normalOrigin(g)
		if problem != "" {
			return nil, g, problem
		}
		if origin == "*" && len(given) > 1 {
			return nil, "", `"*" stands alone: it lets every origin in`
		}
		if !slices.Contains(out, origin) {
			out = append(out, origin)
		}
	}
	return out, "", ""
}

// normalOrigin is s as a browser sends it in Origin: scheme://host[:port]
// in lower case, without a default port; problem says why s is not an
// origin.
func normalOrigin(s string) (origin, problem string) {
	if s == "*" {
		return s, ""
	}
	if len(s) > 255 {
		return "", "is longer than 255 characters"
	}
	u, err := url.Parse(strings.TrimSuffix(s, "/"))
	switch {
	case err != nil || u.Opaque != "":
		return "", "is not an origin such as https://app.example.com"
	case u.Scheme != "http" && u.Scheme != "https":
		return "", "must start with https:// or http://"
	case u.Hostname() == "":
		return "", "has no host"
	case u.User != nil || u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.ForceQuery:
		return "", "must be scheme, host and port only (no path, query or user)"
	}
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return "", "has a port that is not 1–65535"
		}
		if u.Scheme == "https" && n == 443 || u.Scheme == "http" && n == 80 {
			port = ""
		}
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	origin = u.Scheme + "://" + host
	if port != "" {
		origin += ":" + port
	}
	return origin, ""
}
