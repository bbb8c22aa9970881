// Package auth holds Stencil's credential primitives: argon2id password
// hashes, HS256 session tokens, personal access tokens and the masking of CSRF
// tokens. Pure functions; no I/O beyond the system's randomness.
package auth

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/crypto/argon2"
)

// PasswordParams are the argon2id cost parameters.
type PasswordParams struct {
	Memory  uint32 // KiB
	Time    uint32
	Threads uint8
}

// DefaultPasswordParams follow the RFC 9106 second recommendation (64 MiB).
var DefaultPasswordParams = PasswordParams{Memory: 64 * 1024, Time: 3, Threads: 2}

// OWASPPasswordParams are the OWASP Password Storage Cheat Sheet's first
// argon2id configuration (19 MiB, 2 passes, 1 lane): about a fifth of the
// default's work, for machines short of memory or CPU (PASSWORD_HASH).
var OWASPPasswordParams = PasswordParams{Memory: 19 * 1024, Time: 2, Threads: 1}

// PasswordHashes are the parameter sets PASSWORD_HASH names.
var PasswordHashes = map[string]PasswordParams{"rfc9106": DefaultPasswordParams, "owasp": OWASPPasswordParams}

const (
	saltLen = 16
	keyLen  = 32
)

// ErrMismatch reports a password that does not match its hash.
var ErrMismatch = errors.New("password does not match")

// HashPassword returns the PHC string of password under params:
// $argon2id$v=19$m=…,t=…,p=…$salt$hash.
func HashPassword(password string, params PasswordParams) string {
	salt := make([]byte, saltLen)
	_, _ = rand.Read(salt)
	key := argon2.IDKey([]byte(password), salt, params.Time, params.Memory, params.Threads, keyLen)
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, params.Memory, params.Time, params.Threads,
		base64.RawStdEncoding.EncodeToString(salt), base64.RawStdEncoding.EncodeToString(key))
}

// CheckPassword compares password with a hash from HashPassword, in constant
// time. It returns ErrMismatch, or another error for a malformed hash.
func CheckPassword(password, encoded string) error {
	parts := strings.Split(encoded, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return errors.New("not an argon2id hash")
	}
	var version int
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2.Version {
		return errors.New("unsupported argon2 version")
	}
	var p PasswordParams
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &p.Memory, &p.Time, &p.Threads); err != nil {
		return errors.New("malformed argon2 parameters")
	}
	salt, err := base64.RawStdEncoding.DecodeString(parts[4])
	if err != nil {
		return errors.New("malformed salt")
	}
	want, err := base64.RawStdEncoding.DecodeString(parts[5])
	if err != nil || len(want) == 0 {
		return errors.New("malformed hash")
	}
	got := argon2.IDKey([]byte(password), salt, p.Time, p.Memory, p.Threads, uint32(len(want)))
	if subtle.ConstantTimeCompare(got, want) != 1 {
		return ErrMismatch
	}
	return nil
}
