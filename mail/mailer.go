package mail

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"log/slog"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"time"

	gomail "github.com/wneessen/go-mail"
	"golang.org/x/time/rate"

	"stencil/config"
	"stencil/engine"
	"stencil/flow"
	"stencil/store"
	"stencil/vault"
)

// Mailer delivers the outbox: every instance runs one, and they never take
// the same message (store.TakeEmails).
type Mailer struct {
	store  *store.Store
	server *config.SMTPServer // nil: mail is held
	from   string
	rate   int
	log    *slog.Logger
	tls    *tls.Config
	// vault opens the one-time links of the platform's messages.
	vault *vault.Vault

	// Batch is how many messages a round takes; Lease how long a taken
	// message is this instance's; Backoff and MaxBackoff the first and the
	// longest wait after a temporary failure; GiveUp how long after it was
	// queued a message stops being retried; Poll how often the outbox is
	// looked at when nothing wakes the worker.
	Batch      int
	Lease      time.Duration
	Backoff    time.Duration
	MaxBackoff time.Duration
	GiveUp     time.Duration
	Poll       time.Duration

	// conn is the connection kept between rounds, last used at connUsed
	// (Run's goroutine only).
	conn     *gomail.Client
	connUsed time.Time

	wake     chan struct{}
	mu       sync.Mutex
	limiters map[string]*rate.Limiter // by project
}

// New returns the mailer of cfg's server (nil: mail is held); secrets
// opens the links the platform's messages keep sealed.
func New(st *store.Store, cfg config.Config, secrets *vault.Vault, log *slog.Logger) (*Mailer, error) {
	m := &Mailer{store: st, server: cfg.SMTP, from: cfg.MailFrom, rate: cfg.MailRate, log: log, vault: secrets,
		Batch: 250, Lease: cfg.MailLease, Backoff: 30 * time.Second, MaxBackoff: time.Hour, GiveUp: 24 * time.Hour, Poll: time.Second,
		wake: make(chan struct{}, 1), limiters: map[string]*rate.Limiter{}}
	if m.server == nil {
		return m, nil
	}
	m.tls = &tls.Config{ServerName: m.server.Host, MinVersion: tls.VersionTLS12}
	if m.server.CAFile != "" {
		pem, err := os.ReadFile(m.server.CAFile)
		if err != nil {
			return nil, fmt.Errorf("SMTP_CA_FILE: %w", err)
		}
		roots, err := x509.SystemCertPool()
		if err != nil {
			roots = x509.NewCertPool()
		}
		if !roots.AppendCertsFromPEM(pem) {
			return nil, errors.New("SMTP_CA_FILE holds no PEM certificate")
		}
		m.tls.RootCAs = roots
	}
	return m, nil
}

// Held says whether mail is held: no server is configured.
func (m *Mailer) Held() bool { return m.server == nil }

// Status is the status a new message starts with.
func (m *Mailer) Status() string {
	if m.Held() {
		return store.EmailHeld
	}
	return store.EmailQueued
}

// Wake makes the worker look at the outbox now (a message was queued).
func (m *Mailer) Wake() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// Run delivers due messages until ctx ends. With no server it does
// nothing: messages stay held.
func (m *Mailer) Run(ctx context.Context) {
	if m.Held() {
		return
	}
	defer m.hangUp()
	// A round's last outcomes are written while the next round takes its
	// messages (they are leased: it cannot take them again).
	var recorded <-chan error
	finish := func() error {
		if recorded == nil {
			return nil
		}
		err := <-recorded
		recorded = nil
		return err
	}
	defer func() { _ = finish() }()
	logErr := func(err error) {
		if err != nil && ctx.Err() == nil {
			m.log.Error("mail delivery", "err", err)
		}
	}
	next := m.take(ctx)
	for ctx.Err() == nil {
		cur := next
		if cur.err == nil && len(cur.taken) > 0 {
			// The next batch is taken while this one goes out.
			prefetch := make(chan batch, 1)
			go func() { prefetch <- m.take(ctx) }()
			rec, err := m.round(ctx, cur, finish)
			recorded = rec
			logErr(err)
			next = <-prefetch
			continue
		}
		logErr(cur.err)
		logErr(finish())
		wait := m.Poll
		if next, err := m.store.NextEmailDue(ctx); err == nil && !next.IsZero() {
			wait = min(wait, max(time.Until(next), 10*time.Millisecond))
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
		case <-m.wake:
		case <-t.C:
		}
		t.Stop()
		next = m.take(ctx)
	}
}

// batch is what a take got: due messages, leased from at.
type batch struct {
	at    time.Time
	taken []store.Email
	err   error
}

// take takes a batch of due messages.
func (m *Mailer) take(ctx context.Context) batch {
	b := batch{at: time.Now()}
	b.taken, b.err = m.store.TakeEmails(ctx, m.Batch, m.Lease)
	return b
}

// recordEvery is how many outcomes a round records at once: a message
// the server accepted but whose outcome the process did not record before
// it died is sent again, so a round records as it goes.
const recordEvery = 50

// Round takes a batch of due messages and delivers them over one
// connection, recording how each went every recordEvery messages; it
// returns how many it took once every outcome is recorded.
func (m *Mailer) Round(ctx context.Context) (int, error) {
	b := m.take(ctx)
	if b.err != nil || len(b.taken) == 0 {
		return 0, b.err
	}
	recorded, err := m.round(ctx, b, func() error { return nil })
	return len(b.taken), errors.Join(err, <-recorded)
}

// round delivers a batch and returns before its last outcomes are
// written: recorded tells when they are. Once its messages went out it
// calls before, which waits for the previous round's outcomes.
func (m *Mailer) round(ctx context.Context, b batch, before func() error) (<-chan error, error) {
	start, taken := b.at, b.taken
	// Outcomes are recorded even if ctx ends meanwhile: a message the
	// server accepted is not to be sent again.
	rec, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	var (
		pending []store.Delivery
		ready   []*gomail.Msg
		owners  []int
	)
	// A recorder writes the outcomes while the next messages go out.
	chunks := make(chan []store.Delivery, 4)
	recorded := make(chan error, 1)
	var later []int64
	var laterAt time.Time
	go func() {
		defer cancel()
		var errs []error
		for c := range chunks {
			errs = append(errs, m.store.RecordDeliveries(rec, c))
		}
		if len(later) > 0 {
			if laterAt.IsZero() {
				laterAt = time.Now()
			}
			errs = append(errs, m.store.PutBack(rec, later, laterAt))
		}
		recorded <- errors.Join(errs...)
	}()
	record := func(d store.Delivery, force bool) {
		if d.ID != 0 {
			pending = append(pending, d)
		}
		if len(pending) >= recordEvery || force && len(pending) > 0 {
			chunks <- pending
			pending = nil
		}
	}
	rendered := make([]Message, len(taken))
	for i, e := range taken {
		if wait := m.reserve(e); wait > 0 {
			later = append(later, e.ID)
			if at := time.Now().Add(wait); at.After(laterAt) {
				laterAt = at
			}
			continue
		}
		msg, r, err := m.compose(e)
		rendered[i] = r
		if err != nil {
			record(store.Delivery{ID: e.ID, Status: store.EmailFailed, Error: err.Error(), Subject: r.Subject, Text: r.Text, HTML: r.HTML}, false)
			continue
		}
		ready, owners = append(ready, msg), append(owners, i)
	}
	if len(ready) > 0 {
		m.send(ctx, ready, start.Add(m.Lease/2), func(k int, reply string, err error) {
			e, r := taken[owners[k]], rendered[owners[k]]
			d := store.Delivery{ID: e.ID, Subject: r.Subject, Text: r.Text, HTML: r.HTML}
			switch {
			case err == nil:
				d.Status, d.Reply = store.EmailSent, reply
			case errors.Is(err, errLeaseEnds):
				later = append(later, e.ID)
				return
			default:
				m.retryOrFail(&d, e, err)
			}
			record(d, false)
		})
	}
	record(store.Delivery{}, true)
	close(chunks) // the recorder reads later and laterAt only after this
	return recorded, before()
}

// reserve takes e's recipients from its project's send rate (MAIL_RATE
// counts recipients, not messages); it returns how long the message must
// wait instead (and then takes nothing).
func (m *Mailer) reserve(e store.Email) time.Duration {
	// The platform's own messages (an invitation names its project) have
	// a lane of their own: a project's flood of route mail never holds
	// them back.
	project := ""
	if e.ProjectID != nil && e.Kind == store.EmailOfRoute {
		project = *e.ProjectID
	}
	m.mu.Lock()
	l := m.limiters[project]
	if l == nil {
		// A message of more recipients than a second's rate waits until
		// it may reach them all.
		l = rate.NewLimiter(rate.Limit(m.rate), max(m.rate, engine.MaxRecipients))
		m.limiters[project] = l
	}
	m.mu.Unlock()
	r := l.ReserveN(time.Now(), min(max(len(e.Recipients), 1), l.Burst()))
	if d := r.Delay(); d > 0 {
		r.Cancel()
		return d
	}
	return 0
}

// compose renders e and builds its message; an error is permanent.
func (m *Mailer) compose(e store.Email) (*gomail.Msg, Message, error) {
	var r Message
	switch {
	case e.Subject != nil:
		r.Subject = *e.Subject
		if e.Text != nil {
			r.Text = *e.Text
		}
		if e.HTML != nil {
			r.HTML = *e.HTML
		}
	case e.Found == nil:
		return nil, r, fmt.Errorf("the project has no email template %q", e.Template)
	default:
		var pairs map[string]any
		if err := json.Unmarshal(e.Pairs, &pairs); err != nil {
			return nil, r, fmt.Errorf("the message's pairs: %w", err)
		}
		r = Render(e.Found.Subject, e.Found.Text, e.Found.HTML, pairs)
	}
	if err := CheckHeader(r.Subject); err != nil {
		return nil, r, fmt.Errorf("the subject %w", err)
	}
	text, htmlBody, err := m.withLink(e, r)
	if err != nil {
		return nil, r, err
	}
	msg := gomail.NewMsg()
	if err := msg.From(m.from); err != nil {
		return nil, r, fmt.Errorf("MAIL_FROM: %w", err)
	}
	for _, to := range e.Recipients {
		if err := CheckAddress(to); err != nil {
			return nil, r, fmt.Errorf("recipient %q %w", flow.Printable(to), err)
		}
	}
	if err := msg.To(e.Recipients...); err != nil {
		return nil, r, fmt.Errorf("recipients: %w", err)
	}
	msg.Subject(FoldableSubject(r.Subject))
	msg.SetMessageID()
	msg.SetDate()
	msg.SetBodyString(gomail.TypeTextPlain, text)
	if htmlBody != "" {
		msg.AddAlternativeString(gomail.TypeTextHTML, htmlBody)
	}
	return msg, r, nil
}

// withLink is r's text and HTML as sent: a platform message's one-time
// link, opened from its seal, where store.LinkMarker stands for it. The
// link is never in r, which is what the outbox keeps.
func (m *Mailer) withLink(e store.Email, r Message) (text, htmlBody string, err error) {
	if !strings.Contains(r.Text+r.HTML, store.LinkMarker) || e.Kind == store.EmailOfRoute {
		return r.Text, r.HTML, nil
	}
	if e.LinkKeyID == nil || m.vault == nil || len(e.Recipients) != 1 {
		return "", "", errors.New("its one-time link was removed; ask for a new one")
	}
	project := ""
	if e.ProjectID != nil {
		project = *e.ProjectID
	}
	link, err := m.vault.OpenLink(*e.LinkKeyID, project, store.LinkPlace(e.Recipients[0]), e.LinkSealed)
	if err != nil {
		return "", "", fmt.Errorf("its one-time link cannot be opened: %w", err)
	}
	return strings.ReplaceAll(r.Text, store.LinkMarker, link),
		strings.ReplaceAll(r.HTML, store.LinkMarker, html.EscapeString(link)), nil
}

// errLeaseEnds puts back a message its round had no time left to send:
// another instance may take it once its lease ends.
var errLeaseEnds = errors.New("the round's time ran out")

// send delivers msgs over one connection (kept for the next round while
// it is fresh), telling done how each went. It stops at by, half the
// messages' lease, so that no other instance takes a message while this
// one may still be sending it.
func (m *Mailer) send(ctx context.Context, msgs []*gomail.Msg, by time.Time, done func(k int, reply string, err error)) {
	c, err := m.connection(ctx)
	if err != nil {
		for k := range msgs {
			done(k, "", err) // no connection: temporary
		}
		return
	}
	for k, msg := range msgs {
		if ctx.Err() != nil || time.Now().After(by) {
			done(k, "", errLeaseEnds)
			continue
		}
		if err := c.Send(msg); err != nil {
			var se *gomail.SendError
			if !errors.As(err, &se) || se.ErrorCode() == 0 {
				// The connection failed rather than the message: the rest
				// wait for the next round, on a new connection.
				m.hangUp()
				done(k, "", err)
				for j := k + 1; j < len(msgs); j++ {
					done(j, "", errLeaseEnds)
				}
				return
			}
			done(k, "", err)
			continue
		}
		done(k, msg.ServerResponse(), nil)
	}
	m.connUsed = time.Now()
}

// connectionIdle is how long an unused connection is kept for the next
// round: servers close idle ones, and a round should not find it dead.
const connectionIdle = 5 * time.Second

// connection is the open connection if it was used within connectionIdle,
// otherwise a new one.
func (m *Mailer) connection(ctx context.Context) (*gomail.Client, error) {
	if m.conn != nil && time.Since(m.connUsed) < connectionIdle {
		return m.conn, nil
	}
	m.hangUp()
	c, err := m.client()
	if err != nil {
		return nil, err
	}
	dial, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := c.DialWithContext(dial); err != nil {
		return nil, err
	}
	m.conn, m.connUsed = c, time.Now()
	return c, nil
}

// hangUp closes the kept connection.
func (m *Mailer) hangUp() {
	if m.conn != nil {
		_ = m.conn.Close()
		m.conn = nil
	}
}

// client is a client of the configured server.
func (m *Mailer) client() (*gomail.Client, error) {
	s := m.server
	opts := []gomail.Option{gomail.WithPort(s.Port), gomail.WithTimeout(30 * time.Second), gomail.WithoutNoop(), gomail.WithTLSConfig(m.tls)}
	switch {
	case s.ImplicitTLS:
		opts = append(opts, gomail.WithSSL())
	case s.NoTLS:
		opts = append(opts, gomail.WithTLSPolicy(gomail.NoTLS))
	default:
		opts = append(opts, gomail.WithTLSPolicy(gomail.TLSMandatory))
	}
	if s.Username != "" {
		opts = append(opts, gomail.WithSMTPAuth(gomail.SMTPAuthAutoDiscover), gomail.WithUsername(s.Username), gomail.WithPassword(s.Password))
	}
	return gomail.NewClient(s.Host, opts...)
}

// retryOrFail sets d for a delivery of e that failed with err: failed if
// the server refused it for good, or if it was queued GiveUp ago;
// otherwise queued again after a back-off that doubles with each attempt
// (with jitter), up to MaxBackoff.
func (m *Mailer) retryOrFail(d *store.Delivery, e store.Email, err error) {
	d.Error = flow.Printable(err.Error())
	var se *gomail.SendError
	if errors.As(err, &se) && !se.IsTemp() && se.ErrorCode() >= 500 {
		d.Status = store.EmailFailed
		return
	}
	if time.Since(e.QueuedAt) >= m.GiveUp {
		d.Status, d.Error = store.EmailFailed, "gave up after "+m.GiveUp.String()+": "+d.Error
		return
	}
	wait := m.Backoff << min(max(e.Attempts-1, 0), 20)
	if wait > m.MaxBackoff || wait <= 0 {
		wait = m.MaxBackoff
	}
	wait = wait/2 + rand.N(wait/2+1)
	d.Status, d.Next = store.EmailQueued, time.Now().Add(wait)
}

// Rendered is message m as it was or would be sent: stored once it was
// taken, otherwise rendered from its project's template now (Missing: the
// template is gone).
type Rendered struct {
	Message
	Missing bool
}

// RenderedOf is m as it was or would be sent.
func RenderedOf(m store.Email) Rendered {
	var r Rendered
	switch {
	case m.Subject != nil:
		r.Subject = *m.Subject
		if m.Text != nil {
			r.Text = *m.Text
		}
		if m.HTML != nil {
			r.HTML = *m.HTML
		}
	case m.Found != nil:
		var pairs map[string]any
		_ = json.Unmarshal(m.Pairs, &pairs)
		r.Message = Render(m.Found.Subject, m.Found.Text, m.Found.HTML, pairs)
	default:
		r.Missing = true
	}
	return r
}
