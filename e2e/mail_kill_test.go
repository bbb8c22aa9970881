package e2e

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"stencil/mail/smtptest"
	"stencil/store/storetest"
)

// TestMailSurvivesKill: the service is killed (SIGKILL) while it delivers
// 1,000 queued messages; restarted, it delivers the rest. Every message
// ends sent, and a message goes twice only if it was in flight at the kill
// (taken, its outcome not yet recorded).
func TestMailSurvivesKill(t *testing.T) {
	// Mostly waiting (leases, restarts): it runs beside the journeys.
	t.Parallel()
	const n = 1000
	url, db := seededDB(t,
		`INSERT INTO users (username, email, password_hash, role) VALUES ('owner', 'owner@example.com', 'x', 'ROOT')`,
		`INSERT INTO projects (id, name, api_path) VALUES ('shop', 'Shop', '/shop')`,
		`INSERT INTO email_templates (project_id, name, subject, text) VALUES ('shop', 'receipt', 'Receipt {n}', 'Thanks for order {n}.')`,
		fmt.Sprintf(`INSERT INTO outbox (project_id, route_id, template, recipients, pairs)
			SELECT 'shop', 'orders', 'receipt', ARRAY['c' || i || '@example.com'], jsonb_build_object('n', i) FROM generate_series(1, %d) i`, n))
	ctx := context.Background()
	srv := smtptest.Start(t)
	// A server that takes its time, so that the kill finds messages in
	// flight.
	srv.SetRefuse(func(smtptest.Message) error { time.Sleep(2 * time.Millisecond); return nil })
	vars := map[string]string{"DATABASE_URL": url, "SMTP_URL": srv.URL(), "SMTP_CA_FILE": srv.CAFile, "MAIL_FROM": "Shop <shop@example.com>",
		"MAIL_RATE": "100000", "MAIL_LEASE": "5s"}
	first := startChild(t, vars, 0)
	srv.Wait(t, 250, 60*time.Second)
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-first.done
	accepted := len(srv.Messages())
	var sent, inFlight int
	if err := db.QueryRow(ctx, `SELECT count(*) FILTER (WHERE status = 'sent'), count(*) FILTER (WHERE status = 'queued' AND attempts > 0)
		FROM outbox`).Scan(&sent, &inFlight); err != nil {
		t.Fatal(err)
	}
	if accepted >= n || inFlight == 0 {
		t.Fatalf("the kill came too late to find messages in flight: %d accepted, %d in flight", accepted, inFlight)
	}
	startChild(t, vars, 0)
	deadline := time.Now().Add(90 * time.Second)
	for {
		var left int
		if err := db.QueryRow(ctx, `SELECT count(*) FROM outbox WHERE status <> 'sent'`).Scan(&left); err != nil {
			t.Fatal(err)
		}
		if left == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d messages not sent 90 s after the restart", left)
		}
		time.Sleep(100 * time.Millisecond)
	}
	per := map[string]int{}
	for _, m := range srv.Messages() {
		per[m.To[0]]++
	}
	twice := len(srv.Messages()) - len(per)
	if len(per) != n {
		t.Errorf("%d of %d recipients got their message", len(per), n)
	}
	if twice > inFlight {
		t.Errorf("%d messages went twice, more than the %d in flight at the kill", twice, inFlight)
	}
	t.Logf("killed after %d accepted (%d recorded sent, %d in flight); %d delivered twice", accepted, sent, inFlight, twice)
}

// seededDB is a fresh database for a service in a process of its own, its
// address, and a connection to it on which statements have run.
func seededDB(t *testing.T, statements ...string) (string, *pgx.Conn) {
	t.Helper()
	url := storetest.URL(t)
	ctx := context.Background()
	db, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close(ctx) })
	for _, sql := range statements {
		if _, err := db.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	return url, db
}
