// Package config reads Stencil's settings from the environment (docs/operations.md) and,
// in development, generates the secrets that production must be given. It
// only reads and checks settings: it never opens a connection or a server.
package config

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/mail"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"

	"stencil/vaultcrypt"
)

// Config holds every setting of the service.
type Config struct {
	Host        string
	Port        int
	DatabaseURL string
	DataDir     string
	Production  bool
	JWTSecret   []byte
	JWTTTL      time.Duration
	VaultKeys   []vaultcrypt.Key // the first is active
	Root        RootAccount
	// DBMaxConns sizes the connection pool; RunDBMaxConns the pool of the
	// reads of routes' runs; RequestTimeout is every request's deadline,
	// down to its PostgreSQL statements.
	DBMaxConns     int
	RunDBMaxConns  int
	RequestTimeout time.Duration
	// RunTxMaxConns sizes the pool of routes' runs that write (their
	// transactions), apart from the pool the platform's own API uses;
	// RunConcurrency bounds the runs under way at once (as many more may
	// wait a moment for one to end); RunMemory is the memory, in bytes,
	// that runs under way share.
	RunTxMaxConns  int
	RunConcurrency int
	RunMemory      int64
	// RoutesOrigin, when set (ROUTES_ORIGIN, such as
	// https://api.example.com), is the only origin /x answers on, and the
	// one origin the pages do not (docs/security.md).
	RoutesOrigin string
	// EgressAllow are the destinations ("host:port") HTTP blocks may reach
	// though they are not public addresses (EGRESS_ALLOW, comma or space
	// separated); EgressConcurrency bounds the upstream requests in flight
	// for the whole service (docs/engine.md).
	EgressAllow       []string
	EgressConcurrency int
	// RouteStats says whether runs are counted for route analytics
	// (ROUTE_STATS: on, the default, or off).
	RouteStats bool
	// MetricsAddr serves /metrics without authentication on a listener of
	// its own; DebugAddr serves net/http/pprof, on a loopback address only.
	MetricsAddr string
	DebugAddr   string
	// MetricsToken, when set, is a bearer token /metrics accepts besides
	// a ROOT's (METRICS_TOKEN: a scraper's, at least 32 characters).
	MetricsToken string
	// Mail (docs/mail.md): SMTP is the server messages go to (nil: none, every
	// message is held); MailFrom their sender; MailRate the recipients a
	// second one project's messages reach at most; MailBacklog the
	// messages a project may have waiting before its routes' EMAIL blocks
	// answer 503; PublicURL the address links in messages start with
	// (never taken from a request's Host).
	SMTP        *SMTPServer
	MailFrom    string
	MailRate    int
	MailBacklog int
	PublicURL   string
	// MailLease is how long a message an instance took for delivery is
	// its own: if the instance dies, another takes the message after it.
	MailLease time.Duration
	// PasswordHash names the argon2id parameters new password hashes
	// take (auth.PasswordHashes): rfc9106 (the default) or owasp.
	PasswordHash string
	// JobRescue is how long a job an instance took is its own: if the
	// instance dies, another takes the job back after it (docs/jobs.md).
	JobRescue time.Duration
	// VaultVersions is how many older values of a vault entry are kept
	// (docs/events.md).
	VaultVersions int
	// EventRetention is how long the event log keeps an event
	// (EVENT_RETENTION, 90 days by default).
	EventRetention time.Duration
}

// SMTPServer is where mail is delivered, read from SMTP_URL.
type SMTPServer struct {
	Host               string
	Port               int
	Username, Password string
	ImplicitTLS        bool   // smtps://
	NoTLS              bool   // ?tls=none, a loopback host only
	CAFile             string // SMTP_CA_FILE: more roots to trust the server's certificate by
}

// ParseSMTPURL reads smtp://user:pass@host:port (STARTTLS required, port
// 587 by default), smtps://… (implicit TLS, 465) or smtp://…?tls=none (no
// TLS, for a server on a loopback host only).
func ParseSMTPURL(raw string) (*SMTPServer, error) {
	bad := func(why string) error {
		return fmt.Errorf("SMTP_URL %s, such as smtp://user:password@mail.example.com:587", why)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, bad("must be a URL")
	}
	s := &SMTPServer{Host: u.Hostname()}
	switch u.Scheme {
	case "smtp":
		s.Port = 587
	case "smtps":
		s.Port, s.ImplicitTLS = 465, true
	default:
		return nil, bad("must start smtp:// or smtps://")
	}
	if s.Host == "" || u.Path != "" && u.Path != "/" {
		return nil, bad("must name a host and nothing after it but ?tls=none")
	}
	if p := u.Port(); p != "" {
		if s.Port, err = strconv.Atoi(p); err != nil || s.Port < 1 || s.Port > 65535 {
			return nil, bad("has a port that is not a port number")
		}
	}
	if u.User != nil {
		s.Username = u.User.Username()
		s.Password, _ = u.User.Password()
	}
	q := u.Query()
	for k := range q {
		if k != "tls" {
			return nil, bad("takes no parameter but tls=none")
		}
	}
	switch q.Get("tls") {
	case "":
	case "none":
		ip := net.ParseIP(s.Host)
		if s.ImplicitTLS || s.Host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return nil, bad("may say tls=none only with smtp:// and a loopback host (localhost, 127.0.0.1, ::1)")
		}
		s.NoTLS = true
	default:
		return nil, bad("takes tls=none or no tls parameter")
	}
	return s, nil
}

// RootAccount is the first ROOT user to create at start, if all fields are set.
type RootAccount struct {
	Username, Password, Email string
}

// Set reports whether every field of the account was given.
func (r RootAccount) Set() bool {
	return r.Username != "" && r.Password != "" && r.Email != ""
}

// wholeNumber reads the variable name as a whole number from least to
// most, def when it is not set.
// days reads a duration given in days ("90d") or as a Go duration
// ("720h"), from one hour to ten years; def days when unset.
func days(getenv func(string) string, name string, def int) (time.Duration, error) {
	raw := getenv(name)
	if raw == "" {
		return time.Duration(def) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(raw)
	if n, cut := strings.CutSuffix(raw, "d"); cut {
		var count int
		count, err = strconv.Atoi(n)
		d = time.Duration(count) * 24 * time.Hour
	}
	if err != nil || d < time.Hour || d > 3650*24*time.Hour {
		return 0, fmt.Errorf("%s must be a number of days such as %dd (or a duration such as 720h), from 1h to 3650d, got %q", name, def, raw)
	}
	return d, nil
}

func wholeNumber(getenv func(string) string, name string, def, least, most int) (int, error) {
	v := getenv(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < least || n > most {
		return 0, fmt.Errorf("%s must be a whole number from %d to %d, got %q", name, least, most, v)
	}
	return n, nil
}

// Addr is the address the HTTP server listens on.
func (c Config) Addr() string {
	return c.Host + ":" + strconv.Itoa(c.Port)
}

// The files of DATA_DIR that hold a development service's keys, when
// JWT_SECRET and VAULT_KEYS are not set (a backup seals them: see
// docs/operations.md).
const (
	JWTSecretFile = "jwt_secret"
	VaultKeysFile = "vault_keys"
)

// DataDir is DATA_DIR as an absolute path (default ./data).
func DataDir(getenv func(string) string) (string, error) {
	return filepath.Abs(or(getenv("DATA_DIR"), "./data"))
}

// Load reads the configuration through getenv. In development it creates
// DATA_DIR and fills JWT_SECRET and VAULT_KEYS from files there, generating
// them (mode 0600) on first use.
func Load(getenv func(string) string) (Config, error) {
	c := Config{
		Host:        getenv("HOST"),
		DatabaseURL: getenv("DATABASE_URL"),
		Root: RootAccount{
			Username: getenv("ROOT_USERNAME"),
			Password: getenv("ROOT_PASSWORD"),
			Email:    getenv("ROOT_EMAIL"),
		},
	}
	var err error
	if c.Port, err = strconv.Atoi(or(getenv("PORT"), "8080")); err != nil || c.Port < 0 || c.Port > 65535 {
		return c, fmt.Errorf("PORT must be a port number, got %q", getenv("PORT"))
	}
	switch env := or(getenv("APP_ENV"), "development"); env {
	case "production":
		c.Production = true
	case "development":
	default:
		return c, fmt.Errorf("APP_ENV must be development or production, got %q", env)
	}
	if c.JWTTTL, err = time.ParseDuration(or(getenv("JWT_TTL"), "1h")); err != nil || c.JWTTTL <= 0 {
		return c, fmt.Errorf("JWT_TTL must be a positive duration such as 1h or 15m, got %q", getenv("JWT_TTL"))
	}
	// Audited reads commit a row each: the more sessions in flight, the
	// more commits share one WAL flush (10 reached 0.73-0.79 of pgbench's
	// rate of the same SQL on 2 cores, 32 reached 0.93).
	c.DBMaxConns = max(32, 8*runtime.NumCPU())
	if v := getenv("DB_MAX_CONNS"); v != "" {
		if c.DBMaxConns, err = strconv.Atoi(v); err != nil || c.DBMaxConns < 2 || c.DBMaxConns > 1000 {
			return c, fmt.Errorf("DB_MAX_CONNS must be a whole number from 2 to 1000, got %q", v)
		}
	}
	// Routes' reads are work for the processor, not waits for the disk:
	// beyond a few sessions per core they only take turns with the
	// service for the same cores (on 2 cores, 8 kept a FETCH's p99 at
	// half of what 32 gave, for as many answers a second).
	c.RunDBMaxConns = max(4, 4*runtime.NumCPU())
	if v := getenv("RUN_DB_MAX_CONNS"); v != "" {
		if c.RunDBMaxConns, err = strconv.Atoi(v); err != nil || c.RunDBMaxConns < 2 || c.RunDBMaxConns > 1000 {
			return c, fmt.Errorf("RUN_DB_MAX_CONNS must be a whole number from 2 to 1000, got %q", v)
		}
	}
	// A run that writes commits: its transaction mostly waits on the WAL
	// flush, which commits in flight at once share, as the audited reads'
	// do. With 2 a core, a project's write routes queued for its 2
	// transactions at 1,640 runs a second whatever the callers (16 or 64);
	// 8 a core: 2,400–2,950, where pgbench running the same INSERT does
	// 4,400 (docs/performance.md). A project takes at most half of them
	// (see runTxGate).
	if c.RunTxMaxConns, err = wholeNumber(getenv, "RUN_TX_MAX_CONNS", max(16, 8*runtime.NumCPU()), 2, 1000); err != nil {
		return c, err
	}
	if c.RunConcurrency, err = wholeNumber(getenv, "RUN_CONCURRENCY", DefaultRunConcurrency(), 1, 100_000); err != nil {
		return c, err
	}
	mib, err := wholeNumber(getenv, "RUN_MEMORY_MIB", 256, 64, 1<<20)
	if err != nil {
		return c, err
	}
	c.RunMemory = int64(mib) << 20
	if c.RequestTimeout, err = time.ParseDuration(or(getenv("REQUEST_TIMEOUT"), "15s")); err != nil || c.RequestTimeout < 100*time.Millisecond {
		return c, fmt.Errorf("REQUEST_TIMEOUT must be a duration of at least 100ms, such as 15s, got %q", getenv("REQUEST_TIMEOUT"))
	}
	c.MetricsAddr, c.DebugAddr = getenv("METRICS_ADDR"), getenv("DEBUG_ADDR")
	if c.MetricsToken = getenv("METRICS_TOKEN"); c.MetricsToken != "" && (len(c.MetricsToken) < 32 || strings.ContainsFunc(c.MetricsToken, func(r rune) bool { return r <= ' ' || r > '~' })) {
		return c, errors.New("METRICS_TOKEN must be at least 32 printable ASCII characters without spaces")
	}
	if c.MetricsAddr != "" {
		if _, _, err := net.SplitHostPort(c.MetricsAddr); err != nil {
			return c, fmt.Errorf("METRICS_ADDR must be host:port, got %q", c.MetricsAddr)
		}
	}
	if c.DebugAddr != "" {
		host, _, err := net.SplitHostPort(c.DebugAddr)
		if ip := net.ParseIP(host); err != nil || host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return c, fmt.Errorf("DEBUG_ADDR must be a loopback host:port such as 127.0.0.1:6060, got %q", c.DebugAddr)
		}
	}
	if err := c.loadMail(getenv); err != nil {
		return c, err
	}
	for _, entry := range strings.FieldsFunc(getenv("EGRESS_ALLOW"), func(r rune) bool { return r == ',' || r == ' ' }) {
		if host, port, err := net.SplitHostPort(entry); err != nil || host == "" || port == "" {
			return c, fmt.Errorf("EGRESS_ALLOW entries must be host:port, such as 127.0.0.1:9000, got %q", entry)
		}
		c.EgressAllow = append(c.EgressAllow, entry)
	}
	c.RoutesOrigin = strings.ToLower(strings.TrimRight(getenv("ROUTES_ORIGIN"), "/"))
	if c.RoutesOrigin != "" {
		u, err := url.Parse(c.RoutesOrigin)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
			return c, fmt.Errorf("ROUTES_ORIGIN must be an origin such as https://api.example.com, got %q", getenv("ROUTES_ORIGIN"))
		}
	}
	if c.EgressConcurrency, err = wholeNumber(getenv, "EGRESS_CONCURRENCY", 256, 1, 100_000); err != nil {
		return c, err
	}
	switch v := or(getenv("ROUTE_STATS"), "on"); v {
	case "on", "off":
		c.RouteStats = v == "on"
	default:
		return c, fmt.Errorf("ROUTE_STATS must be on or off, got %q", v)
	}
	if c.VaultVersions, err = wholeNumber(getenv, "VAULT_VERSIONS", 10, 1, 1000); err != nil {
		return c, err
	}
	if c.EventRetention, err = days(getenv, "EVENT_RETENTION", 90); err != nil {
		return c, err
	}
	if c.DataDir, err = DataDir(getenv); err != nil {
		return c, err
	}
	jwtSecret, vaultKeys := getenv("JWT_SECRET"), getenv("VAULT_KEYS")
	if c.Production && (jwtSecret == "" || vaultKeys == "") {
		return c, errors.New("APP_ENV=production needs JWT_SECRET (at least 32 bytes) and VAULT_KEYS (id:base64key[,…]); refusing to start")
	}
	if !c.Production || c.DatabaseURL == "" {
		// The private cluster lives under DATA_DIR in production too.
		if err := c.ensureDataDir(); err != nil {
			return c, err
		}
	}
	if !c.Production {
		if jwtSecret == "" {
			if jwtSecret, err = c.devSecret(JWTSecretFile, func() string { return base64.StdEncoding.EncodeToString(random(48)) }); err != nil {
				return c, err
			}
		}
		if vaultKeys == "" {
			if vaultKeys, err = c.devSecret(VaultKeysFile, newDevVaultKey); err != nil {
				return c, err
			}
		}
	}
	if len(jwtSecret) < 32 {
		return c, errors.New("JWT_SECRET must be at least 32 bytes")
	}
	c.JWTSecret = []byte(jwtSecret)
	if c.VaultKeys, err = ParseVaultKeys(vaultKeys); err != nil {
		return c, err
	}
	return c, nil
}

// loadMail reads SMTP_URL, SMTP_CA_FILE, MAIL_FROM, MAIL_RATE,
// MAIL_BACKLOG and PUBLIC_URL.
func (c *Config) loadMail(getenv func(string) string) error {
	var err error
	if c.MailRate, err = wholeNumber(getenv, "MAIL_RATE", 10, 1, 100_000); err != nil {
		return err
	}
	if c.MailBacklog, err = wholeNumber(getenv, "MAIL_BACKLOG", 10_000, 1, 10_000_000); err != nil {
		return err
	}
	if c.MailLease, err = time.ParseDuration(or(getenv("MAIL_LEASE"), "2m")); err != nil || c.MailLease < 5*time.Second || c.MailLease > time.Hour {
		return fmt.Errorf("MAIL_LEASE must be a duration from 5s to 1h, such as 2m, got %q", getenv("MAIL_LEASE"))
	}
	switch c.PasswordHash = or(getenv("PASSWORD_HASH"), "rfc9106"); c.PasswordHash {
	case "rfc9106", "owasp":
	default:
		return fmt.Errorf("PASSWORD_HASH must be rfc9106 or owasp, got %q", c.PasswordHash)
	}
	if c.JobRescue, err = time.ParseDuration(or(getenv("JOB_RESCUE"), "1m")); err != nil || c.JobRescue < 15*time.Second || c.JobRescue > time.Hour {
		return fmt.Errorf("JOB_RESCUE must be a duration from 15s to 1h, such as 1m, got %q", getenv("JOB_RESCUE"))
	}
	c.PublicURL = strings.TrimRight(getenv("PUBLIC_URL"), "/")
	if c.PublicURL != "" {
		u, err := url.Parse(c.PublicURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			return fmt.Errorf("PUBLIC_URL must be the address users reach the service at, such as https://stencil.example.com, got %q", c.PublicURL)
		}
	}
	c.MailFrom = getenv("MAIL_FROM")
	if c.MailFrom != "" {
		if _, err := mail.ParseAddress(c.MailFrom); err != nil || strings.ContainsAny(c.MailFrom, "\r\n") {
			return fmt.Errorf("MAIL_FROM must be an address such as \"Stencil <noreply@example.com>\", got %q", c.MailFrom)
		}
	}
	raw := getenv("SMTP_URL")
	if raw == "" {
		if c.PublicURL == "" {
			c.PublicURL = "http://localhost:" + strconv.Itoa(c.Port)
		}
		if c.MailFrom == "" {
			c.MailFrom = "Stencil <stencil@localhost>"
		}
		return nil
	}
	if c.SMTP, err = ParseSMTPURL(raw); err != nil {
		return err
	}
	c.SMTP.CAFile = getenv("SMTP_CA_FILE")
	if c.MailFrom == "" || c.PublicURL == "" && c.Production {
		return errors.New("SMTP_URL needs MAIL_FROM (the sender) and, in production, PUBLIC_URL (where links in messages lead)")
	}
	if c.PublicURL == "" {
		c.PublicURL = "http://localhost:" + strconv.Itoa(c.Port)
	}
	return nil
}

var keyIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)

// ParseVaultKeys parses `id:base64key[,id:base64key…]`. Every key must decode
// (standard or URL base64) to exactly 32 bytes and ids must be unique.
func ParseVaultKeys(s string) ([]vaultcrypt.Key, error) {
	var keys []vaultcrypt.Key
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		id, b64, ok := strings.Cut(strings.TrimSpace(part), ":")
		if !ok || !keyIDPattern.MatchString(id) {
			return nil, errors.New("VAULT_KEYS must be id:base64key[,id:base64key…] with ids of letters, digits, _ or - (1–32)")
		}
		if seen[id] {
			return nil, fmt.Errorf("VAULT_KEYS names key id %q twice", id)
		}
		seen[id] = true
		key, err := decodeBase64(b64)
		if err != nil || len(key) != vaultcrypt.KeySize {
			return nil, fmt.Errorf("VAULT_KEYS key %q must be 32 bytes in base64 (AES-256)", id)
		}
		keys = append(keys, vaultcrypt.Key{ID: id, Secret: key})
	}
	return keys, nil
}

func decodeBase64(s string) ([]byte, error) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			return b, nil
		}
	}
	return nil, errors.New("not base64")
}

// newDevVaultKey makes a development vault key whose id is derived from its
// fingerprint ("dev-" and 8 hex digits of its SHA-256), so that instances
// with different DATA_DIRs on one database name different keys and the
// start-up check says which one is missing.
func newDevVaultKey() string {
	key := random(32)
	sum := sha256.Sum256(key)
	return "dev-" + hex.EncodeToString(sum[:4]) + ":" + base64.StdEncoding.EncodeToString(key)
}

// ensureDataDir creates DATA_DIR (and any missing parent) with mode 0711,
// which lets the postgres system user reach the cluster below it when the
// app runs as root, while the secrets in it stay 0600.
func (c Config) ensureDataDir() error {
	if err := os.MkdirAll(c.DataDir, 0o711); err != nil {
		return fmt.Errorf("create DATA_DIR: %w", err)
	}
	return nil
}

// devSecret returns the content of DATA_DIR/name, writing gen() there first
// if the file does not exist.
func (c Config) devSecret(name string, gen func() string) (string, error) {
	path := filepath.Join(c.DataDir, name)
	b, err := os.ReadFile(path)
	if err == nil {
		return strings.TrimSpace(string(b)), nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	// Write a temporary file, then link it into place: the link fails if a
	// concurrent instance got there first, and nobody reads a half-written file.
	tmp, err := os.CreateTemp(c.DataDir, name+".tmp-")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	_, werr := tmp.WriteString(gen() + "\n")
	if cerr := tmp.Close(); werr != nil || cerr != nil {
		return "", errors.Join(werr, cerr)
	}
	if err := os.Link(tmp.Name(), path); err != nil && !errors.Is(err, os.ErrExist) {
		return "", err
	}
	return c.devSecret(name, gen)
}

func random(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on Linux (Go ≥ 1.24 panics instead)
	return b
}

func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// DefaultRunConcurrency is RUN_CONCURRENCY when it is not set: 32 runs a
// core.
func DefaultRunConcurrency() int { return 32 * runtime.NumCPU() }
