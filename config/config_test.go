package config

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
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
	if c.DBMaxConns < 32 || c.RequestTimeout != 15*time.Second {
		t.Fatalf("pool %d, timeout %v", c.DBMaxConns, c.RequestTimeout)
	}
	if c.EventRetention != 90*24*time.Hour {
		t.Fatalf("events kept %v", c.EventRetention)
	}
	if c.EgressAllow != nil || c.EgressConcurrency != 256 || !c.RouteStats {
		t.Fatalf("egress: %v, %d", c.EgressAllow, c.EgressConcurrency)
	}
	if c, err := Load(env(map[string]string{"DATA_DIR": dir, "ROUTES_ORIGIN": "HTTPS://API.example.com/"})); err != nil || c.RoutesOrigin != "https://api.example.com" {
		t.Fatalf("ROUTES_ORIGIN: %q, %v", c.RoutesOrigin, err)
	}
	if c, err := Load(env(map[string]string{"DATA_DIR": dir, "EGRESS_ALLOW": "127.0.0.1:9000, [::1]:9001 api.internal:443"})); err != nil ||
		strings.Join(c.EgressAllow, " ") != "127.0.0.1:9000 [::1]:9001 api.internal:443" {
		t.Fatalf("EGRESS_ALLOW: %v, %v", c.EgressAllow, err)
	}
	for raw, want := range map[string]time.Duration{"30d": 30 * 24 * time.Hour, "720h": 720 * time.Hour, "1h": time.Hour} {
		c, err := Load(env(map[string]string{"DATA_DIR": dir, "EVENT_RETENTION": raw}))
		if err != nil || c.EventRetention != want {
			t.Fatalf("EVENT_RETENTION=%s: %v, %v", raw, c.EventRetention, err)
		}
	}
}

// TestDevelopmentKeyIDsDifferAcrossDataDirs: each DATA_DIR's generated vault
// key is named by its fingerprint, so two never share an id.
func TestDevelopmentKeyIDsDifferAcrossDataDirs(t *testing.T) {
	a, err := Load(env(map[string]string{"DATA_DIR": t.TempDir()}))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Load(env(map[string]string{"DATA_DIR": t.TempDir()}))
	if err != nil {
		t.Fatal(err)
	}
	ka, kb := a.VaultKeys[0], b.VaultKeys[0]
	sum := sha256.Sum256(ka.Secret)
	if ka.ID == kb.ID || ka.ID != "dev-"+hex.EncodeToString(sum[:4]) {
		t.Fatalf("key ids %q and %q", ka.ID, kb.ID)
	}
}

// TestProductionMakesAReachableDataDir: with the private cluster, production
// creates a missing DATA_DIR (and parents) with mode 0711, so the postgres
// user can reach the cluster below it when the app runs as root.
func TestProductionMakesAReachableDataDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "fresh", "data")
	_, err := Load(env(map[string]string{"APP_ENV": "production", "JWT_SECRET": strings.Repeat("s", 32), "VAULT_KEYS": "k1:" + key32, "DATA_DIR": dir}))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{dir, filepath.Dir(dir)} {
		st, err := os.Stat(d)
		if err != nil || st.Mode().Perm()&0o011 != 0o011 {
			t.Fatalf("%s: %v %v", d, st.Mode(), err)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatal("production must not generate secrets")
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
		"port":                 {map[string]string{"PORT": "http"}, "PORT"},
		"port range":           {map[string]string{"PORT": "70000"}, "PORT"},
		"app env":              {map[string]string{"APP_ENV": "staging"}, "APP_ENV"},
		"ttl":                  {map[string]string{"JWT_TTL": "soon"}, "JWT_TTL"},
		"negative ttl":         {map[string]string{"JWT_TTL": "-1h"}, "JWT_TTL"},
		"short secret":         {map[string]string{"JWT_SECRET": "short"}, "at least 32 bytes"},
		"key format":           {map[string]string{"VAULT_KEYS": key32}, "id:base64key"},
		"key length":           {map[string]string{"VAULT_KEYS": "k1:" + base64.StdEncoding.EncodeToString(make([]byte, 16))}, "32 bytes"},
		"key not b64":          {map[string]string{"VAULT_KEYS": "k1:@@@"}, "32 bytes"},
		"duplicate ids":        {map[string]string{"VAULT_KEYS": "k1:" + key32 + ",k1:" + key32}, "twice"},
		"pool size":            {map[string]string{"DB_MAX_CONNS": "1"}, "DB_MAX_CONNS"},
		"pool not int":         {map[string]string{"DB_MAX_CONNS": "many"}, "DB_MAX_CONNS"},
		"run pool size":        {map[string]string{"RUN_DB_MAX_CONNS": "1001"}, "RUN_DB_MAX_CONNS"},
		"run pool not int":     {map[string]string{"RUN_DB_MAX_CONNS": "few"}, "RUN_DB_MAX_CONNS"},
		"timeout":              {map[string]string{"REQUEST_TIMEOUT": "fast"}, "REQUEST_TIMEOUT"},
		"tiny timeout":         {map[string]string{"REQUEST_TIMEOUT": "1ms"}, "REQUEST_TIMEOUT"},
		"metrics addr":         {map[string]string{"METRICS_ADDR": "9100"}, "METRICS_ADDR"},
		"metrics token short":  {map[string]string{"METRICS_TOKEN": "short"}, "METRICS_TOKEN must be at least 32"},
		"metrics token space":  {map[string]string{"METRICS_TOKEN": strings.Repeat("m", 32) + " x"}, "METRICS_TOKEN must be at least 32"},
		"public debug":         {map[string]string{"DEBUG_ADDR": "0.0.0.0:6060"}, "DEBUG_ADDR"},
		"debug no port":        {map[string]string{"DEBUG_ADDR": "127.0.0.1"}, "DEBUG_ADDR"},
		"events kept never":    {map[string]string{"EVENT_RETENTION": "0d"}, "EVENT_RETENTION must be a number of days"},
		"events kept weeks":    {map[string]string{"EVENT_RETENTION": "2w"}, "EVENT_RETENTION"},
		"events kept long":     {map[string]string{"EVENT_RETENTION": "4000d"}, "EVENT_RETENTION"},
		"events kept brief":    {map[string]string{"EVENT_RETENTION": "5m"}, "EVENT_RETENTION"},
		"egress no port":       {map[string]string{"EGRESS_ALLOW": "127.0.0.1"}, "EGRESS_ALLOW entries must be host:port"},
		"egress no host":       {map[string]string{"EGRESS_ALLOW": "api.example.com:443, :9000"}, `got ":9000"`},
		"egress none":          {map[string]string{"EGRESS_CONCURRENCY": "0"}, "EGRESS_CONCURRENCY"},
		"password hash none":   {map[string]string{"PASSWORD_HASH": "md5"}, "PASSWORD_HASH"},
		"job rescue short":     {map[string]string{"JOB_RESCUE": "5s"}, "JOB_RESCUE"},
		"job rescue no time":   {map[string]string{"JOB_RESCUE": "soon"}, "JOB_RESCUE"},
		"route stats":          {map[string]string{"ROUTE_STATS": "yes"}, "ROUTE_STATS must be on or off"},
		"routes origin path":   {map[string]string{"ROUTES_ORIGIN": "https://api.example.com/x"}, "ROUTES_ORIGIN must be an origin"},
		"routes origin scheme": {map[string]string{"ROUTES_ORIGIN": "api.example.com"}, "ROUTES_ORIGIN must be an origin"},
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
