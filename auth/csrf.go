package auth

import (
	"crypto/rand"
	"encoding/base64"
)

// MaskToken hides a CSRF token behind a fresh random mask, as the mask
// followed by the token XOR the mask: every page carries different bytes,
// so compressed sizes tell nothing about the token (BREACH).
func MaskToken(token []byte) string {
	out := make([]byte, 2*len(token))
	_, _ = rand.Read(out[:len(token)])
	for i, b := range token {
		out[len(token)+i] = out[i] ^ b
	}
	return base64.RawURLEncoding.EncodeToString(out)
}

// UnmaskToken undoes MaskToken; a value of the wrong shape is not a token.
func UnmaskToken(masked string) ([]byte, bool) {
	b, err := base64.RawURLEncoding.DecodeString(masked)
	if err != nil || len(b) != 64 {
		return nil, false
	}
	token := make([]byte, 32)
	for i := range token {
		token[i] = b[i] ^ b[32+i]
	}
	return token, true
}
