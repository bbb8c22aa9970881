// Command stencil serves Stencil: route templates and per-project vaults.
//
// Usage: stencil [serve | migrate | vault rotate]
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"stencil/auth"
	"stencil/config"
	"stencil/handlers"
	"stencil/store"
	"stencil/store/localpg"
	"stencil/vaultcrypt"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stderr, nil); err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(1)
	}
}

// run executes one subcommand. ready, when not nil, receives the listening
// address once the server accepts connections.
func run(ctx context.Context, args []string, getenv func(string) string, logOut io.Writer, ready chan<- string) error {
	cmd := "serve"
	if len(args) > 0 {
		cmd = strings.Join(args, " ")
	}
	if cmd != "serve" && cmd != "migrate" && cmd != "vault rotate" {
		return fmt.Errorf("unknown command %q: use serve, migrate or vault rotate", cmd)
	}
	log := slog.New(slog.NewTextHandler(logOut, nil))
	cfg, err := config.Load(getenv)
	if err != nil {
		return err
	}
	dbURL, stopDB, err := database(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer stopDB()
	if err := store.Migrate(ctx, dbURL); err != nil {
		return err
	}
	switch cmd {
	case "migrate":
		log.Info("migrations applied")
		return nil
	case "vault rotate":
		return rotateVault(ctx, cfg, dbURL, log)
	}
	return serve(ctx, cfg, dbURL, log, ready)
}

// database returns DATABASE_URL, or starts the private cluster under
// DATA_DIR/pg and returns its URL and the function that stops it.
func database(ctx context.Context, cfg config.Config, log *slog.Logger) (string, func(), error) {
	if cfg.DatabaseURL != "" {
		return cfg.DatabaseURL, func() {}, nil
	}
	dir := filepath.Join(cfg.DataDir, "pg")
	log.Info("DATABASE_URL not set: starting the private PostgreSQL cluster", "dir", dir)
	cluster, err := localpg.Start(ctx, dir)
	if err != nil {
		return "", nil, fmt.Errorf("private PostgreSQL: %w", err)
	}
	stop := func() {
		if err := cluster.Stop(); err != nil {
			log.Error("stop private PostgreSQL", "err", err)
		}
	}
	if err := cluster.EnsureDatabase(ctx, "stencil"); err != nil {
		stop()
		return "", nil, err
	}
	return cluster.URL("stencil"), stop, nil
}

func serve(ctx context.Context, cfg config.Config, dbURL string, log *slog.Logger, ready chan<- string) error {
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		return fmt.Errorf("database: %w", err)
	}
	defer pool.Close()

	st := store.New(pool)
	keyring, err := vaultcrypt.NewKeyring(cfg.VaultKeys)
	if err != nil {
		return err
	}
	if err := checkVaultKeys(ctx, keyring, st); err != nil {
		return err
	}
	if err := ensureRoot(ctx, cfg.Root, st, log); err != nil {
		return err
	}
	go cleanSessions(ctx, st, log)

	h, err := handlers.New(cfg, pool, log)
	if err != nil {
		return err
	}
	app := h.App()

	ln, err := net.Listen("tcp", cfg.Addr())
	if err != nil {
		return err
	}
	served := make(chan error, 1)
	go func() { served <- app.Listener(ln) }()
	log.Info("serving", "addr", ln.Addr().String(), "production", cfg.Production)
	if ready != nil {
		ready <- ln.Addr().String()
	}

	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down: draining in-flight requests")
	if err := app.ShutdownWithTimeout(30 * time.Second); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return <-served
}

// cleanSessions deletes expired browser sessions every ten minutes until ctx
// ends. Several instances doing it at once is harmless.
func cleanSessions(ctx context.Context, st *store.Store, log *slog.Logger) {
	tick := time.NewTicker(10 * time.Minute)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if _, err := st.DeleteExpiredSessions(ctx); err != nil && ctx.Err() == nil {
				log.Error("delete expired sessions", "err", err)
			}
		}
	}
}

// ensureRoot creates the first ROOT user from ROOT_USERNAME, ROOT_PASSWORD
// and ROOT_EMAIL when all are set and no user exists yet.
func ensureRoot(ctx context.Context, root config.RootAccount, st *store.Store, log *slog.Logger) error {
	if !root.Set() {
		return nil
	}
	u := store.User{Username: root.Username, Email: root.Email, Role: store.RoleRoot,
		PasswordHash: auth.HashPassword(root.Password, auth.DefaultPasswordParams)}
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

// checkVaultKeys refuses to start when vault entries are sealed under a
// master key that VAULT_KEYS does not hold: their values could not be read.
func checkVaultKeys(ctx context.Context, keyring *vaultcrypt.Keyring, st *store.Store) error {
	ids, err := st.VaultKeyIDs(ctx)
	if err != nil {
		return err
	}
	for _, id := range ids {
		if !keyring.Has(id) {
			return fmt.Errorf("vault entries are sealed under master key %q, which VAULT_KEYS does not hold: "+
				"add it after the active key (id:base64key) and run `stencil vault rotate`", id)
		}
	}
	return nil
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
	keyring, err := vaultcrypt.NewKeyring(cfg.VaultKeys)
	if err != nil {
		return err
	}
	if err := checkVaultKeys(ctx, keyring, st); err != nil {
		return err
	}
	reseal := func(e store.VaultEntry) (string, []byte, error) {
		value, err := keyring.Open(e.KeyID, e.ProjectID, e.Key, e.Sealed)
		if err != nil {
			return "", nil, fmt.Errorf("%s/%s: %w", e.ProjectID, e.Key, err)
		}
		return keyring.Seal(e.ProjectID, e.Key, value)
	}
	total := 0
	for {
		n, err := st.ResealVaultBatch(ctx, keyring.Active(), 500, reseal)
		if err != nil {
			return err
		}
		if n == 0 {
			break
		}
		total += n
		log.Info("vault rotate: batch re-encrypted", "entries", n, "total", total)
	}
	ids, err := st.VaultKeyIDs(ctx)
	if err != nil {
		return err
	}
	log.Info("vault rotate: done", "entries", total, "active_key", keyring.Active(), "key_ids_in_use", strings.Join(ids, ","))
	return nil
}
