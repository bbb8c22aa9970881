// Package webhooks checks the signatures of webhooks a route receives
// (docs/webhooks.md): the schemes of Standard Webhooks, Stripe, GitHub and
// a bare HMAC-SHA256 of the body. Pure: the caller gives the secret, the
// request's headers and body, and the time.
package webhooks

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// The schemes a route's auth_signature may name.
const (
	StandardWebhooks = "standard-webhooks"
	Stripe           = "stripe"
	GitHub           = "github"
	HMACSHA256       = "hmac-sha256"
)

// Schemes are the schemes, in the order the API document lists them.
var Schemes = []string{StandardWebhooks, Stripe, GitHub, HMACSHA256}

// DefaultTolerance bounds a signed timestamp's distance from now when the
// route sets none.
const DefaultTolerance = 300 * time.Second

// The headers the schemes read.
const (
	headerID        = "webhook-id"
	headerTimestamp = "webhook-timestamp"
	headerSignature = "webhook-signature"
	headerStripe    = "Stripe-Signature"
	headerGitHub    = "X-Hub-Signature-256"
)

// Mismatch is a request whose signature does not hold: missing, not in
// the scheme's form, of another secret or body, or with a timestamp
// outside the tolerance. Its Error is the same whatever the reason, which
// Reason says for the run log.
type Mismatch struct{ Reason string }

func (m *Mismatch) Error() string { return "signature does not match" }

func mismatch(format string, args ...any) error {
	return &Mismatch{Reason: fmt.Sprintf(format, args...)}
}

// Verify checks a request's signature by scheme, with secret, over the
// raw body; header reads the request's headers by name (in any case) and
// named is the header that scheme hmac-sha256 reads. now and tolerance
// bound the signed timestamp where the scheme has one. It returns the
// delivery's id where the scheme carries one (standard-webhooks'
// webhook-id), for the caller to refuse a replay. Every comparison of a
// signature takes constant time.
func Verify(scheme, secret, named string, header func(string) string, body []byte, now time.Time, tolerance time.Duration) (id string, err error) {
	switch scheme {
	case StandardWebhooks:
		return verifyStandard(secret, header, body, now, tolerance)
	case Stripe:
		return "", verifyStripe(secret, header(headerStripe), body, now, tolerance)
	case GitHub:
		sig, ok := strings.CutPrefix(strings.TrimSpace(header(headerGitHub)), "sha256=")
		if !ok {
			return "", mismatch("%s is missing or does not start with sha256=", headerGitHub)
		}
		return "", hexMatch(sig, mac([]byte(secret), body), headerGitHub)
	case HMACSHA256:
		return "", hexMatch(strings.TrimSpace(header(named)), mac([]byte(secret), body), named)
	}
	return "", mismatch("unknown scheme %q", scheme)
}

// Headers names the headers a scheme reads (named: hmac-sha256's).
func Headers(scheme, named string) []string {
	switch scheme {
	case StandardWebhooks:
		return []string{headerID, headerTimestamp, headerSignature}
	case Stripe:
		return []string{headerStripe}
	case GitHub:
		return []string{headerGitHub}
	case HMACSHA256:
		return []string{named}
	}
	return nil
}

func mac(key []byte, parts ...[]byte) []byte {
	h := hmac.New(sha256.New, key)
	for _, p := range parts {
		h.Write(p)
	}
	return h.Sum(nil)
}

func hexMatch(sig string, want []byte, header string) error {
	got, err := hex.DecodeString(sig)
	if err != nil || len(got) != sha256.Size {
		return mismatch("%s is missing or is not a hex SHA-256 HMAC", header)
	}
	if !hmac.Equal(got, want) {
		return mismatch("%s is not the HMAC of this body with the secret", header)
	}
	return nil
}

// fresh says whether the signed unix time ts is within tolerance of now,
// either way.
func fresh(ts string, now time.Time, tolerance time.Duration) error {
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return mismatch("the timestamp %q is not a unix time", ts)
	}
	if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
		return mismatch("the timestamp is %d s from now, past the tolerance of %d s", int64(d/time.Second), int64(tolerance/time.Second))
	}
	return nil
}

// verifyStandard checks Standard Webhooks' signature: a space-separated
// list of "v1,<base64 HMAC-SHA256>" over "id.timestamp.body", keyed with
// the secret's bytes after "whsec_" decoded from base64 (or the secret as
// it is, without that prefix).
// MaxDeliveryID bounds a webhook-id: the replay check keeps ids of at most
// this many characters (migration 051), and a sender's are short.
const MaxDeliveryID = 200

func verifyStandard(secret string, header func(string) string, body []byte, now time.Time, tolerance time.Duration) (string, error) {
	id, ts, sigs := header(headerID), header(headerTimestamp), header(headerSignature)
	if id == "" || ts == "" || sigs == "" {
		return "", mismatch("%s, %s and %s are all required", headerID, headerTimestamp, headerSignature)
	}
	if utf8.RuneCountInString(id) > MaxDeliveryID {
		return "", mismatch("%s is longer than %d characters", headerID, MaxDeliveryID)
	}
	if err := fresh(ts, now, tolerance); err != nil {
		return "", err
	}
	key, err := standardKey(secret)
	if err != nil {
		return "", err
	}
	want := mac(key, []byte(id), []byte("."), []byte(ts), []byte("."), body)
	for _, s := range strings.Fields(sigs) {
		version, sig, _ := strings.Cut(s, ",")
		if version != "v1" {
			continue
		}
		got, err := base64.StdEncoding.DecodeString(sig)
		if err == nil && hmac.Equal(got, want) {
			return id, nil
		}
	}
	return "", mismatch("no v1 signature of %s is the HMAC of this delivery with the secret", headerSignature)
}

// standardKey is a Standard Webhooks secret's key: the base64 after
// "whsec_" decoded, or a secret without that prefix as it is.
func standardKey(secret string) ([]byte, error) {
	rest, ok := strings.CutPrefix(secret, "whsec_")
	if !ok {
		return []byte(secret), nil
	}
	key, err := base64.StdEncoding.DecodeString(rest)
	if err != nil {
		return nil, mismatch("the secret starts with whsec_ but the rest is not base64")
	}
	return key, nil
}

// verifyStripe checks Stripe's signature: "t=<unix time>,v1=<hex>…", each
// v1 a hex HMAC-SHA256 over "t.body" keyed with the secret as it is.
func verifyStripe(secret, value string, body []byte, now time.Time, tolerance time.Duration) error {
	var ts string
	var sigs []string
	for _, part := range strings.Split(value, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch {
		case k == "t" && ts == "":
			ts = v
		case k == "v1":
			sigs = append(sigs, v)
		}
	}
	if ts == "" || len(sigs) == 0 {
		return mismatch("%s needs t= and v1=", headerStripe)
	}
	if err := fresh(ts, now, tolerance); err != nil {
		return err
	}
	want := mac([]byte(secret), []byte(ts), []byte("."), body)
	for _, s := range sigs {
		if got, err := hex.DecodeString(s); err == nil && hmac.Equal(got, want) {
			return nil
		}
	}
	return mismatch("no v1 signature of %s is the HMAC of this body with the secret", headerStripe)
}

// Sign makes the headers of a delivery signed by scheme, as a sender
// would: for tests, and for the examples of docs/webhooks.md. id is
// standard-webhooks' webhook-id. A secret the scheme cannot use gives nil.
func Sign(scheme, secret, named, id string, body []byte, at time.Time) map[string]string {
	ts := strconv.FormatInt(at.Unix(), 10)
	switch scheme {
	case StandardWebhooks:
		key, err := standardKey(secret)
		if err != nil {
			return nil
		}
		sig := base64.StdEncoding.EncodeToString(mac(key, []byte(id), []byte("."), []byte(ts), []byte("."), body))
		return map[string]string{headerID: id, headerTimestamp: ts, headerSignature: "v1," + sig}
	case Stripe:
		return map[string]string{headerStripe: "t=" + ts + ",v1=" + hex.EncodeToString(mac([]byte(secret), []byte(ts), []byte("."), body))}
	case GitHub:
		return map[string]string{headerGitHub: "sha256=" + hex.EncodeToString(mac([]byte(secret), body))}
	case HMACSHA256:
		return map[string]string{named: hex.EncodeToString(mac([]byte(secret), body))}
	}
	return nil
}
