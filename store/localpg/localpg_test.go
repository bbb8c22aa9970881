package localpg

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestPersistentCluster starts a cluster in a named directory, writes a row,
// stops it, starts it again and reads the row back: the path `make run`
// takes. Run as root, it also proves the server runs as the postgres user.
func TestPersistentCluster(t *testing.T) {
	ctx := context.Background()
	parent, err := os.MkdirTemp("", "localpg-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(parent) })
	if err := os.Chmod(parent, 0o711); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(parent, "pg")

	c, err := Start(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	mustExec(t, c, "CREATE TABLE kept (v text); INSERT INTO kept VALUES ('still here')")
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "data", "PG_VERSION")); err != nil {
		t.Fatalf("a named cluster directory must survive Stop: %v", err)
	}

	c, err = Start(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	conn := connect(t, c)
	var v string
	if err := conn.QueryRow(ctx, "SELECT v FROM kept").Scan(&v); err != nil {
		t.Fatal(err)
	}
	if v != "still here" {
		t.Fatalf("row after restart = %q", v)
	}
	st, err := os.Stat(filepath.Join(dir, "data"))
	if err != nil {
		t.Fatal(err)
	}
	owner := st.Sys().(*syscall.Stat_t).Uid
	if want, _ := serverCredential(); want != nil && owner != want.Uid {
		t.Fatalf("as root the data directory must belong to the postgres user, owner uid = %d", owner)
	} else if want == nil && owner != uint32(os.Geteuid()) {
		t.Fatalf("data directory owner uid = %d, want ours", owner)
	}
}

func TestThrowawayClusterIsRemoved(t *testing.T) {
	c, err := Start(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	dir := c.dir
	if err := c.EnsureDatabase(context.Background(), "other"); err != nil {
		t.Fatal(err)
	}
	if err := c.EnsureDatabase(context.Background(), "other"); err != nil {
		t.Fatalf("EnsureDatabase must accept an existing database: %v", err)
	}
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("throwaway directory %s still there (%v)", dir, err)
	}
}

func TestMissingBinaries(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	old := searchDirs
	searchDirs = func() []string { return nil }
	defer func() { searchDirs = old }()
	_, err := Start(context.Background(), "")
	if err != ErrNoBinaries {
		t.Fatalf("err = %v, want ErrNoBinaries", err)
	}
}

func mustExec(t *testing.T, c *Cluster, sql string) {
	t.Helper()
	conn := connect(t, c)
	if _, err := conn.Exec(context.Background(), sql); err != nil {
		t.Fatal(err)
	}
}

func connect(t *testing.T, c *Cluster) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), c.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// TestSupervisionGivesUp: a server that dies and cannot start again is
// reported on Failed, so that the process can exit for its own supervisor.
func TestSupervisionGivesUp(t *testing.T) {
	c, err := Start(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	c.restartAttempts = 2
	c.mu.Unlock()
	defer c.Stop()
	// The data directory goes away under the server: no restart can work.
	if err := os.Rename(c.data, c.data+".gone"); err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	pid := c.cmd.Process.Pid
	c.mu.Unlock()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-c.Failed():
		if err == nil {
			t.Fatal("Failed delivered no error")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("supervision did not give up")
	}
}
