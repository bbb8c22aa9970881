package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"stencil/backup"
	"stencil/config"
	"stencil/store"
	"stencil/store/localpg"
	"stencil/vaultcrypt"
)

// Backups (docs/operations.md): `stencil backup <file>` writes the whole
// service while it runs; `stencil restore <file>` brings it back into an
// empty DATA_DIR (or DATABASE_URL).

// devSecretFiles are the files of DATA_DIR that hold a development
// service's keys, in the order of backup.Secrets' fields.
var devSecretFiles = [...]string{config.VaultKeysFile, config.JWTSecretFile}

// keysInDataDir says whether the service's keys are the ones in DATA_DIR.
func keysInDataDir(cfg config.Config, getenv func(string) string) bool {
	return !cfg.Production && getenv("VAULT_KEYS") == ""
}

// backupPassphrase is BACKUP_PASSPHRASE, checked.
func backupPassphrase(getenv func(string) string, why string) (string, error) {
	p := getenv("BACKUP_PASSPHRASE")
	switch {
	case p == "":
		return "", errors.New("BACKUP_PASSPHRASE is required: " + why)
	case len(p) < backup.MinPassphrase:
		return "", fmt.Errorf("BACKUP_PASSPHRASE must be at least %d characters", backup.MinPassphrase)
	}
	return p, nil
}

// runBackup writes the service's database, and its keys when they live in
// DATA_DIR, to path. The dump and the manifest's key ids come from one
// snapshot of the database, taken while the service keeps serving.
// runLogWait bounds the wait for the instances' run logs before a
// backup's snapshot.
const runLogWait = 5 * time.Second

func runBackup(ctx context.Context, cfg config.Config, getenv func(string) string, path string, log *slog.Logger) error {
	var secrets *backup.Secrets
	var passphrase string
	keys := backup.KeysOperator
	if keysInDataDir(cfg, getenv) {
		var err error
		if passphrase, err = backupPassphrase(getenv, "the vault keys in DATA_DIR go into the backup sealed with it"); err != nil {
			return err
		}
		var values [len(devSecretFiles)]string
		for i, name := range devSecretFiles {
			raw, err := os.ReadFile(filepath.Join(cfg.DataDir, name))
			if err != nil {
				return err
			}
			values[i] = strings.TrimSpace(string(raw))
		}
		secrets, keys = &backup.Secrets{VaultKeys: values[0], JWTSecret: values[1]}, backup.KeysSealed
	}
	pgDump, db, pool, closeAll, err := openForTool(ctx, cfg, "pg_dump", log)
	if err != nil {
		return err
	}
	defer closeAll()
	work, err := os.MkdirTemp(filepath.Dir(path), ".stencil-backup-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	dump := filepath.Join(work, "database.dump")
	m := backup.Manifest{CreatedAt: time.Now().UTC().Truncate(time.Second), Keys: keys, Database: "pg_dump custom format"}
	// Runs acknowledged before now have their run-log rows in the
	// snapshot: every instance writes what it holds first.
	asked, answered, err := store.New(pool).FlushRunLogs(ctx, runLogWait)
	if err != nil {
		return err
	}
	if answered < asked {
		log.Warn("backup: instances did not write their run log in time; runs they acknowledged since their last write are not in the backup",
			"instances", asked, "written", answered, "waited", runLogWait)
	} else {
		log.Info("backup: run logs written", "instances", asked)
	}
	err = store.New(pool).WithSnapshot(ctx, func(tx *store.Store, snapshot string) error {
		if m.VaultKeyIDs, err = tx.VaultKeyIDs(ctx); err != nil {
			return err
		}
		return runTool(ctx, pgDump, db.url, "--format=custom", "--snapshot="+snapshot, "--file="+dump)
	})
	if err != nil {
		return err
	}
	if m.VaultKeyIDs == nil {
		m.VaultKeyIDs = []string{}
	}
	if err := backup.Write(path, m, secrets, passphrase, dump); err != nil {
		return err
	}
	log.Info("backup written", "file", path, "vault_key_ids", strings.Join(m.VaultKeyIDs, ","), "keys", keys)
	return nil
}

// runRestore brings a backup into an empty DATA_DIR (or DATABASE_URL): the
// keys first (unsealed into DATA_DIR, or the operator's VAULT_KEYS, which
// must hold every id the manifest names), then the database.
func runRestore(ctx context.Context, getenv func(string) string, path string, log *slog.Logger) (err error) {
	dataDir, err := config.DataDir(getenv)
	if err != nil {
		return err
	}
	// A refused or failed restore leaves DATA_DIR as it found it: what it
	// wrote there (a development secret, unsealed keys, a private
	// cluster) goes, so that the right restore then finds it empty.
	defer keepAsFound(dataDir, &err)()
	work, err := os.MkdirTemp("", "stencil-restore-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	a, err := backup.Read(path, work)
	if err != nil {
		return err
	}
	if a.Manifest.Keys == backup.KeysSealed && getenv("VAULT_KEYS") == "" {
		if err := restoreSecrets(getenv, dataDir, a); err != nil {
			return err
		}
	}
	cfg, err := config.Load(getenv)
	if err != nil {
		return err
	}
	var missing []string
	for _, id := range a.Manifest.VaultKeyIDs {
		if !slices.ContainsFunc(cfg.VaultKeys, func(k vaultcrypt.Key) bool { return k.ID == id }) {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("the backup's vault values need master keys %s, which VAULT_KEYS does not hold: nothing was restored", strings.Join(missing, ", "))
	}
	pgRestore, db, pool, closeAll, err := openForTool(ctx, cfg, "pg_restore", log)
	if err != nil {
		return err
	}
	defer closeAll()
	var tables int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").Scan(&tables); err != nil {
		return err
	}
	if tables > 0 {
		return errors.New("the database is not empty: restore into an empty DATA_DIR or DATABASE_URL; nothing was restored")
	}
	if err := runTool(ctx, pgRestore, db.url, "--no-owner", "--no-privileges", "--exit-on-error", "--single-transaction", a.DumpPath); err != nil {
		return err
	}
	if err := store.Migrate(ctx, db.url); err != nil {
		return err
	}
	if _, err := vaultKeyring(ctx, cfg, store.New(pool)); err != nil {
		return err
	}
	log.Info("backup restored", "file", path, "made", a.Manifest.CreatedAt.Format(time.RFC3339), "vault_key_ids", strings.Join(a.Manifest.VaultKeyIDs, ","))
	return nil
}

// keepAsFound notes what dir holds now; the function it returns removes,
// when *err is set, what was added to dir since (dir too, if it did not
// exist).
func keepAsFound(dir string, err *error) func() {
	before := map[string]bool{}
	entries, readErr := os.ReadDir(dir)
	existed := readErr == nil
	for _, e := range entries {
		before[e.Name()] = true
	}
	return func() {
		if *err == nil {
			return
		}
		if !existed {
			os.RemoveAll(dir)
			return
		}
		now, _ := os.ReadDir(dir)
		for _, e := range now {
			if !before[e.Name()] {
				os.RemoveAll(filepath.Join(dir, e.Name()))
			}
		}
	}
}

// restoreSecrets unseals the backup's keys into DATA_DIR, which must not
// hold keys of its own.
func restoreSecrets(getenv func(string) string, dataDir string, a backup.Archive) error {
	why := "the backup's keys are sealed with it; nothing was restored"
	if ids := a.Manifest.VaultKeyIDs; len(ids) > 0 {
		why = "the backup's vault keys (" + strings.Join(ids, ", ") + ") are sealed with it; nothing was restored"
	}
	passphrase, err := backupPassphrase(getenv, why)
	if err != nil {
		return err
	}
	secrets, err := backup.OpenSecrets(passphrase, a.Sealed)
	if err != nil {
		return fmt.Errorf("%w; nothing was restored", err)
	}
	for _, name := range append(devSecretFiles[:], "pg") {
		if _, err := os.Stat(filepath.Join(dataDir, name)); err == nil {
			return fmt.Errorf("DATA_DIR %s is not empty (it has %s): restore into an empty one; nothing was restored", dataDir, name)
		}
	}
	if err := os.MkdirAll(dataDir, 0o711); err != nil {
		return err
	}
	for i, value := range []string{secrets.VaultKeys, secrets.JWTSecret} {
		if err := os.WriteFile(filepath.Join(dataDir, devSecretFiles[i]), []byte(value+"\n"), 0o600); err != nil {
			return err
		}
	}
	return nil
}

// openForTool finds one of PostgreSQL's programs and opens the service's
// database (the private cluster, or DATABASE_URL) for it, with a pool of
// two connections beside; closeAll closes both.
func openForTool(ctx context.Context, cfg config.Config, tool string, log *slog.Logger) (path string, _ db, _ *pgxpool.Pool, closeAll func(), err error) {
	if path, err = localpg.Tool(tool); err != nil {
		return "", db{}, nil, nil, err
	}
	d, err := database(ctx, cfg, log)
	if err != nil {
		return "", db{}, nil, nil, err
	}
	pool, err := newPool(ctx, d.url, 2, time.Hour)
	if err != nil {
		d.stop()
		return "", db{}, nil, nil, err
	}
	return path, d, pool, func() { pool.Close(); d.stop() }, nil
}

// runTool runs one of PostgreSQL's programs on the database at dbURL; its
// complaint is the error. The password goes by PGPASSWORD, never on the
// command line, which other users of the machine can read.
func runTool(ctx context.Context, path, dbURL string, args ...string) error {
	env := os.Environ()
	if u, err := url.Parse(dbURL); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") && u.User != nil {
		if pw, ok := u.User.Password(); ok {
			env = append(env, "PGPASSWORD="+pw)
			u.User = url.User(u.User.Username())
			dbURL = u.String()
		}
	}
	cmd := exec.CommandContext(ctx, path, append(args, "--dbname="+dbURL)...)
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if i := strings.IndexByte(msg, '\n'); i > 0 {
			msg = msg[:i]
		}
		return fmt.Errorf("%s: %v: %s", filepath.Base(path), err, msg)
	}
	return nil
}
