// Package handlers is Stencil's HTTP layer: the URL table, the responder
// that picks JSON, fragment or page, the error handler, and one file per
// resource. It translates HTTP and renders pages; it never runs a route
// (package runs does, through runs.Service.Serve), holds no connection
// pool or background worker (package server builds and starts them), and
// never speaks SQL (package store does).
package handlers

import (
	"crypto/hmac"
	"crypto/sha256"
	"log/slog"
	"net/http"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/alexedwards/scs/v2"
	"github.com/gofiber/fiber/v2"

	"stencil/accounts"
	"stencil/apidoc"
	"stencil/auth"
	"stencil/authoring"
	"stencil/config"
	"stencil/mail"
	"stencil/metrics"
	"stencil/runs"
	"stencil/static"
	"stencil/store"
	"stencil/vault"
	"stencil/views"
)

// Handlers holds what every handler needs.
type Handlers struct {
	cfg       config.Config
	jwts      *auth.JWTVerifier // checks bearer JWTs with cfg.JWTSecret
	store     *store.Store
	probe     *store.Store // readiness checks: its own connections
	templates authoring.TemplateCache
	metrics   *metrics.Metrics
	sessions  *scs.SessionManager
	log       *slog.Logger
	assets    *static.Assets
	api       *apidoc.Document
	vault     *vault.Vault      // seals and opens every secret
	hasher    *auth.Hasher      // bounds argon2id work (sign-ins, password changes)
	accounts  *accounts.Service // sign-ins and the one-time links mailed
	csrf      struct {
		key         []byte // signs visitors' CSRF tokens
		placeholder string // stands for a response's CSRF token (fillCSRF)
	}
	setUp atomic.Bool         // a user exists: first-run setup is over
	allow map[string][]string // routed path → its methods, for 405's Allow
	runs  *runs.Service       // runs routes: /x, /route/run
	mail  *mail.Mailer        // delivers the outbox
	// routesHost and routesPort are ROUTES_ORIGIN's (splitOrigins); empty
	// when /x shares the pages' origin.
	routesHost, routesPort string
}

// Parts are what main builds for the handlers and runs itself: the
// platform's store, readiness's own, the metrics, the route runtime and
// the mailer, with their background work.
type Parts struct {
	Store, Probe *store.Store
	Metrics      *metrics.Metrics
	Runs         *runs.Service
	Mail         *mail.Mailer
	Vault        *vault.Vault
	Hasher       *auth.Hasher
}

// New builds the handlers on parts. It fails when the embedded API
// description does not load, so a broken document never ships.
func New(cfg config.Config, parts Parts, log *slog.Logger) (*Handlers, error) {
	api, err := apidoc.Load()
	if err != nil {
		return nil, err
	}
	a, err := static.NewAssets()
	if err != nil {
		return nil, err
	}
	h := &Handlers{cfg: cfg, jwts: auth.NewJWTVerifier(cfg.JWTSecret), store: parts.Store, probe: parts.Probe, metrics: parts.Metrics,
		sessions: newSessions(parts.Store.Sessions(), cfg.Production), log: log, assets: a, api: api, vault: parts.Vault,
		runs: parts.Runs, mail: parts.Mail, hasher: parts.Hasher}
	h.accounts = accounts.New(parts.Store, parts.Vault, parts.Mail, parts.Hasher, cfg.PublicURL)
	h.csrf.key, h.csrf.placeholder = derivedKey(cfg.JWTSecret, "stencil visitor csrf"), newCSRFPlaceholder()
	if u, err := url.Parse(cfg.RoutesOrigin); err == nil && cfg.RoutesOrigin != "" {
		h.routesHost, h.routesPort = u.Hostname(), u.Port()
		if h.routesPort == "" {
			h.routesPort = map[string]string{"http": "80", "https": "443"}[u.Scheme]
		}
	}
	return h, nil
}

// derivedKey is a key for one purpose, derived from a secret.
func derivedKey(secret []byte, purpose string) []byte {
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(purpose))
	return mac.Sum(nil)
}

// newSessions keeps browser sessions in PostgreSQL under the hash of their
// token: 7 days at most, 24 hours idle; the cookie HttpOnly, SameSite=Lax,
// and Secure in production. Expired rows are deleted by the store's
// housekeeping.
func newSessions(st *store.Sessions, secure bool) *scs.SessionManager {
	s := scs.New()
	s.Store = st
	s.Codec = store.SessionCodec{}
	s.Lifetime = 7 * 24 * time.Hour
	s.IdleTimeout = 24 * time.Hour
	s.Cookie.Name = "stencil_session"
	s.Cookie.HttpOnly = true
	s.Cookie.SameSite = http.SameSiteLaxMode
	s.Cookie.Secure = secure
	return s
}

// App returns the Fiber application with its views, error handler and routes.
func (h *Handlers) App() *fiber.App {
	app := fiber.New(fiber.Config{
		AppName:               "Stencil",
		Views:                 views.Engine(!h.cfg.Production, "views", h.templateFuncs()),
		ViewsLayout:           "",
		ErrorHandler:          h.ErrorHandler,
		DisableStartupMessage: true,
		ReadTimeout:           30 * time.Second,
		WriteTimeout:          30 * time.Second,
		IdleTimeout:           120 * time.Second,
		// An import's CSV may reach 10 MiB (bodyLimits).
		BodyLimit:      maxBodyBytes,
		ReadBufferSize: readBufferBytes,
		// Bodies are read as bytes; checkInput refuses multipart before
		// anything parses it.
		DisablePreParseMultipartForm: true,
	})
	app.Server().HeaderReceived = bodyLimits
	mount(app, h)
	h.indexMethods(app)
	h.guardTransport(app)
	return app
}
