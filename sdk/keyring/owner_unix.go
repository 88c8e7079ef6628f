//go:build unix

package keyring

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// checkOwner refuses a key file that another user owns.
func checkOwner(path string, st fs.FileInfo) error {
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if int(sys.Uid) != os.Getuid() {
		return fmt.Errorf("the signing key %s belongs to user id %d, not to you (%d); refusing to use it", path, sys.Uid, os.Getuid())
	}
	return nil
}
