// Package accounts is how people get in (docs/security.md, docs/mail.md):
// signing in under a throttle, and the one-time links mailed to them — an
// invitation to a project, a password reset — with their tokens, the
// messages that carry them (each link kept sealed until it is sent), how
// long they stay good and how often a reset may be asked for. Handlers
// bind the requests and render the answers; accounts speaks no HTTP and
// decides no rights (its callers check who may invite whom).
package accounts

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"html"
	"math"
	"net/url"
	"strings"
	"time"

	"stencil/auth"
	"stencil/mail"
	"stencil/store"
	"stencil/vault"
)

// How long invitation and reset links stay good (docs/mail.md).
const (
	InvitationTTL = 7 * 24 * time.Hour
	ResetTTL      = time.Hour
)

// Sign-ins and reset requests are throttled over a sliding window of
// Window (rows in PostgreSQL, shared by every instance): failures per
// login name as typed and client address, per login name, per address;
// reset requests per address typed and client, per address typed, per
// client.
const (
	Window            = 15 * time.Minute
	LoginAccountLimit = 5  // per login name and address
	LoginNameLimit    = 50 // per login name, from anywhere
	LoginAddressLimit = 30 // per address, whatever the name
	resetPairLimit    = 5
	resetEmailLimit   = 20
	resetAddressLimit = 30
)

// Service signs people in and makes their one-time links.
type Service struct {
	store  *store.Store
	vault  *vault.Vault
	mail   *mail.Mailer
	hasher *auth.Hasher
	// publicURL is PUBLIC_URL: links are made on it, never on a request's
	// Host, which a caller chooses.
	publicURL string
}

// New is the accounts of st, sealing links with v, queueing mail for m,
// checking passwords with h, with links on publicURL.
func New(st *store.Store, v *vault.Vault, m *mail.Mailer, h *auth.Hasher, publicURL string) *Service {
	return &Service{store: st, vault: v, mail: m, hasher: h, publicURL: publicURL}
}

// ErrBadLogin is a sign-in whose account or password is wrong: the same
// answer for both.
var ErrBadLogin = errors.New("invalid username, email or password")

// Throttled is a request refused for a while: what was asked too often,
// and the seconds until it may be asked again.
type Throttled struct {
	What       string
	RetryAfter int
}

func (e *Throttled) Error() string {
	return fmt.Sprintf("too many %s; try again in %d seconds", e.What, e.RetryAfter)
}

func throttled(what string, oldest, now time.Time) *Throttled {
	return &Throttled{What: what, RetryAfter: max(int(math.Ceil(oldest.Add(Window).Sub(now).Seconds())), 1)}
}

// SignIn checks credentials from client under the throttle. The attempt is
// counted before the password is checked, so that concurrent guesses
// cannot pass the limit; unknown accounts and wrong passwords take the
// same time and get the same answer (ErrBadLogin). A lock set through a
// username says nothing about its email, and an attacker elsewhere cannot
// lock a user out with a handful of guesses. Other refusals: *Throttled,
// auth.ErrBusy (no password was checked: the attempt does not count).
func (s *Service) SignIn(ctx context.Context, login, password, client string) (store.User, error) {
	name := "login:" + strings.ToLower(strings.TrimSpace(login))
	pair := name + "|" + client
	now := time.Now()
	ids, locked, err := s.store.ReserveLoginAttempt(ctx, []store.LoginLimit{
		{Scope: pair, Max: LoginAccountLimit}, {Scope: name, Max: LoginNameLimit}, {Scope: "addr:" + client, Max: LoginAddressLimit},
	}, now.Add(-Window))
	if err != nil {
		return store.User{}, err
	}
	if locked != nil {
		return store.User{}, throttled("failed sign-ins", locked.Oldest, now)
	}
	user, err := s.store.UserByLogin(ctx, login)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return user, err
	}
	var perr error
	err = s.hasher.Do(ctx, func() {
		hash := user.PasswordHash
		if user.ID == 0 {
			hash = s.hasher.Decoy() // made once, in a slot too
		}
		perr = auth.CheckPassword(password, hash)
	})
	if err != nil {
		return user, errors.Join(err, s.store.ForgetLoginAttempts(ctx, ids, ""))
	}
	if perr != nil || user.ID == 0 {
		return user, ErrBadLogin
	}
	return user, s.store.ForgetLoginAttempts(ctx, ids, pair)
}

// newToken is a token for a one-time link: 32 random bytes.
func newToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// link is an absolute address of the service.
func (s *Service) link(path, token string) string {
	return s.publicURL + path + "?" + url.Values{"token": {token}}.Encode()
}

// invitationPlace binds a sealed invitation token to its address, as a
// vault value is bound to its key.
func invitationPlace(email string) string { return "invitation " + strings.ToLower(email) }

// Invite invites email to project p as role, from by: the invitation and
// its message (the link sealed until sent) in one transaction. While mail
// is held (no mail server), the token is also kept sealed for the
// project's page to show again until used, and link is the link for the
// inviter to pass on; else it is "". A second invitation of the same
// address replaces the first.
func (s *Service) Invite(ctx context.Context, p store.Project, by store.User, email, role string) (v store.Invitation, link string, err error) {
	token := newToken()
	link = s.link("/web/invite", token)
	subject := by.Username + " invites you to " + p.Name + " on Stencil"
	text := "Hello,\n\n" + by.Username + " invites you to the project " + p.Name + " on Stencil, as " + role + ".\n\n" +
		"Choose a username and a password here (the link works once, for 7 days):\n" + store.LinkMarker + "\n\nIf you did not expect this, ignore this message.\n"
	htmlBody := "<p>Hello,</p><p>" + html.EscapeString(by.Username) + " invites you to the project <b>" + html.EscapeString(p.Name) +
		"</b> on Stencil, as " + role + ".</p><p><a href=\"" + store.LinkMarker + "\">Choose a username and a password</a> (the link works once, for 7 days).</p>" +
		"<p>If you did not expect this, ignore this message.</p>"
	v = store.Invitation{ProjectID: p.ID, Email: email, Role: role, InvitedBy: &by.ID}
	held := s.mail.Held()
	if held {
		keyID, sealed, err := s.vault.SealLink(p.ID, invitationPlace(email), token)
		if err != nil {
			return v, "", err
		}
		v.LinkKeyID, v.LinkSealed = &keyID, sealed
	}
	// The message keeps its link sealed until it is sent (docs/mail.md).
	linkKey, linkSealed, err := s.vault.SealLink(p.ID, store.LinkPlace(email), link)
	if err != nil {
		return v, "", err
	}
	m := store.Email{ProjectID: &p.ID, Kind: store.EmailOfInvite, Recipients: []string{email}, Status: s.mail.Status(),
		Subject: &subject, Text: &text, HTML: &htmlBody, LinkKeyID: &linkKey, LinkSealed: linkSealed}
	if err := s.store.CreateInvitation(ctx, &v, token, InvitationTTL, &m); err != nil {
		return v, "", err
	}
	s.mail.Wake()
	if !held {
		link = ""
	}
	return v, link, nil
}

// InvitationLinks gives each pending invitation of the list made while
// mail was held its link again, while mail is still held: the token kept
// sealed (a token sealed under a key since retired gives none).
func (s *Service) InvitationLinks(list []store.Invitation) map[int64]string {
	links := map[int64]string{}
	if !s.mail.Held() {
		return links
	}
	for _, v := range list {
		if v.LinkKeyID == nil {
			continue
		}
		if token, err := s.vault.OpenLink(*v.LinkKeyID, v.ProjectID, invitationPlace(v.Email), v.LinkSealed); err == nil {
			links[v.ID] = s.link("/web/invite", token)
		}
	}
	return links
}

// RequestReset mails a reset link to the account with email, if there is
// one, asked from client. Both cases do the same work in one transaction
// (the counts, the account's lookup, the reset's statement, one commit),
// so that the time taken does not tell whether the account exists. Asked
// too often: *Throttled.
func (s *Service) RequestReset(ctx context.Context, email, client string) error {
	scope := "reset:" + strings.ToLower(email)
	now := time.Now()
	token := newToken()
	m := store.ResetMail{Status: s.mail.Status(), Subject: "Choose a new Stencil password",
		Text: "Hello {username},\n\nSomeone asked to reset the password of your Stencil account. Choose a new one here (the link works once, for an hour):\n" +
			store.LinkMarker + "\n\nIf it was not you, ignore this message: your password stays as it is.\n",
		HTML: "<p>Hello {username},</p><p>Someone asked to reset the password of your Stencil account. <a href=\"" +
			store.LinkMarker + "\">Choose a new one</a> (the link works once, for an hour).</p><p>If it was not you, ignore this message: your password stays as it is.</p>"}
	var err error
	if m.LinkKeyID, m.LinkSealed, err = s.vault.SealLink("", store.LinkPlace(email), s.link("/web/reset", token)); err != nil {
		return err
	}
	locked, found, err := s.store.RequestPasswordReset(ctx, []store.LoginLimit{
		{Scope: scope + "|" + client, Max: resetPairLimit}, {Scope: scope, Max: resetEmailLimit}, {Scope: "reset-addr:" + client, Max: resetAddressLimit},
	}, now.Add(-Window), email, token, ResetTTL, m)
	if err != nil {
		return err
	}
	if locked != nil {
		return throttled("reset requests", locked.Oldest, now)
	}
	if found {
		s.mail.Wake()
	}
	return nil
}
