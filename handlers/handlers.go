// Package handlers is Stencil's HTTP layer: the route table, the responder
// that picks JSON, fragment or page, the error handler, and one file per
// resource.
package handlers

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"log/slog"
	"net/http"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/alexedwards/scs/v2"
	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5/pgxpool"

	"stencil/auth"
	"stencil/config"
	"stencil/engine"
	"stencil/mail"
	"stencil/store"
	"stencil/vaultcrypt"
	"stencil/views"
)

// Handlers holds what every handler needs.
type Handlers struct {
	cfg       config.Config
	jwts      *auth.JWTVerifier // checks bearer JWTs with cfg.JWTSecret
	store     *store.Store
	probe     *store.Store // readiness checks: its own connections
	templates templateCache
	metrics   *metrics
	sessions  *scs.SessionManager
	log       *slog.Logger
	assets    *assets
	api       *apiDoc

	keyring *vaultcrypt.Keyring

	passwordParams auth.PasswordParams
	decoy          struct { // a hash under passwordParams, for unknown accounts
		once sync.Once
		hash string
	}
	hashSlots chan struct{} // bounds concurrent argon2id work
	hashWait  time.Duration // how long a request waits for a slot
	// memoryLimit is the runtime's soft memory limit at start;
	// hashesInFlight raise it while they run.
	memoryLimit    int64
	memoryLimitMu  sync.Mutex // applyMemoryLimit, one at a time
	hashesInFlight atomic.Int64
	csrfKey        []byte              // signs visitors' CSRF tokens
	csrfHole       string              // stands for a response's CSRF token (fillCSRF)
	setUp          atomic.Bool         // a user exists: first-run setup is over
	allow          map[string][]string // routed path → its methods, for 405's Allow

	routes   *routeTable   // what answers at /x
	runs     *runLog       // runs of routes, written in batches
	runReads *store.Store  // what runs read outside a transaction
	runTx    *store.Store  // where runs that write hold their transactions
	txGate   *txGate       // a project's share of runTx's connections
	turns    *turns        // the write routes whose runs take turns
	runGate  *runGate      // runs under way at once
	limits   engine.Limits // of every run

	mail *mail.Mailer // delivers the outbox
}

// New builds the handlers on pool: the store and the browser sessions. It
// fails when the embedded API description does not load, so a broken
// document never ships.
func New(cfg config.Config, pool *pgxpool.Pool, log *slog.Logger) (*Handlers, error) {
	api, err := loadAPIDoc()
	if err != nil {
		return nil, err
	}
	a, err := newAssets()
	if err != nil {
		return nil, err
	}
	keyring, err := vaultcrypt.NewKeyring(cfg.VaultKeys)
	if err != nil {
		return nil, err
	}
	st := store.New(pool)
	limits := engine.DefaultLimits
	limits.Shared = engine.NewBudget(cfg.RunMemory)
	h := &Handlers{cfg: cfg, jwts: auth.NewJWTVerifier(cfg.JWTSecret), store: st, routes: newRouteTable(st, log), runs: newRunLog(st, log), runReads: st, limits: limits, probe: st,
		runTx: st, txGate: newTxGate(cfg.RunTxMaxConns), turns: newTurns(), runGate: newRunGate(cfg.RunConcurrency), metrics: newMetrics(pool, st), sessions: newSessions(st.Sessions(), cfg.Production), log: log, assets: a, api: api,
		keyring: keyring, passwordParams: auth.DefaultPasswordParams, hashSlots: make(chan struct{}, max(2, runtime.NumCPU())), hashWait: defaultHashWait,
		memoryLimit: debug.SetMemoryLimit(-1),
		csrfKey:     derivedKey(cfg.JWTSecret, "stencil visitor csrf"), csrfHole: newCSRFHole()}
	limits.Shared.Watch(runMemoryStep, h.applyMemoryLimit)
	if h.mail, err = mail.New(st, cfg, log); err != nil {
		return nil, err
	}
	return h, nil
}

// Start runs what the handlers keep doing in the background until ctx
// ends: following route changes made on other instances, writing the run
// log and delivering mail.
func (h *Handlers) Start(ctx context.Context, pool *pgxpool.Pool) {
	go h.routes.listen(ctx, pool)
	go h.runs.run(ctx)
	go h.mail.Run(ctx)
}

// SetReadinessPool gives /readyz connections of its own, so that it answers
// while request traffic holds every connection of the main pool.
func (h *Handlers) SetReadinessPool(pool *pgxpool.Pool) {
	h.probe = store.New(pool)
}

// SetRunPool gives the reads of routes' runs connections of their own,
// fewer than the main pool's (see config.RunDBMaxConns).
func (h *Handlers) SetRunPool(pool *pgxpool.Pool) {
	h.runReads = store.New(pool)
}

// SetRunTxPool gives the transactions of routes' runs that write
// connections of their own (see config.RunTxMaxConns), so that runs never
// take the connections the platform's own API needs.
func (h *Handlers) SetRunTxPool(pool *pgxpool.Pool) {
	h.runTx = store.New(pool)
	h.txGate = newTxGate(int(pool.Config().MaxConns))
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
		BodyLimit:             4 << 20,
		ReadBufferSize:        readBufferBytes,
		// Bodies are read as bytes; checkInput refuses multipart before
		// anything parses it.
		DisablePreParseMultipartForm: true,
	})
	Routes(app, h)
	h.indexMethods(app)
	h.guardTransport(app)
	return app
}
