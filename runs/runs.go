// Package runs runs routes: it owns what happens between a request to a
// route and its answer (docs/architecture.md). It keeps the route table
// fresh from the database's notices, admits runs (the project's rate
// limit, the bound on runs under way, the memory runs share, a project's
// share of the transactions), runs each with the engine on PostgreSQL —
// reads, writes, vault reads with their log rows, queued email — commits
// the runs of a contended route together in batches (group commit),
// traces and masks a run when asked, and writes every run to the run log.
//
// It never speaks HTTP's framework: a Request comes in as plain values and
// an Answer goes out as status, headers and body, which the handlers
// write. It never renders a page.
package runs

import (
	"cmp"
	"context"
	"encoding/json"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"stencil/engine"
	"stencil/store"
	"stencil/vault"
)

// Config is what a Service is built from: the pools and the parts main
// makes, and the bounds from the configuration.
type Config struct {
	// Store is the platform's pool: the route table, the rate limits and
	// vault entries.
	Store *store.Store
	// Reads is what runs read outside a transaction, Tx where runs that
	// write hold their transactions and TxConns its size (a project
	// holds at most half of it).
	Reads, Tx *store.Store
	TxConns   int
	// Vault reads the entries VAULT blocks name (and counts the reads).
	Vault *vault.Vault
	// MailStatus is the status a queued message starts in (held or
	// queued); MailBacklog bounds a project's queued route mail.
	MailStatus  func() string
	MailBacklog int
	// Concurrency bounds the runs under way at once; Memory what they
	// hold together (engine.Budget).
	Concurrency int
	Memory      int64
	// Egress sends HTTP blocks' requests (egress.Guard.Client; nil: none
	// is sent), EgressConcurrency of them at once.
	Egress            *http.Client
	EgressConcurrency int
	// NoStats leaves runs uncounted in route analytics (ROUTE_STATS=off);
	// Counted, when set, is told of every run, a tally each second.
	NoStats bool
	Counted func(store.Tally)
	Log     *slog.Logger
	// JobRescue is how long a job an instance took stays its own
	// (JOB_RESCUE; 0: JobRescue).
	JobRescue time.Duration
}

// Service runs routes. Its zero value is not usable: make one with New.
type Service struct {
	store *store.Store
	reads *store.Store
	tx    *store.Store
	vault *vault.Vault

	mailStatus func() string

	// Limits bound every run, MailBacklog a project's queued route mail
	// and JobBacklog its jobs not yet finished; tests may lower them.
	Limits      engine.Limits
	MailBacklog int
	JobBacklog  int

	table   *table
	log     *logWriter
	txSlots *projectSlots // a project's share of Tx's connections
	// upstream bounds a project's runs waiting on upstream calls to a
	// quarter of the run slots: no chain of calls takes every slot.
	upstream *projectSlots
	client   *http.Client
	egress   *Slots // upstream requests in flight
	// slots bound the runs under way at once; background the runs no
	// request waits for (a schedule's, a job's), to half as many, so that
	// /x keeps answering while they drain.
	slots      *Slots
	background *Slots
	// requests counts the requests' runs under way or waiting for a
	// slot; while they are more than a quarter of the run slots, a
	// background run also takes one of yield's, a sixteenth of the run
	// slots (an eighth of the job runner's workers): a backlog drains
	// beside a busy /x at a fraction of its quiet rate (docs/jobs.md).
	requests atomic.Int64
	yield    *Slots
	// batches commits the runs of contended write routes together.
	batches *batches
	// jobs writes the jobs of ENQUEUE blocks and, once started, works
	// them (docs/jobs.md).
	jobs *river.Client[pgx.Tx]
	// backlogs are the projects' counts of waiting jobs (see jobsFull).
	backlogs sync.Map
	// stopLog ends the run log's writer, which closes logDone once it has
	// written what it held (Stop).
	stopLog context.CancelFunc
	logDone chan struct{}
}

// New builds the service; Start sets its background work going.
func New(cfg Config) *Service {
	limits := engine.DefaultLimits
	limits.Shared = engine.NewBudget(cfg.Memory)
	if cfg.EgressConcurrency <= 0 {
		cfg.EgressConcurrency = 256 // EGRESS_CONCURRENCY's default
	}
	egressSlots := NewSlots(cfg.EgressConcurrency)
	egressSlots.Wait, egressSlots.Queue = limits.Time, math.MaxInt64 // every run waits, within its time
	background := NewSlots(max(1, cfg.Concurrency/2))
	background.Wait, background.Queue = limits.Time, math.MaxInt64
	yield := NewSlots(max(1, cfg.Concurrency/16))
	yield.Wait, yield.Queue = limits.Time, math.MaxInt64
	s := &Service{background: background, yield: yield, client: cfg.Egress, egress: egressSlots, store: cfg.Store, reads: cfg.Reads, tx: cfg.Tx, vault: cfg.Vault,
		mailStatus: cfg.MailStatus, MailBacklog: cfg.MailBacklog, JobBacklog: engine.MaxWaitingJobs, Limits: limits,
		table: newTable(cfg.Store, cfg.Log), log: newLogWriter(cfg.Store, !cfg.NoStats, cfg.Counted, cfg.Log), slots: NewSlots(cfg.Concurrency),
		txSlots: newProjectSlots(max(1, cfg.TxConns/2)), upstream: newProjectSlots(max(1, cfg.Concurrency/4)), batches: newBatches()}
	// The job runner runs as many jobs at once as there are background
	// slots; yield holds them to fewer while requests are many
	// (docs/jobs.md, docs/performance.md).
	jobs, err := newJobs(s, max(1, cap(background.taken)), cmp.Or(cfg.JobRescue, JobRescue), cfg.Log)
	if err != nil {
		panic("runs: the job queue's settings: " + err.Error()) // they are the code's, not a user's
	}
	s.jobs = jobs
	return s
}

// Start follows route changes made on other instances until ctx ends,
// and writes the run log (at once when a backup asks) until Stop: the
// runs of requests answered while the service drains are written too.
func (s *Service) Start(ctx context.Context) {
	logCtx, stopLog := context.WithCancel(context.WithoutCancel(ctx))
	s.stopLog, s.logDone = stopLog, make(chan struct{})
	s.table.flushLog = func(nonce string) { go s.log.flushFor(logCtx, nonce) }
	go s.table.listen(ctx)
	go func() {
		defer close(s.logDone)
		s.log.run(logCtx)
	}()
}

// Stop writes what the run log holds a last time and ends its writer,
// waiting at most wait: the service calls it once its requests and jobs
// are done and before its pools close, so that no run it answered is left
// out of the log.
func (s *Service) Stop(wait time.Duration) {
	if s.stopLog == nil {
		return
	}
	s.stopLog()
	select {
	case <-s.logDone:
	case <-time.After(wait):
	}
}

// RoutesChanged reloads routes of a project on this instance at once
// (none named: the whole project, its settings too); other instances
// follow the database's notices.
func (s *Service) RoutesChanged(ctx context.Context, project string, routes ...string) error {
	return s.table.reload(ctx, project, routes...)
}

// ReloadAll reloads every project's routes.
func (s *Service) ReloadAll(ctx context.Context) error {
	return s.table.loadAll(ctx, true)
}

// FlushLog writes the runs waiting for the run log, and what route
// analytics counted, now.
func (s *Service) FlushLog(ctx context.Context) error {
	return s.log.flush(ctx, true)
}

// Plan is the compiled plan of a project's saved route: nil when the
// project has no such route.
func (s *Service) Plan(ctx context.Context, project, route string) (*engine.Plan, error) {
	return s.table.plan(ctx, project, route)
}

// Request is one request to run a route. Either Path names the route (as
// at /x: the project by its api_path, then the route by method and path),
// or Plan is the route to run (a saved route, a kept version or a draft)
// with its path parameters in Params, and Path is only what the run log
// keeps.
type Request struct {
	Method string
	// Path is the path as sent, escaped, from /x on.
	Path   string
	Query  string
	Body   []byte
	Client string // the client's address, for the project's rate limit
	// Origin is the request's Origin header (CORS); PreflightMethod and
	// PreflightHeaders its Access-Control-Request-Method and -Headers: a
	// request with PreflightMethod and method OPTIONS is a preflight.
	Origin, PreflightMethod, PreflightHeaders string
	// Hop is the request's Stencil-Hop: how many runs of routes it passed
	// through already (docs/security.md); MaxHops or more runs nothing.
	Hop int
	// Arrived is when the request was read (zero: when Serve began); a
	// run's time counts from it. LogLater leaves the run's log row and
	// count to Finish, which the caller calls once the answer is whole,
	// so that the time is the request's and not the run's alone.
	Arrived  time.Time
	LogLater bool
	// later is the run LogLater left to Finish.
	later *store.Run

	// Caller is who the run is for when known already (a run tried by a
	// member): the run, the run log and the vault log name it even on a
	// public route. Otherwise Resolve finds the caller when the route
	// checks its callers (auth_jwt); its refusals are *Refusal.
	Caller  *store.Caller
	Resolve func() (*store.Caller, error)
	// Header reads the request's headers by name (a signed webhook's
	// signature: docs/webhooks.md); nil reads none.
	Header func(name string) string

	Plan   *engine.Plan
	Params map[string]string
	// ProjectID is Plan's project.
	ProjectID string

	// Trigger is what started the run (store.TriggerSchedule,
	// store.TriggerJob); "" is a request. A run no request waits for
	// takes a background slot first.
	Trigger string

	// job is the job whose run this is (0: none).
	job int64

	// DryRun rolls the run's writes back; Trace traces it, masks vault
	// values in its answer and keeps the trace in the run log; KeepBody
	// keeps the body in the run log (to replay it).
	DryRun, Trace, KeepBody bool
}

// Answer is what a route answers: its body is JSON (Content-Type:
// application/json) or empty.
type Answer struct {
	Status int
	// Header holds the answer's headers besides Content-Type: nil when it
	// has none, as most runs' answers.
	Header http.Header
	Body   []byte
	// Ended is how the run ended (RETURN, FAIL, FAULT, REFUSED, BUSY,
	// LIMITED…); "" for an answer that ran nothing (no such route, the
	// route document).
	Ended    string
	Attempts int
	Duration time.Duration
	// Trace is the run's trace when the request asked for it; TraceCut
	// says it was cut at its bound.
	Trace    []TraceRow
	TraceCut bool
	// preflight is, for a CORS preflight, the methods of the routes at its
	// path; exposed the headers the route set, which a script may read.
	preflight []string
	exposed   []string
	// later is the run Finish logs (Request.LogLater).
	later *store.Run
}

// Refusal is a request a route refuses before running: bad inputs (400),
// no credential or signature (401), a caller the route does not know
// (403), a signed webhook's delivery received already (200). Ended is how
// the run log says it ended ("" is REFUSED) and Detail what its fault
// says, when more than Message (which the answer carries).
type Refusal struct {
	Status  int
	Message string
	Ended   string
	Detail  string
}

func (r *Refusal) Error() string { return r.Message }

// ErrorBody is the JSON envelope of an error answer without data.
func ErrorBody(status int, message string) []byte {
	b, _ := json.Marshal(struct {
		Status  int    `json:"status"`
		Message string `json:"message"`
	}{status, message})
	return b
}

// answer is an answer that ran nothing.
func answer(status int, message string) Answer {
	return Answer{Status: status, Body: ErrorBody(status, message)}
}

// set sets header k of a to v.
func (a *Answer) set(k, v string) {
	if a.Header == nil {
		a.Header = http.Header{}
	}
	a.Header.Set(k, v)
}

// retryAfter sets a's Retry-After to seconds.
func (a *Answer) retryAfter(seconds int) {
	a.set("Retry-After", strconv.Itoa(seconds))
}
