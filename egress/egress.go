// Package egress guards the requests routes send to other services
// (docs/engine.md): every connection is checked at connect time against
// the address actually dialled — each DNS answer, each redirect — so that
// a name resolving to a private address, or a redirect to one, cannot
// slip past a check of the URL's text. Loopback, private, link-local
// (cloud metadata), CGNAT, unspecified and multicast addresses and the
// service's own listen address and every other address that is not
// public unicast are refused unless the operator allows that destination
// (EGRESS_ALLOW); a project may narrow its routes to the
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
	// BeforeConnect, when set, is asked last before each connection is
	// made, with the address about to be dialled ("ip:port"); an error
	// refuses it. Tests set it to LoopbackOnly so that a guard that is
	// wrong still sends nothing off the machine (docs/testing.md).
	BeforeConnect func(address string) error
}

// LoopbackOnly is a BeforeConnect for tests: it refuses, and reports
// through fail, every address that is not loopback.
func LoopbackOnly(fail func(format string, args ...any)) func(address string) error {
	return func(address string) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil || !ap.Addr().Unmap().IsLoopback() {
			fail("a connection to %s, off loopback, was about to be made", address)
			return errors.New("off loopback in a test")
		}
		return nil
	}
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
		req.Header.Del("Referer")
		if origin(req.URL) != origin(via[0].URL) {
			for name := range req.Header {
				if !carried[http.CanonicalHeaderKey(name)] {
					req.Header.Del(name)
				}
			}
		}
		return nil
	}}
}

// carried are the headers a redirect to another origin keeps: the
// platform's own, never one a route set (docs/security.md).
var carried = map[string]bool{"User-Agent": true, "Stencil-Hop": true, "Accept-Encoding": true}

// origin is u's scheme, host and port, the port spelled out.
func origin(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	return u.Scheme + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port)
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
	if req.Header.Get("Referer") != "" { // no request says where it came from
		req = req.Clone(req.Context())
		req.Header.Del("Referer")
	}
	host := strings.ToLower(req.URL.Hostname())
	hosts, _ := req.Context().Value(hostsKey{}).([]string)
	if !Allows(hosts, host) {
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
		if err := g.check(host, port, address); err != nil {
			return err
		}
		if g.BeforeConnect != nil {
			return g.BeforeConnect(address)
		}
		return nil
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

// refused4 are the IPv4 ranges that are not public unicast: IANA's
// special-purpose registry, private and shared space, loopback,
// link-local (cloud metadata), documentation, benchmarking, 6to4 relays,
// multicast and the reserved 240/4 with the broadcast address
// (docs/security.md).
var refused4 = prefixes("0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16",
	"172.16.0.0/12", "192.0.0.0/24", "192.0.2.0/24", "192.88.99.0/24", "192.168.0.0/16", "198.18.0.0/15",
	"198.51.100.0/24", "203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4")

// global6 is IPv6's global unicast space; refused6 are the ranges inside
// it that are not public: Teredo and the rest of 2001::/23, documentation
// and 6to4, which embeds an IPv4 address. Outside global6 lie loopback,
// unspecified, IPv4-compatible and -translated, NAT64 (64:ff9b::/96,
// 64:ff9b:1::/48), discard (100::/64), unique-local, link- and site-local
// and multicast addresses, all refused.
var (
	global6  = netip.MustParsePrefix("2000::/3")
	refused6 = prefixes("2001::/23", "2001:db8::/32", "2002::/16", "3fff::/20")
)

func prefixes(s ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(s))
	for i, p := range s {
		out[i] = netip.MustParsePrefix(p)
	}
	return out
}

// Public says whether ip is a public unicast address of the internet. An
// IPv4-mapped address is judged by its IPv4 address; every other IPv6
// form that embeds an IPv4 address is refused.
func Public(ip netip.Addr) bool {
	ip = ip.Unmap()
	ranges := refused4
	if !ip.IsValid() {
		return false
	}
	if ip.Is6() {
		if ip.Zone() != "" || !global6.Contains(ip) {
			return false
		}
		ranges = refused6
	}
	for _, p := range ranges {
		if p.Contains(ip) {
			return false
		}
	}
	return true
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

// Allows says whether a project's list of hosts (empty: any public host)
// lets its routes call host: a name it lists, never an address written as
// a number. The editor's checks ask it of each HTTP block's URL, as a run
// does of each request (docs/security.md).
func Allows(hosts []string, host string) bool {
	host = strings.ToLower(host)
	return hostListed(hosts, host) && !numericName(host)
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
