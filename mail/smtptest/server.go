// Package smtptest is a real SMTP server for tests: it speaks SMTP over
// TCP on a loopback port, requires STARTTLS (its own certificate, written
// for the client to trust) and AUTH PLAIN, keeps what it accepts, and can
// be told to refuse messages, stop and start again on the same port.
package smtptest

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	mathrand "math/rand/v2"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// Username and Password are what the server accepts for AUTH PLAIN.
const (
	Username = "stencil"
	Password = "mail-pass-1"
)

// Message is a message the server accepted.
type Message struct {
	From       string
	To         []string
	Subject    string
	Text, HTML string
	Header     mail.Header
	Raw        []byte
	At         time.Time
}

// Server is a running test server.
type Server struct {
	Addr   string // 127.0.0.1:port
	CAFile string // PEM of the certificate it presents

	// Refuse, when set, answers each message at DATA's end: an
	// *smtp.SMTPError refuses it (4xx temporarily, 5xx for good), nil
	// accepts it.
	Refuse func(m Message) error

	tls      *tls.Config
	dir      string
	mu       sync.Mutex
	srv      *smtp.Server
	ln       net.Listener
	messages []Message
}

// Start starts a server on a free loopback port; it stops with the test.
func Start(t testing.TB) *Server {
	t.Helper()
	s, err := New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// New starts a server on a free loopback port, for programs other than
// tests (the load harness); Close stops it.
func New() (*Server, error) {
	s := &Server{}
	cert, pemBytes, err := selfSigned()
	if err != nil {
		return nil, err
	}
	s.tls = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	dir, err := os.MkdirTemp("", "smtptest-")
	if err != nil {
		return nil, err
	}
	s.dir = dir
	s.CAFile = filepath.Join(dir, "smtp-ca.pem")
	if err := os.WriteFile(s.CAFile, pemBytes, 0o644); err != nil {
		return nil, err
	}
	ln, err := listenBelowEphemeral()
	if err != nil {
		return nil, err
	}
	s.Addr = ln.Addr().String()
	s.serve(ln)
	return s, nil
}

// listenBelowEphemeral listens on a free loopback port below the
// kernel's ephemeral range, so that while the server is stopped no
// outgoing connection and no listener on port 0 is handed its port, and
// Restart gets it back; where that range cannot be read, any free port.
func listenBelowEphemeral() (net.Listener, error) {
	low := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil {
				low = n
			}
		}
	}
	if low > 12000 {
		for range 100 {
			port := 10000 + mathrand.IntN(low-10000)
			if ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port))); err == nil {
				return ln, nil
			}
		}
	}
	return net.Listen("tcp", "127.0.0.1:0")
}

// Close stops the server and removes its certificate file.
func (s *Server) Close() {
	s.Stop()
	if s.dir != "" {
		_ = os.RemoveAll(s.dir)
	}
}

// URL is the server's SMTP_URL, with its user and password.
func (s *Server) URL() string {
	return "smtp://" + Username + ":" + Password + "@" + s.Addr
}

// Port is the server's port.
func (s *Server) Port() string {
	_, port, _ := net.SplitHostPort(s.Addr)
	return port
}

func (s *Server) serve(ln net.Listener) {
	srv := smtp.NewServer(backend{s})
	srv.Domain = "localhost"
	srv.TLSConfig = s.tls
	srv.ReadTimeout, srv.WriteTimeout = 30*time.Second, 30*time.Second
	srv.MaxMessageBytes = 10 << 20
	srv.MaxRecipients = 100
	s.mu.Lock()
	s.srv, s.ln = srv, ln
	s.mu.Unlock()
	go func() { _ = srv.Serve(ln) }()
}

// Stop closes the listener and every connection.
func (s *Server) Stop() {
	s.mu.Lock()
	srv, ln := s.srv, s.ln
	s.srv, s.ln = nil, nil
	s.mu.Unlock()
	if ln != nil {
		_ = ln.Close() // Serve may not have begun: Close alone would miss it
	}
	if srv != nil {
		_ = srv.Close()
	}
}

// Restart listens again on the same address.
func (s *Server) Restart() error {
	ln, err := net.Listen("tcp", s.Addr)
	if err != nil {
		return err
	}
	s.serve(ln)
	return nil
}

// Messages returns what the server accepted so far.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.messages...)
}

// Count is how many messages the server accepted so far.
func (s *Server) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.messages)
}

// Since returns the messages accepted after the first n.
func (s *Server) Since(n int) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.messages[min(n, len(s.messages)):]...)
}

// Wait waits until the server has accepted n messages, or fails t.
func (s *Server) Wait(t testing.TB, n int, within time.Duration) []Message {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		if s.Count() >= n {
			return s.Messages()
		}
		if time.Now().After(deadline) {
			t.Fatalf("the SMTP server accepted %d messages in %s, want %d", s.Count(), within, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

type backend struct{ s *Server }

func (b backend) NewSession(c *smtp.Conn) (smtp.Session, error) {
	return &session{s: b.s, conn: c}, nil
}

type session struct {
	s      *Server
	conn   *smtp.Conn
	authed bool
	from   string
	to     []string
}

var errAuthFirst = &smtp.SMTPError{Code: 530, EnhancedCode: smtp.EnhancedCode{5, 7, 0}, Message: "Authentication required"}

func (ss *session) AuthMechanisms() []string { return []string{sasl.Plain} }

func (ss *session) Auth(mech string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(identity, username, password string) error {
		if username != Username || password != Password {
			return errors.New("invalid username or password")
		}
		ss.authed = true
		return nil
	}), nil
}

func (ss *session) Mail(from string, _ *smtp.MailOptions) error {
	if _, ok := ss.conn.TLSConnectionState(); !ok {
		return &smtp.SMTPError{Code: 530, EnhancedCode: smtp.EnhancedCode{5, 7, 0}, Message: "Must issue a STARTTLS command first"}
	}
	if !ss.authed {
		return errAuthFirst
	}
	ss.from = from
	return nil
}

func (ss *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	ss.to = append(ss.to, to)
	return nil
}

func (ss *session) Data(r io.Reader) error {
	raw, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	m, err := parse(raw)
	if err != nil {
		return &smtp.SMTPError{Code: 554, EnhancedCode: smtp.EnhancedCode{5, 6, 0}, Message: "unreadable message: " + err.Error()}
	}
	m.From, m.To, m.At = ss.from, append([]string(nil), ss.to...), time.Now()
	ss.s.mu.Lock()
	refuse := ss.s.Refuse
	ss.s.mu.Unlock()
	if refuse != nil {
		if err := refuse(m); err != nil {
			return err
		}
	}
	ss.s.mu.Lock()
	ss.s.messages = append(ss.s.messages, m)
	ss.s.mu.Unlock()
	return nil
}

// SetRefuse sets Refuse safely while the server runs.
func (s *Server) SetRefuse(f func(m Message) error) {
	s.mu.Lock()
	s.Refuse = f
	s.mu.Unlock()
}

func (ss *session) Reset() { ss.from, ss.to = "", nil }

func (ss *session) Logout() error { return nil }

// Temporary and Permanent are refusals for Refuse.
func Temporary(msg string) error {
	return &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: msg}
}

func Permanent(msg string) error {
	return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: msg}
}

// parse reads a message's subject and its plain and HTML bodies.
func parse(raw []byte) (Message, error) {
	msg, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		return Message{}, err
	}
	m := Message{Header: msg.Header, Raw: raw}
	if m.Subject, err = new(mime.WordDecoder).DecodeHeader(msg.Header.Get("Subject")); err != nil {
		return m, err
	}
	err = readPart(&m, msg.Header.Get("Content-Type"), msg.Header.Get("Content-Transfer-Encoding"), msg.Body)
	return m, err
}

func readPart(m *Message, contentType, encoding string, body io.Reader) error {
	media, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		return fmt.Errorf("content type %q: %w", contentType, err)
	}
	if strings.HasPrefix(media, "multipart/") {
		mr := multipart.NewReader(body, params["boundary"])
		for {
			p, err := mr.NextRawPart()
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return err
			}
			if err := readPart(m, p.Header.Get("Content-Type"), p.Header.Get("Content-Transfer-Encoding"), p); err != nil {
				return err
			}
		}
	}
	if strings.EqualFold(encoding, "quoted-printable") {
		body = quotedprintable.NewReader(body)
	}
	b, err := io.ReadAll(body)
	if err != nil {
		return err
	}
	switch media {
	case "text/plain":
		m.Text = strings.ReplaceAll(string(b), "\r\n", "\n")
	case "text/html":
		m.HTML = strings.ReplaceAll(string(b), "\r\n", "\n")
	}
	return nil
}

// selfSigned makes a certificate for localhost and 127.0.0.1.
func selfSigned() (tls.Certificate, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: "localhost"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA:         true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pemBytes, nil
}
