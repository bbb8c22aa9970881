// Package localpg runs a private PostgreSQL cluster with the machine's server
// binaries, for development (`make run` without DATABASE_URL) and for tests.
//
// The cluster listens only on 127.0.0.1, on a free port chosen at each start,
// and requires a password that is generated at initdb and kept in the cluster
// directory (mode 0600). PostgreSQL refuses to run as root; when this process
// is root, initdb and postgres run as the unprivileged "postgres" user on a
// directory that user owns.
//
// One process owns a cluster directory at a time (a lock file): it starts the
// server, restarts it when it dies, and stops it. Another process that starts
// on the same directory while the owner lives attaches to the running server
// and never stops it.
package localpg

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// Superuser is the name of the cluster's superuser role.
const Superuser = "stencil"

// AppRole is the role the application connects as: it owns the databases
// EnsureDatabase makes and nothing else.
const AppRole = "stencil_app"

// ErrNoBinaries reports that initdb or postgres could not be found.
var ErrNoBinaries = errors.New("PostgreSQL server binaries (initdb, postgres) not found on PATH or under /usr/lib/postgresql/*/bin: " +
	"install them (Debian: apt-get install postgresql) or set DATABASE_URL to an existing database")

// Cluster is a running private PostgreSQL server.
type Cluster struct {
	dir       string
	throwaway bool
	port      int
	password  string
	attached  bool     // another process owns the server: never stop it
	lock      *os.File // held while this process owns the directory

	bin  binaries
	data string
	cred *syscall.Credential

	mu       sync.Mutex // guards cmd, done, waitErr, logFile, stopping
	cmd      *exec.Cmd
	done     chan struct{}
	waitErr  error
	logFile  *os.File
	stopping bool
	failed   chan error // receives once when the server cannot be restarted
	logf     func(format string, args ...any)

	restartAttempts int // failed restarts in a row before giving up (guarded by mu)
}

// Start initializes dir as a cluster when it holds none yet, starts the server
// and waits until it accepts connections. An empty dir means a throwaway
// cluster: a new temporary directory, no fsync, removed by Stop. The caller
// must call Stop.
func Start(ctx context.Context, dir string) (*Cluster, error) {
	bin, err := findBinaries()
	if err != nil {
		return nil, err
	}
	cred, err := serverCredential()
	if err != nil {
		return nil, err
	}
	throwaway := dir == ""
	if throwaway {
		if dir, err = os.MkdirTemp("", "stencil-pg-"); err != nil {
			return nil, err
		}
	} else if dir, err = filepath.Abs(dir); err != nil {
		return nil, err
	}
	c, err := start(ctx, bin, dir, throwaway, cred)
	if err != nil && throwaway {
		_ = os.RemoveAll(dir)
	}
	return c, err
}

func start(ctx context.Context, bin binaries, dir string, throwaway bool, cred *syscall.Credential) (*Cluster, error) {
	if err := prepareDir(dir, cred); err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "data")
	c := &Cluster{dir: dir, throwaway: throwaway, bin: bin, data: data, cred: cred, failed: make(chan error, 1),
		logf: func(string, ...any) {}, restartAttempts: defaultRestartAttempts}
	lock, owner, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	if !owner {
		// A live process owns this cluster: use its server as it runs.
		return c, c.attach(ctx)
	}
	c.lock = lock
	pwFile := filepath.Join(dir, "password")
	if _, err := os.Stat(filepath.Join(data, "PG_VERSION")); errors.Is(err, os.ErrNotExist) {
		if err := initCluster(ctx, bin, dir, data, pwFile, cred); err != nil {
			c.unlock()
			return nil, err
		}
	}
	pw, err := os.ReadFile(pwFile)
	if err != nil {
		c.unlock()
		return nil, fmt.Errorf("read cluster password: %w", err)
	}
	c.password = strings.TrimSpace(string(pw))
	// No live process owns the directory, so a server still running on it
	// was left by one that died: stop it before starting ours.
	stopStale(bin, data, cred)
	// A free port can be taken by another process between the probe and
	// the server's bind; try a few.
	for attempt := 0; ; attempt++ {
		port, err := freePort()
		if err == nil {
			err = c.launch(ctx, port)
		}
		if err == nil {
			go c.supervise()
			return c, nil
		}
		if attempt == 4 {
			c.unlock()
			return nil, err
		}
	}
}

// lockDir takes the owner lock of a cluster directory without waiting; owner
// is false when a live process holds it.
func lockDir(dir string) (*os.File, bool, error) {
	f, err := os.OpenFile(filepath.Join(dir, "owner.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, false, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, false, nil
		}
		return nil, false, err
	}
	return f, true, nil
}

func (c *Cluster) unlock() {
	if c.lock != nil {
		c.lock.Close() // closing releases the flock
		c.lock = nil
	}
}

// attach connects to the server another process runs on this directory: its
// port is in postmaster.pid, its password in the cluster directory.
func (c *Cluster) attach(ctx context.Context) error {
	c.attached = true
	pw, err := os.ReadFile(filepath.Join(c.dir, "password"))
	if err != nil {
		return fmt.Errorf("read cluster password: %w", err)
	}
	c.password = strings.TrimSpace(string(pw))
	deadline := time.Now().Add(60 * time.Second)
	for {
		raw, err := os.ReadFile(filepath.Join(c.data, "postmaster.pid"))
		if err == nil {
			// Line 4 of postmaster.pid is the port.
			if lines := strings.Split(string(raw), "\n"); len(lines) > 3 {
				c.port, _ = strconv.Atoi(strings.TrimSpace(lines[3]))
			}
		}
		if c.port > 0 {
			if conn, err := pgx.Connect(ctx, c.URL("postgres")); err == nil {
				conn.Close(ctx)
				return nil
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("the PostgreSQL cluster in %s is owned by another running process but does not answer", c.dir)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Attached reports whether another process owns the server.
func (c *Cluster) Attached() bool { return c.attached }

// SetLogger sets where supervision reports restarts.
func (c *Cluster) SetLogger(logf func(format string, args ...any)) { c.logf = logf }

// Failed receives an error when the server died and could not be started
// again; the process should then exit so that its own supervisor acts.
func (c *Cluster) Failed() <-chan error { return c.failed }

// supervise restarts the server, on the same port, whenever it exits
// without Stop, backing off between attempts; after c.restartAttempts
// failures in a row it reports on Failed.
func (c *Cluster) supervise() {
	for {
		c.mu.Lock()
		done := c.done
		c.mu.Unlock()
		<-done
		c.mu.Lock()
		stopping, waitErr, attempts := c.stopping, c.waitErr, c.restartAttempts
		c.logFile.Close()
		c.mu.Unlock()
		if stopping {
			return
		}
		c.logf("private PostgreSQL exited (%v): restarting", waitErr)
		var err error
		backoff := 100 * time.Millisecond
		for attempt := 1; attempt <= attempts; attempt++ {
			time.Sleep(backoff)
			backoff = min(2*backoff, 5*time.Second)
			if c.isStopping() {
				return
			}
			if err = c.launch(context.Background(), c.port); err == nil {
				c.logf("private PostgreSQL restarted after %d attempt(s)", attempt)
				break
			}
		}
		if err != nil {
			c.failed <- fmt.Errorf("private PostgreSQL died and could not be restarted: %w", err)
			return
		}
	}
}

// defaultRestartAttempts bound how long supervision tries: about a minute.
const defaultRestartAttempts = 15

func (c *Cluster) isStopping() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stopping
}

// URL returns a connection URL for database name on this cluster.
func (c *Cluster) URL(name string) string {
	u := url.URL{
		Scheme:   "postgres",
		User:     url.UserPassword(Superuser, c.password),
		Host:     net.JoinHostPort("127.0.0.1", strconv.Itoa(c.port)),
		Path:     "/" + name,
		RawQuery: "sslmode=disable",
	}
	return u.String()
}

// AppURL returns a connection URL for database name as AppRole.
func (c *Cluster) AppURL(name string) (string, error) {
	pw, err := os.ReadFile(filepath.Join(c.dir, "app_password"))
	if err != nil {
		return "", fmt.Errorf("read the application role's password: %w", err)
	}
	u := url.URL{
		Scheme:   "postgres",
		User:     url.UserPassword(AppRole, strings.TrimSpace(string(pw))),
		Host:     net.JoinHostPort("127.0.0.1", strconv.Itoa(c.port)),
		Path:     "/" + name,
		RawQuery: "sslmode=disable",
	}
	return u.String(), nil
}

// EnsureDatabase makes database name exist, owned by AppRole, which is no
// superuser and may create no roles or databases: the application connects
// as the owner of its database and of nothing else. A database from before
// the role existed is handed over with the tables in it. Only the owner of
// the cluster does this; an attached process finds it done.
func (c *Cluster) EnsureDatabase(ctx context.Context, name string) error {
	if c.attached {
		return nil
	}
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	password, err := c.appPassword()
	if err != nil {
		return err
	}
	role := pgx.Identifier{AppRole}.Sanitize()
	var roleExists, dbExists bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1),
		EXISTS (SELECT 1 FROM pg_database WHERE datname = $2)`, AppRole, name).Scan(&roleExists, &dbExists); err != nil {
		return err
	}
	verb := "ALTER"
	if !roleExists {
		verb = "CREATE"
	}
	// The password is hex: it needs no quoting beyond the literal's.
	if _, err := conn.Exec(ctx, verb+" ROLE "+role+" LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD '"+password+"'"); err != nil {
		return err
	}
	db := pgx.Identifier{name}.Sanitize()
	if !dbExists {
		_, err = conn.Exec(ctx, "CREATE DATABASE "+db+" OWNER "+role)
		return err
	}
	if _, err := conn.Exec(ctx, "ALTER DATABASE "+db+" OWNER TO "+role); err != nil {
		return err
	}
	return c.handOver(ctx, name)
}

// handOver gives AppRole the tables and views of database name's public
// schema that the superuser made before the role existed; the sequences of
// identity columns follow their tables.
func (c *Cluster) handOver(ctx context.Context, name string) error {
	conn, err := pgx.Connect(ctx, c.URL(name))
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `DO $$
DECLARE r record;
BEGIN
	FOR r IN SELECT c.oid::regclass AS rel, c.relkind FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p', 'v', 'm') AND pg_get_userbyid(c.relowner) <> '`+AppRole+`'
	LOOP
		EXECUTE format('ALTER %s %s OWNER TO `+AppRole+`',
			CASE r.relkind WHEN 'v' THEN 'VIEW' WHEN 'm' THEN 'MATERIALIZED VIEW' ELSE 'TABLE' END, r.rel);
	END LOOP;
END $$`)
	return err
}

// appPassword returns AppRole's password, generating it (mode 0600) on
// first use.
func (c *Cluster) appPassword() (string, error) {
	path := filepath.Join(c.dir, "app_password")
	if b, err := os.ReadFile(path); err == nil {
		return strings.TrimSpace(string(b)), nil
	}
	buf := make([]byte, 24)
	if _, err := rand.Read(buf); err != nil {
		return "", err
	}
	pw := hex.EncodeToString(buf)
	return pw, os.WriteFile(path, []byte(pw+"\n"), 0o600)
}

// Stop shuts the server down (fast mode: open sessions are closed), waits
// for it to exit and removes a throwaway cluster's directory. An attached
// cluster is left running for its owner.
func (c *Cluster) Stop() error {
	if c.attached {
		return nil
	}
	c.mu.Lock()
	c.stopping = true
	c.mu.Unlock()
	c.halt()
	c.unlock()
	if c.throwaway {
		return os.RemoveAll(c.dir)
	}
	return nil
}

func (c *Cluster) halt() {
	c.mu.Lock()
	cmd, done := c.cmd, c.done
	c.mu.Unlock()
	_ = cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

type binaries struct{ initdb, postgres, pgctl string }

// searchDirs lists the Debian locations of server binaries, newest major
// version first.
var searchDirs = func() []string {
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(found, func(i, j int) bool { return majorOf(found[i]) > majorOf(found[j]) })
	return found
}

func majorOf(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

func findBinaries() (binaries, error) {
	var dirs []string
	if p, err := exec.LookPath("postgres"); err == nil {
		dirs = append(dirs, filepath.Dir(p))
	}
	for _, d := range append(dirs, searchDirs()...) {
		b := binaries{
			initdb:   filepath.Join(d, "initdb"),
			postgres: filepath.Join(d, "postgres"),
			pgctl:    filepath.Join(d, "pg_ctl"),
		}
		if isExecutable(b.initdb) && isExecutable(b.postgres) {
			return b, nil
		}
	}
	return binaries{}, ErrNoBinaries
}

// Tool returns the path of one of PostgreSQL's programs (pg_dump,
// pg_restore): from PATH, or of the newest major version installed.
func Tool(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, d := range searchDirs() {
		if p := filepath.Join(d, name); isExecutable(p) {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found: install PostgreSQL's client programs (Debian: apt-get install postgresql-client)", name)
}

func isExecutable(path string) bool {
	st, err := os.Stat(path)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

// serverCredential returns the identity the server runs as: nil (this
// process's own) unless this process is root.
func serverCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, errors.New("running as root, and PostgreSQL refuses to: create a \"postgres\" system user " +
			"(Debian: apt-get install postgresql) or run as an unprivileged user")
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}, nil
}

// prepareDir creates dir, owned by the server's user when that differs from
// ours, and checks that the server's user can reach it.
func prepareDir(dir string, cred *syscall.Credential) error {
	// Parents made here must let the server's user pass through.
	if err := os.MkdirAll(filepath.Dir(dir), 0o711); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if cred == nil {
		return nil
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return err
	}
	if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
		return err
	}
	// Every ancestor must be searchable by the postgres user.
	for d := filepath.Dir(dir); ; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err != nil {
			return err
		}
		if st.Mode().Perm()&0o001 == 0 {
			sys, ok := st.Sys().(*syscall.Stat_t)
			if !ok || sys.Uid != cred.Uid {
				return fmt.Errorf("the postgres user cannot enter %s (mode %v): allow it (chmod o+x) or choose another DATA_DIR", d, st.Mode().Perm())
			}
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}

func initCluster(ctx context.Context, bin binaries, dir, data, pwFile string, cred *syscall.Credential) error {
	buf := make([]byte, 24)
	if _, err := rand.Read(buf); err != nil {
		return err
	}
	if err := os.WriteFile(pwFile, []byte(hex.EncodeToString(buf)+"\n"), 0o600); err != nil {
		return err
	}
	if cred != nil {
		if err := os.Chown(pwFile, int(cred.Uid), int(cred.Gid)); err != nil {
			return err
		}
	}
	cmd := exec.CommandContext(ctx, bin.initdb,
		"-D", data, "-U", Superuser, "--pwfile", pwFile,
		"--auth=scram-sha-256", "-E", "UTF8", "--locale=C", "--no-sync")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		_ = os.RemoveAll(data)
		return fmt.Errorf("initdb: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// stopStale stops a server left running on data by a process that died
// without stopping it, so that this start does not fail on its lock file.
func stopStale(bin binaries, data string, cred *syscall.Credential) {
	raw, err := os.ReadFile(filepath.Join(data, "postmaster.pid"))
	if err != nil {
		return
	}
	pid, err := strconv.Atoi(strings.SplitN(string(raw), "\n", 2)[0])
	if err != nil || syscall.Kill(pid, 0) != nil {
		return
	}
	cmd := exec.Command(bin.pgctl, "stop", "-D", data, "-m", "fast", "-w")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	_ = cmd.Run()
}

func (c *Cluster) launch(ctx context.Context, port int) error {
	bin, data, cred := c.bin, c.data, c.cred
	logFile, err := os.OpenFile(filepath.Join(c.dir, "server.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	args := []string{"-D", data, "-h", "127.0.0.1", "-p", strconv.Itoa(port), "-k", "", "-c", "max_connections=200"}
	if c.throwaway {
		args = append(args, "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off")
	}
	cmd := exec.Command(bin.postgres, args...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	// Setpgid keeps a terminal's Ctrl-C from reaching the server before the
	// app has drained; Pdeathsig stops the server if this process dies
	// without calling Stop.
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGINT, Setpgid: true}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("start postgres: %w", err)
	}
	done := make(chan struct{})
	c.mu.Lock()
	c.port, c.cmd, c.logFile, c.done = port, cmd, logFile, done
	c.mu.Unlock()
	go func() {
		err := cmd.Wait()
		c.mu.Lock()
		c.waitErr = err
		c.mu.Unlock()
		close(done)
	}()
	if err := c.waitReady(ctx, done); err != nil {
		c.halt()
		logFile.Close()
		return err
	}
	return nil
}

func (c *Cluster) waitReady(ctx context.Context, done chan struct{}) error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case <-done:
			c.mu.Lock()
			defer c.mu.Unlock()
			return fmt.Errorf("postgres exited during start-up (%v); see %s", c.waitErr, filepath.Join(c.dir, "server.log"))
		default:
		}
		conn, err := pgx.Connect(ctx, c.URL("postgres"))
		if err == nil {
			conn.Close(ctx)
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("postgres did not accept connections: %w", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
