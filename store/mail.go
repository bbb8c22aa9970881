package store

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// EmailTemplate is a project's message an EMAIL block names (docs/mail.md).
type EmailTemplate struct {
	ProjectID string
	Name      string
	Subject   string
	Text      string
	HTML      string
	CreatedBy *int64
	CreatedAt time.Time
	UpdatedAt time.Time
}

const emailTemplateColumns = "project_id, name, subject, text, html, created_by, created_at, updated_at"

func scanEmailTemplate(row pgx.Row) (EmailTemplate, error) {
	var t EmailTemplate
	err := row.Scan(&t.ProjectID, &t.Name, &t.Subject, &t.Text, &t.HTML, &t.CreatedBy, &t.CreatedAt, &t.UpdatedAt)
	return t, translate(err)
}

// CreateEmailTemplate stores t; a name the project has already is a
// ConflictError.
func (s *Store) CreateEmailTemplate(ctx context.Context, t *EmailTemplate, creator int64) (err error) {
	defer wrap(&err, "create email template")
	return s.change(ctx, func(tx *Store) (Event, error) {
		err := tx.db.QueryRow(ctx, `INSERT INTO email_templates (project_id, name, subject, text, html, created_by)
			VALUES ($1, $2, $3, $4, $5, $6) RETURNING created_by, created_at, updated_at`,
			t.ProjectID, t.Name, t.Subject, t.Text, t.HTML, creator).Scan(&t.CreatedBy, &t.CreatedAt, &t.UpdatedAt)
		return emailTemplateEvent("create", t.ProjectID, t.Name, "email template "+t.Name+" created"), translate(err)
	})
}

func emailTemplateEvent(verb, project, name, summary string) Event {
	return Event{Type: "email_template_" + verb, ProjectID: in(project), Object: name, Summary: summary}
}

// EmailTemplate returns a project's template by name.
func (s *Store) EmailTemplate(ctx context.Context, project, name string) (_ EmailTemplate, err error) {
	defer wrap(&err, "email template", project, name)
	return scanEmailTemplate(s.db.QueryRow(ctx, "SELECT "+emailTemplateColumns+
		" FROM email_templates WHERE project_id = $1 AND name = $2", project, name))
}

// EmailTemplates returns a project's templates by name.
func (s *Store) EmailTemplates(ctx context.Context, project string) (_ []EmailTemplate, err error) {
	defer wrap(&err, "email templates", project)
	rows, err := s.db.Query(ctx, "SELECT "+emailTemplateColumns+" FROM email_templates WHERE project_id = $1 ORDER BY name", project)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (EmailTemplate, error) { return scanEmailTemplate(r) })
}

// UpdateEmailTemplate stores the subject and bodies of t.
func (s *Store) UpdateEmailTemplate(ctx context.Context, t *EmailTemplate) (err error) {
	defer wrap(&err, "update email template")
	return s.change(ctx, func(tx *Store) (Event, error) {
		err := tx.db.QueryRow(ctx, `UPDATE email_templates SET subject = $3, text = $4, html = $5, updated_at = now()
			WHERE project_id = $1 AND name = $2 RETURNING updated_at`, t.ProjectID, t.Name, t.Subject, t.Text, t.HTML).Scan(&t.UpdatedAt)
		return emailTemplateEvent("update", t.ProjectID, t.Name, "email template "+t.Name+" updated"), translate(err)
	})
}

// DeleteEmailTemplate deletes a project's template.
func (s *Store) DeleteEmailTemplate(ctx context.Context, project, name string) (err error) {
	defer wrap(&err, "delete email template", project, name)
	return s.change(ctx, func(tx *Store) (Event, error) {
		tag, err := tx.db.Exec(ctx, "DELETE FROM email_templates WHERE project_id = $1 AND name = $2", project, name)
		if err == nil && tag.RowsAffected() == 0 {
			err = ErrNotFound
		}
		return emailTemplateEvent("delete", project, name, "email template "+name+" deleted"), err
	})
}

// Email statuses (docs/mail.md).
const (
	EmailHeld      = "held"
	EmailQueued    = "queued"
	EmailSent      = "sent"
	EmailFailed    = "failed"
	EmailCancelled = "cancelled"
)

// Kinds of messages: an EMAIL block's, and the platform's own.
const (
	EmailOfRoute  = "route"
	EmailOfInvite = "invite"
	EmailOfReset  = "reset"
)

// Email is a message of the outbox. A route's is rendered from its
// project's template when it is taken (Subject nil until then); the
// platform's own are rendered when queued.
type Email struct {
	ID            int64
	ProjectID     *string
	RouteID       string
	Kind          string
	Template      string
	Recipients    []string
	Pairs         json.RawMessage
	Status        string
	Attempts      int
	NextAttemptAt time.Time
	LastError     string
	Reply         string // the server's answer to the message
	Subject       *string
	Text          *string
	HTML          *string
	QueuedAt      time.Time
	SentAt        *time.Time
	// LinkKeyID and LinkSealed hold, sealed, the one-time link of a
	// platform message while it waits to be sent; its text holds
	// LinkMarker where the link goes. Cleared once it is sent, fails for
	// good or is cancelled.
	LinkKeyID  *string
	LinkSealed []byte
	// Found is the project's template when the message was taken unrendered
	// (nil when the project has none by that name).
	Found *EmailTemplate
}

const emailColumns = `id, project_id, route_id, kind, template, recipients, pairs, status, attempts, next_attempt_at,
	last_error, reply, subject, text, html, queued_at, sent_at, link_key_id, link_sealed`

func emailFields(m *Email) []any {
	return []any{&m.ID, &m.ProjectID, &m.RouteID, &m.Kind, &m.Template, &m.Recipients, &m.Pairs, &m.Status, &m.Attempts,
		&m.NextAttemptAt, &m.LastError, &m.Reply, &m.Subject, &m.Text, &m.HTML, &m.QueuedAt, &m.SentAt, &m.LinkKeyID, &m.LinkSealed}
}

func scanEmail(row pgx.Row) (Email, error) {
	var m Email
	return m, translate(row.Scan(emailFields(&m)...))
}

// QueueEmail puts m in the outbox with its Status (held or queued).
func (s *Store) QueueEmail(ctx context.Context, m *Email) (err error) {
	defer wrap(&err, "queue email")
	if m.Kind == "" {
		m.Kind = EmailOfRoute
	}
	if m.Status == "" {
		m.Status = EmailQueued
	}
	if m.Pairs == nil {
		m.Pairs = json.RawMessage("{}")
	}
	return s.db.QueryRow(ctx, `INSERT INTO outbox (project_id, route_id, kind, template, recipients, pairs, status, subject, text, html, last_error, link_key_id, link_sealed)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) RETURNING id, queued_at, next_attempt_at`,
		m.ProjectID, m.RouteID, m.Kind, m.Template, m.Recipients, string(m.Pairs), m.Status, m.Subject, m.Text, m.HTML, m.LastError, m.LinkKeyID, m.LinkSealed).
		Scan(&m.ID, &m.QueuedAt, &m.NextAttemptAt)
}

// MailBacklogFull says whether project has max messages or more waiting
// to be sent (held or queued), counting no further than max on the
// project's index of waiting messages.
func (s *Store) MailBacklogFull(ctx context.Context, project string, max int) (_ bool, err error) {
	defer wrap(&err, "mail backlog full", project)
	var full bool
	err = s.db.QueryRow(ctx, `SELECT count(*) >= $2 FROM (SELECT 1 FROM outbox WHERE project_id = $1 AND status IN ('held', 'queued') LIMIT $2) w`,
		project, max).Scan(&full)
	return full, err
}

// Outbox returns a page of a project's messages, newest first, of one
// status (all without it), and how many there are.
func (s *Store) Outbox(ctx context.Context, project, status string, p Page) (_ []Email, _ int, err error) {
	defer wrap(&err, "outbox", project)
	const where = " WHERE project_id = $1 AND ($2 = '' OR status = $2)"
	var total int
	if err := s.db.QueryRow(ctx, "SELECT count(*) FROM outbox"+where, project, status).Scan(&total); err != nil {
		return nil, 0, err
	}
	rows, err := s.db.Query(ctx, "SELECT "+emailColumns+" FROM outbox"+where+" ORDER BY id DESC OFFSET $3 LIMIT $4",
		project, status, p.Offset, p.Limit)
	if err != nil {
		return nil, 0, err
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Email, error) { return scanEmail(r) })
	return list, total, err
}

// OutboxMessage returns a project's message by id, with its project's
// template when it is not rendered yet.
func (s *Store) OutboxMessage(ctx context.Context, project string, id int64) (_ Email, err error) {
	defer wrap(&err, "outbox message", project)
	m, err := scanEmail(s.db.QueryRow(ctx, "SELECT "+emailColumns+" FROM outbox WHERE project_id = $1 AND id = $2", project, id))
	if err != nil || m.Subject != nil {
		return m, err
	}
	t, err := s.EmailTemplate(ctx, project, m.Template)
	switch {
	case err == nil:
		m.Found = &t
	case !errors.Is(err, ErrNotFound):
		return m, err
	}
	return m, nil
}

// ErrEmailState refuses to retry or cancel a message in a status that
// does not allow it.
var ErrEmailState = errors.New("the message's status does not allow it")

// RetryEmail queues a project's held or failed message again, or a
// queued one at once.
func (s *Store) RetryEmail(ctx context.Context, project string, id int64) (_ Email, err error) {
	defer wrap(&err, "retry email", project)
	return s.moveEmail(ctx, project, id, "retry", `status = 'queued', next_attempt_at = now(), last_error = ''`, "held", "queued", "failed")
}

// CancelEmail ends a project's held, queued or failed message unsent.
func (s *Store) CancelEmail(ctx context.Context, project string, id int64) (_ Email, err error) {
	defer wrap(&err, "cancel email", project)
	return s.moveEmail(ctx, project, id, "cancel", `status = 'cancelled', link_key_id = NULL, link_sealed = NULL`, "held", "queued", "failed")
}

// moveEmail sets a message's status, an event of type email_<verb>.
func (s *Store) moveEmail(ctx context.Context, project string, id int64, verb, set string, from ...string) (Email, error) {
	var m Email
	err := s.change(ctx, func(tx *Store) (Event, error) {
		var err error
		m, err = scanEmail(tx.db.QueryRow(ctx, "UPDATE outbox SET "+set+
			" WHERE project_id = $1 AND id = $2 AND status = ANY($3) RETURNING "+emailColumns, project, id, from))
		if errors.Is(err, ErrNotFound) {
			var exists bool
			if err := tx.db.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM outbox WHERE project_id = $1 AND id = $2)", project, id).Scan(&exists); err != nil {
				return Event{}, err
			}
			if exists {
				err = ErrEmailState
			}
		}
		what := map[string]string{"retry": "sent again now", "cancel": "cancelled"}[verb]
		return Event{Type: "email_" + verb, ProjectID: in(project), Object: strconv.FormatInt(id, 10),
			Summary: "message " + strconv.FormatInt(id, 10) + " (" + m.Template + " to " + strings.Join(m.Recipients, ", ") + ") " + what}, err
	})
	return m, err
}

// TakeEmails takes up to n queued messages that are due — the platform's
// own first (invitations and resets wait behind no route's mail), then
// routes' messages, oldest due first — skipping those another instance
// holds: each gets an attempt more and a
// next attempt lease from now, so that if this instance dies before it
// says how the delivery went, the message is taken again then. A route's
// message comes with its project's template (Found).
func (s *Store) TakeEmails(ctx context.Context, n int, lease time.Duration) (_ []Email, err error) {
	defer wrap(&err, "take emails")
	rows, err := s.db.Query(ctx, `WITH platform AS (
			SELECT id FROM outbox WHERE status = 'queued' AND kind <> 'route' AND next_attempt_at <= now()
			ORDER BY next_attempt_at, id LIMIT $1 FOR UPDATE SKIP LOCKED
		), route AS (
			SELECT id FROM outbox WHERE status = 'queued' AND kind = 'route' AND next_attempt_at <= now()
			ORDER BY next_attempt_at, id LIMIT $1 - (SELECT count(*) FROM platform) FOR UPDATE SKIP LOCKED
		), taken AS (
			UPDATE outbox SET attempts = attempts + 1, next_attempt_at = now() + $2::interval
			WHERE id IN (SELECT id FROM platform UNION ALL SELECT id FROM route)
			RETURNING `+emailColumns+`)
		SELECT t.*, e.name IS NOT NULL, coalesce(e.subject, ''), coalesce(e.text, ''), coalesce(e.html, '')
		FROM taken t LEFT JOIN email_templates e ON t.subject IS NULL AND e.project_id = t.project_id AND e.name = t.template
		ORDER BY t.kind = 'route', t.id`, n, lease)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Email, error) {
		var m Email
		var found bool
		var t EmailTemplate
		err := r.Scan(append(emailFields(&m), &found, &t.Subject, &t.Text, &t.HTML)...)
		if found {
			t.Name = m.Template
			m.Found = &t
		}
		return m, err
	})
}

// Delivery is how the delivery of a taken message went.
type Delivery struct {
	ID     int64
	Status string // sent, queued (to try again at Next) or failed
	Next   time.Time
	Error  string // why it was not sent
	Reply  string // the server's answer, when sent
	// Subject, Text and HTML are the message as rendered, kept with it.
	Subject, Text, HTML string
}

// LinkMarker stands for a platform message's one-time link in its stored
// text and HTML (docs/mail.md): the mailer puts the link, opened from its
// seal, in its place only in the message it sends.
const LinkMarker = "[one-time link, kept sealed]"

// LinkPlace is where a platform message's link is sealed: its
// recipient's address (the project is the invitation's, none for a
// reset).
func LinkPlace(recipient string) string { return "outbox link " + strings.ToLower(recipient) }

// redacted stands for the body of a message of the platform's own queued
// before links were sealed, once it is delivered or failed.
const redacted = "(removed after delivery: the message held a one-time link)"

// RecordDeliveries stores how the deliveries went, in one statement. A
// message of the platform's own keeps no link once sent or failed: its
// seal is cleared.
func (s *Store) RecordDeliveries(ctx context.Context, ds []Delivery) (err error) {
	defer wrap(&err, "record deliveries")
	if len(ds) == 0 {
		return nil
	}
	n := len(ds)
	ids, statuses, nexts := make([]int64, n), make([]string, n), make([]time.Time, n)
	errs, replies, subjects, texts, htmls := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	for i, d := range ds {
		ids[i], statuses[i], nexts[i], errs[i], replies[i] = d.ID, d.Status, d.Next, d.Error, d.Reply
		subjects[i], texts[i], htmls[i] = d.Subject, d.Text, d.HTML
		if nexts[i].IsZero() {
			nexts[i] = time.Now()
		}
	}
	_, err = s.db.Exec(ctx, `UPDATE outbox o SET status = d.status, next_attempt_at = d.next, last_error = d.error,
			reply = CASE WHEN d.status = 'sent' THEN d.reply ELSE o.reply END,
			sent_at = CASE WHEN d.status = 'sent' THEN now() END,
			subject = coalesce(o.subject, nullif(d.subject, '')),
			text = CASE WHEN d.status <> 'queued' AND o.kind <> 'route' AND o.link_sealed IS NULL THEN $9 ELSE coalesce(o.text, nullif(d.text, '')) END,
			html = CASE WHEN d.status <> 'queued' AND o.kind <> 'route' AND o.link_sealed IS NULL THEN NULL ELSE coalesce(o.html, nullif(d.html, '')) END,
			link_key_id = CASE WHEN d.status = 'queued' THEN o.link_key_id END,
			link_sealed = CASE WHEN d.status = 'queued' THEN o.link_sealed END
		FROM unnest($1::bigint[], $2::text[], $3::timestamptz[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[])
			AS d(id, status, next, error, reply, subject, text, html)
		WHERE o.id = d.id AND o.status = 'queued'`,
		ids, statuses, nexts, errs, replies, subjects, texts, htmls, redacted)
	return err
}

// PutBack returns a taken message unattempted, to be taken at next (a
// project over its send rate).
func (s *Store) PutBack(ctx context.Context, ids []int64, next time.Time) (err error) {
	defer wrap(&err, "put back")
	_, err = s.db.Exec(ctx, `UPDATE outbox SET attempts = greatest(attempts - 1, 0), next_attempt_at = $2
		WHERE id = ANY($1) AND status = 'queued'`, ids, next)
	return err
}

// NextEmailDue is when the next queued message is due (zero: none).
func (s *Store) NextEmailDue(ctx context.Context) (_ time.Time, err error) {
	defer wrap(&err, "next email due")
	var next *time.Time
	err = s.db.QueryRow(ctx, "SELECT min(next_attempt_at) FROM outbox WHERE status = 'queued'").Scan(&next)
	if next == nil {
		return time.Time{}, err
	}
	return *next, err
}

// MailKept is how long delivered and cancelled messages stay in the
// outbox.
const MailKept = 30 * 24 * time.Hour

// tokenHash is how invitation and reset tokens are stored.
func tokenHash(token string) []byte {
	sum := sha256.Sum256([]byte(token))
	return sum[:]
}

// Invitation is an invitation to a project (docs/mail.md).
type Invitation struct {
	ID         int64
	ProjectID  string
	Email      string
	Role       string
	InvitedBy  *int64
	CreatedAt  time.Time
	ExpiresAt  time.Time
	AcceptedAt *time.Time
	RevokedAt  *time.Time
	// LinkKeyID and LinkSealed hold the token, sealed, of an invitation
	// made while mail was held; nil otherwise and once it is used or
	// revoked.
	LinkKeyID  *string
	LinkSealed []byte
}

const invitationColumns = "id, project_id, email, role, invited_by, created_at, expires_at, accepted_at, revoked_at, link_key_id, link_sealed"

func scanInvitation(row pgx.Row) (Invitation, error) {
	var v Invitation
	err := row.Scan(&v.ID, &v.ProjectID, &v.Email, &v.Role, &v.InvitedBy, &v.CreatedAt, &v.ExpiresAt, &v.AcceptedAt, &v.RevokedAt, &v.LinkKeyID, &v.LinkSealed)
	return v, translate(err)
}

// CreateInvitation stores v under token's hash, valid for ttl (with the
// token sealed when v.LinkSealed is set), and queues its message m in the
// same transaction.
func (s *Store) CreateInvitation(ctx context.Context, v *Invitation, token string, ttl time.Duration, m *Email) (err error) {
	defer wrap(&err, "create invitation")
	return s.change(ctx, func(tx *Store) (Event, error) {
		// A new invitation of the address replaces those still pending.
		if _, err := tx.db.Exec(ctx, `UPDATE invitations SET revoked_at = now(), link_key_id = NULL, link_sealed = NULL
			WHERE project_id = $1 AND lower(email) = lower($2) AND accepted_at IS NULL AND revoked_at IS NULL`, v.ProjectID, v.Email); err != nil {
			return Event{}, err
		}
		err := tx.db.QueryRow(ctx, `INSERT INTO invitations (project_id, email, role, token_hash, invited_by, expires_at, link_key_id, link_sealed)
			VALUES ($1, $2, $3, $4, $5, now() + $6::interval, $7, $8) RETURNING id, created_at, expires_at`,
			v.ProjectID, v.Email, v.Role, tokenHash(token), v.InvitedBy, ttl, v.LinkKeyID, v.LinkSealed).Scan(&v.ID, &v.CreatedAt, &v.ExpiresAt)
		if err != nil {
			return Event{}, translate(err)
		}
		return Event{Type: "invitation_create", ProjectID: in(v.ProjectID), Object: strconv.FormatInt(v.ID, 10),
			Summary: v.Email + " invited as " + v.Role}, tx.QueueEmail(ctx, m)
	})
}

// Invitations returns a project's pending invitations, newest first.
func (s *Store) Invitations(ctx context.Context, project string) (_ []Invitation, err error) {
	defer wrap(&err, "invitations", project)
	rows, err := s.db.Query(ctx, "SELECT "+invitationColumns+` FROM invitations
		WHERE project_id = $1 AND accepted_at IS NULL AND revoked_at IS NULL AND expires_at > now() ORDER BY id DESC`, project)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Invitation, error) { return scanInvitation(r) })
}

// RevokeInvitation ends a project's pending invitation.
func (s *Store) RevokeInvitation(ctx context.Context, project string, id int64) (err error) {
	defer wrap(&err, "revoke invitation", project)
	return s.change(ctx, func(tx *Store) (Event, error) {
		var email string
		err := tx.db.QueryRow(ctx, `UPDATE invitations SET revoked_at = now(), link_key_id = NULL, link_sealed = NULL
			WHERE project_id = $1 AND id = $2 AND accepted_at IS NULL AND revoked_at IS NULL RETURNING email`, project, id).Scan(&email)
		return Event{Type: "invitation_revoke", ProjectID: in(project), Object: strconv.FormatInt(id, 10),
			Summary: "invitation of " + email + " revoked"}, translate(err)
	})
}

// ErrTokenGone refuses an invitation or reset token that was used,
// revoked, has expired or never existed.
var ErrTokenGone = errors.New("the link was used, revoked or has expired")

// Invitation returns the pending invitation of token.
func (s *Store) Invitation(ctx context.Context, token string) (_ Invitation, err error) {
	defer wrap(&err, "invitation")
	v, err := scanInvitation(s.db.QueryRow(ctx, "SELECT "+invitationColumns+` FROM invitations
		WHERE token_hash = $1 AND accepted_at IS NULL AND revoked_at IS NULL AND expires_at > now()`, tokenHash(token)))
	if errors.Is(err, ErrNotFound) {
		return v, ErrTokenGone
	}
	return v, err
}

// AcceptInvitation creates u with the invitation's email and role, makes
// it a member of the invitation's project and spends the invitation, in
// one transaction: of two accepting the same token at once, one does.
func (s *Store) AcceptInvitation(ctx context.Context, token string, u *User) (_ Invitation, err error) {
	defer wrap(&err, "accept invitation")
	var v Invitation
	err = s.change(ctx, func(tx *Store) (Event, error) {
		var err error
		v, err = scanInvitation(tx.db.QueryRow(ctx, "SELECT "+invitationColumns+` FROM invitations
			WHERE token_hash = $1 AND accepted_at IS NULL AND revoked_at IS NULL AND expires_at > now() FOR UPDATE`, tokenHash(token)))
		if errors.Is(err, ErrNotFound) {
			return Event{}, ErrTokenGone
		}
		if err != nil {
			return Event{}, err
		}
		u.Email, u.Role = v.Email, v.Role
		if err := tx.createUser(ctx, u); err != nil {
			return Event{}, err
		}
		if _, err := tx.addMember(ctx, v.ProjectID, u.ID, MembershipRole(v.Role)); err != nil {
			return Event{}, err
		}
		_, err = tx.db.Exec(ctx, "UPDATE invitations SET accepted_at = now(), accepted_by = $2, link_key_id = NULL, link_sealed = NULL WHERE id = $1", v.ID, u.ID)
		// The new user is who accepted: the event names them.
		return Event{Type: "invitation_accept", UserID: &u.ID, Username: u.Username, ProjectID: in(v.ProjectID), Object: strconv.FormatInt(v.ID, 10),
			Summary: u.Username + " (" + v.Email + ") joined as " + v.Role}, err
	})
	return v, err
}

// UserByEmail returns the user with email (compared without case).
func (s *Store) UserByEmail(ctx context.Context, email string) (_ User, err error) {
	defer wrap(&err, "user by email", email)
	return scanUser(s.db.QueryRow(ctx, "SELECT "+userColumns+" FROM users WHERE lower(email) = lower($1) ORDER BY id LIMIT 1", email))
}

// ResetMail is the message a reset request mails: "{username}" in its
// subject and bodies stands for the account's username (HTML-escaped in
// HTML), LinkMarker for its link, sealed in LinkKeyID and LinkSealed.
type ResetMail struct {
	Subject, Text, HTML string
	Status              string // held or queued
	LinkKeyID           string
	LinkSealed          []byte
}

// RequestPasswordReset counts the request against limits (as
// ReserveLoginAttempt; locked names a scope over its limit, and then
// nothing else is done) and, when an account has email, stores its reset
// under token's hash, valid for ttl, queues m to it and writes the event,
// all in one transaction. A request for an address with no account runs
// the same statements and commits the same way, writing only the counts:
// the answer's time does not tell whether an account exists.
func (s *Store) RequestPasswordReset(ctx context.Context, limits []LoginLimit, since time.Time, email, token string, ttl time.Duration, m ResetMail) (
	locked *LoginLocked, found bool, err error) {
	defer wrap(&err, "request password reset", email)
	err = s.InTx(ctx, func(tx *Store) error {
		if _, locked, err = tx.reserveAttempts(ctx, limits, since); err != nil || locked != nil {
			return err
		}
		args := append([]any{email, tokenHash(token), ttl, m.Status, m.Subject, m.Text, m.HTML}, eventArgs(ctx, Event{Type: "password_reset_request", Summary: "password reset link mailed to %s"})...)
		args = append(args, m.LinkKeyID, m.LinkSealed)
		link := len(args) - 1
		return tx.db.QueryRow(ctx, `WITH u AS (SELECT id, username, email FROM users WHERE lower(email) = lower($1)),
				reset AS (INSERT INTO password_resets (user_id, token_hash, expires_at) SELECT id, $2, now() + $3::interval FROM u),
				mail AS (INSERT INTO outbox (kind, template, recipients, pairs, status, subject, text, html, link_key_id, link_sealed)
					SELECT 'reset', '', ARRAY[u.email], '{}', $4, replace($5, '{username}', u.username), replace($6, '{username}', u.username),
						replace($7, '{username}', replace(replace(replace(replace(u.username, '&', '&amp;'), '<', '&lt;'), '>', '&gt;'), '"', '&quot;')),
						$`+strconv.Itoa(link)+`, $`+strconv.Itoa(link+1)+`
					FROM u),
				r AS (SELECT u.id::text AS object, u.email AS version FROM u)`+strings.Replace(eventCTE(8), "$13, ", "coalesce(r.object, $13::text), ", 1)+`
			SELECT EXISTS (SELECT 1 FROM u)`, args...).Scan(&found)
	})
	return locked, found, err
}

// ResetPassword spends token and sets its user's password hash, moving
// the credential version on (every token and session of the user ends);
// every other reset of the user still pending is spent with it.
func (s *Store) ResetPassword(ctx context.Context, token, hash string) (_ int64, err error) {
	defer wrap(&err, "reset password")
	var user int64
	err = s.change(ctx, func(tx *Store) (Event, error) {
		err := tx.db.QueryRow(ctx, `SELECT user_id FROM password_resets
			WHERE token_hash = $1 AND used_at IS NULL AND expires_at > now() FOR UPDATE`, tokenHash(token)).Scan(&user)
		if errors.Is(err, pgx.ErrNoRows) {
			return Event{}, ErrTokenGone
		}
		if err != nil {
			return Event{}, err
		}
		if _, err := tx.db.Exec(ctx, "UPDATE password_resets SET used_at = now() WHERE user_id = $1 AND used_at IS NULL", user); err != nil {
			return Event{}, err
		}
		_, name, err := tx.setPassword(ctx, user, hash)
		// Whoever held the link acted as its user.
		return Event{Type: "password_reset", UserID: &user, Username: name, Object: strconv.FormatInt(user, 10), Summary: "password of " + name + " set from a reset link"}, err
	})
	return user, err
}

// PasswordResetPending says whether token is a reset still to be used.
func (s *Store) PasswordResetPending(ctx context.Context, token string) (_ bool, err error) {
	defer wrap(&err, "password reset pending")
	var ok bool
	err = s.db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM password_resets
		WHERE token_hash = $1 AND used_at IS NULL AND expires_at > now())`, tokenHash(token)).Scan(&ok)
	return ok, err
}

// sweepMail deletes messages delivered or cancelled more than MailKept
// ago, and invitations and resets a day past their end.
func (s *Store) sweepMail(ctx context.Context) error {
	if _, err := s.db.Exec(ctx, `DELETE FROM outbox WHERE status IN ('sent', 'cancelled') AND coalesce(sent_at, queued_at) < $1`,
		time.Now().Add(-MailKept)); err != nil {
		return err
	}
	if _, err := s.db.Exec(ctx, "DELETE FROM invitations WHERE expires_at < now() - interval '1 day' AND accepted_at IS NULL"); err != nil {
		return err
	}
	_, err := s.db.Exec(ctx, "DELETE FROM password_resets WHERE expires_at < now() - interval '1 day'")
	return err
}
