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
	var claims Claims
	_, err := jwt.ParseWithClaims(token, &claims, func(*jwt.Token) (any, error) { return secret, nil },
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithIssuer(Issuer),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithTimeFunc(func() time.Time { return now }),
	)
	if err != nil {
		return 0, 0, err
	}
	uid, err := strconv.ParseInt(claims.Subject, 10, 64)
	if err != nil || uid <= 0 {
		return 0, 0, errors.New("token subject is not a user id")
	}
	return uid, claims.CredentialVersion, nil
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
