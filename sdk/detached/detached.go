// Package detached writes and checks Sluice's detached signature files: a
// small JSON document beside an output file (NAME.sig next to NAME) that
// holds an HMAC-SHA256, under a shared key, of the file's SHA-256 digest and
// size. A sign stage makes the core write one for every file a sink commits
// when the sink's format cannot carry a signature itself (apsim embeds its
// own); `sluice verify --key` checks them.
//
// The signed message is the ASCII text
//
//	sluice-detached-signature-v1:<sha256 as 64 lowercase hex digits>:<size in decimal>
//
// so it can be checked without Sluice, e.g. with
//
//	printf 'sluice-detached-signature-v1:%s:%s' "$(sha256sum F | cut -c1-64)" "$(stat -c %s F)" |
//	  openssl dgst -sha256 -hmac "$KEY"
//
// The file name is not signed: a renamed file still verifies, and the
// signature file records the name it was made for only for people.
//
// Keys are never written, printed or put into errors.
package detached

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/sluice-ml/sluice/sdk/atomicfile"
)

// Suffix is appended to an output's name to name its signature file.
const Suffix = ".sig"

// Format identifies a detached signature file.
const Format = "sluice-detached-signature"

// Version is the version of the signature file and of the signed message.
const Version = 1

// Algorithm names the MAC.
const Algorithm = "HMAC-SHA256"

// maxSigSize bounds the size of a signature file read by Verify.
const maxSigSize = 64 << 10

// Signature is the content of a signature file.
type Signature struct {
	// Format is always "sluice-detached-signature".
	Format string `json:"format"`
	// Version is 1.
	Version int `json:"version"`
	// File is the base name of the signed file when it was signed.
	File string `json:"file"`
	// Size is the signed file's size in bytes.
	Size uint64 `json:"size"`
	// SHA256 is the signed file's digest, 64 lowercase hex digits.
	SHA256 string `json:"sha256"`
	// Algorithm is "HMAC-SHA256".
	Algorithm string `json:"algorithm"`
	// KeyID names the key without revealing it ("user key", "shared secret").
	KeyID string `json:"key_id,omitempty"`
	// MAC is HMAC-SHA256(key, Message(SHA256, Size)), 64 lowercase hex digits.
	MAC string `json:"hmac"`
}

// Message returns the bytes the MAC covers.
func Message(sha256Hex string, size uint64) []byte {
	return []byte("sluice-detached-signature-v1:" + sha256Hex + ":" + strconv.FormatUint(size, 10))
}

// Path returns the signature file's path for a file.
func Path(file string) string { return file + Suffix }

// Digest reads a file and returns its SHA-256 (hex) and size: the one file
// hasher of signatures, run manifests and plugin pins.
func Digest(path string) (string, uint64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	sum, n, err := DigestReader(f)
	if err != nil {
		return "", 0, fmt.Errorf("reading %s: %w", path, err)
	}
	return sum, n, nil
}

// DigestReader reads r to its end and returns the SHA-256 (hex) and the
// size of what it read, in reads of 1 MiB.
func DigestReader(r io.Reader) (string, uint64, error) {
	h := sha256.New()
	// 1 MiB reads instead of io.Copy's 32 KiB (the struct hides
	// os.File.WriteTo, which would pick that size).
	n, err := io.CopyBuffer(h, struct{ io.Reader }{r}, make([]byte, 1<<20))
	if err != nil {
		return "", 0, err
	}
	return hex.EncodeToString(h.Sum(nil)), uint64(n), nil
}

func mac(key []byte, sha256Hex string, size uint64) string {
	m := hmac.New(sha256.New, key)
	m.Write(Message(sha256Hex, size))
	return hex.EncodeToString(m.Sum(nil))
}

// New returns the signature of a file with the given digest and size.
func New(name, sha256Hex string, size uint64, key []byte, keyID string) (*Signature, error) {
	if len(key) == 0 {
		return nil, errors.New("detached signature: the signing key is empty")
	}
	if !IsHexDigest(sha256Hex) {
		return nil, fmt.Errorf("detached signature of %s: %q is not a SHA-256 digest in lowercase hex", name, sha256Hex)
	}
	return &Signature{
		Format: Format, Version: Version, File: filepath.Base(name), Size: size, SHA256: sha256Hex,
		Algorithm: Algorithm, KeyID: keyID, MAC: mac(key, sha256Hex, size),
	}, nil
}

// Write writes the signature of the file at path into path+".sig",
// atomically, synced before its rename unless fsync is false (see
// atomicfile.File.SkipFsync). When sha256Hex is empty the file is read to
// compute it; when it is given, size must be the file's size. It returns the
// signature file's path and size.
func Write(path, sha256Hex string, size uint64, key []byte, keyID string, fsync bool) (string, uint64, error) {
	if sha256Hex == "" {
		var err error
		sha256Hex, size, err = Digest(path)
		if err != nil {
			return "", 0, fmt.Errorf("signing %s: %w", path, err)
		}
	} else if st, err := os.Stat(path); err != nil {
		return "", 0, fmt.Errorf("signing %s: %w", path, err)
	} else if uint64(st.Size()) != size {
		return "", 0, fmt.Errorf("signing %s: the file has %d bytes, the digest was made over %d", path, st.Size(), size)
	}
	sig, err := New(path, sha256Hex, size, key, keyID)
	if err != nil {
		return "", 0, err
	}
	b, err := json.MarshalIndent(sig, "", "  ")
	if err != nil {
		return "", 0, err
	}
	b = append(b, '\n')
	sp := Path(path)
	f, err := atomicfile.Create(sp, int64(len(b)))
	if err != nil {
		return "", 0, err
	}
	if !fsync {
		f.SkipFsync()
	}
	if _, err := f.Write(b); err != nil {
		f.Abort()
		return "", 0, fmt.Errorf("writing %s: %w", sp, err)
	}
	if err := f.Commit(); err != nil {
		return "", 0, err
	}
	return sp, uint64(len(b)), nil
}

// Read reads and checks the structure of a signature file.
func Read(sigPath string) (*Signature, error) {
	f, err := os.Open(sigPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxSigSize+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", sigPath, err)
	}
	if len(b) > maxSigSize {
		return nil, &Error{File: sigPath, Msg: fmt.Sprintf("is larger than %d bytes; not a signature file", maxSigSize)}
	}
	var sig Signature
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&sig); err != nil {
		return nil, &Error{File: sigPath, Msg: "is not a signature file: " + err.Error()}
	}
	switch {
	case sig.Format != Format:
		return nil, &Error{File: sigPath, Msg: fmt.Sprintf("format is %q, want %q", sig.Format, Format)}
	case sig.Version != Version:
		return nil, &Error{File: sigPath, Msg: fmt.Sprintf("version %d is not supported (this build reads version %d)", sig.Version, Version)}
	case sig.Algorithm != Algorithm:
		return nil, &Error{File: sigPath, Msg: fmt.Sprintf("algorithm %q is not supported (want %s)", sig.Algorithm, Algorithm)}
	case !IsHexDigest(sig.SHA256):
		return nil, &Error{File: sigPath, Msg: "sha256 is not 64 lowercase hex digits"}
	case !IsHexDigest(sig.MAC):
		return nil, &Error{File: sigPath, Msg: "hmac is not 64 lowercase hex digits"}
	}
	return &sig, nil
}

// Verify checks the file at path against its signature file path+".sig"
// with key: the file's size and SHA-256 must be the signed ones and the MAC
// must be theirs under key. It returns the signature on success. A mismatch
// is an *Error that says what differs, never the key.
func Verify(path string, key []byte) (*Signature, error) {
	return VerifyWith(path, Path(path), key)
}

// VerifyWith is Verify with the signature file named explicitly.
func VerifyWith(path, sigPath string, key []byte) (*Signature, error) {
	if len(key) == 0 {
		return nil, errors.New("verifying a detached signature needs a key; the key is empty")
	}
	sig, err := Read(sigPath)
	if err != nil {
		return nil, err
	}
	// The MAC first: a wrong key is the likelier mistake, and it must not be
	// reported as a modified file.
	if !hmac.Equal([]byte(mac(key, sig.SHA256, sig.Size)), []byte(sig.MAC)) {
		return nil, &Error{File: sigPath, Msg: "the HMAC does not match: the signature was made with another key, or the signature file was altered", BadMAC: true}
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if uint64(st.Size()) != sig.Size {
		return nil, &Error{File: path, Msg: fmt.Sprintf("has %d bytes, the signature says %d: the file was changed after signing", st.Size(), sig.Size), Modified: true}
	}
	digest, _, err := Digest(path)
	if err != nil {
		return nil, err
	}
	if digest != sig.SHA256 {
		return nil, &Error{File: path, Msg: fmt.Sprintf("has SHA-256 %s, the signature says %s: the file was changed after signing", digest, sig.SHA256), Modified: true}
	}
	return sig, nil
}

// Error reports a signature that does not hold.
type Error struct {
	// File is the file at fault: the signed file or its signature file.
	File string
	Msg  string
	// BadMAC is set when the MAC does not match the key.
	BadMAC bool
	// Modified is set when the file's size or digest differs from the
	// signed ones.
	Modified bool
}

func (e *Error) Error() string { return e.File + ": " + e.Msg }

// IsHexDigest reports whether s is a SHA-256 in lowercase hex, the form
// signatures and committed artifacts carry.
func IsHexDigest(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
