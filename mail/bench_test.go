package mail_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"strconv"
	"testing"

	gomail "github.com/wneessen/go-mail"

	"stencil/mail/smtptest"
)

// BenchmarkDeliver delivers b.N queued messages to a local SMTP server
// through Round, as the worker does.
func BenchmarkDeliver(b *testing.B) {
	o := newOutbox(b)
	srv := smtptest.Start(b)
	m := mailerOf(b, o.st, srv, 1_000_000)
	for i := range b.N {
		o.queue(b, "shop", fmt.Sprintf("c%d@example.com", i), map[string]any{"name": "Ada", "order": i})
	}
	b.ResetTimer()
	for sent := 0; sent < b.N; {
		n, err := m.Round(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		sent += n
	}
	b.StopTimer()
	if got := len(srv.Messages()); got != b.N {
		b.Fatalf("delivered %d of %d", got, b.N)
	}
}

// BenchmarkPlainLoop sends b.N messages with go-mail over one connection
// in a loop: what BenchmarkDeliver is measured against.
func BenchmarkPlainLoop(b *testing.B) {
	srv := smtptest.Start(b)
	pem, err := os.ReadFile(srv.CAFile)
	if err != nil {
		b.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pem)
	port, _ := strconv.Atoi(srv.Port())
	c, err := gomail.NewClient("127.0.0.1", gomail.WithPort(port), gomail.WithTLSPolicy(gomail.TLSMandatory), gomail.WithoutNoop(),
		gomail.WithTLSConfig(&tls.Config{ServerName: "127.0.0.1", RootCAs: roots, MinVersion: tls.VersionTLS12}),
		gomail.WithSMTPAuth(gomail.SMTPAuthAutoDiscover), gomail.WithUsername(smtptest.Username), gomail.WithPassword(smtptest.Password))
	if err != nil {
		b.Fatal(err)
	}
	if err := c.DialWithContext(context.Background()); err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	b.ResetTimer()
	for i := range b.N {
		m := gomail.NewMsg()
		_ = m.From("Stencil <noreply@example.com>")
		_ = m.To(fmt.Sprintf("c%d@example.com", i))
		m.Subject("Welcome, Ada")
		m.SetMessageID()
		m.SetDate()
		m.SetBodyString(gomail.TypeTextPlain, fmt.Sprintf("Hello Ada, your order %d is in. {unknown}", i))
		m.AddAlternativeString(gomail.TypeTextHTML, "<p>Hello <b>Ada</b></p>")
		if err := c.Send(m); err != nil {
			b.Fatal(err)
		}
	}
}
