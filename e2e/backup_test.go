package e2e

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"stencil/store/storetest"
)

// runStencil runs the built binary with args and env on top of this
// process's, and returns its exit code and what it wrote to stderr.
func runStencil(t *testing.T, env map[string]string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(stencilBinary(t), args...)
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if exit, ok := err.(*exec.ExitError); ok {
		return exit.ExitCode(), stderr.String()
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0, stderr.String()
}

// written is one write the service acknowledged.
type written struct {
	kind, id, value string
	at              time.Time
}

// TestBackupWhileWritingAndRestore: `stencil backup` of a development
// service (its private cluster, its keys in DATA_DIR) while 16 writers
// create routes, records and vault entries; then `stencil restore` into a
// new DATA_DIR. Every write acknowledged before the backup began is there,
// every vault value reads back, the service starts; the file holds no
// vault value and no key in the clear; without the passphrase the restore
// is refused.
func TestBackupWhileWritingAndRestore(t *testing.T) {
	t.Parallel()
	const passphrase = "correct horse battery staple"
	root := map[string]string{"ROOT_USERNAME": "root", "ROOT_PASSWORD": "root-password-1", "ROOT_EMAIL": "root@example.com"}
	dataDir := reachableDataDir(t)
	app := startChild(t, merged(root, map[string]string{"DATA_DIR": dataDir}), 0)
	token := apiLogin(t, app.URL, "root", "root-password-1")
	for _, call := range [][2]string{
		{"/project/create", `{"id":"shop","name":"Shop","api_path":"/shop"}`},
		{"/collection/create", `{"project_id":"shop","id":"books","name":"Books"}`},
		{"/collection/create", `{"project_id":"shop","id":"added","name":"Added"}`},
		{"/route/create", `{"project_id":"shop","route":{"route_id":"add","route_path":"/add/:t","method":"POST",
			"auth_jwt":{"active":false,"field":"","ref_col":""},"params":{"delimiter":"&","pairs":[]},"body":[],"flow":{"blocks":[
			{"type":"OBJECT","depth":0,"local_name":"row","pairs":[{"id":"title","data":{"ref_var":true,"rtype":"OTHER","data":"t"}}]},
			{"type":"CREATE","depth":0,"ref_col":"added","ref_object":"row","save":true,"conditions":[]},
			{"type":"RETURN","depth":0,"pairs":[],"conditions":[]}]}}}`},
	} {
		if status, body := api(t, "POST", app.URL+call[0], token, call[1]); status >= 300 {
			t.Fatalf("%s: %d %s", call[0], status, body)
		}
	}

	var mu sync.Mutex
	var writes []written
	stop := make(chan struct{})
	var wg sync.WaitGroup
	// A route's runs, fewer than the log keeps each a second (100): every
	// one acknowledged before the backup began has its run-log row in it.
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			path := fmt.Sprintf("/x/shop/add/r%d", i)
			if status, _ := api(t, "POST", app.URL+path, "", ""); status == http.StatusOK {
				mu.Lock()
				writes = append(writes, written{kind: "run", id: path, at: time.Now()})
				mu.Unlock()
			}
		}
	})
	for w := range 16 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				var path, body string
				wr := written{}
				switch i % 3 {
				case 0:
					wr.kind, wr.id = "route", fmt.Sprintf("w%d_%d", w, i)
					path, body = "/route/create", fmt.Sprintf(`{"project_id":"shop","route":{"route_id":%q,"route_path":"/%s","method":"GET",
						"auth_jwt":{"active":false,"field":"","ref_col":""},"params":{"delimiter":"&","pairs":[]},"body":[],
						"flow":{"blocks":[{"type":"RETURN","depth":0,"pairs":[],"conditions":[]}]}}}`, wr.id, wr.id)
				case 1:
					wr.kind, wr.value = "record", fmt.Sprintf("w%d-%d", w, i)
					path, body = "/data/create", fmt.Sprintf(`{"project_id":"shop","collection_id":"books","data":{"title":%q}}`, wr.value)
				default:
					wr.kind, wr.id, wr.value = "vault", fmt.Sprintf("W%d_%d", w, i), fmt.Sprintf("sk_secret_%d_%d_%d", w, i, time.Now().UnixNano())
					path, body = "/vault/create", fmt.Sprintf(`{"project_id":"shop","key":%q,"value":%q}`, wr.id, wr.value)
				}
				status, out := api(t, "POST", app.URL+path, token, body)
				if status != http.StatusCreated {
					continue // a write refused is not acknowledged
				}
				if wr.kind == "record" {
					var env struct{ Data struct{ ID int64 } }
					_ = json.Unmarshal([]byte(out), &env)
					wr.id = fmt.Sprint(env.Data.ID)
				}
				wr.at = time.Now()
				mu.Lock()
				writes = append(writes, wr)
				mu.Unlock()
			}
		})
	}
	// The backup begins once the writers have 30 writes acknowledged (a
	// second on a quiet machine; more on a loaded one), so that it has
	// acknowledged writes to keep.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		mu.Lock()
		n := len(writes)
		mu.Unlock()
		if n >= 30 {
			break
		}
		if time.Now().After(deadline) {
			close(stop)
			wg.Wait()
			t.Fatalf("%d writes acknowledged in a minute", n)
		}
	}
	file := filepath.Join(t.TempDir(), "stencil.backup")
	began := time.Now()
	code, out := runStencil(t, map[string]string{"DATA_DIR": dataDir, "BACKUP_PASSPHRASE": passphrase}, "backup", file)
	time.Sleep(300 * time.Millisecond)
	close(stop)
	wg.Wait()
	if code != 0 {
		t.Fatalf("backup: %d %s", code, out)
	}
	mu.Lock()
	defer mu.Unlock()
	before := 0
	for _, w := range writes {
		if w.at.Before(began) {
			before++
		}
	}
	if before < 30 || len(writes) == before {
		t.Fatalf("%d writes before the backup and %d in all: the writers did not write across it", before, len(writes))
	}

	// No vault value, no key in the clear.
	archive, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	vaultKeys, _ := os.ReadFile(filepath.Join(dataDir, "vault_keys"))
	jwtSecret, _ := os.ReadFile(filepath.Join(dataDir, "jwt_secret"))
	_, encoded, _ := strings.Cut(strings.TrimSpace(string(vaultKeys)), ":")
	raw, err := base64.StdEncoding.DecodeString(encoded)
	if err != nil || len(raw) != 32 {
		t.Fatalf("the development key: %v", err)
	}
	for _, secret := range [][]byte{[]byte(encoded), raw, bytes.TrimSpace(jwtSecret)} {
		if bytes.Contains(archive, secret) {
			t.Fatal("the backup holds a key in the clear")
		}
	}
	for _, w := range writes {
		if w.kind == "vault" && bytes.Contains(archive, []byte(w.value)) {
			t.Fatalf("the backup holds the value of %s", w.id)
		}
	}

	// Restore: refused without the passphrase, into a DATA_DIR left empty.
	restored := filepath.Join(reachableDataDir(t), "data")
	code, out = runStencil(t, map[string]string{"DATA_DIR": restored}, "restore", file)
	if code != 1 || !strings.Contains(out, "BACKUP_PASSPHRASE is required") || !strings.Contains(out, "dev-") {
		t.Fatalf("restore without the passphrase: %d %s", code, out)
	}
	if entries, _ := os.ReadDir(restored); len(entries) > 0 {
		t.Fatalf("a refused restore wrote %v", entries)
	}
	code, out = runStencil(t, map[string]string{"DATA_DIR": restored, "BACKUP_PASSPHRASE": passphrase}, "restore", file)
	if code != 0 {
		t.Fatalf("restore: %d %s", code, out)
	}
	if code, out := runStencil(t, map[string]string{"DATA_DIR": restored, "BACKUP_PASSPHRASE": passphrase}, "restore", file); code != 1 || !strings.Contains(out, "not empty") {
		t.Fatalf("restore into a DATA_DIR in use: %d %s", code, out)
	}

	// The restored service starts and holds what was acknowledged.
	again := startChild(t, map[string]string{"DATA_DIR": restored}, 0)
	token = apiLogin(t, again.URL, "root", "root-password-1")
	present := map[string]int{}
	logged := map[string]bool{}
	for next := "/route/runs?project_id=shop&route_id=add&limit=1000"; next != ""; {
		status, body := api(t, "GET", again.URL+next, token, "")
		var page struct {
			Data []struct{ Path string }
			Next string
		}
		if status != http.StatusOK || json.Unmarshal([]byte(body), &page) != nil {
			t.Fatalf("the run log: %d %s", status, body)
		}
		for _, r := range page.Data {
			logged[r.Path] = true
		}
		next = strings.TrimPrefix(page.Next, again.URL)
	}
	for _, w := range writes {
		if w.kind != "run" {
			continue
		}
		if !logged[w.id] && w.at.Before(began) {
			t.Fatalf("the run of %s acknowledged %s before the backup began has no run-log row", w.id, began.Sub(w.at))
		}
		present["run"]++
	}
	for _, w := range writes {
		var path string
		switch w.kind {
		case "run":
			continue
		case "route":
			path = "/route/fetch/one?project_id=shop&route_id=" + w.id
		case "record":
			path = "/data/fetch/one?project_id=shop&collection_id=books&id=" + w.id
		default:
			path = "/vault/fetch/one?project_id=shop&key=" + w.id
		}
		status, body := api(t, "GET", again.URL+path, token, "")
		switch {
		case status == http.StatusNotFound && !w.at.Before(began):
			continue // written after the backup began: may be in it or not
		case status != http.StatusOK:
			t.Fatalf("%s %s acknowledged %s before the backup began: %d %s", w.kind, w.id, began.Sub(w.at), status, body)
		case w.value != "" && !strings.Contains(body, w.value):
			t.Fatalf("%s %s reads %s, was written %q", w.kind, w.id, body, w.value)
		}
		present[w.kind]++
	}
	if present["route"] == 0 || present["record"] == 0 || present["vault"] == 0 || len(logged) == 0 {
		t.Fatalf("restored: %v", present)
	}
	t.Logf("%d writes, %d before the backup began; restored %v", len(writes), before, present)
}

// TestRestoreNeedsTheOperatorsKeys: a service whose keys the operator
// keeps (VAULT_KEYS) is backed up without them; a restore whose VAULT_KEYS
// lacks an id the values need is refused, naming it, and writes nothing.
func TestRestoreNeedsTheOperatorsKeys(t *testing.T) {
	t.Parallel()
	key := func(id string, b byte) string {
		return id + ":" + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{b}, 32))
	}
	env := map[string]string{"DATABASE_URL": storetest.URL(t), "VAULT_KEYS": key("k1", 1), "JWT_SECRET": strings.Repeat("j", 40),
		"ROOT_USERNAME": "root", "ROOT_PASSWORD": "root-password-1", "ROOT_EMAIL": "root@example.com"}
	app := startInstance(t, env)
	token := apiLogin(t, app.URL, "root", "root-password-1")
	for _, call := range [][2]string{
		{"/project/create", `{"id":"shop","name":"Shop","api_path":"/shop"}`},
		{"/vault/create", `{"project_id":"shop","key":"API_KEY","value":"sk_operator_value_1"}`},
	} {
		if status, body := api(t, "POST", app.URL+call[0], token, call[1]); status >= 300 {
			t.Fatalf("%s: %d %s", call[0], status, body)
		}
	}
	file := filepath.Join(t.TempDir(), "b")
	if code, out := runStencil(t, merged(env, map[string]string{"DATA_DIR": t.TempDir()}), "backup", file); code != 0 {
		t.Fatalf("backup: %d %s", code, out)
	}
	archive, _ := os.ReadFile(file)
	if bytes.Contains(archive, bytes.Repeat([]byte{1}, 32)) || bytes.Contains(archive, []byte(strings.Split(key("k1", 1), ":")[1])) ||
		bytes.Contains(archive, []byte("sk_operator_value_1")) || bytes.Contains(archive, []byte("keys.sealed")) {
		t.Fatal("the backup holds the operator's key, a value, or sealed keys")
	}
	target := storetest.EmptyURL(t)
	// No JWT_SECRET: a development secret would be written to DATA_DIR,
	// but a refused restore writes nothing.
	restore := map[string]string{"DATABASE_URL": target, "VAULT_KEYS": key("k2", 2), "DATA_DIR": t.TempDir()}
	code, out := runStencil(t, restore, "restore", file)
	if code != 1 || !strings.Contains(out, "need master keys k1, which VAULT_KEYS does not hold") {
		t.Fatalf("restore without k1: %d %s", code, out)
	}
	if left, err := os.ReadDir(restore["DATA_DIR"]); err != nil || len(left) != 0 {
		t.Fatalf("a refused restore left DATA_DIR with %v (%v)", left, err)
	}
	restore["VAULT_KEYS"] = key("k2", 2) + "," + key("k1", 1)
	if code, out := runStencil(t, restore, "restore", file); code != 0 {
		t.Fatalf("restore with k1: %d %s", code, out)
	}
	again := startInstance(t, merged(restore, map[string]string{"ROOT_USERNAME": "", "ROOT_PASSWORD": "", "ROOT_EMAIL": ""}))
	token = apiLogin(t, again.URL, "root", "root-password-1")
	if status, body := api(t, "GET", again.URL+"/vault/fetch/one?project_id=shop&key=API_KEY", token, ""); status != 200 || !strings.Contains(body, "sk_operator_value_1") {
		t.Fatalf("the value after restore: %d %s", status, body)
	}
}

// merged is a copy of a with b's entries on top.
func merged(a, b map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}
