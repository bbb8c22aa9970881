package egress

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
)

// upstream is a loopback server that counts the requests reaching it.
type upstream struct {
	*httptest.Server
	hits atomic.Int64
}

func newUpstream(t *testing.T, h http.HandlerFunc) *upstream {
	t.Helper()
	u := &upstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.hits.Add(1)
		h(w, r)
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *upstream) port() string {
	_, port, _ := net.SplitHostPort(u.Listener.Addr().String())
	return port
}

// dnsServer answers every A question with 127.0.0.1 and every other with
// no answer: a resolver the test controls, for names that resolve to
// loopback.
func dnsServer(t *testing.T) *net.Resolver {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 512)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			q := buf[:n]
			end := 12
			for end < n && q[end] != 0 {
				end += int(q[end]) + 1
			}
			end += 5 // the root label, QTYPE, QCLASS
			if end > n {
				continue
			}
			qtype := binary.BigEndian.Uint16(q[end-4:])
			out := append([]byte{}, q[:end]...)
			out[2], out[3] = 0x81, 0x80 // a response, recursion available, no error
			if qtype == 1 {
				binary.BigEndian.PutUint16(out[6:], 1) // one answer
				out = append(out, 0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 127, 0, 0, 1)
			} else {
				binary.BigEndian.PutUint16(out[6:], 0)
			}
			binary.BigEndian.PutUint16(out[8:], 0)
			binary.BigEndian.PutUint16(out[10:], 0)
			_, _ = pc.WriteTo(out, from)
		}
	}()
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", pc.LocalAddr().String())
	}}
}

// TestGuardAllowsWhatTheOperatorListed: a request to an upstream on
// loopback that EGRESS_ALLOW lists arrives as sent, and a redirect to an
// allowed address is followed.
func TestGuardAllowsWhatTheOperatorListed(t *testing.T) {
	var got string
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/moved" {
			http.Redirect(w, r, "/here", http.StatusFound)
			return
		}
		body, _ := io.ReadAll(r.Body)
		got = r.Method + " " + r.URL.Path + " " + r.Header.Get("Authorization") + " " + string(body)
		w.WriteHeader(http.StatusTeapot)
	})
	g := guard(t, []string{"127.0.0.1:" + up.port()})
	req, _ := http.NewRequest("POST", up.URL+"/charge", strings.NewReader(`{"amount":5}`))
	req.Header.Set("Authorization", "Bearer sk-live")
	resp, err := g.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTeapot || got != `POST /charge Bearer sk-live {"amount":5}` {
		t.Fatalf("%d %q", resp.StatusCode, got)
	}
	resp, err = g.Client().Get(up.URL + "/moved")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTeapot || !strings.HasPrefix(got, "GET /here") {
		t.Fatalf("after the redirect: %d %q", resp.StatusCode, got)
	}
}

// TestGuardRefusesWhatIsNotPublic: the egress matrix. With one upstream
// allowed, every way to reach another address that is not public —
// another loopback port by each of its spellings, the cloud metadata
// address, the service's own port, a redirect from the allowed upstream,
// a name that resolves to loopback, another scheme — is refused by the
// guard, and no byte reaches the target.
func TestGuardRefusesWhatIsNotPublic(t *testing.T) {
	allowed := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusFound)
	})
	target := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {})
	g := guard(t, []string{"127.0.0.1:" + allowed.port()})
	g.Resolver = dnsServer(t)
	p := target.port()
	for _, url := range []string{
		"http://127.0.0.1:" + p + "/",
		"http://localhost:" + p + "/",
		"http://[::1]:" + p + "/",
		"http://0.0.0.0:" + p + "/",
		"http://2130706433:" + p + "/",
		"http://127.1:" + p + "/",
		"http://0x7f.1:" + p + "/",
		"http://169.254.169.254/latest/meta-data/",
		"http://10.0.0.1:" + p + "/",
		"http://[fe80::1]:" + p + "/",
		"http://100.64.0.1:" + p + "/",
		"http://evil.example.com:" + p + "/", // resolves to 127.0.0.1 (the test's DNS)
		allowed.URL + "/?to=http://127.0.0.1:" + p + "/",
		allowed.URL + "/?to=http://evil.example.com:" + p + "/",
		"file:///etc/passwd",
		"gopher://127.0.0.1:" + p + "/",
	} {
		resp, err := g.Client().Get(url)
		if err == nil {
			resp.Body.Close()
			t.Errorf("%s: answered %d", url, resp.StatusCode)
			continue
		}
		var refused *Error
		if !errors.As(err, &refused) && !strings.Contains(err.Error(), "scheme") {
			t.Errorf("%s: %v, not the guard's refusal", url, err)
		}
	}
	if n := target.hits.Load(); n != 0 {
		t.Fatalf("%d requests reached the target", n)
	}
}

// TestGuardRefusesTheServiceItself: a public address the service listens
// on, given or as one of the machine's when it listens on all of them, is
// refused; the operator may still allow it.
func TestGuardRefusesTheServiceItself(t *testing.T) {
	g, err := New(nil, []netip.AddrPort{netip.MustParseAddrPort("93.184.216.34:8080")})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.check("example.com", "8080", "93.184.216.34:8080"); err == nil {
		t.Fatal("the service's own address was allowed")
	}
	if err := g.check("example.com", "443", "93.184.216.34:443"); err != nil {
		t.Fatalf("another port of that host: %v", err)
	}
	if err := g.check("example.com", "8080", "93.184.216.35:8080"); err != nil {
		t.Fatalf("another host on that port: %v", err)
	}
	all, err := New(nil, []netip.AddrPort{netip.MustParseAddrPort("0.0.0.0:8080")})
	if err != nil {
		t.Fatal(err)
	}
	if err := all.check("example.com", "8080", "93.184.216.34:8080"); err != nil {
		t.Fatalf("listening on all of the machine's addresses refuses others': %v", err)
	}
	if len(all.self) == 0 {
		t.Fatal("no address of the machine stands for 0.0.0.0")
	}
	mine := all.self[len(all.self)-1]
	if err := all.check("me", "8080", mine.String()); err == nil {
		t.Fatalf("the machine's own %s was allowed", mine)
	}
	allowed, _ := New([]string{"93.184.216.34:8080"}, []netip.AddrPort{netip.MustParseAddrPort("93.184.216.34:8080")})
	if err := allowed.check("example.com", "8080", "93.184.216.34:8080"); err != nil {
		t.Fatalf("allowed by the operator: %v", err)
	}
}

// TestProjectHosts: a project's list narrows its routes to the hosts it
// names, a wildcard to the names under it.
func TestProjectHosts(t *testing.T) {
	for _, c := range []struct {
		hosts []string
		host  string
		want  bool
	}{
		{nil, "api.example.com", true},
		{[]string{"api.example.com"}, "api.example.com", true},
		{[]string{"api.example.com"}, "example.com", false},
		{[]string{"*.example.com"}, "api.example.com", true},
		{[]string{"*.example.com"}, "example.com", false},
		{[]string{"*.example.com"}, "evilexample.com", false},
		{[]string{"API.Example.com"}, "api.example.com", true},
	} {
		if got := hostListed(c.hosts, c.host); got != c.want {
			t.Errorf("%v, %s: %v", c.hosts, c.host, got)
		}
	}
}

// TestProjectHostsAtRequest: one client serves every project; a request
// under a project's list reaches only its hosts, redirects included, even
// over a connection already pooled for another project.
func TestProjectHostsAtRequest(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/away" {
			http.Redirect(w, r, "http://localhost:"+r.Host[strings.LastIndex(r.Host, ":")+1:]+"/here", http.StatusFound)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	g := guard(t, []string{"127.0.0.1:" + up.port(), "localhost:" + up.port()})
	client := g.Client()
	get := func(hosts []string, url string) error {
		req, _ := http.NewRequestWithContext(WithHosts(context.Background(), hosts), "GET", url, nil)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	if err := get(nil, up.URL+"/"); err != nil {
		t.Fatal(err)
	}
	before := up.hits.Load()
	var refused *Error
	if err := get([]string{"api.example.com"}, up.URL+"/"); !errors.As(err, &refused) || refused.Host != "127.0.0.1" {
		t.Fatalf("an unlisted host over a pooled connection: %v", err)
	}
	if err := get([]string{"127.0.0.1"}, up.URL+"/away"); !errors.As(err, &refused) || refused.Host != "localhost" {
		t.Fatalf("a redirect to an unlisted host: %v", err)
	}
	if got := up.hits.Load() - before; got != 1 {
		t.Fatalf("%d requests reached the upstream, want the one redirected", got)
	}
}

// BenchmarkCheck is the cost of the guard's check of one connection.
func BenchmarkCheck(b *testing.B) {
	g, _ := New([]string{"127.0.0.1:9000"}, []netip.AddrPort{netip.MustParseAddrPort("0.0.0.0:8080")})
	b.ReportAllocs()
	for b.Loop() {
		if err := g.check("api.example.com", "443", "93.184.216.34:443"); err != nil {
			b.Fatal(err)
		}
	}
}

// TestHosts: what a project's list takes, and what it refuses.
func TestHosts(t *testing.T) {
	out, bad, problem := Hosts([]string{"API.example.com", " *.stripe.com ", "api.example.com", "93.184.216.34"})
	if problem != "" || strings.Join(out, " ") != "api.example.com *.stripe.com 93.184.216.34" {
		t.Fatalf("%v %q %q", out, bad, problem)
	}
	for _, h := range []string{"https://api.example.com", "[2001:db8::1]", "api.example.com:443", "api.example.com/v1", "*.com", "a..b", "-a.example.com", "*", "me@api.example.com", ""} {
		if _, bad, problem := Hosts([]string{"ok.example.com", h}); bad != h || problem == "" {
			t.Errorf("%q: bad %q, problem %q", h, bad, problem)
		}
	}
	if _, _, problem := Hosts(make([]string, MaxHosts+1)); !strings.Contains(problem, "at most 100") {
		t.Fatalf("101 hosts: %q", problem)
	}
}

// TestRedirectsAreBounded: a request follows at most MaxRedirects
// redirects; the next one ends it with a RedirectError.
func TestRedirectsAreBounded(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Path+"x", http.StatusFound)
	})
	g := guard(t, []string{"127.0.0.1:" + up.port()})
	_, err := g.Client().Get(up.URL + "/r")
	var redirect *RedirectError
	if !errors.As(err, &redirect) || !strings.Contains(redirect.Reason, "more than 5 redirects") {
		t.Fatalf("%v", err)
	}
	if n := up.hits.Load(); n != MaxRedirects+1 {
		t.Fatalf("%d requests reached the upstream, want the first and %d redirects", n, MaxRedirects)
	}
}

// TestPublicRanges: every range that is not public unicast is refused at
// its first and last address and one inside; the address just outside it,
// where there is one, is public unless the next range begins there. IPv6
// outside global unicast (2000::/3) is not allocated for public use and
// is refused as a whole.
// Addresses that embed an IPv4 address (NAT64, 6to4, Teredo, IPv4-
// compatible and -translated) are refused whole; an IPv4-mapped address is
// judged by its IPv4 address.
func TestPublicRanges(t *testing.T) {
	for _, c := range []struct {
		prefix, inside string
		before, after  string // "" where there is none, or it is refused too
	}{
		{"0.0.0.0/8", "0.1.2.3", "", "1.0.0.0"},
		{"10.0.0.0/8", "10.1.2.3", "9.255.255.255", "11.0.0.0"},
		{"100.64.0.0/10", "100.100.0.1", "100.63.255.255", "100.128.0.0"},
		{"127.0.0.0/8", "127.0.0.1", "126.255.255.255", "128.0.0.0"},
		{"169.254.0.0/16", "169.254.169.254", "169.253.255.255", "169.255.0.0"},
		{"172.16.0.0/12", "172.20.0.1", "172.15.255.255", "172.32.0.0"},
		{"192.0.0.0/24", "192.0.0.170", "191.255.255.255", "192.0.1.0"},
		{"192.0.2.0/24", "192.0.2.10", "192.0.1.255", "192.0.3.0"},
		{"192.88.99.0/24", "192.88.99.1", "192.88.98.255", "192.88.100.0"},
		{"192.168.0.0/16", "192.168.1.1", "192.167.255.255", "192.169.0.0"},
		{"198.18.0.0/15", "198.19.0.1", "198.17.255.255", "198.20.0.0"},
		{"198.51.100.0/24", "198.51.100.7", "198.51.99.255", "198.51.101.0"},
		{"203.0.113.0/24", "203.0.113.9", "203.0.112.255", "203.0.114.0"},
		{"224.0.0.0/4", "239.1.1.1", "223.255.255.255", ""},
		{"240.0.0.0/4", "240.0.0.1", "", ""},
		{"255.255.255.255/32", "255.255.255.255", "", ""},
		{"::/128", "::", "", ""},
		{"::1/128", "::1", "", ""},
		{"::/96", "::127.0.0.1", "", ""},
		{"::ffff:0:0:0/96", "::ffff:0:7f00:1", "", ""},
		{"64:ff9b::/96", "64:ff9b::a9fe:a9fe", "", ""},
		{"64:ff9b:1::/48", "64:ff9b:1::a00:1", "", ""},
		{"100::/64", "100::1", "", ""},
		{"2001::/23", "2001::1", "2000:ffff:ffff:ffff:ffff:ffff:ffff:ffff", ""},
		{"2001:db8::/32", "2001:db8::1", "2001:db7:ffff:ffff:ffff:ffff:ffff:ffff", "2001:db9::"},
		{"2002::/16", "2002:7f00:1::", "2001:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "2003::"},
		{"3fff::/20", "3fff::1", "3ffe:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "3fff:1000::"},
		{"fc00::/7", "fd00::1", "", ""},
		{"fe80::/10", "fe80::1", "", ""},
		{"fec0::/10", "fec0::1", "", ""},
		{"ff00::/8", "ff02::1", "", ""},
	} {
		p := netip.MustParsePrefix(c.prefix)
		first := p.Masked().Addr()
		last := first
		for a := first; a.IsValid() && p.Contains(a); a = a.Next() {
			last = a
			if a.BitLen()-p.Bits() > 16 {
				break // walk no further than that: the last address is made below
			}
		}
		if b := p.Addr().BitLen() - p.Bits(); b > 16 {
			bytes := first.AsSlice()
			for i := len(bytes) - 1; b > 0; i-- {
				n := min(b, 8)
				bytes[i] |= byte(1<<n - 1)
				b -= n
			}
			last, _ = netip.AddrFromSlice(bytes)
		}
		for _, a := range []netip.Addr{first, last, netip.MustParseAddr(c.inside)} {
			if Public(a) {
				t.Errorf("%s: %s is public", c.prefix, a)
			}
		}
		for _, s := range []string{c.before, c.after} {
			if s != "" && !Public(netip.MustParseAddr(s)) {
				t.Errorf("%s: %s, just outside, is refused", c.prefix, s)
			}
		}
	}
	for _, s := range []string{"93.184.216.34", "8.8.8.8", "2606:4700::1111", "2a00:1450:4001::1", "::ffff:93.184.216.34", "1.1.1.1"} {
		if !Public(netip.MustParseAddr(s)) {
			t.Errorf("%s is refused", s)
		}
	}
	for _, s := range []string{"::ffff:127.0.0.1", "::ffff:10.0.0.1", "::ffff:169.254.169.254"} {
		if Public(netip.MustParseAddr(s)) {
			t.Errorf("%s, judged by its IPv4 address, is public", s)
		}
	}
}

// TestGuardDialsNoEmbeddedIPv4: the URLs that reached loopback or the
// metadata service through an IPv6 spelling are refused before any
// connection, and a test's dial hook would have refused them too.
func TestGuardDialsNoEmbeddedIPv4(t *testing.T) {
	target := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {})
	g := guard(t, nil)
	for _, u := range []string{
		"http://[64:ff9b::a9fe:a9fe]/",
		"http://[2002:7f00:1::]:" + target.port() + "/",
		"http://[::127.0.0.1]:" + target.port() + "/",
		"http://[::ffff:127.0.0.1]:" + target.port() + "/",
		"http://[::ffff:0:7f00:1]:" + target.port() + "/",
	} {
		resp, err := g.Client().Get(u)
		if err == nil {
			resp.Body.Close()
		}
		var refused *Error
		if !errors.As(err, &refused) {
			t.Errorf("%s: %v, not the guard's refusal", u, err)
		}
	}
	if n := target.hits.Load(); n != 0 {
		t.Fatalf("%d requests reached the target", n)
	}
}

// TestLoopbackOnly: the tests' dial hook refuses, and reports, a
// connection off loopback that a guard let through.
func TestLoopbackOnly(t *testing.T) {
	var reported []string
	hook := LoopbackOnly(func(format string, args ...any) { reported = append(reported, fmt.Sprintf(format, args...)) })
	if err := hook("127.0.0.1:80"); err != nil {
		t.Fatal(err)
	}
	if err := hook("[::1]:80"); err != nil {
		t.Fatal(err)
	}
	if err := hook("93.184.216.34:80"); err == nil || len(reported) != 1 {
		t.Fatalf("%v %v", err, reported)
	}
}

// guard is a guard allowing entries whose every connection must stay on
// loopback: a test whose guard is wrong fails, and sends nothing away.
func guard(t *testing.T, allow []string, self ...netip.AddrPort) *Guard {
	t.Helper()
	g, err := New(allow, self)
	if err != nil {
		t.Fatal(err)
	}
	g.BeforeConnect = LoopbackOnly(t.Errorf)
	return g
}

// TestRedirectKeepsHeadersWithTheirOrigin: a redirect to the same origin
// keeps the request's headers; one to another origin (another host name,
// the same address) is followed without them, and no request carries
// Referer, so a secret in a header or the query stays where it was sent.
func TestRedirectKeepsHeadersWithTheirOrigin(t *testing.T) {
	var landed []http.Header
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/same":
			http.Redirect(w, r, "/here", http.StatusFound)
		case "/away":
			http.Redirect(w, r, "http://localhost:"+r.Host[strings.LastIndex(r.Host, ":")+1:]+"/here", http.StatusTemporaryRedirect)
		default:
			landed = append(landed, r.Header.Clone())
		}
	})
	g := guard(t, []string{"127.0.0.1:" + up.port(), "localhost:" + up.port()})
	for _, path := range []string{"/same", "/away"} {
		req, _ := http.NewRequest("GET", up.URL+path+"?api_key=Sup3rS3cretValueXYZ", nil)
		req.Header.Set("X-Api-Key", "Sup3rS3cretValueXYZ")
		req.Header.Set("Authorization", "Bearer Sup3rS3cretValueXYZ")
		req.Header.Set("Cookie", "s=Sup3rS3cretValueXYZ")
		req.Header.Set("Stencil-Hop", "1")
		resp, err := g.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if len(landed) != 2 {
		t.Fatalf("%d requests landed", len(landed))
	}
	if landed[0].Get("X-Api-Key") != "Sup3rS3cretValueXYZ" || landed[0].Get("Referer") != "" {
		t.Fatalf("the same origin: %v", landed[0])
	}
	for name, v := range landed[1] {
		if strings.Contains(strings.Join(v, " "), "Sup3rS3cret") || name == "Referer" {
			t.Errorf("another origin got %s: %v", name, v)
		}
	}
	if landed[1].Get("Stencil-Hop") != "1" {
		t.Errorf("another origin lost the hop count: %v", landed[1])
	}
}
