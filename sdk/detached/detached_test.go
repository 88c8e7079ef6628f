package detached

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeFile(t *testing.T, dir, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestWriteThenVerify(t *testing.T) {
	dir := t.TempDir()
	data := bytes.Repeat([]byte("sluice"), 1000)
	p := writeFile(t, dir, "model.gguf", data)
	key := []byte("correct horse battery staple")
	sp, n, err := Write(p, "", 0, key, "shared secret", true)
	if err != nil {
		t.Fatal(err)
	}
	if sp != p+".sig" {
		t.Fatalf("signature path %s", sp)
	}
	raw, err := os.ReadFile(sp)
	if err != nil {
		t.Fatal(err)
	}
	if uint64(len(raw)) != n {
		t.Fatalf("reported %d bytes, file has %d", n, len(raw))
	}
	if bytes.Contains(raw, key) || bytes.Contains(raw, []byte(hex.EncodeToString(key))) {
		t.Fatal("the signature file contains the key")
	}
	sig, err := Verify(p, key)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	if sig.SHA256 != hex.EncodeToString(sum[:]) || sig.Size != uint64(len(data)) || sig.File != "model.gguf" || sig.KeyID != "shared secret" {
		t.Fatalf("signature %+v", sig)
	}
	// The documented message, computed independently.
	m := hmac.New(sha256.New, key)
	m.Write([]byte("sluice-detached-signature-v1:" + hex.EncodeToString(sum[:]) + ":6000"))
	if sig.MAC != hex.EncodeToString(m.Sum(nil)) {
		t.Fatal("the MAC is not HMAC-SHA256 of the documented message")
	}
}

func TestWriteWithGivenDigest(t *testing.T) {
	dir := t.TempDir()
	data := []byte("abc")
	p := writeFile(t, dir, "a.bin", data)
	sum := sha256.Sum256(data)
	if _, _, err := Write(p, hex.EncodeToString(sum[:]), 4, []byte("k"), "", true); err == nil {
		t.Fatal("a size that disagrees with the file was accepted")
	}
	if _, _, err := Write(p, hex.EncodeToString(sum[:]), 3, []byte("k"), "", true); err != nil {
		t.Fatal(err)
	}
	if _, err := Verify(p, []byte("k")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Write(p, "", 0, nil, "", true); err == nil {
		t.Fatal("an empty key was accepted")
	}
}

func TestVerifyFailures(t *testing.T) {
	dir := t.TempDir()
	p := writeFile(t, dir, "m.safetensors", []byte("0123456789"))
	key := []byte("k3y-alpha-9")
	if _, _, err := Write(p, "", 0, key, "shared secret", true); err != nil {
		t.Fatal(err)
	}
	var de *Error

	_, err := Verify(p, []byte("k3y-beta-7"))
	if !errors.As(err, &de) || !de.BadMAC || de.Modified {
		t.Fatalf("wrong key: %v", err)
	}
	if strings.Contains(err.Error(), "k3y-") {
		t.Fatalf("the error shows a key: %v", err)
	}

	// Same size, one byte changed.
	writeFile(t, dir, "m.safetensors", []byte("0123456780"))
	_, err = Verify(p, key)
	if !errors.As(err, &de) || !de.Modified || !strings.Contains(err.Error(), "SHA-256") {
		t.Fatalf("changed byte: %v", err)
	}
	// Different size.
	writeFile(t, dir, "m.safetensors", []byte("01234567890"))
	_, err = Verify(p, key)
	if !errors.As(err, &de) || !de.Modified || !strings.Contains(err.Error(), "11 bytes") {
		t.Fatalf("appended byte: %v", err)
	}
	// Missing file.
	if _, err := Verify(filepath.Join(dir, "absent"), key); err == nil {
		t.Fatal("a missing signature verified")
	}
	if _, err := Verify(p, nil); err == nil {
		t.Fatal("an empty key verified")
	}
}

func TestReadRejectsMalformed(t *testing.T) {
	dir := t.TempDir()
	good := `{"format":"sluice-detached-signature","version":1,"file":"x","size":1,` +
		`"sha256":"` + strings.Repeat("a", 64) + `","algorithm":"HMAC-SHA256","hmac":"` + strings.Repeat("b", 64) + `"}`
	if _, err := Read(writeFile(t, dir, "good.sig", []byte(good))); err != nil {
		t.Fatalf("a well-formed file was refused: %v", err)
	}
	for name, text := range map[string]string{
		"not json":     "hello",
		"format":       strings.Replace(good, `"sluice-detached-signature"`, `"other"`, 1),
		"version":      strings.Replace(good, `"version":1`, `"version":2`, 1),
		"algorithm":    strings.Replace(good, "HMAC-SHA256", "HMAC-MD5", 1),
		"short digest": strings.Replace(good, strings.Repeat("a", 64), "aa", 1),
		"upper hex":    strings.Replace(good, strings.Repeat("b", 64), strings.Repeat("B", 64), 1),
		"extra field":  strings.Replace(good, `"file"`, `"key":"x","file"`, 1),
		"too large":    good + strings.Repeat(" ", maxSigSize),
	} {
		var de *Error
		if _, err := Read(writeFile(t, dir, "bad.sig", []byte(text))); !errors.As(err, &de) {
			t.Errorf("%s: got %v, want a *detached.Error", name, err)
		}
	}
}

func FuzzRead(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("testdata", "*.sig"))
	for _, s := range seeds {
		b, err := os.ReadFile(s)
		if err == nil {
			f.Add(b)
		}
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(dir, "f.sig")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Skip()
		}
		sig, err := Read(p)
		if err == nil && (sig.Format != Format || !IsHexDigest(sig.MAC) || !IsHexDigest(sig.SHA256)) {
			t.Fatalf("accepted an invalid signature: %+v", sig)
		}
	})
}
