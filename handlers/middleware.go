package handlers

import (
	"context"
	"crypto/subtle"
	"fmt"
	"runtime/debug"
	"strings"
	"time"

	"github.com/alexedwards/scs/v2"
	"github.com/gofiber/fiber/v2"
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

// contentSecurityPolicy allows only this origin's scripts; inline styles are
// allowed for the API viewer, which sets style attributes.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; " +
	"img-src 'self' data:; font-src 'self' data:; connect-src 'self'; object-src 'none'; " +
	"frame-ancestors 'none'; base-uri 'self'; form-action 'self'"

func (h *Handlers) securityHeaders(c *fiber.Ctx) error {
	c.Set("Content-Security-Policy", contentSecurityPolicy)
	c.Set("X-Content-Type-Options", "nosniff")
	c.Set("X-Frame-Options", "DENY")
	c.Set("Referrer-Policy", "same-origin")
	if h.cfg.Production {
		c.Set("Strict-Transport-Security", "max-age=63072000; includeSubDomains")
	}
	return c.Next()
}

// loadSession adapts scs to Fiber: it loads the session named by the cookie
// into the request's context and, after the handlers (and whatever error
// they return), commits or destroys it and sets the cookie. A request with a
// bearer token is an API client's: it has no session, and none is made.
func (h *Handlers) loadSession(c *fiber.Ctx) error {
	if hasBearer(c) {
		return c.Next()
	}
	ctx, err := h.sessions.Load(c.UserContext(), c.Cookies(h.sessions.Cookie.Name))
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

// checkCSRF requires the session's CSRF token on unsafe requests that carry
// the session cookie and no bearer token. A request without the cookie has no
// ambient authority to forge.
func (h *Handlers) checkCSRF(c *fiber.Ctx) error {
	switch c.Method() {
	case fiber.MethodGet, fiber.MethodHead, fiber.MethodOptions:
		return c.Next()
	}
	if hasBearer(c) || c.Cookies(h.sessions.Cookie.Name) == "" {
		return c.Next()
	}
	want := h.sessions.GetString(c.UserContext(), csrfSessionKey)
	got := c.Get(csrfHeader)
	if got == "" {
		got = c.FormValue(csrfFormField)
	}
	if want == "" || subtle.ConstantTimeCompare([]byte(want), []byte(got)) != 1 {
		return forbidden("CSRF token missing or invalid: reload the page and try again")
	}
	return c.Next()
}

func hasBearer(c *fiber.Ctx) bool {
	scheme, _, ok := strings.Cut(c.Get(fiber.HeaderAuthorization), " ")
	return ok && strings.EqualFold(scheme, "Bearer")
}
