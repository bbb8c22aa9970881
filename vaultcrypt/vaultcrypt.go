// Package vaultcrypt seals vault values with AES-256-GCM under versioned
// master keys. Every seal uses a fresh random 96-bit nonce, and the
// associated data binds the ciphertext to its place (project and key), so a
// ciphertext copied to another row or project does not open. It stores
// nothing and logs nothing: the store keeps the sealed values and their log.
package vaultcrypt

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
)

// KeySize is the size of a master key: AES-256.
const KeySize = 32

// ErrUnknownKey reports a ciphertext sealed under a key id the keyring
// does not hold.
var ErrUnknownKey = errors.New("vault master key not configured")

// ErrOpen reports a ciphertext that does not open: tampered, truncated, or
// moved to another place.
var ErrOpen = errors.New("vault value does not decrypt")

// Key is one master key and its id.
type Key struct {
	ID     string
	Secret []byte
}

// Keyring holds the master keys; the first is active (seals), the others
// only open, during rotation.
type Keyring struct {
	active string
	aeads  map[string]cipher.AEAD
}

// NewKeyring builds a keyring from keys, the first being the active one.
func NewKeyring(keys []Key) (*Keyring, error) {
	if len(keys) == 0 {
		return nil, errors.New("no vault master key")
	}
	k := &Keyring{active: keys[0].ID, aeads: make(map[string]cipher.AEAD, len(keys))}
	for _, key := range keys {
		if len(key.Secret) != KeySize {
			return nil, fmt.Errorf("vault master key %q is %d bytes; AES-256 needs %d", key.ID, len(key.Secret), KeySize)
		}
		if _, dup := k.aeads[key.ID]; dup || key.ID == "" {
			return nil, fmt.Errorf("vault master key id %q is empty or repeated", key.ID)
		}
		block, err := aes.NewCipher(key.Secret)
		if err != nil {
			return nil, err
		}
		aead, err := cipher.NewGCM(block) // 96-bit nonces, 128-bit tags
		if err != nil {
			return nil, err
		}
		k.aeads[key.ID] = aead
	}
	return k, nil
}

// Active returns the id of the key that seals.
func (k *Keyring) Active() string { return k.active }

// Has reports whether the keyring holds key id.
func (k *Keyring) Has(id string) bool {
	_, ok := k.aeads[id]
	return ok
}

// Seal encrypts value for entry key of project under the active key. It
// returns the key id and nonce‖ciphertext‖tag.
func (k *Keyring) Seal(project, key string, value []byte) (string, []byte, error) {
	aead := k.aeads[k.active]
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", nil, err
	}
	return k.active, aead.Seal(nonce, nonce, value, place(project, key)), nil
}

// Open decrypts a sealed value of entry key of project.
func (k *Keyring) Open(keyID, project, key string, sealed []byte) ([]byte, error) {
	aead, ok := k.aeads[keyID]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownKey, keyID)
	}
	if len(sealed) < aead.NonceSize()+aead.Overhead() {
		return nil, ErrOpen
	}
	nonce, ciphertext := sealed[:aead.NonceSize()], sealed[aead.NonceSize():]
	value, err := aead.Open(nil, nonce, ciphertext, place(project, key))
	if err != nil {
		return nil, ErrOpen
	}
	return value, nil
}

// place is the associated data: a version tag and the length-prefixed
// project id and key, so that no two places encode alike.
func place(project, key string) []byte {
	b := make([]byte, 0, 16+len(project)+len(key))
	b = append(b, "stencil/vault/v1"...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(project)))
	b = append(b, project...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(key)))
	return append(b, key...)
}
