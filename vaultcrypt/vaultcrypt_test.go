package vaultcrypt

import (
	"bytes"
	"errors"
	"testing"
)

func ring(t *testing.T, ids ...string) *Keyring {
	t.Helper()
	var keys []Key
	for i, id := range ids {
		keys = append(keys, Key{ID: id, Secret: bytes.Repeat([]byte{byte(i + 1)}, KeySize)})
	}
	k, err := NewKeyring(keys)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestRoundTrip(t *testing.T) {
	k := ring(t, "k1")
	plain := []byte("s3cret-value")
	id, sealed, err := k.Seal("shop", "API_KEY", plain)
	if err != nil || id != "k1" {
		t.Fatalf("Seal: %q %v", id, err)
	}
	if bytes.Contains(sealed, plain) {
		t.Fatal("the stored bytes contain the plaintext")
	}
	if len(sealed) != 12+len(plain)+16 {
		t.Fatalf("sealed length %d: want a 96-bit nonce and a 128-bit tag", len(sealed))
	}
	got, err := k.Open(id, "shop", "API_KEY", sealed)
	if err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("Open: %q %v", got, err)
	}
}

func TestFreshNonceEveryWrite(t *testing.T) {
	k := ring(t, "k1")
	_, a, _ := k.Seal("shop", "K", []byte("same"))
	_, b, _ := k.Seal("shop", "K", []byte("same"))
	if bytes.Equal(a, b) || bytes.Equal(a[:12], b[:12]) {
		t.Fatal("the same value written twice gives the same ciphertext or nonce")
	}
}

func TestEveryFlippedByteFails(t *testing.T) {
	k := ring(t, "k1")
	_, sealed, _ := k.Seal("shop", "K", []byte("value"))
	for i := range sealed {
		for _, bit := range []byte{0x01, 0x80} {
			tampered := bytes.Clone(sealed)
			tampered[i] ^= bit
			if _, err := k.Open("k1", "shop", "K", tampered); !errors.Is(err, ErrOpen) {
				t.Fatalf("flipping bit %#x of byte %d: err = %v", bit, i, err)
			}
		}
	}
	for _, n := range []int{0, 11, 27} {
		if _, err := k.Open("k1", "shop", "K", sealed[:n]); !errors.Is(err, ErrOpen) {
			t.Fatalf("truncated to %d: %v", n, err)
		}
	}
}

func TestCiphertextBoundToItsPlace(t *testing.T) {
	k := ring(t, "k1")
	_, sealed, _ := k.Seal("shop", "API_KEY", []byte("value"))
	for _, p := range [][2]string{{"shop", "OTHER"}, {"blog", "API_KEY"}, {"shopA", "PI_KEY"}, {"sho", "pAPI_KEY"}, {"", "shopAPI_KEY"}} {
		if _, err := k.Open("k1", p[0], p[1], sealed); !errors.Is(err, ErrOpen) {
			t.Errorf("copied to %s/%s: err = %v", p[0], p[1], err)
		}
	}
}

func TestKeys(t *testing.T) {
	if _, err := NewKeyring([]Key{{ID: "k", Secret: make([]byte, 16)}}); err == nil {
		t.Error("a 16-byte key was accepted")
	}
	if _, err := NewKeyring([]Key{{ID: "k", Secret: make([]byte, 33)}}); err == nil {
		t.Error("a 33-byte key was accepted")
	}
	if _, err := NewKeyring(nil); err == nil {
		t.Error("an empty keyring was accepted")
	}
	if _, err := NewKeyring([]Key{{ID: "a", Secret: make([]byte, 32)}, {ID: "a", Secret: make([]byte, 32)}}); err == nil {
		t.Error("a repeated id was accepted")
	}
	old := ring(t, "k1")
	_, sealed, _ := old.Seal("p", "K", []byte("v"))
	rotated := ring(t, "k2", "k1")
	if rotated.Active() != "k2" || !rotated.Has("k1") || rotated.Has("k3") {
		t.Fatal("active key and membership")
	}
	// k1 of the rotated ring has another secret here, so it must not open.
	if _, err := rotated.Open("k1", "p", "K", sealed); !errors.Is(err, ErrOpen) {
		t.Fatalf("wrong secret under the same id: %v", err)
	}
	if _, err := ring(t, "k2").Open("k1", "p", "K", sealed); !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("unknown key id: %v", err)
	}
}
