// Package egress guards the requests routes send to other services
// (docs/engine.md): every connection is checked at connect time against
// the address actually dialled — each DNS answer, each redirect — so that
// a name resolving to a private address, or a redirect to one, cannot
// slip past a check of the URL's text. Loopback, private, link-local
// (cloud metadata), CGNAT, unspecified and multicast addresses and the
// service's own listen address are refused unless the operator allows
// that destination (EGRESS_ALLOW); a project may narrow its routes to the
// hosts it lists. Only http and https are spoken. It builds HTTP clients;
// it never decides what a route sends.
package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"
)

// MaxRedirects bounds the redirects one request follows.
const MaxRedirects = 5

// Guard checks outbound connections. Its zero value refuses every
// address that is not public; make one with New to allow more.
type Guard struct {
	allow map[string]bool // "host:port" the operator allows (EGRESS_ALLOW), lower case
	self  []netip.AddrPort
	// Resolver resolves host names (nil: the system's); tests point it
	// at a DNS server of their own.
	Resolver *net.Resolver
}

// New is a guard that allows the operator's destinations (EGRESS_ALLOW:
// "host:port" entries) and refuses the service's own listen addresses
// (one on an unspecified address stands for each of the machine's).
func New(allow []string, self []netip.AddrPort) (*Guard, error) {
	g := &Guard{allow: map[string]bool{}}
	for _, s := range self {
		if !s.Addr().IsUnspecified() {
			g.self = append(g.self, netip.AddrPortFrom(s.Addr().Unmap(), s.Port()))
			continue
		}
		addrs, err := net.InterfaceAddrs()
		if err != nil {
			return nil, fmt.Errorf("the machine's addresses: %w", err)
		}
		for _, a := range addrs {
			if p, err := netip.ParsePrefix(a.String()); err == nil {
				g.self = append(g.self, netip.AddrPortFrom(p.Addr().Unmap(), s.Port()))
			}
		}
	}
	for _, a := range allow {
		host, port, err := net.SplitHostPort(strings.TrimSpace(a))
		if err != nil || host == "" || port == "" {
			return nil, fmt.Errorf("EGRESS_ALLOW entry %q is not host:port", a)
		}
		g.allow[strings.ToLower(net.JoinHostPort(strings.Trim(host, "[]"), port))] = true
	}
	return g, nil
}

// Error is a destination the guard refused.
type Error struct{ Host string }

func (e *Error) Error() string { return "egress to " + e.Host + " is not allowed" }

// Client is the HTTP client whose every connection the guard checks; it
// follows at most MaxRedirects redirects, each to http or https, and
// reaches only the hosts WithHosts put in a request's context. One client
// serves the whole service, so its connections are pooled.
func (g *Guard) Client() *http.Client {
	transport := &http.Transport{
		DialContext:       g.dial,
		ForceAttemptHTTP2: true,
		// As many kept open to one upstream as may be in flight to it
		// (EGRESS_CONCURRENCY's default): a busy route reuses its
		// connections instead of dialling one per request.
		MaxIdleConns:          1024,
		MaxIdleConnsPerHost:   256,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 10 * time.Second,
		Proxy:                 nil, // never through a proxy of the environment: it would dial for us
	}
	return &http.Client{Transport: listed{transport}, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if len(via) > MaxRedirects { // via holds the first request and each redirect followed
			return &RedirectError{Reason: fmt.Sprintf("more than %d redirects", MaxRedirects)}
		}
		if err := CheckURL(req.URL); err != nil {
			return &RedirectError{Reason: "to " + err.Error()}
		}
		return nil
	}}
}

// RedirectError is a redirect the client does not follow.
type RedirectError struct{ Reason string }

func (e *RedirectError) Error() string { return "a redirect not followed: " + e.Reason }

// hostsKey is the context key of a project's host list.
type hostsKey struct{}

// WithHosts is ctx carrying a project's list of hosts ("api.example.com",
// "*.example.com"; empty: any public host) for the requests sent under it.
func WithHosts(ctx context.Context, hosts []string) context.Context {
	return context.WithValue(ctx, hostsKey{}, hosts)
}

// listed refuses a request, the first or a redirect, to a host the
// project does not list, or named by a number; pooled connections are
// reused only for hosts that pass.
type listed struct{ next http.RoundTripper }

func (l listed) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := CheckURL(req.URL); err != nil {
		return nil, err
	}
	host := strings.ToLower(req.URL.Hostname())
	hosts, _ := req.Context().Value(hostsKey{}).([]string)
	if !hostListed(hosts, host) || numericName(host) {
		return nil, &Error{Host: host}
	}
	return l.next.RoundTrip(req)
}

// CheckURL refuses a URL whose scheme is not http or https, or which has
// no host.
func CheckURL(u *url.URL) error {
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("a URL whose scheme %q is not http or https", u.Scheme)
	}
	if u.Hostname() == "" {
		return errors.New("a URL without a host")
	}
	return nil
}

// dial dials addr ("host:port", as the URL says), checking each address
// the dialer is about to connect to.
func (g *Guard) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	host = strings.ToLower(host)
	d := &net.Dialer{Timeout: 10 * time.Second, Resolver: g.Resolver, Control: func(_, address string, _ syscall.RawConn) error {
		return g.check(host, port, address)
	}}
	return d.DialContext(ctx, network, addr)
}

// check allows the connection to address (the IP and port dialled) of a
// request to host:port.
func (g *Guard) check(host, port, address string) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return &Error{Host: host}
	}
	ip := ap.Addr().Unmap()
	if g.allow[net.JoinHostPort(host, port)] || g.allow[net.JoinHostPort(ip.String(), port)] {
		return nil // the operator's word, even for the service's own address
	}
	if !Public(ip) {
		return &Error{Host: host}
	}
	for _, s := range g.self {
		if s.Port() == ap.Port() && s.Addr() == ip {
			return &Error{Host: host}
		}
	}
	return nil
}

// cgnat is the shared address space of carrier-grade NAT (RFC 6598).
var cgnat = netip.MustParsePrefix("100.64.0.0/10")

// Public says whether ip is an address of the public internet: not
// loopback, private (10/8, 172.16/12, 192.168/16, fc00::/7), link-local
// (169.254/16, fe80::/10), CGNAT (100.64/10), unspecified or multicast.
func Public(ip netip.Addr) bool {
	ip = ip.Unmap()
	return ip.IsValid() && !ip.IsLoopback() && !ip.IsPrivate() && !ip.IsLinkLocalUnicast() && !ip.IsLinkLocalMulticast() &&
		!ip.IsInterfaceLocalMulticast() && !ip.IsMulticast() && !ip.IsUnspecified() && !cgnat.Contains(ip)
}

// numericName says whether host is an IPv4 address in a form other than
// dotted decimal ("2130706433", "127.1", "0x7f.1"), which some resolvers
// read as an address: such a name is refused rather than resolved.
func numericName(host string) bool {
	if _, err := netip.ParseAddr(host); err == nil || host == "" || host[0] < '0' || host[0] > '9' {
		return false
	}
	return strings.Trim(host, "0123456789abcdefx.") == ""
}

// hostListed says whether host may be reached under a project's list
// (empty: any).
func hostListed(hosts []string, host string) bool {
	if len(hosts) == 0 {
		return true
	}
	for _, h := range hosts {
		h = strings.ToLower(h)
		if h == host || strings.HasPrefix(h, "*.") && strings.HasSuffix(host, h[1:]) {
			return true
		}
	}
	return false
}

// MaxHosts bounds a project's list of hosts.
const MaxHosts = 100

// hostLabel is one label of a DNS name.
var hostLabel = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// Hosts checks a project's list of hosts as given (x_egress_hosts) and
// returns it as kept: lower case, each once. A host is a DNS name (an
// IPv4 address reads as one), no scheme, port or path; "*.example.com"
// stands for the names under example.com. bad is the entry that is wrong, problem why.
func Hosts(given []string) (out []string, bad, problem string) {
	if len(given) > MaxHosts {
		return nil, "", fmt.Sprintf("has %d hosts: at most %d", len(given), MaxHosts)
	}
	out = []string{}
	for _, g := range given {
		h := strings.ToLower(strings.TrimSpace(g))
		if p := hostProblem(h); p != "" {
			return nil, g, p
		}
		if !slices.Contains(out, h) {
			out = append(out, h)
		}
	}
	return out, "", ""
}

func hostProblem(h string) string {
	if strings.ContainsAny(h, "/:?#@[]") {
		return "must be a host name such as api.example.com, without scheme, port or path"
	}
	name := strings.TrimPrefix(h, "*.")
	if len(name) > 253 || !strings.Contains(name, ".") && strings.HasPrefix(h, "*.") {
		return "must be a host name such as api.example.com, or *.example.com for the names under it"
	}
	for _, label := range strings.Split(name, ".") {
		if !hostLabel.MatchString(label) {
			return "must be a host name such as api.example.com, or *.example.com for the names under it"
		}
	}
	return ""
}
