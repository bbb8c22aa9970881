package config

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

var key32 = base64.StdEncoding.EncodeToString(make([]byte, 32))

func TestDefaults(t *testing.T) {
	dir := t.TempDir()
	c, err := Load(env(map[string]string{"DATA_DIR": dir}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Port != 8080 || c.Production || c.JWTTTL != time.Hour || c.DatabaseURL != "" || c.Addr() != ":8080" {
		t.Fatalf("defaults: %+v", c)
	}
	if len(c.JWTSecret) < 32 || len(c.VaultKeys) != 1 || len(c.VaultKeys[0].Secret) != 32 {
		t.Fatalf("development secrets not generated: %d-byte JWT secret, %d vault keys", len(c.JWTSecret), len(c.VaultKeys))
	}
	for _, name := range []string{"jwt_secret", "vault_keys"} {
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s mode = %v, want 0600", name, st.Mode().Perm())
		}
	}
	again, err := Load(env(map[string]string{"DATA_DIR": dir}))
	if err != nil {
		t.Fatal(err)
	}
	if string(again.JWTSecret) != string(c.JWTSecret) || string(again.VaultKeys[0].Secret) != string(c.VaultKeys[0].Secret) {
		t.Fatal("development secrets must be reused across starts")
	}
}

func TestProductionRefusesWithoutSecrets(t *testing.T) {
	for name, vars := range map[string]map[string]string{
		"neither":       {"APP_ENV": "production"},
		"no vault keys": {"APP_ENV": "production", "JWT_SECRET": strings.Repeat("s", 32)},
		"no JWT secret": {"APP_ENV": "production", "VAULT_KEYS": "k1:" + key32},
	} {
		t.Run(name, func(t *testing.T) {
			vars["DATA_DIR"] = t.TempDir()
			_, err := Load(env(vars))
			if err == nil || !strings.Contains(err.Error(), "refusing to start") {
				t.Fatalf("err = %v", err)
			}
			if entries, _ := os.ReadDir(vars["DATA_DIR"]); len(entries) != 0 {
				t.Fatal("production must not generate secrets")
			}
		})
	}
	c, err := Load(env(map[string]string{"APP_ENV": "production", "JWT_SECRET": strings.Repeat("s", 32), "VAULT_KEYS": "k2:" + key32 + ",k1:" + key32, "DATA_DIR": t.TempDir()}))
	if err != nil || !c.Production || c.VaultKeys[0].ID != "k2" {
		t.Fatalf("production with secrets: %+v, %v", c, err)
	}
}

func TestBadSettings(t *testing.T) {
	for name, tc := range map[string]struct {
		vars map[string]string
		want string
	}{
		"port":          {map[string]string{"PORT": "http"}, "PORT"},
		"port range":    {map[string]string{"PORT": "70000"}, "PORT"},
		"app env":       {map[string]string{"APP_ENV": "staging"}, "APP_ENV"},
		"ttl":           {map[string]string{"JWT_TTL": "soon"}, "JWT_TTL"},
		"negative ttl":  {map[string]string{"JWT_TTL": "-1h"}, "JWT_TTL"},
		"short secret":  {map[string]string{"JWT_SECRET": "short"}, "at least 32 bytes"},
		"key format":    {map[string]string{"VAULT_KEYS": key32}, "id:base64key"},
		"key length":    {map[string]string{"VAULT_KEYS": "k1:" + base64.StdEncoding.EncodeToString(make([]byte, 16))}, "32 bytes"},
		"key not b64":   {map[string]string{"VAULT_KEYS": "k1:@@@"}, "32 bytes"},
		"duplicate ids": {map[string]string{"VAULT_KEYS": "k1:" + key32 + ",k1:" + key32}, "twice"},
	} {
		t.Run(name, func(t *testing.T) {
			tc.vars["DATA_DIR"] = t.TempDir()
			_, err := Load(env(tc.vars))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tc.want)
			}
		})
	}
}

func TestRootAccount(t *testing.T) {
	c, err := Load(env(map[string]string{"DATA_DIR": t.TempDir(), "ROOT_USERNAME": "root", "ROOT_PASSWORD": "pw"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Root.Set() {
		t.Fatal("a root account without email must not count as set")
	}
	c.Root.Email = "r@example.com"
	if !c.Root.Set() {
		t.Fatal("complete root account must count as set")
	}
}
