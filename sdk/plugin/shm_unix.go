//go:build unix && !linux

package plugin

import (
	"os"

	"golang.org/x/sys/unix"
)

func createShared(name string, size int64) (*os.File, error) { return createSharedTemp(size) }

func mapShared(f *os.File, size int) ([]byte, error) {
	return unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
}

func unmapShared(b []byte) error { return unix.Munmap(b) }
