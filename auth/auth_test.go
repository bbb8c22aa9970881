package auth

import (
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

var cheap = PasswordParams{Memory: 1024, Time: 1, Threads: 1}

func TestPasswordRoundTrip(t *testing.T) {
	h := HashPassword("correct horse", cheap)
	if !strings.HasPrefix(h, "$argon2id$v=19$m=1024,t=1,p=1$") {
		t.Fatalf("hash = %s", h)
	}
	if err := CheckPassword("correct horse", h); err != nil {
		t.Fatal(err)
	}
	if err := CheckPassword("correct horsE", h); err != ErrMismatch {
		t.Fatalf("wrong password: %v", err)
	}
	if HashPassword("correct horse", cheap) == h {
		t.Fatal("two hashes of one password must differ (salt)")
	}
	for _, bad := range []string{"", "plain", "$argon2i$v=19$m=1,t=1,p=1$AA$AA", "$argon2id$v=18$m=1,t=1,p=1$AA$AA", "$argon2id$v=19$x$AA$AA"} {
		if err := CheckPassword("x", bad); err == nil || err == ErrMismatch {
			t.Errorf("malformed hash %q: %v", bad, err)
		}
	}
}

func TestDefaultParamsAreArgon2idStrength(t *testing.T) {
	h := HashPassword("pw", DefaultPasswordParams)
	if !strings.Contains(h, "$m=65536,t=3,p=2$") {
		t.Fatalf("default parameters changed: %s", h)
	}
}

// TestJWTVerifierRemembersOnlyValidTokens: a token kept from an earlier
// check still ends at its expiry, and neither a tampered copy nor a token
// of another secret passes because a valid one was kept.
func TestJWTVerifierRemembersOnlyValidTokens(t *testing.T) {
	secret := []byte(strings.Repeat("k", 32))
	now := time.Now()
	tok, _ := IssueJWT(secret, 42, 3, now, time.Hour)
	foreign, _ := IssueJWT([]byte(strings.Repeat("x", 32)), 42, 3, now, time.Hour)
	v := NewJWTVerifier(secret)
	for range 2 {
		if uid, cv, err := v.Parse(tok, now.Add(time.Minute)); err != nil || uid != 42 || cv != 3 {
			t.Fatalf("Parse = %d, %d, %v", uid, cv, err)
		}
	}
	for name, bad := range map[string]string{"tampered": tok + "x", "another secret": foreign, "truncated": tok[:len(tok)-2]} {
		for range 2 {
			if _, _, err := v.Parse(bad, now); err == nil {
				t.Errorf("%s token accepted", name)
			}
		}
	}
	if _, _, err := v.Parse(tok, now.Add(time.Hour)); err == nil {
		t.Error("kept token accepted at its expiry")
	}
	if _, _, err := NewJWTVerifier([]byte(strings.Repeat("x", 32))).Parse(tok, now); err == nil {
		t.Error("token accepted by a verifier of another secret")
	}
	// Never more than jwtsKept tokens kept.
	for i := range jwtsKept + 10 {
		other, _ := IssueJWT(secret, int64(i+1), 1, now, time.Hour)
		if _, _, err := v.Parse(other, now); err != nil {
			t.Fatal(err)
		}
	}
	if n := v.seen.Len(); n != jwtsKept {
		t.Fatalf("%d tokens kept, want %d", n, jwtsKept)
	}
}

func TestJWT(t *testing.T) {
	secret := []byte(strings.Repeat("k", 32))
	now := time.Now()
	tok, err := IssueJWT(secret, 42, 3, now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	uid, cv, err := ParseJWT(secret, tok, now.Add(time.Minute))
	if err != nil || uid != 42 || cv != 3 {
		t.Fatalf("ParseJWT = %d, %d, %v", uid, cv, err)
	}
	if _, _, err := ParseJWT(secret, tok, now.Add(2*time.Hour)); err == nil {
		t.Error("expired token accepted")
	}
	if _, _, err := ParseJWT([]byte(strings.Repeat("x", 32)), tok, now); err == nil {
		t.Error("token of another secret accepted")
	}
	if _, _, err := ParseJWT(secret, tok+"x", now); err == nil {
		t.Error("tampered token accepted")
	}

	forge := func(method jwt.SigningMethod, key any, claims jwt.MapClaims) string {
		s, err := jwt.NewWithClaims(method, claims).SignedString(key)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	exp := now.Add(time.Hour).Unix()
	cases := map[string]string{
		"alg none":      forge(jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, jwt.MapClaims{"sub": "1", "iss": Issuer, "exp": exp}),
		"HS512":         forge(jwt.SigningMethodHS512, secret, jwt.MapClaims{"sub": "1", "iss": Issuer, "exp": exp}),
		"no expiry":     forge(jwt.SigningMethodHS256, secret, jwt.MapClaims{"sub": "1", "iss": Issuer}),
		"other issuer":  forge(jwt.SigningMethodHS256, secret, jwt.MapClaims{"sub": "1", "iss": "evil", "exp": exp}),
		"bad subject":   forge(jwt.SigningMethodHS256, secret, jwt.MapClaims{"sub": "root", "iss": Issuer, "exp": exp}),
		"issued later":  forge(jwt.SigningMethodHS256, secret, jwt.MapClaims{"sub": "1", "iss": Issuer, "exp": exp, "iat": now.Add(30 * time.Minute).Unix()}),
		"not a token":   "abc.def.ghi",
		"empty subject": forge(jwt.SigningMethodHS256, secret, jwt.MapClaims{"iss": Issuer, "exp": exp}),
	}
	for name, tok := range cases {
		if _, _, err := ParseJWT(secret, tok, now); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestPAT(t *testing.T) {
	a, b := NewPAT(), NewPAT()
	if !IsPAT(a) || a == b || len(a) != len(PATPrefix)+43 {
		t.Fatalf("tokens %q %q", a, b)
	}
	if string(HashPAT(a)) == string(HashPAT(b)) || len(HashPAT(a)) != 32 {
		t.Fatal("hashes must be 32 distinct bytes")
	}
	if IsPAT("eyJhbGciOi") {
		t.Fatal("a JWT is not a PAT")
	}
}
