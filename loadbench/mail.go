package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	gomail "github.com/wneessen/go-mail"

	"stencil/mail/smtptest"
)

// mailMessages is how many messages a round of the mail load delivers.
const mailMessages = 1000

// mailVars are the service's mail settings: the bench's own SMTP server,
// and no send rate to speak of (the load is one project's).
func (b *bench) mailVars() []string {
	return []string{"SMTP_URL=" + b.smtp.URL(), "SMTP_CA_FILE=" + b.smtp.CAFile, "MAIL_FROM=Bench <bench@example.com>", "MAIL_RATE=100000", "PUBLIC_URL=http://127.0.0.1"}
}

// mailRound queues mailMessages messages of project bench's template
// "receipt" and waits until the service has delivered them; the rate is
// the server's acceptances a second from the first to the last.
func (b *bench) mailRound(ctx context.Context, round int) (result, error) {
	r := result{name: "mail: 1,000 queued messages delivered"}
	db, err := pgx.Connect(ctx, b.appURL)
	if err != nil {
		return r, err
	}
	defer db.Close(ctx)
	if round == 0 {
		if _, err := db.Exec(ctx, `INSERT INTO email_templates (project_id, name, subject, text, html)
			VALUES ('bench', 'receipt', 'Receipt {n}', 'Thanks for order {n}, {name}.', '<p>Thanks for order <b>{n}</b>, {name}.</p>')`); err != nil {
			return r, err
		}
	}
	before := b.smtp.Count()
	if _, err := db.Exec(ctx, `INSERT INTO outbox (project_id, route_id, template, recipients, pairs)
		SELECT 'bench', 'orders', 'receipt', ARRAY['svc' || $1::int || '-' || i || '@example.com'], jsonb_build_object('n', i, 'name', 'Ada')
		FROM generate_series(1, $2::int) i`, round, mailMessages); err != nil {
		return r, err
	}
	deadline := time.Now().Add(5 * time.Minute)
	// Counting takes the server's lock a moment, 20 times a second.
	for b.smtp.Count() < before+mailMessages {
		if time.Now().After(deadline) {
			return r, fmt.Errorf("the service delivered %d of %d messages in 5 minutes", b.smtp.Count()-before, mailMessages)
		}
		time.Sleep(50 * time.Millisecond)
	}
	got := b.smtp.Since(before)
	r.rps = float64(len(got)-1) / got[len(got)-1].At.Sub(got[0].At).Seconds()
	// The last outcomes are written just after the last message goes.
	var left int
	for wait := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if err := db.QueryRow(ctx, "SELECT count(*) FROM outbox WHERE project_id = 'bench' AND status <> 'sent'").Scan(&left); err != nil {
			return r, err
		}
		if left == 0 || time.Now().After(wait) {
			break
		}
	}
	r.errors = left + b.smtp.Count() - before - mailMessages // unsent, and sent twice
	return r, nil
}

// mailLoop sends the same messages with the same library over one
// connection in a plain loop: the anchor of the mail load. The loop runs
// in a process of its own, as the service does: in the bench's process,
// beside the server, it would pass messages between goroutines of one
// process, which no sender of the service can.
func (b *bench) mailLoop(ctx context.Context, round int) (result, error) {
	r := result{name: "go-mail loop, one connection"}
	self, err := os.Executable()
	if err != nil {
		return r, err
	}
	before := b.smtp.Count()
	out, err := exec.CommandContext(ctx, self, "-mail-loop", strings.Join([]string{b.smtp.Addr, b.smtp.CAFile, strconv.Itoa(round)}, ",")).CombinedOutput()
	if err != nil {
		return r, fmt.Errorf("the mail loop: %v: %s", err, out)
	}
	got := b.smtp.Since(before)
	if len(got) != mailMessages {
		return r, fmt.Errorf("the loop delivered %d of %d messages", len(got), mailMessages)
	}
	r.rps = float64(len(got)-1) / got[len(got)-1].At.Sub(got[0].At).Seconds()
	return r, nil
}

// sendLoop is the anchor's process: spec is the server's address, the
// file of its certificate and the round, comma-separated.
func sendLoop(spec string) error {
	parts := strings.Split(spec, ",")
	if len(parts) != 3 {
		return fmt.Errorf("-mail-loop takes address,ca-file,round, not %q", spec)
	}
	pem, err := os.ReadFile(parts[1])
	if err != nil {
		return err
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pem)
	host, portText, err := net.SplitHostPort(parts[0])
	if err != nil {
		return err
	}
	port, _ := strconv.Atoi(portText)
	c, err := gomail.NewClient(host, gomail.WithPort(port), gomail.WithTLSPolicy(gomail.TLSMandatory), gomail.WithoutNoop(),
		gomail.WithTLSConfig(&tls.Config{ServerName: host, RootCAs: roots, MinVersion: tls.VersionTLS12}),
		gomail.WithSMTPAuth(gomail.SMTPAuthAutoDiscover), gomail.WithUsername(smtptest.Username), gomail.WithPassword(smtptest.Password))
	if err != nil {
		return err
	}
	if err := c.DialWithContext(context.Background()); err != nil {
		return err
	}
	defer c.Close()
	for i := 1; i <= mailMessages; i++ {
		m := gomail.NewMsg()
		if err := m.From("Bench <bench@example.com>"); err != nil {
			return err
		}
		if err := m.To(fmt.Sprintf("loop%s-%d@example.com", parts[2], i)); err != nil {
			return err
		}
		m.Subject(fmt.Sprintf("Receipt %d", i))
		m.SetMessageID()
		m.SetDate()
		m.SetBodyString(gomail.TypeTextPlain, fmt.Sprintf("Thanks for order %d, Ada.", i))
		m.AddAlternativeString(gomail.TypeTextHTML, fmt.Sprintf("<p>Thanks for order <b>%d</b>, Ada.</p>", i))
		if err := c.Send(m); err != nil {
			return err
		}
	}
	return nil
}
