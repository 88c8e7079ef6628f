//go:build unix

package binio

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// canMap reports whether View can map files here.
const canMap = true

// mapReadOnly maps the first size bytes of f read-only.
func mapReadOnly(f *os.File, size int64) ([]byte, error) {
	if size <= 0 || int64(int(size)) != size {
		return nil, errors.ErrUnsupported
	}
	return unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
}
