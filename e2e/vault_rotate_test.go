package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"stencil/server"
	"stencil/store/storetest"
)

func b64key(b byte) string {
	return base64.StdEncoding.EncodeToString([]byte(strings.Repeat(string(rune(b)), 32)))
}

// apiLogin returns a session token for username.
func apiLogin(t *testing.T, base, username, password string) string {
	t.Helper()
	resp, err := http.Post(base+"/user/login", "application/json",
		strings.NewReader(fmt.Sprintf(`{"auth_data":%q,"password":%q}`, username, password)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct{ JWT string }
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || out.JWT == "" {
		t.Fatalf("login: %d %v", resp.StatusCode, err)
	}
	return out.JWT
}

// api sends a JSON request with token and returns status and body.
func api(t *testing.T, method, url, token, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(raw)
}

// TestVaultRotation: values written under key "old" read back after `vault
// rotate` with "new" active, no row keeps "old", and then "old" can leave
// VAULT_KEYS; a key id still needed but missing stops the start naming it.
func TestVaultRotation(t *testing.T) {
	url := storetest.URL(t)
	root := map[string]string{"DATABASE_URL": url, "ROOT_USERNAME": "root", "ROOT_PASSWORD": "root-password-1", "ROOT_EMAIL": "r@example.com"}
	with := func(keys string) map[string]string {
		env := map[string]string{"VAULT_KEYS": keys}
		for k, v := range root {
			env[k] = v
		}
		return env
	}
	oldOnly, both, newOnly := "old:"+b64key('o'), "new:"+b64key('n')+",old:"+b64key('o'), "new:"+b64key('n')

	in := startInstance(t, with(oldOnly))
	tok := apiLogin(t, in.URL, "root", "root-password-1")
	if status, body := api(t, "POST", in.URL+"/project/create", tok, `{"id":"shop","name":"Shop","api_path":"/shop"}`); status != 201 {
		t.Fatalf("project: %d %s", status, body)
	}
	const entries = 1203 // more than two batches
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for i := 0; i < entries; i++ {
		if status, body := api(t, "POST", in.URL+"/vault/create", tok, fmt.Sprintf(`{"project_id":"shop","key":"K%d","value":"value-%d"}`, i, i)); status != 201 {
			t.Fatalf("create K%d: %d %s", i, status, body)
		}
	}
	// Kept versions are sealed too: K1 has two older values; K2 is deleted,
	// so nothing of it is left to reseal.
	for _, call := range [][3]string{
		{"PATCH", "/vault/update", `{"project_id":"shop","key":"K1","value":"value-1b"}`},
		{"PATCH", "/vault/update", `{"project_id":"shop","key":"K1","value":"value-1c"}`},
		{"DELETE", "/vault/delete?project_id=shop&key=K2", ""},
	} {
		if status, body := api(t, call[0], in.URL+call[1], tok, call[2]); status != 200 {
			t.Fatalf("%s %s: %d %s", call[0], call[1], status, body)
		}
	}
	in.stop()

	// Without "old", the service refuses to start and names the key.
	env := with(newOnly)
	env["HOST"], env["PORT"], env["DATA_DIR"] = "127.0.0.1", "0", t.TempDir()
	err = server.Run(context.Background(), []string{"serve"}, func(k string) string { return env[k] }, io.Discard, nil)
	if err == nil || !strings.Contains(err.Error(), `"old"`) {
		t.Fatalf("start without a needed key: %v", err)
	}

	// Rotate while an instance serves.
	serving := startInstance(t, with(both))
	env = with(both)
	env["DATA_DIR"] = t.TempDir()
	logs := &lockedBuffer{}
	if err := server.Run(context.Background(), []string{"vault", "rotate"}, func(k string) string { return env[k] }, logs, nil); err != nil {
		t.Fatalf("vault rotate: %v\n%s", err, logs)
	}
	// 1,199 live entries and K1's two older values.
	if !strings.Contains(logs.String(), fmt.Sprintf("entries=%d", entries+1)) || !strings.Contains(logs.String(), "key_ids_in_use=new") {
		t.Fatalf("rotate log: %s", logs)
	}
	var old int
	if err := conn.QueryRow(context.Background(), `SELECT (SELECT count(*) FROM vault_entries WHERE key_id <> 'new')
		+ (SELECT count(*) FROM vault_versions WHERE key_id <> 'new')`).Scan(&old); err != nil || old != 0 {
		t.Fatalf("%d rows still under another key (%v)", old, err)
	}
	tok = apiLogin(t, serving.URL, "root", "root-password-1")
	if status, body := api(t, "GET", serving.URL+"/vault/fetch/one?project_id=shop&key=K1", tok, ""); status != 200 || !strings.Contains(body, `"value":"value-1c"`) {
		t.Fatalf("read while serving after rotation: %d %s", status, body)
	}
	serving.stop()

	// Now "old" may go: every value reads back under "new" alone.
	in = startInstance(t, with(newOnly))
	tok = apiLogin(t, in.URL, "root", "root-password-1")
	status, body := api(t, "GET", in.URL+fmt.Sprintf("/vault/fetch?project_id=shop&limit=1000&offset=%d", 0), tok, "")
	status2, body2 := api(t, "GET", in.URL+"/vault/fetch?project_id=shop&limit=1000&offset=1000", tok, "")
	if status != 200 || status2 != 200 {
		t.Fatalf("list after rotation: %d %d", status, status2)
	}
	for i := 0; i < entries; i++ {
		want := fmt.Sprintf(`"key":"K%d","value":"value-%d"`, i, i)
		switch i {
		case 1:
			want = `"key":"K1","value":"value-1c"`
		case 2:
			continue // deleted
		}
		if !strings.Contains(body, want) && !strings.Contains(body2, want) {
			t.Fatalf("K%d does not read back", i)
		}
	}
	// The older values read under "new" alone, each read logged with its
	// version.
	for v, want := range map[int]string{1: "value-1", 2: "value-1b"} {
		if status, body := api(t, "GET", in.URL+fmt.Sprintf("/vault/fetch/one?project_id=shop&key=K1&version=%d", v), tok, ""); status != 200 || !strings.Contains(body, `"value":"`+want+`"`) {
			t.Fatalf("version %d of K1 after rotation: %d %s", v, status, body)
		}
	}
	var logged int
	if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM vault_access_log WHERE key = 'K1' AND action = 'read' AND version IN (1, 2)").Scan(&logged); err != nil || logged != 2 {
		t.Fatalf("reads of older versions logged: %d (%v)", logged, err)
	}
	if status, body := api(t, "GET", in.URL+"/vault/fetch/one?project_id=shop&key=K2", tok, ""); status != 404 {
		t.Fatalf("K2 after its delete: %d %s", status, body)
	}
}
