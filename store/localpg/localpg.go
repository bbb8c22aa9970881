// Package localpg runs a private PostgreSQL cluster with the machine's server
// binaries, for development (`make run` without DATABASE_URL) and for tests.
//
// The cluster listens only on 127.0.0.1, on a free port chosen at each start,
// and requires a password that is generated at initdb and kept in the cluster
// directory (mode 0600). PostgreSQL refuses to run as root; when this process
// is root, initdb and postgres run as the unprivileged "postgres" user on a
// directory that user owns.
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
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// Superuser is the name of the cluster's superuser role.
const Superuser = "stencil"

// ErrNoBinaries reports that initdb or postgres could not be found.
var ErrNoBinaries = errors.New("PostgreSQL server binaries (initdb, postgres) not found on PATH or under /usr/lib/postgresql/*/bin: " +
	"install them (Debian: apt-get install postgresql) or set DATABASE_URL to an existing database")

// Cluster is a running private PostgreSQL server.
type Cluster struct {
	dir       string
	throwaway bool
	port      int
	password  string
	cmd       *exec.Cmd
	done      chan struct{}
	waitErr   error
	logFile   *os.File
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
	pwFile := filepath.Join(dir, "password")
	if _, err := os.Stat(filepath.Join(data, "PG_VERSION")); errors.Is(err, os.ErrNotExist) {
		if err := initCluster(ctx, bin, dir, data, pwFile, cred); err != nil {
			return nil, err
		}
	}
	pw, err := os.ReadFile(pwFile)
	if err != nil {
		return nil, fmt.Errorf("read cluster password: %w", err)
	}
	stopStale(bin, data, cred)
	c := &Cluster{dir: dir, throwaway: throwaway, password: strings.TrimSpace(string(pw))}
	// A free port can be taken by another process between the probe and
	// the server's bind; try a few.
	for attempt := 0; ; attempt++ {
		err := c.launch(ctx, bin, data, cred)
		if err == nil || attempt == 4 {
			return c, err
		}
	}
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

// EnsureDatabase creates database name unless it exists.
func (c *Cluster) EnsureDatabase(ctx context.Context, name string) error {
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return err
	}
	if exists {
		return nil
	}
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	return err
}

// Stop shuts the server down (fast mode: open sessions are closed), waits
// for it to exit and removes a throwaway cluster's directory.
func (c *Cluster) Stop() error {
	c.halt()
	if c.throwaway {
		return os.RemoveAll(c.dir)
	}
	return nil
}

func (c *Cluster) halt() {
	defer c.logFile.Close()
	_ = c.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-c.done:
	case <-time.After(30 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.done
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

func (c *Cluster) launch(ctx context.Context, bin binaries, data string, cred *syscall.Credential) error {
	port, err := freePort()
	if err != nil {
		return err
	}
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
	c.port, c.cmd, c.logFile, c.done = port, cmd, logFile, make(chan struct{})
	go func() {
		c.waitErr = cmd.Wait()
		close(c.done)
	}()
	if err := c.waitReady(ctx); err != nil {
		c.halt()
		return err
	}
	return nil
}

func (c *Cluster) waitReady(ctx context.Context) error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case <-c.done:
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
