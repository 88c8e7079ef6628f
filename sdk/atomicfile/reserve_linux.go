package atomicfile

import (
	"errors"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// reserve allocates size bytes for f at once, so a full disk shows now;
// where the file system cannot, it only sets the size.
func reserve(f *os.File, size int64) error {
	err := unix.Fallocate(int(f.Fd()), 0, 0, size)
	if errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.ENOSYS) {
		return f.Truncate(size)
	}
	return err
}
