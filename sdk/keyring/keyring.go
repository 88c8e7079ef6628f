// Package keyring holds the HMAC-SHA256 signing keys of Sluice: the per-user
// key, created on first use in the user's configuration directory with mode
// 0600, and shared secrets given as strings. The apsim format embeds
// signatures made with these keys; other formats get detached signature
// files; `sluice verify --key` checks both.
//
// A Key never reveals its bytes when printed, formatted or marshalled, so
// passing one to a logger or an error cannot leak it. MACs are compared in
// constant time.
//
// The package does not store or fetch keys anywhere else (no OS keychain, no
// network); it is not a general secret store.
package keyring

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io/fs"
	"os"
	"path/filepath"
)

// IDs of the two kinds of key; they name a key without revealing it.
const (
	UserKeyID   = "user key"
	SharedKeyID = "shared secret"
)

// Key is an HMAC-SHA256 key with a name that does not reveal it.
type Key struct {
	secret []byte
	id     string
}

// FromBytes wraps raw key bytes (at least one) under the given id. The bytes
// are copied.
func FromBytes(b []byte, id string) (*Key, error) {
	if len(b) == 0 {
		return nil, errors.New("signing key is empty")
	}
	return &Key{secret: append([]byte(nil), b...), id: id}, nil
}

// Shared returns the key of a shared secret: its UTF-8 bytes. An empty secret
// is refused.
func Shared(secret string) (*Key, error) {
	if secret == "" {
		return nil, errors.New("the shared secret is empty")
	}
	return &Key{secret: []byte(secret), id: SharedKeyID}, nil
}

// ID names the key without revealing it ("user key", "shared secret").
func (k *Key) ID() string { return k.id }

// Bytes returns the key's bytes; the caller must not modify or print them.
func (k *Key) Bytes() []byte { return k.secret }

// Equal reports in constant time whether two keys have the same bytes.
func (k *Key) Equal(o *Key) bool { return hmac.Equal(k.secret, o.secret) }

// New returns an HMAC-SHA256 hash keyed with k.
func (k *Key) New() hash.Hash { return hmac.New(sha256.New, k.secret) }

// Sum returns HMAC-SHA256(k, msg).
func (k *Key) Sum(msg []byte) []byte {
	h := k.New()
	h.Write(msg)
	return h.Sum(nil)
}

// Verify reports whether mac is HMAC-SHA256(k, msg), comparing in constant
// time.
func (k *Key) Verify(msg, mac []byte) bool { return hmac.Equal(k.Sum(msg), mac) }

// String names the key without revealing it.
func (k *Key) String() string { return "signing key (" + k.id + ")" }

// GoString names the key without revealing it (for %#v).
func (k *Key) GoString() string { return k.String() }

// Format makes every fmt verb print String, so %x or %v of a Key never
// shows its bytes.
func (k *Key) Format(f fmt.State, _ rune) { fmt.Fprint(f, k.String()) }

// MarshalJSON writes the key's name, never its bytes.
func (k *Key) MarshalJSON() ([]byte, error) { return []byte(fmt.Sprintf("%q", k.String())), nil }

// MarshalText writes the key's name, never its bytes.
func (k *Key) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// userKeyFile is the file name of the per-user key in DefaultDir.
const userKeyFile = "signing.key"

// UserKeyPath returns where the per-user key lives:
// os.UserConfigDir()/sluice/signing.key ($XDG_CONFIG_HOME/sluice/signing.key
// or ~/.config/sluice/signing.key on Linux).
func UserKeyPath() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("finding the per-user signing key: %w", err)
	}
	return filepath.Join(dir, "sluice", userKeyFile), nil
}

// User returns the per-user key, creating it (32 random bytes, mode 0600, in
// a directory of mode 0700) when it does not exist yet. It refuses a key file
// that others can read or write, that another user owns, or that is not a
// regular file.
func User() (*Key, error) {
	path, err := UserKeyPath()
	if err != nil {
		return nil, err
	}
	return userAt(path, true)
}

// LoadUser returns the per-user key without creating it: verifying with a key
// that does not exist yet cannot succeed, so its absence is an error.
func LoadUser() (*Key, error) {
	path, err := UserKeyPath()
	if err != nil {
		return nil, err
	}
	return userAt(path, false)
}

func userAt(path string, create bool) (*Key, error) {
	k, err := readKeyFile(path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return k, err
	}
	if !create {
		return nil, fmt.Errorf("there is no per-user signing key yet (%s); sign something with sign = true first", path)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the per-user signing key: %w", err)
	}
	if err := checkDir(dir); err != nil {
		return nil, err
	}
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return nil, fmt.Errorf("creating the per-user signing key: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".signing.key.tmp-*") // mode 0600
	if err != nil {
		return nil, fmt.Errorf("creating the per-user signing key: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return nil, fmt.Errorf("creating the per-user signing key: %w", err)
	}
	_, werr := tmp.WriteString(hex.EncodeToString(secret) + "\n")
	serr := tmp.Sync()
	cerr := tmp.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		return nil, fmt.Errorf("writing the per-user signing key %s: %w", path, err)
	}
	// A hard link publishes the complete file under its name, and fails if
	// another process won the race; then its key is the one to use.
	if err := os.Link(tmp.Name(), path); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("creating the per-user signing key %s: %w", path, err)
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return readKeyFile(path)
}

// checkDir refuses a key directory that other users may write to, since they
// could replace the key.
func checkDir(dir string) error {
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("checking the signing key directory: %w", err)
	}
	if st.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("the signing key directory %s is writable by other users (mode %04o); run chmod go-w %s", dir, st.Mode().Perm(), dir)
	}
	return nil
}

// readKeyFile reads and checks a key file: a regular file of mode 0600 or
// stricter, owned by the current user, holding 64 lowercase hex digits and a
// newline.
func readKeyFile(path string) (*Key, error) {
	st, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("the signing key %s is not a regular file (%s); refusing to use it", path, st.Mode().Type())
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("the signing key %s can be read or written by other users (mode %04o); run chmod 600 %s", path, st.Mode().Perm(), path)
	}
	if err := checkOwner(path, st); err != nil {
		return nil, err
	}
	if err := checkDir(filepath.Dir(path)); err != nil {
		return nil, err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the signing key: %w", err)
	}
	if len(b) != 65 || b[64] != '\n' {
		return nil, fmt.Errorf("the signing key %s is malformed: it should hold 64 hex digits and a newline", path)
	}
	secret := make([]byte, 32)
	if _, err := hex.Decode(secret, b[:64]); err != nil {
		return nil, fmt.Errorf("the signing key %s is malformed: it should hold 64 hex digits and a newline", path)
	}
	return &Key{secret: secret, id: UserKeyID}, nil
}
