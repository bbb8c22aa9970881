package handlers

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"net"
	"runtime/debug"
	"strings"
	"time"

	"github.com/alexedwards/scs/v2"
	"github.com/gofiber/fiber/v2"

	"stencil/auth"
	"stencil/store"
)

const (
	csrfSessionKey = "csrf_token"
	csrfHeader     = "X-CSRF-Token"
	csrfFormField  = "csrf_token"
)

// recoverPanics turns a panic into a 500 through the ErrorHandler and logs
// the stack.
func (h *Handlers) recoverPanics(c *fiber.Ctx) (err error) {
	defer func() {
		if r := recover(); r != nil {
			h.log.Error("panic", "method", c.Method(), "path", c.Path(), "panic", r, "stack", string(debug.Stack()))
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return c.Next()
}

// deadline gives the request REQUEST_TIMEOUT: its context, which every
// store call takes, ends then, and with it any statement still running.
func (h *Handlers) deadline(c *fiber.Ctx) error {
	ctx, cancel := context.WithTimeout(c.UserContext(), h.cfg.RequestTimeout)
	defer cancel()
	c.SetUserContext(ctx)
	return c.Next()
}

// contentSecurityPolicy allows only this origin's scripts; inline styles are
// allowed for the API viewer, which sets style attributes.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; " +
	"img-src 'self' data:; font-src 'self' data:; connect-src 'self'; object-src 'none'; " +
	"frame-ancestors 'none'; base-uri 'self'; form-action 'self'"

// sandboxPolicy is every answer's at /x (docs/security.md): what a route
// serves runs no script, submits no form and shares no origin with the
// pages. No RETURN replaces it: the runtime drops the headers a route may
// not set (flow.ReservedAnswerHeader), this one and nosniff among them.
const sandboxPolicy = "sandbox; default-src 'none'; frame-ancestors 'none'"

// routePath says whether path is one of /x's, where projects' routes answer.
func routePath(path string) bool { return path == "/x" || strings.HasPrefix(path, "/x/") }

func (h *Handlers) securityHeaders(c *fiber.Ctx) error {
	policy := contentSecurityPolicy
	if routePath(c.Path()) {
		policy = sandboxPolicy
	}
	c.Set("Content-Security-Policy", policy)
	c.Set("X-Content-Type-Options", "nosniff")
	c.Set("X-Frame-Options", "DENY")
	c.Set("Referrer-Policy", "same-origin")
	// Answers may carry secrets (vault values, new tokens, JWTs) or a
	// person's data: no cache keeps them. Static files set their own.
	if !strings.HasPrefix(c.Path(), "/static/") {
		c.Set(fiber.HeaderCacheControl, "no-store")
	}
	if h.cfg.Production {
		c.Set("Strict-Transport-Security", "max-age=63072000; includeSubDomains")
	}
	return c.Next()
}

// splitOrigins keeps /x and the pages apart when ROUTES_ORIGIN is set:
// /x answers only on that origin's host, everything else only on the
// others (404 either way); health checks answer on both.
func (h *Handlers) splitOrigins(c *fiber.Ctx) error {
	if h.routesHost == "" || c.Path() == "/healthz" || c.Path() == "/readyz" {
		return c.Next()
	}
	if routePath(c.Path()) != h.onRoutesOrigin(c) {
		return fiber.ErrNotFound
	}
	return c.Next()
}

// onRoutesOrigin says whether the request came to ROUTES_ORIGIN's host
// (and port, when the Host header names one).
func (h *Handlers) onRoutesOrigin(c *fiber.Ctx) bool {
	host, port, err := net.SplitHostPort(c.Hostname())
	if err != nil {
		host, port = c.Hostname(), ""
	}
	return strings.EqualFold(host, h.routesHost) && (port == "" || port == h.routesPort)
}

// loadSession adapts scs to Fiber: it loads the session named by the cookie
// into the request's context and, after the handlers (and whatever error
// they return), commits or destroys it and sets the cookie. A request with a
// bearer token is an API client's: it has no session, and none is made.
func (h *Handlers) loadSession(c *fiber.Ctx) error {
	if hasBearer(c) {
		return c.Next()
	}
	ctx, err := h.sessions.Load(store.RememberSession(c.UserContext()), c.Cookies(h.sessions.Cookie.Name))
	if err != nil && !store.Unavailable(err) {
		// A session this release cannot read (an older encoding): the
		// browser starts a new one, signed out.
		ctx, err = h.sessions.Load(store.RememberSession(c.UserContext()), "")
	}
	if err != nil {
		return err
	}
	ctx = context.WithValue(ctx, sessionLoaded{}, true)
	c.SetUserContext(ctx)
	nextErr := c.Next()
	switch h.sessions.Status(ctx) {
	case scs.Modified:
		token, expiry, err := h.sessions.Commit(ctx)
		if err != nil {
			return err
		}
		h.setSessionCookie(c, token, expiry)
	case scs.Destroyed:
		h.setSessionCookie(c, "", time.Unix(1, 0))
	}
	return nextErr
}

type sessionLoaded struct{}

// hasSession reports whether ctx carries a session (the request went through
// loadSession).
func hasSession(ctx context.Context) bool {
	return ctx.Value(sessionLoaded{}) != nil
}

func (h *Handlers) setSessionCookie(c *fiber.Ctx, token string, expiry time.Time) {
	sc := h.sessions.Cookie
	ck := &fiber.Cookie{
		Name:     sc.Name,
		Value:    token,
		Path:     sc.Path,
		Domain:   sc.Domain,
		Secure:   sc.Secure,
		HTTPOnly: sc.HttpOnly,
		SameSite: "Lax",
	}
	if token == "" {
		ck.Expires = expiry
		ck.MaxAge = -1
	} else if sc.Persist {
		ck.Expires = expiry
	}
	c.Cookie(ck)
}

// checkCSRF requires a CSRF token on unsafe requests that carry the session
// cookie and no bearer token (a request without the cookie has no ambient
// authority to forge), and on the sign-in and setup forms whatever they
// carry, so that no other site can sign a browser into an account of its
// choosing (login CSRF). A signed-in session takes its own token only; a
// session with no one signed in (a browser that signed out keeps one) takes
// the visitor's token its pages carry, as the sign-in form does, so that
// the invitation, reset and forgot forms work after signing out.
func (h *Handlers) checkCSRF(c *fiber.Ctx) error {
	switch c.Method() {
	case fiber.MethodGet, fiber.MethodHead, fiber.MethodOptions:
		return c.Next()
	}
	signInForm := c.Path() == "/web/login" || c.Path() == "/web/setup"
	if hasBearer(c) || !signInForm && c.Cookies(h.sessions.Cookie.Name) == "" {
		return c.Next()
	}
	got := c.Get(csrfHeader)
	if got == "" {
		got = c.FormValue(csrfFormField)
	}
	token, ok := auth.UnmaskToken(got)
	if want := h.sessions.GetString(c.UserContext(), csrfSessionKey); ok && want != "" {
		if raw, err := base64.RawURLEncoding.DecodeString(want); err == nil && subtle.ConstantTimeCompare(raw, token) == 1 {
			return c.Next()
		}
	}
	visitor := signInForm || h.sessions.GetInt64(c.UserContext(), sessionUserKey) == 0
	if ok && visitor && h.validVisitorCSRFToken(c, token) {
		return c.Next()
	}
	return forbidden("CSRF token missing or invalid: reload the page and try again")
}

const visitorCookie = "stencil_csrf"

// visitorCSRFToken returns the CSRF token of a browser that is not signed
// in: an HMAC of a random nonce kept in a cookie, so it needs no session row
// and cannot be made without the server's key.
func (h *Handlers) visitorCSRFToken(c *fiber.Ctx) string {
	nonce := c.Cookies(visitorCookie)
	if len(nonce) < 32 {
		b := make([]byte, 32)
		_, _ = rand.Read(b)
		nonce = base64.RawURLEncoding.EncodeToString(b)
		c.Cookie(&fiber.Cookie{Name: visitorCookie, Value: nonce, Path: "/", HTTPOnly: true, SameSite: "Lax", Secure: h.sessions.Cookie.Secure})
	}
	return auth.MaskToken(h.signNonce(nonce))
}

func (h *Handlers) validVisitorCSRFToken(c *fiber.Ctx, token []byte) bool {
	nonce := c.Cookies(visitorCookie)
	return len(nonce) >= 32 && hmac.Equal(h.signNonce(nonce), token)
}

func (h *Handlers) signNonce(nonce string) []byte {
	mac := hmac.New(sha256.New, h.csrf.key)
	mac.Write([]byte(nonce))
	return mac.Sum(nil)
}

func hasBearer(c *fiber.Ctx) bool {
	scheme, _, ok := strings.Cut(c.Get(fiber.HeaderAuthorization), " ")
	return ok && strings.EqualFold(scheme, "Bearer")
}
