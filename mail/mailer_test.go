package mail_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"stencil/config"
	"stencil/mail"
	"stencil/mail/smtptest"
	"stencil/store"
	"stencil/store/storetest"
)

func TestMain(m *testing.M) { os.Exit(storetest.Main(m)) }

// outbox is a database with project shop and its template "welcome", and
// a mailer of srv (nil: mail held).
type outbox struct {
	st  *store.Store
	url string
}

func newOutbox(t testing.TB) *outbox {
	t.Helper()
	url := storetest.URL(t)
	st := store.New(storetest.PoolOn(t, url))
	ctx := context.Background()
	u := store.User{Username: "owner", Email: "owner@example.com", PasswordHash: "x", Role: store.RoleRoot}
	if err := st.CreateUser(ctx, &u); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"shop", "blog"} {
		if err := st.CreateProject(ctx, &store.Project{ID: id, Name: id, APIPath: "/" + id}, u.ID); err != nil {
			t.Fatal(err)
		}
	}
	tpl := store.EmailTemplate{ProjectID: "shop", Name: "welcome", Subject: "Welcome, {name}", Text: "Hello {name}, your order {order} is in. {unknown}",
		HTML: "<p>Hello <b>{name}</b></p>"}
	if err := st.CreateEmailTemplate(ctx, &tpl, u.ID); err != nil {
		t.Fatal(err)
	}
	return &outbox{st: st, url: url}
}

func (o *outbox) queue(t testing.TB, project, to string, pairs map[string]any) store.Email {
	t.Helper()
	raw, _ := json.Marshal(pairs)
	m := store.Email{ProjectID: &project, RouteID: "signup", Template: "welcome", Recipients: []string{to}, Pairs: raw, Status: store.EmailQueued}
	if err := o.st.QueueEmail(context.Background(), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func (o *outbox) message(t *testing.T, id int64) store.Email {
	t.Helper()
	m, err := o.st.OutboxMessage(context.Background(), "shop", id)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func mailerOf(t testing.TB, st *store.Store, srv *smtptest.Server, rate int) *mail.Mailer {
	t.Helper()
	cfg := config.Config{MailFrom: "Stencil <noreply@example.com>", MailRate: rate, MailLease: 2 * time.Minute}
	if srv != nil {
		s, err := config.ParseSMTPURL(srv.URL())
		if err != nil {
			t.Fatal(err)
		}
		s.CAFile = srv.CAFile
		cfg.SMTP = s
	}
	m, err := mail.New(st, cfg, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	m.Backoff, m.MaxBackoff, m.Poll = 50*time.Millisecond, 500*time.Millisecond, 50*time.Millisecond
	return m
}

func TestDeliveredRendered(t *testing.T) {
	o := newOutbox(t)
	srv := smtptest.Start(t)
	m := mailerOf(t, o.st, srv, 10)
	e := o.queue(t, "shop", "ada@example.com", map[string]any{"name": "Ada <& Co>", "order": 42})
	if n, err := m.Round(context.Background()); err != nil || n != 1 {
		t.Fatalf("round: %d %v", n, err)
	}
	got := srv.Messages()
	if len(got) != 1 {
		t.Fatalf("the server has %d messages", len(got))
	}
	g := got[0]
	if g.Subject != "Welcome, Ada <& Co>" || g.To[0] != "ada@example.com" || g.From != "noreply@example.com" {
		t.Errorf("headers: %q to %v from %q", g.Subject, g.To, g.From)
	}
	if g.Text != "Hello Ada <& Co>, your order 42 is in. {unknown}" {
		t.Errorf("text: %q", g.Text)
	}
	if g.HTML != "<p>Hello <b>Ada &lt;&amp; Co&gt;</b></p>" {
		t.Errorf("html: %q", g.HTML)
	}
	row := o.message(t, e.ID)
	if row.Status != store.EmailSent || row.SentAt == nil || !strings.HasPrefix(row.Reply, "2") || row.Attempts != 1 ||
		row.Subject == nil || *row.Subject != g.Subject || row.Text == nil || *row.Text != g.Text {
		t.Errorf("the row: %+v", row)
	}
}

func TestTemporaryRefusalRetriedOnce(t *testing.T) {
	o := newOutbox(t)
	srv := smtptest.Start(t)
	var mu sync.Mutex
	refused := 0
	srv.SetRefuse(func(smtptest.Message) error {
		mu.Lock()
		defer mu.Unlock()
		if refused == 0 {
			refused++
			return smtptest.Temporary("try again later")
		}
		return nil
	})
	m := mailerOf(t, o.st, srv, 10)
	e := o.queue(t, "shop", "ada@example.com", map[string]any{"name": "Ada"})
	if _, err := m.Round(context.Background()); err != nil {
		t.Fatal(err)
	}
	row := o.message(t, e.ID)
	if row.Status != store.EmailQueued || !strings.Contains(row.LastError, "451") || !row.NextAttemptAt.After(time.Now().Add(-time.Second)) {
		t.Fatalf("after a 451: %+v", row)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go m.Run(ctx)
	srv.Wait(t, 1, 10*time.Second)
	time.Sleep(300 * time.Millisecond)
	if got := srv.Messages(); len(got) != 1 {
		t.Fatalf("delivered %d times", len(got))
	}
	waitStatus(t, o, e.ID, store.EmailSent)
	if row := o.message(t, e.ID); row.Attempts != 2 || row.LastError != "" {
		t.Errorf("sent after a retry: attempts %d, last error %q", row.Attempts, row.LastError)
	}
}

func waitStatus(t *testing.T, o *outbox, id int64, status string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for o.message(t, id).Status != status {
		if time.Now().After(deadline) {
			t.Fatalf("message %d: %+v, want %s", id, o.message(t, id), status)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestPermanentRefusalFails(t *testing.T) {
	o := newOutbox(t)
	srv := smtptest.Start(t)
	srv.SetRefuse(func(smtptest.Message) error { return smtptest.Permanent("no such mailbox") })
	m := mailerOf(t, o.st, srv, 10)
	e := o.queue(t, "shop", "nobody@example.com", map[string]any{"name": "Ada"})
	if _, err := m.Round(context.Background()); err != nil {
		t.Fatal(err)
	}
	row := o.message(t, e.ID)
	if row.Status != store.EmailFailed || !strings.Contains(row.LastError, "550") || !strings.Contains(row.LastError, "no such mailbox") {
		t.Fatalf("after a 550: %+v", row)
	}
	if _, err := m.Round(context.Background()); err != nil || len(srv.Messages()) != 0 {
		t.Fatalf("a failed message was tried again: %v", err)
	}
}

// A message that cannot be a message fails without reaching the server:
// an address that is none, a line break that would add a header, a
// template the project does not have.
func TestBadMessagesFail(t *testing.T) {
	o := newOutbox(t)
	srv := smtptest.Start(t)
	m := mailerOf(t, o.st, srv, 10)
	cases := []struct {
		to    string
		pairs map[string]any
		want  string
	}{
		{"not-an-address", map[string]any{"name": "Ada"}, "is not an email address"},
		{"ada@example.com\r\nBcc: eve@example.com", map[string]any{"name": "Ada"}, "line break"},
		{"ada@example.com", map[string]any{"name": "Ada\r\nBcc: eve@example.com"}, "the subject holds a line break"},
	}
	var ids []int64
	for _, c := range cases {
		ids = append(ids, o.queue(t, "shop", c.to, c.pairs).ID)
	}
	shop := "shop"
	missing := store.Email{ProjectID: &shop, RouteID: "r", Template: "gone_template", Recipients: []string{"ada@example.com"}, Pairs: []byte(`{}`), Status: store.EmailQueued}
	if err := o.st.QueueEmail(context.Background(), &missing); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Round(context.Background()); err != nil {
		t.Fatal(err)
	}
	for i, c := range cases {
		if row := o.message(t, ids[i]); row.Status != store.EmailFailed || !strings.Contains(row.LastError, c.want) {
			t.Errorf("%q: %s %q, want failed with %q", c.to, row.Status, row.LastError, c.want)
		}
	}
	if row := o.message(t, missing.ID); row.Status != store.EmailFailed || !strings.Contains(row.LastError, `no email template "gone_template"`) {
		t.Errorf("a missing template: %s %q", row.Status, row.LastError)
	}
	if n := len(srv.Messages()); n != 0 {
		t.Errorf("%d bad messages reached the server", n)
	}
}

// The server down for a minute: messages wait and go when it returns.
func TestServerDownAMinute(t *testing.T) {
	t.Parallel()
	o := newOutbox(t)
	srv := smtptest.Start(t)
	srv.Stop()
	m := mailerOf(t, o.st, srv, 10)
	m.MaxBackoff = 5 * time.Second
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go m.Run(ctx)
	var ids []int64
	for i := range 3 {
		ids = append(ids, o.queue(t, "shop", fmt.Sprintf("c%d@example.com", i), map[string]any{"name": i}).ID)
	}
	time.Sleep(time.Minute)
	for _, id := range ids {
		row := o.message(t, id)
		if row.Status != store.EmailQueued || row.Attempts < 2 || !strings.Contains(row.LastError, "connection refused") {
			t.Fatalf("while the server is down: %+v", row)
		}
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	srv.Wait(t, 3, 15*time.Second)
	for _, id := range ids {
		waitStatus(t, o, id, store.EmailSent)
	}
	if n := len(srv.Messages()); n != 3 {
		t.Errorf("delivered %d, want 3", n)
	}
}

// Two instances on one database deliver 500 messages: each once.
func TestTwoInstancesDeliverEachOnce(t *testing.T) {
	o := newOutbox(t)
	srv := smtptest.Start(t)
	const n = 500
	for i := range n {
		o.queue(t, "shop", fmt.Sprintf("c%d@example.com", i), map[string]any{"name": i})
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for range 2 {
		st := store.New(storetest.PoolOn(t, o.url)) // an instance: its own pool
		m := mailerOf(t, st, srv, 100_000)
		m.Batch = 20
		go m.Run(ctx)
	}
	got := srv.Wait(t, n, 60*time.Second)
	time.Sleep(300 * time.Millisecond)
	seen := map[string]int{}
	for _, g := range srv.Messages() {
		seen[g.To[0]]++
	}
	if len(got) != n || len(seen) != n {
		t.Fatalf("%d deliveries to %d recipients, want %d each once", len(srv.Messages()), len(seen), n)
	}
	list, total, err := o.st.Outbox(context.Background(), "shop", store.EmailSent, store.Page{Limit: 1})
	if err != nil || total != n || len(list) != 1 {
		t.Fatalf("sent rows: %d (%v)", total, err)
	}
}

// A project's messages reach at most its rate of recipients a second,
// after a first burst of 50 (the most one message may have); the rest wait
// their turn, and another project's messages do not wait for them. A
// message of 50 recipients takes 50 of the rate.
func TestSendRatePerProject(t *testing.T) {
	o := newOutbox(t)
	srv := smtptest.Start(t)
	ctx := context.Background()
	if err := o.st.CreateEmailTemplate(ctx, &store.EmailTemplate{ProjectID: "blog", Name: "welcome", Subject: "Hi", Text: "Hi"}, 1); err != nil {
		t.Fatal(err)
	}
	m := mailerOf(t, o.st, srv, 10)
	var fifty []string
	for i := range 50 {
		fifty = append(fifty, fmt.Sprintf("f%d@example.com", i))
	}
	raw, _ := json.Marshal(map[string]any{})
	project := "shop"
	many := store.Email{ProjectID: &project, RouteID: "news", Template: "welcome", Recipients: fifty, Pairs: raw, Status: store.EmailQueued}
	if err := o.st.QueueEmail(ctx, &many); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		o.queue(t, "shop", fmt.Sprintf("s%d@example.com", i), nil)
	}
	blog := o.queue(t, "blog", "b@example.com", nil)
	if _, err := m.Round(ctx); err != nil {
		t.Fatal(err)
	}
	if got := len(srv.Messages()); got != 2 {
		t.Errorf("the first round sent %d messages, want shop's one to 50 and blog's 1", got)
	}
	if row, err := o.st.OutboxMessage(ctx, "blog", blog.ID); err != nil || row.Status != store.EmailSent {
		t.Errorf("blog's message: %+v %v", row, err)
	}
	_, waiting, _ := o.st.Outbox(ctx, "shop", store.EmailQueued, store.Page{Limit: 1})
	if waiting != 20 {
		t.Errorf("%d of shop's messages wait, want 20", waiting)
	}
	list, _, _ := o.st.Outbox(ctx, "shop", store.EmailQueued, store.Page{Limit: 50})
	for _, e := range list {
		if e.Attempts != 0 || e.LastError != "" {
			t.Errorf("a message put back for the rate counts an attempt: %+v", e)
			break
		}
	}
}

func TestHeldWithoutServer(t *testing.T) {
	o := newOutbox(t)
	m := mailerOf(t, o.st, nil, 10)
	if !m.Held() || m.Status() != store.EmailHeld {
		t.Fatalf("a mailer without a server: held %v, status %s", m.Held(), m.Status())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	m.Run(ctx) // returns at once: nothing to deliver to
}

// TestLongSubjectWordFolds: a subject with a word of 3,000 characters (a
// pair filled into it) goes out in header lines a strict server takes (at
// most 998 characters; here none over 78), and reads back as it was; so
// does one with non-ASCII text around the long word.
func TestLongSubjectWordFolds(t *testing.T) {
	o := newOutbox(t)
	srv := smtptest.Start(t)
	m := mailerOf(t, o.st, srv, 10)
	names := []string{strings.Repeat("x", 3000), "Zoë " + strings.Repeat("é", 1500) + " done", "Ada"}
	for _, name := range names {
		o.queue(t, "shop", "ada@example.com", map[string]any{"name": name})
	}
	if n, err := m.Round(context.Background()); err != nil || n != 3 {
		t.Fatalf("round: %d %v", n, err)
	}
	got := srv.Messages()
	if len(got) != 3 {
		t.Fatalf("the server has %d messages", len(got))
	}
	for _, g := range got {
		if !slices.Contains(names, strings.TrimPrefix(g.Subject, "Welcome, ")) {
			t.Errorf("a subject read back as %.80q…", g.Subject)
		}
		head, _, _ := strings.Cut(string(g.Raw), "\r\n\r\n")
		for _, line := range strings.Split(head, "\r\n") {
			if len(line) > 78 {
				t.Errorf("a header line of %d characters: %.80q…", len(line), line)
			}
		}
	}
	if s := mail.FoldableSubject("Welcome, Ada"); s != "Welcome, Ada" {
		t.Errorf("a short subject is changed: %q", s)
	}
}
