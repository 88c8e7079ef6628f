package keyring

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func useConfigDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", dir)
	t.Setenv("HOME", dir)
	return dir
}

func TestUserKeyIsCreatedOnceWithMode0600(t *testing.T) {
	useConfigDir(t)
	path, err := UserKeyPath()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := LoadUser(); err == nil || !strings.Contains(err.Error(), "no per-user signing key") {
		t.Fatalf("LoadUser before creation: %v", err)
	}
	k1, err := User()
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("key file mode %04o, want 0600", st.Mode().Perm())
	}
	if dst, _ := os.Stat(filepath.Dir(path)); dst.Mode().Perm() != 0o700 {
		t.Errorf("key directory mode %04o, want 0700", dst.Mode().Perm())
	}
	if len(k1.Bytes()) != 32 || k1.ID() != UserKeyID {
		t.Errorf("key of %d bytes, id %q", len(k1.Bytes()), k1.ID())
	}
	k2, err := User()
	if err != nil || !k2.Equal(k1) {
		t.Fatalf("second User() gives another key: %v", err)
	}
	k3, err := LoadUser()
	if err != nil || !k3.Equal(k1) {
		t.Fatalf("LoadUser gives another key: %v", err)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("key directory holds %d entries, want only the key", len(entries))
	}
}

func TestUserKeyConcurrentCreationAgrees(t *testing.T) {
	useConfigDir(t)
	keys := make([]*Key, 8)
	var wg sync.WaitGroup
	for i := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k, err := User()
			if err != nil {
				t.Error(err)
				return
			}
			keys[i] = k
		}()
	}
	wg.Wait()
	for _, k := range keys[1:] {
		if k == nil || !k.Equal(keys[0]) {
			t.Fatal("concurrent first uses created different keys")
		}
	}
}

func TestUserKeyRefusesUnsafeFiles(t *testing.T) {
	useConfigDir(t)
	k, err := User()
	if err != nil {
		t.Fatal(err)
	}
	path, _ := UserKeyPath()
	secretHex := hex.EncodeToString(k.Bytes())

	os.Chmod(path, 0o644)
	_, err = User()
	if err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("readable key file: %v", err)
	}
	if err != nil && strings.Contains(err.Error(), secretHex) {
		t.Error("error reveals the key")
	}
	os.Chmod(path, 0o600)

	os.Chmod(filepath.Dir(path), 0o777)
	if _, err := User(); err == nil || !strings.Contains(err.Error(), "writable by other users") {
		t.Errorf("world-writable directory: %v", err)
	}
	os.Chmod(filepath.Dir(path), 0o700)

	// A symlink in place of the key.
	other := filepath.Join(t.TempDir(), "k")
	os.WriteFile(other, []byte(secretHex+"\n"), 0o600)
	os.Rename(path, path+".bak")
	os.Symlink(other, path)
	if _, err := User(); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("symlinked key: %v", err)
	}
	os.Remove(path)

	for _, content := range []string{"", secretHex, secretHex + "\n\n", strings.ToUpper(secretHex[:2]) + "zz" + secretHex[4:] + "\n"} {
		os.WriteFile(path, []byte(content), 0o600)
		if _, err := User(); err == nil || !strings.Contains(err.Error(), "malformed") {
			t.Errorf("key file %q: %v", content, err)
		}
	}
}

func TestKeyNeverPrintsItsBytes(t *testing.T) {
	k, err := Shared("hunter2-team-secret")
	if err != nil {
		t.Fatal(err)
	}
	j, _ := json.Marshal(struct{ K *Key }{k})
	outs := []string{
		fmt.Sprint(k), fmt.Sprintf("%v %+v %#v %s %x %X %q", k, k, k, k, k, k, k),
		fmt.Sprintf("%v", []*Key{k}), string(j), fmt.Errorf("failed with %v", k).Error(),
	}
	for _, o := range outs {
		for _, leak := range []string{"hunter2", hex.EncodeToString(k.Bytes()), "68756e74"} {
			if strings.Contains(o, leak) {
				t.Errorf("%q reveals the key", o)
			}
		}
		if !strings.Contains(o, SharedKeyID) {
			t.Errorf("%q does not name the key", o)
		}
	}
	if _, err := Shared(""); err == nil {
		t.Error("empty shared secret accepted")
	}
}

func TestSumAndVerify(t *testing.T) {
	a, _ := Shared("a")
	b, _ := Shared("b")
	msg := []byte("digest")
	mac := a.Sum(msg)
	// RFC 4231-style check against a known HMAC-SHA256: key "key", message
	// "The quick brown fox jumps over the lazy dog".
	k, _ := FromBytes([]byte("key"), "test")
	want := "f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8"
	if got := hex.EncodeToString(k.Sum([]byte("The quick brown fox jumps over the lazy dog"))); got != want {
		t.Errorf("HMAC = %s, want %s", got, want)
	}
	if !a.Verify(msg, mac) || b.Verify(msg, mac) || a.Verify([]byte("digesT"), mac) || a.Verify(msg, mac[:31]) {
		t.Error("Verify accepts a wrong key, message or MAC, or refuses the right one")
	}
}
