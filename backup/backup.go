// Package backup is the file `stencil backup` writes and `stencil
// restore` reads (docs/operations.md): a tar archive of a manifest, the
// database in pg_dump's custom format and, when the service's keys live in
// DATA_DIR, those keys sealed with a passphrase. A key or a vault value is
// never in it in the clear: vault values are in the dump as the service
// sealed them, and the keys that open them are sealed here or stay with
// the operator.
package backup

import (
	"archive/tar"
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/crypto/argon2"
)

// Format is the layout of the archive this package writes and reads.
const Format = 1

// Where the service's keys are, as the manifest says.
const (
	KeysSealed   = "sealed"   // in the archive, sealed with BACKUP_PASSPHRASE
	KeysOperator = "operator" // kept by the operator (VAULT_KEYS, JWT_SECRET)
)

// The archive's members.
const (
	manifestName = "manifest.json"
	keysName     = "keys.sealed"
	databaseName = "database.dump"
)

// Manifest says what the archive holds and what a restore needs.
type Manifest struct {
	Format    int       `json:"format"`
	CreatedAt time.Time `json:"created_at"`
	// VaultKeyIDs are the master keys the dump's sealed values need.
	VaultKeyIDs []string `json:"vault_key_ids"`
	Keys        string   `json:"keys"`
	// Database is how the database is kept.
	Database string `json:"database"`
}

// Secrets are the keys a development service keeps in DATA_DIR, as its
// files hold them.
type Secrets struct {
	VaultKeys string `json:"vault_keys"`
	JWTSecret string `json:"jwt_secret"`
}

// MinPassphrase is the shortest BACKUP_PASSPHRASE taken.
const MinPassphrase = 12

// ErrPassphrase means the keys do not open with the passphrase given.
var ErrPassphrase = errors.New("the backup's keys do not open with this BACKUP_PASSPHRASE")

// Write writes the archive to path (mode 0600, whole or not at all): the
// manifest, secrets sealed with passphrase when not nil, and the dump
// file at dumpPath.
func Write(path string, m Manifest, secrets *Secrets, passphrase string, dumpPath string) (err error) {
	m.Format = Format
	manifest, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	var sealed []byte
	if secrets != nil {
		plain, err := json.Marshal(secrets)
		if err != nil {
			return err
		}
		if sealed, err = Seal([]byte(passphrase), plain); err != nil {
			return err
		}
	}
	dump, err := os.Open(dumpPath)
	if err != nil {
		return err
	}
	defer dump.Close()
	st, err := dump.Stat()
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp-")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	tw := tar.NewWriter(tmp)
	add := func(name string, size int64, r io.Reader) error {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o600, Size: size, ModTime: m.CreatedAt}); err != nil {
			return err
		}
		_, err := io.Copy(tw, r)
		return err
	}
	if err := add(manifestName, int64(len(manifest)), bytes.NewReader(manifest)); err != nil {
		return err
	}
	if sealed != nil {
		if err := add(keysName, int64(len(sealed)), bytes.NewReader(sealed)); err != nil {
			return err
		}
	}
	if err := add(databaseName, st.Size(), dump); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// Archive is an archive read: its manifest, its sealed keys (nil when the
// operator keeps them) and where its dump was put.
type Archive struct {
	Manifest Manifest
	Sealed   []byte
	DumpPath string
}

// Read reads the archive at path, writing its dump into dir.
func Read(path, dir string) (Archive, error) {
	var a Archive
	f, err := os.Open(path)
	if err != nil {
		return a, err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return a, fmt.Errorf("%s is not a backup: %w", path, err)
		}
		switch h.Name {
		case manifestName:
			raw, err := io.ReadAll(io.LimitReader(tr, 1<<20))
			if err != nil {
				return a, err
			}
			if err := json.Unmarshal(raw, &a.Manifest); err != nil {
				return a, fmt.Errorf("%s: the manifest does not read: %w", path, err)
			}
		case keysName:
			if a.Sealed, err = io.ReadAll(io.LimitReader(tr, 1<<20)); err != nil {
				return a, err
			}
		case databaseName:
			a.DumpPath = filepath.Join(dir, databaseName)
			out, err := os.OpenFile(a.DumpPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
			if err != nil {
				return a, err
			}
			_, err = io.Copy(out, tr)
			if cerr := out.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return a, err
			}
		}
	}
	switch {
	case a.Manifest.Format != Format:
		return a, fmt.Errorf("%s is not a backup of format %d", path, Format)
	case a.DumpPath == "":
		return a, fmt.Errorf("%s holds no database", path)
	case a.Manifest.Keys == KeysSealed && a.Sealed == nil:
		return a, fmt.Errorf("%s says its keys are sealed in it, but they are not there", path)
	}
	return a, nil
}

// sealedKeys is keys.sealed: the passphrase stretched by argon2id with
// these parameters and salt, then AES-256-GCM.
type sealedKeys struct {
	KDF       string `json:"kdf"`
	MemoryKiB uint32 `json:"memory_kib"`
	Time      uint32 `json:"time"`
	Threads   uint8  `json:"threads"`
	Salt      []byte `json:"salt"`
	Sealed    []byte `json:"sealed"` // nonce ‖ ciphertext ‖ tag
}

// The argon2id cost of stretching a passphrase (RFC 9106's second
// recommendation), and what the seal is bound to.
const (
	kdfMemory  = 64 * 1024
	kdfTime    = 3
	kdfThreads = 2
)

var sealedFor = []byte("stencil/backup/keys/v1")

// Seal encrypts plain under passphrase.
func Seal(passphrase, plain []byte) ([]byte, error) {
	s := sealedKeys{KDF: "argon2id", MemoryKiB: kdfMemory, Time: kdfTime, Threads: kdfThreads, Salt: make([]byte, 16)}
	if _, err := rand.Read(s.Salt); err != nil {
		return nil, err
	}
	aead, err := gcm(passphrase, s)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	s.Sealed = aead.Seal(nonce, nonce, plain, sealedFor)
	return json.MarshalIndent(s, "", "  ")
}

// Open decrypts what Seal sealed; a wrong passphrase is ErrPassphrase.
func Open(passphrase, sealed []byte) ([]byte, error) {
	var s sealedKeys
	if err := json.Unmarshal(sealed, &s); err != nil || s.KDF != "argon2id" {
		return nil, errors.New("the backup's sealed keys do not read")
	}
	if s.MemoryKiB > 1<<18 || s.Time > 10 || s.Threads == 0 { // at most 256 MiB and ten passes
		return nil, errors.New("the backup's sealed keys ask for an unreasonable cost")
	}
	aead, err := gcm(passphrase, s)
	if err != nil {
		return nil, err
	}
	if len(s.Sealed) < aead.NonceSize()+aead.Overhead() {
		return nil, ErrPassphrase
	}
	plain, err := aead.Open(nil, s.Sealed[:aead.NonceSize()], s.Sealed[aead.NonceSize():], sealedFor)
	if err != nil {
		return nil, ErrPassphrase
	}
	return plain, nil
}

func gcm(passphrase []byte, s sealedKeys) (cipher.AEAD, error) {
	key := argon2.IDKey(passphrase, s.Salt, s.Time, s.MemoryKiB, s.Threads, 32)
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// OpenSecrets opens an archive's sealed keys.
func OpenSecrets(passphrase string, sealed []byte) (Secrets, error) {
	var s Secrets
	plain, err := Open([]byte(passphrase), sealed)
	if err != nil {
		return s, err
	}
	return s, json.Unmarshal(plain, &s)
}
