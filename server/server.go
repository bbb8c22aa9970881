// Package server is the stencil command's work: it reads the
// configuration, starts or finds PostgreSQL, migrates, builds the pools,
// the mailer, the route runtime and the handlers, and serves until it is
// told to stop (docs/architecture.md). It holds no request logic.
package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"stencil/apidoc"
	"stencil/auth"
	"stencil/config"
	"stencil/egress"
	"stencil/handlers"
	"stencil/mail"
	"stencil/metrics"
	"stencil/runs"
	"stencil/store"
	"stencil/store/localpg"
	"stencil/vault"
	"stencil/vaultcrypt"
)

// Run executes one subcommand of stencil (serve, migrate, vault rotate,
// openapi, backup or restore). ready, when not nil, receives the listening
// address once the server accepts connections.
// Usage is what `stencil help` prints of the service's commands; the
// project client's follow (cli.Usage).
const Usage = `Usage: stencil [command]

Commands of the service (its settings from the environment, README.md):
  serve                 start the service (the default)
  migrate               apply the database's migrations and stop
  vault rotate          re-encrypt every vault entry under the active key
  openapi               print the API document as served
  backup <file>         write a backup of the running service's data
  restore <file>        restore a backup into an empty DATA_DIR or database
  help                  print this

`

func Run(ctx context.Context, args []string, getenv func(string) string, logOut io.Writer, ready chan<- string) error {
	cmd := "serve"
	if len(args) > 0 {
		cmd = strings.Join(args, " ")
	}
	if len(args) > 0 && (args[0] == "backup" || args[0] == "restore") {
		if len(args) != 2 {
			return fmt.Errorf("usage: stencil %s <file>", args[0])
		}
		log := slog.New(slog.NewTextHandler(logOut, nil))
		if args[0] == "restore" {
			return runRestore(ctx, getenv, args[1], log)
		}
		cfg, err := config.Load(getenv)
		if err != nil {
			return err
		}
		return runBackup(ctx, cfg, getenv, args[1], log)
	}
	switch cmd {
	case "serve", "migrate", "vault rotate":
	case "openapi":
		// The API document as served, for linters and client generators.
		doc, err := apidoc.JSON()
		if err == nil {
			_, err = os.Stdout.Write(doc)
		}
		return err
	default:
		return fmt.Errorf("unknown command %q: use serve, migrate, vault rotate, openapi, backup, restore, project (export, plan, apply, test) or help", cmd)
	}
	log := slog.New(slog.NewTextHandler(logOut, nil))
	cfg, err := config.Load(getenv)
	if err != nil {
		return err
	}
	db, err := database(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer db.stop()
	if err := store.Migrate(ctx, db.url); err != nil {
		return err
	}
	switch cmd {
	case "migrate":
		log.Info("migrations applied")
		return nil
	case "vault rotate":
		return rotateVault(ctx, cfg, db.url, log)
	}
	return serve(ctx, cfg, db, log, ready)
}

// db is where the service's data lives.
type db struct {
	url    string
	stop   func()
	failed <-chan error // the private cluster died for good; nil for DATABASE_URL
}

// database returns DATABASE_URL, or the private cluster under DATA_DIR/pg:
// started and supervised by this process, or, when a live process already
// runs it, that process's server, which this one never stops.
func database(ctx context.Context, cfg config.Config, log *slog.Logger) (db, error) {
	if cfg.DatabaseURL != "" {
		return db{url: cfg.DatabaseURL, stop: func() {}}, nil
	}
	dir := filepath.Join(cfg.DataDir, "pg")
	cluster, err := localpg.Start(ctx, dir)
	if err != nil {
		return db{}, fmt.Errorf("private PostgreSQL: %w", err)
	}
	if cluster.Attached() {
		log.Info("DATABASE_URL not set: using the private PostgreSQL cluster another running process owns", "dir", dir)
	} else {
		log.Info("DATABASE_URL not set: started the private PostgreSQL cluster", "dir", dir)
	}
	cluster.SetLogger(func(format string, args ...any) { log.Warn(fmt.Sprintf(format, args...)) })
	stop := func() {
		if err := cluster.Stop(); err != nil {
			log.Error("stop private PostgreSQL", "err", err)
		}
	}
	if err := cluster.EnsureDatabase(ctx, "stencil"); err != nil {
		stop()
		return db{}, err
	}
	url, err := cluster.AppURL("stencil")
	if err != nil {
		stop()
		return db{}, err
	}
	return db{url: url, stop: stop, failed: cluster.Failed()}, nil
}

// newPool opens a pool of at most size connections whose statements stop at
// timeout on the server too, so that nothing outlives its request. Its
// statements plan no parallel workers: the service runs many small
// statements at once, and a parallel plan starts worker processes for
// every one of them (for a FETCH with match at 1,000,000 records, two per
// request, for a read a condition then skipped: docs/performance.md).
func newPool(ctx context.Context, url string, size int, timeout time.Duration) (*pgxpool.Pool, error) {
	pc, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("database: %w", err)
	}
	pc.MaxConns = int32(size)
	ms := strconv.FormatInt(timeout.Milliseconds(), 10)
	pc.ConnConfig.RuntimeParams["statement_timeout"] = ms
	pc.ConnConfig.RuntimeParams["lock_timeout"] = ms
	pc.ConnConfig.RuntimeParams["idle_in_transaction_session_timeout"] = strconv.FormatInt(2*timeout.Milliseconds(), 10)
	pc.ConnConfig.RuntimeParams["max_parallel_workers_per_gather"] = "0"
	return pgxpool.NewWithConfig(ctx, pc)
}

func serve(ctx context.Context, cfg config.Config, db db, log *slog.Logger, ready chan<- string) error {
	pool, err := newPool(ctx, db.url, cfg.DBMaxConns, cfg.RequestTimeout)
	if err != nil {
		return err
	}
	defer pool.Close()
	// Readiness has its own connections: it never waits behind requests.
	probe, err := newPool(ctx, db.url, 2, 2*time.Second)
	if err != nil {
		return err
	}
	defer probe.Close()

	st := store.New(pool)
	keyring, err := vaultKeyring(ctx, cfg, st)
	if err != nil {
		return err
	}
	if err := ensureRoot(ctx, cfg.Root, auth.PasswordHashes[cfg.PasswordHash], st, log); err != nil {
		return err
	}
	if err := reportAPIPathClashes(ctx, st, log); err != nil {
		return err
	}
	// Today's partitions of the logs before the first row: a service down
	// for days finds them missing (the housekeeping keeps them ahead).
	if err := st.EnsurePartitions(ctx); err != nil {
		return err
	}
	go housekeeping(ctx, st, cfg.EventRetention, log)

	runReads, err := newPool(ctx, db.url, cfg.RunDBMaxConns, cfg.RequestTimeout)
	if err != nil {
		return err
	}
	defer runReads.Close()
	runTx, err := newPool(ctx, db.url, cfg.RunTxMaxConns, cfg.RequestTimeout)
	if err != nil {
		return err
	}
	defer runTx.Close()
	// The listener comes first: the egress guard refuses the address it
	// is given (docs/engine.md).
	ln, err := net.Listen("tcp", cfg.Addr())
	if err != nil {
		return err
	}
	defer ln.Close()
	h, runner, err := newHandlers(ctx, cfg, st, keyring, pools{probe: probe, runReads: runReads, runTx: runTx}, selfAddrs(cfg, ln.Addr()), log)
	if err != nil {
		return err
	}
	reportMail(ctx, cfg, log)
	app := h.App()
	if err := sideListeners(ctx, cfg, h, log); err != nil {
		return err
	}

	limit := raiseFileLimit()
	served := make(chan error, 1)
	go func() { served <- app.Listener(newSteadyListener(ln, connectionCap(limit, cfg.DBMaxConns), log)) }()
	log.Info("serving", "addr", ln.Addr().String(), "production", cfg.Production, "open_files", limit)
	if ready != nil {
		ready <- ln.Addr().String()
	}
	// The job runner starts once the service answers: its start (River's
	// leader election, its listener, its queue) would hold up the first.
	jobsDone := make(chan struct{})
	go func() {
		defer close(jobsDone)
		runner.Jobs(log).Run(ctx)
	}()
	// What start-up parsed and let go (the pages' templates, the API
	// document) goes back now: a collector run by the memory limit alone
	// (main.go) would keep it until the heap reached the limit.
	go debug.FreeOSMemory()

	select {
	case err := <-served:
		return err
	case err := <-db.failed:
		_ = app.ShutdownWithTimeout(5 * time.Second)
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down: draining in-flight requests")
	err = app.ShutdownWithTimeout(30 * time.Second)
	// The runs of the requests drained and of the jobs stopped go to the
	// run log before the pools close (deferred above).
	<-jobsDone
	runner.Stop(10 * time.Second)
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return <-served
}

// selfAddrs are the service's own addresses, which its routes may not
// call: where it serves, and its metrics listener.
func selfAddrs(cfg config.Config, served net.Addr) []netip.AddrPort {
	var out []netip.AddrPort
	if ap, err := netip.ParseAddrPort(served.String()); err == nil {
		out = append(out, ap)
	}
	if ap, err := netip.ParseAddrPort(cfg.MetricsAddr); err == nil {
		out = append(out, ap)
	} else if _, port, err := net.SplitHostPort(cfg.MetricsAddr); err == nil {
		if p, err := strconv.Atoi(port); err == nil {
			out = append(out, netip.AddrPortFrom(netip.IPv6Unspecified(), uint16(p)))
		}
	}
	return out
}

// reportMail says at start where mail goes: held in the outbox (no
// SMTP_URL; a warning in production) or to the SMTP server.
func reportMail(ctx context.Context, cfg config.Config, log *slog.Logger) {
	if cfg.SMTP == nil {
		level := slog.LevelInfo
		if cfg.Production {
			level = slog.LevelWarn
		}
		log.Log(ctx, level, "mail is held: SMTP_URL is not set, so messages stay in the outbox unsent")
	} else {
		log.Info("mail goes to the SMTP server", "host", cfg.SMTP.Host, "port", cfg.SMTP.Port)
	}
}

// pools are the connection pools beside the platform's: readiness's own,
// what runs of routes read outside a transaction, and where runs that
// write hold their transactions (see config.RunDBMaxConns and
// config.RunTxMaxConns), so that runs never take the connections the
// platform's own API needs.
type pools struct{ probe, runReads, runTx *pgxpool.Pool }

// hashWait is how long a sign-in waits for a free hashing slot before it
// is answered 503.
const hashWait = 5 * time.Second

// newHandlers builds the route runtime, the mailer and the handlers on
// st and the pools, and sets the runtime's and the mailer's background work
// going until ctx ends: following route changes made on other instances,
// writing the run log, delivering mail.
func newHandlers(ctx context.Context, cfg config.Config, st *store.Store, keyring *vaultcrypt.Keyring, p pools, self []netip.AddrPort, log *slog.Logger) (*handlers.Handlers, *runs.Service, error) {
	metrics := metrics.New(st)
	secrets := vault.New(vault.Config{Store: st, Keyring: keyring, Versions: cfg.VaultVersions, Reads: metrics.VaultReads})
	mailer, err := mail.New(st, cfg, secrets, log)
	if err != nil {
		return nil, nil, err
	}
	guard, err := egress.New(cfg.EgressAllow, self)
	if err != nil {
		return nil, nil, err
	}
	runner := runs.New(runs.Config{Store: st, Reads: store.New(p.runReads), Tx: store.New(p.runTx), TxConns: int(p.runTx.Config().MaxConns),
		Vault: secrets, MailStatus: mailer.Status, MailBacklog: cfg.MailBacklog, Concurrency: cfg.RunConcurrency, Memory: cfg.RunMemory,
		Egress: guard.Client(), EgressConcurrency: cfg.EgressConcurrency, NoStats: !cfg.RouteStats, Counted: metrics.RunsCounted, Log: log,
		JobRescue: cfg.JobRescue})
	hasher := auth.NewHasher(auth.PasswordHashes[cfg.PasswordHash], max(2, runtime.NumCPU()), hashWait)
	followMemory(hasher, runner.Limits.Shared)
	h, err := handlers.New(cfg, handlers.Parts{Store: st, Probe: store.New(p.probe), Metrics: metrics, Runs: runner, Mail: mailer, Vault: secrets,
		Hasher: hasher}, log)
	if err != nil {
		return nil, nil, err
	}
	runner.Start(ctx)
	go runner.Scheduler(log).Run(ctx)
	go mailer.Run(ctx)
	return h, runner, nil
}

// housekeeping deletes expired browser sessions and sign-in failures past
// their window, makes the logs' partitions ahead and drops those past
// retention, every ten minutes until ctx ends. Several instances doing it
// at once is harmless.
func housekeeping(ctx context.Context, st *store.Store, eventsKept time.Duration, log *slog.Logger) {
	tick := time.NewTicker(10 * time.Minute)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if err := st.Sweep(ctx, eventsKept); err != nil && ctx.Err() == nil {
				log.Error("housekeeping", "err", err)
			}
		}
	}
}

// ensureRoot creates the first ROOT user from ROOT_USERNAME, ROOT_PASSWORD
// and ROOT_EMAIL when all are set and no user exists yet.
func ensureRoot(ctx context.Context, root config.RootAccount, params auth.PasswordParams, st *store.Store, log *slog.Logger) error {
	if !root.Set() {
		return nil
	}
	// Most starts find users: they skip the hash.
	if has, err := st.HasUsers(ctx); err != nil || has {
		return err
	}
	u := store.User{Username: root.Username, Email: root.Email, Role: store.RoleRoot,
		PasswordHash: auth.HashPassword(root.Password, params)}
	err := st.CreateFirstUser(ctx, &u)
	switch {
	case errors.Is(err, store.ErrAlreadySetUp):
		return nil
	case err != nil:
		return fmt.Errorf("create ROOT user from ROOT_USERNAME: %w", err)
	}
	log.Info("created the first ROOT user", "username", u.Username)
	return nil
}

// reportAPIPathClashes warns of projects whose api_paths overlap, made
// before the rule that forbids it: nobody's path is changed for them, and
// the older project of each pair answers at /x.
func reportAPIPathClashes(ctx context.Context, st *store.Store, log *slog.Logger) error {
	clashes, err := st.APIPathClashes(ctx)
	for _, c := range clashes {
		log.Warn("api_path clash: the older project answers at /x; change one of the paths",
			"project", c.Older, "api_path", c.OlderPath, "unanswered_project", c.Newer, "unanswered_api_path", c.NewerPath)
	}
	return err
}

// vaultKeyring is the keyring of VAULT_KEYS. It refuses to start when
// vault entries are sealed under a master key that VAULT_KEYS does not
// hold: their values could not be read.
func vaultKeyring(ctx context.Context, cfg config.Config, st *store.Store) (*vaultcrypt.Keyring, error) {
	keyring, err := vaultcrypt.NewKeyring(cfg.VaultKeys)
	if err != nil {
		return nil, err
	}
	ids, err := st.VaultKeyIDs(ctx)
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		if !keyring.Has(id) {
			return nil, fmt.Errorf("vault entries are sealed under master key %q, which VAULT_KEYS does not hold: "+
				"add it after the active key (id:base64key) and run `stencil vault rotate`", id)
		}
	}
	return keyring, nil
}

// rotateVault re-encrypts every vault entry under the active master key, in
// batches, while other instances keep serving.
func rotateVault(ctx context.Context, cfg config.Config, dbURL string, log *slog.Logger) error {
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	st := store.New(pool)
	keyring, err := vaultKeyring(ctx, cfg, st)
	if err != nil {
		return err
	}
	secrets := vault.New(vault.Config{Store: st, Keyring: keyring, Versions: cfg.VaultVersions})
	total, err := secrets.Rotate(ctx, 500, func(n, total int) {
		log.Info("vault rotate: batch re-encrypted", "entries", n, "total", total)
	})
	if err != nil {
		return err
	}
	ids, err := st.VaultKeyIDs(ctx)
	if err != nil {
		return err
	}
	log.Info("vault rotate: done", "entries", total, "active_key", secrets.ActiveKey(), "key_ids_in_use", strings.Join(ids, ","))
	return nil
}
