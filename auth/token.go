package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	lru "github.com/hashicorp/golang-lru/v2"
)

// Issuer is the iss claim of every session token.
const Issuer = "stencil"

// Claims are a session token's claims: the registered ones and cv, the
// user's credential version when it was issued (a password change moves it
// on and so ends the token).
type Claims struct {
	jwt.RegisteredClaims
	CredentialVersion int `json:"cv"`
}

// IssueJWT returns an HS256 token for user uid at credential version cv,
// valid for ttl from now.
func IssueJWT(secret []byte, uid int64, cv int, now time.Time, ttl time.Duration) (string, error) {
	claims := Claims{RegisteredClaims: jwt.RegisteredClaims{
		Subject:   strconv.FormatInt(uid, 10),
		Issuer:    Issuer,
		IssuedAt:  jwt.NewNumericDate(now),
		ExpiresAt: jwt.NewNumericDate(now.Add(ttl)),
	}, CredentialVersion: cv}
	return jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(secret)
}

// ParseJWT checks a session token — HS256 only, signature, issuer, expiry
// (required) — and returns its user id and credential version.
func ParseJWT(secret []byte, token string, now time.Time) (int64, int, error) {
	v, err := parseJWT(secret, token, now)
	return v.uid, v.cv, err
}

// verified is what a valid session token says.
type verified struct {
	uid     int64
	cv      int
	expires time.Time
}

func parseJWT(secret []byte, token string, now time.Time) (verified, error) {
	var claims Claims
	_, err := jwt.ParseWithClaims(token, &claims, func(*jwt.Token) (any, error) { return secret, nil },
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithIssuer(Issuer),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithTimeFunc(func() time.Time { return now }),
	)
	if err != nil {
		return verified{}, err
	}
	uid, err := strconv.ParseInt(claims.Subject, 10, 64)
	if err != nil || uid <= 0 {
		return verified{}, errors.New("token subject is not a user id")
	}
	return verified{uid: uid, cv: claims.CredentialVersion, expires: claims.ExpiresAt.Time}, nil
}

// JWTVerifier checks session tokens with one secret, as ParseJWT does, and
// remembers the last tokens it found valid, with their expiry: a client
// sends the same token with every request, and checking it again (base64,
// JSON and HMAC) took a sixth of the service's CPU in a vault read. Only a token that
// passed every check is kept, by its exact text, so an invalid one costs
// the full check each time and cannot push valid ones out. A kept token
// still ends at its expiry, and the credential version it carries is still
// compared with the user's on every request.
type JWTVerifier struct {
	secret []byte
	seen   *lru.Cache[string, verified]
}

// jwtsKept bounds the tokens a JWTVerifier remembers (about 1 MiB).
const jwtsKept = 4096

// NewJWTVerifier returns a verifier for tokens signed with secret.
func NewJWTVerifier(secret []byte) *JWTVerifier {
	seen, _ := lru.New[string, verified](jwtsKept) // fails only for a size ≤ 0
	return &JWTVerifier{secret: secret, seen: seen}
}

// Parse returns the user id and credential version of a valid token.
func (v *JWTVerifier) Parse(token string, now time.Time) (int64, int, error) {
	if got, ok := v.seen.Get(token); ok && now.Before(got.expires) {
		return got.uid, got.cv, nil
	}
	got, err := parseJWT(v.secret, token, now)
	if err != nil {
		return 0, 0, err
	}
	v.seen.Add(strings.Clone(token), got) // token may live in a reused buffer
	return got.uid, got.cv, nil
}

// PATPrefix starts every personal access token, so that logs and secret
// scanners recognize one.
const PATPrefix = "stp_"

// NewPAT returns a new personal access token: the prefix and 32 random bytes
// in URL-safe base64.
func NewPAT() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return PATPrefix + base64.RawURLEncoding.EncodeToString(b)
}

// IsPAT reports whether a bearer token has the form of a personal access token.
func IsPAT(token string) bool {
	return strings.HasPrefix(token, PATPrefix)
}

// HashPAT returns the SHA-256 of a personal access token, the only form in
// which it is stored.
func HashPAT(token string) []byte {
	sum := sha256.Sum256([]byte(token))
	return sum[:]
}
