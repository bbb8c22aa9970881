package handlers

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"slices"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"stencil/auth"
	"stencil/store"
	"stencil/views"
)

// Base is what the layout needs on every page; page view models embed it.
type Base struct {
	Title string
	// Setup is set on first-run setup, where no account exists to sign in to.
	Setup bool
	// CSRF stands for the response's CSRF token (see fillCSRF): the same
	// in every response, so that parts of pages can be cached (Renderer.Cached).
	CSRF  string
	Flash *Flash
	Nav   []NavItem
	User  *store.User // nil when signed out
	// Scripted pages (the editor) are driven by their own script and load no
	// htmx: their sign-out form posts as a plain form.
	Scripted bool
}

// HeadKey names everything the document's head shows (layouts/head).
func (b Base) HeadKey() string {
	return "head\x00" + b.Title + "\x00" + b.CSRF + "\x00" + strconv.FormatBool(b.Scripted)
}

// NavKey names everything the navigation shows (partials/nav), to keep it
// rendered (Renderer.Cached).
func (b Base) NavKey() string {
	k := []string{"nav", b.CSRF, strconv.FormatBool(b.Setup)}
	if b.User != nil {
		k = append(k, b.User.Username, b.User.Role)
	}
	for _, n := range b.Nav {
		k = append(k, n.Label, n.Href, strconv.FormatBool(n.Active))
	}
	return strings.Join(k, "\x00")
}

// Flash is a one-time message shown on the next page.
type Flash struct {
	Kind string // "success" or "error"
	Text string
}

// NavItem is one link of the top navigation; a rare one is under More on
// wide screens, so that the navigation keeps to one line at 1280 px.
type NavItem struct {
	Label, Href string
	Active      bool
	Rare        bool
}

// NavMore says whether the navigation has rare links.
func (b Base) NavMore() bool {
	return slices.ContainsFunc(b.Nav, func(n NavItem) bool { return n.Rare })
}

// NavMoreActive says whether the current page is a rare link's: More then
// shows as current.
func (b Base) NavMoreActive() bool {
	return slices.ContainsFunc(b.Nav, func(n NavItem) bool { return n.Rare && n.Active })
}

// base fills the layout's data for the current request.
func (h *Handlers) base(c *fiber.Ctx, title string) Base {
	b := Base{Title: title}
	if p := current(c); p != nil {
		b.User = &p.User
	}
	if hasSession(c.UserContext()) {
		// A signed-in browser's token lives in its session; a visitor's
		// is derived from a cookie, so that a page view makes no session.
		// Either is filled in as the page leaves (fillCSRF).
		b.CSRF = h.csrf.placeholder
		b.Flash = h.popFlash(c)
	}
	// The link whose section is the longest prefix of the path is the
	// current one: /web/routes/view belongs to Routes, templates' pages
	// (under /web/routes/templates) to Templates.
	active, best := "", 0
	for _, item := range navItems {
		for _, section := range item.sections {
			if strings.HasPrefix(c.Path(), section) && len(section) > best {
				active, best = item.label, len(section)
			}
		}
	}
	for _, item := range navItems {
		if b.User != nil && store.RoleRank(b.User.Role) >= store.RoleRank(item.min) || b.User == nil && item.min == "" {
			b.Nav = append(b.Nav, NavItem{Label: item.label, Href: item.href, Active: item.label == active, Rare: item.rare})
		}
	}
	return b
}

// navItems are the top navigation's links, each for the roles from min up
// ("" for everyone, signed in or not), active on the paths under its
// sections.
var navItems = []struct {
	label, href string
	sections    []string
	min         string
	rare        bool
}{
	{"Projects", "/web/projects", []string{"/web/project"}, store.RoleViewer, false},
	{"Routes", "/web/routes", []string{"/web/routes"}, store.RoleViewer, false},
	{"Templates", "/web/routes/templates", []string{"/web/routes/templates"}, store.RoleViewer, false},
	{"Data", "/web/data", []string{"/web/data"}, store.RoleViewer, false},
	{"Vaults", "/web/vaults", []string{"/web/vault"}, store.RoleAdmin, false},
	{"Access tokens", "/web/pats", []string{"/web/pats"}, store.RoleViewer, true},
	{"Events", "/web/events", []string{"/web/events"}, store.RoleAdmin, true},
	{"Users", "/web/users", []string{"/web/users"}, store.RoleRoot, true},
	{"Configs", "/web/configs", []string{"/web/configs"}, store.RoleRoot, true},
	{"API reference", "/scalar", []string{"/scalar"}, "", false},
}

// flash stores a message for the next page the browser shows; a request
// without a session (an API client's) has no next page.
func (h *Handlers) flash(c *fiber.Ctx, kind, text string) {
	if !hasSession(c.UserContext()) {
		return
	}
	h.sessions.Put(c.UserContext(), "flash_kind", kind)
	h.sessions.Put(c.UserContext(), "flash_text", text)
}

// sessionInt reads key of the browser session; a request without one (an
// API client's) reads 0.
func (h *Handlers) sessionInt(c *fiber.Ctx, key string) int64 {
	if !hasSession(c.UserContext()) {
		return 0
	}
	return h.sessions.GetInt64(c.UserContext(), key)
}

// sessionPut keeps v under key in the browser session, if there is one.
func (h *Handlers) sessionPut(c *fiber.Ctx, key string, v any) {
	if hasSession(c.UserContext()) {
		h.sessions.Put(c.UserContext(), key, v)
	}
}

// errNoBrowserSession refuses to sign a request with a bearer token in or
// out of a browser session: it has none.
var errNoBrowserSession = fiber.NewError(fiber.StatusBadRequest, "signing in and out is for browsers: send no Authorization header")

// popFlash takes the waiting flash message, if any.
func (h *Handlers) popFlash(c *fiber.Ctx) *Flash {
	ctx := c.UserContext()
	if !hasSession(ctx) {
		return nil
	}
	if text := h.sessions.PopString(ctx, "flash_text"); text != "" {
		return &Flash{Kind: h.sessions.PopString(ctx, "flash_kind"), Text: text}
	}
	return nil
}

// fillCSRF puts the CSRF token — the session's once signed in, else the
// visitor's — where its HTML answer has the placeholder (Base.CSRF); an
// answer without one makes no token. The token is masked afresh for each
// response, so it cannot be kept with the parts of pages that carry it;
// the placeholder can. It is random per process, so no text a user wrote
// contains it, and as long as a masked token, so that filling it moves no
// byte.
func (h *Handlers) fillCSRF(c *fiber.Ctx) {
	body := c.Response().Body()
	placeholder := []byte(h.csrf.placeholder)
	if !bytes.Contains(body, placeholder) {
		return
	}
	token := ""
	if current(c) != nil {
		token = h.csrfToken(c)
	} else {
		token = h.visitorCSRFToken(c)
	}
	if len(token) != len(placeholder) {
		c.Response().SetBodyRaw(bytes.ReplaceAll(body, placeholder, []byte(token)))
		return
	}
	for rest := body; ; { // a token as long as its placeholder: in place
		i := bytes.Index(rest, placeholder)
		if i < 0 {
			return
		}
		copy(rest[i:], token)
		rest = rest[i+len(placeholder):]
	}
}

// newCSRFPlaceholder returns a placeholder for CSRF tokens: random, and shaped as
// one (auth.MaskToken).
func newCSRFPlaceholder() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return auth.MaskToken(b)
}

// csrfToken returns the session's CSRF token, creating it on first use,
// masked afresh for this response (auth.MaskToken).
func (h *Handlers) csrfToken(c *fiber.Ctx) string {
	ctx := c.UserContext()
	raw, err := base64.RawURLEncoding.DecodeString(h.sessions.GetString(ctx, csrfSessionKey))
	if err != nil || len(raw) != 32 {
		raw = make([]byte, 32)
		_, _ = rand.Read(raw)
		h.sessions.Put(ctx, csrfSessionKey, base64.RawURLEncoding.EncodeToString(raw))
	}
	return auth.MaskToken(raw)
}

// templateFuncs are the views' functions and asset, which versions
// static URLs.
func (h *Handlers) templateFuncs() map[string]any {
	funcs := views.Funcs()
	funcs["asset"] = h.assets.URL
	return funcs
}
