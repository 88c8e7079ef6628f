//go:build unix

package keyring

import (
	"os"
	"strings"
	"syscall"
	"testing"
)

// TestUserKeyModeWhateverTheUmask: the key file is created 0600 under the
// most permissive umask, and any read or write bit for the group or others
// makes it refused.
func TestUserKeyModeWhateverTheUmask(t *testing.T) {
	useConfigDir(t)
	old := syscall.Umask(0)
	k, err := User()
	syscall.Umask(old)
	if err != nil {
		t.Fatal(err)
	}
	path, _ := UserKeyPath()
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("created with umask 0: mode %v, %v", st.Mode().Perm(), err)
	}
	for _, mode := range []os.FileMode{0o640, 0o604, 0o620, 0o602, 0o660, 0o606, 0o700} {
		os.Chmod(path, mode)
		_, err := User()
		if mode&0o077 != 0 {
			if err == nil || !strings.Contains(err.Error(), "chmod 600") {
				t.Errorf("mode %04o: got %v, want a refusal", mode, err)
			}
		} else if err != nil {
			t.Errorf("mode %04o: %v", mode, err)
		}
		if err != nil && strings.Contains(err.Error(), string(k.Bytes())) {
			t.Errorf("the error reveals the key")
		}
	}
}
