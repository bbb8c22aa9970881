package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestVaultImportKilled: the service is killed (SIGKILL) while it applies
// an import of 500 keys, caught with the import's locks held: none of the
// keys and none of their log rows remain. An import the kill came too late
// for has all 500 with their 500 log rows; the test tries again until one
// kill lands inside the transaction.
func TestVaultImportKilled(t *testing.T) {
	// Mostly waiting (leases, restarts): it runs beside the journeys.
	t.Parallel()
	url, db := seededDB(t, `INSERT INTO projects (id, name, api_path) VALUES ('shop', 'Shop', '/shop')`)
	ctx := context.Background()
	vars := map[string]string{"DATABASE_URL": url, "ROOT_USERNAME": "owner", "ROOT_PASSWORD": "owner-password-1", "ROOT_EMAIL": "owner@example.com"}
	const keys = 500
	value := strings.Repeat("s3cr3t=#'\" ", 400) // about 4 KB a value
	for attempt := 1; attempt <= 20; attempt++ {
		c := startChild(t, vars, 0)
		if attempt == 1 {
			// The first start made the owner.
			if _, err := db.Exec(ctx, `INSERT INTO project_members (project_id, user_id, role) SELECT 'shop', id, 'ADMIN' FROM users WHERE username = 'owner'`); err != nil {
				t.Fatal(err)
			}
		}
		token := apiLogin(t, c.URL, "owner", "owner-password-1")
		var env strings.Builder
		prefix := fmt.Sprintf("A%d_", attempt)
		for i := range keys {
			raw, _ := json.Marshal(value)
			fmt.Fprintf(&env, "%sK%d=%s\n", prefix, i, raw)
		}
		body, _ := json.Marshal(map[string]string{"project_id": "shop", "env": env.String()})
		answered := make(chan int, 1)
		go func() {
			// The kill cuts this request off: its error is the point.
			req, _ := http.NewRequest("POST", c.URL+"/vault/import", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+token)
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
				answered <- resp.StatusCode
			}
		}()
		// The kill lands once the import holds its locks on the vault.
		caught := false
		deadline := time.Now().Add(20 * time.Second)
	watch:
		for time.Now().Before(deadline) {
			select {
			case status := <-answered:
				t.Logf("attempt %d: the import answered %d before a kill", attempt, status)
				break watch
			default:
			}
			var held bool
			if err := db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks l JOIN pg_class r ON r.oid = l.relation
				WHERE r.relname = 'vault_entries' AND l.mode IN ('RowShareLock', 'RowExclusiveLock') AND l.pid <> pg_backend_pid())`).Scan(&held); err != nil {
				t.Fatal(err)
			}
			if held {
				if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
				<-c.done
				caught = true
				break
			}
		}
		// PostgreSQL ends the dead service's transaction; wait for it.
		var entries, logged int
		for range 100 {
			if err := db.QueryRow(ctx, `SELECT (SELECT count(*) FROM vault_entries WHERE project_id = 'shop' AND key LIKE $1 || '%'),
				(SELECT count(*) FROM vault_access_log WHERE project_id = 'shop' AND key LIKE $1 || '%' AND action = 'create')`, prefix).Scan(&entries, &logged); err != nil {
				t.Fatal(err)
			}
			var busy bool
			_ = db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks l JOIN pg_class r ON r.oid = l.relation
				WHERE r.relname = 'vault_entries' AND l.pid <> pg_backend_pid())`).Scan(&busy)
			if !busy {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if entries != 0 && entries != keys || logged != entries {
			t.Fatalf("attempt %d: %d of %d keys and %d log rows remain: the import was not all or nothing", attempt, entries, keys, logged)
		}
		if caught && entries == 0 {
			t.Logf("attempt %d: killed inside the import's transaction; nothing of it remains", attempt)
			return
		}
		_ = c.cmd.Process.Signal(syscall.SIGKILL)
	}
	t.Fatal("in 20 attempts no kill landed inside the import's transaction")
}
