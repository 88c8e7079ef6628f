//go:build linux

package plugin

import (
	"os"

	"golang.org/x/sys/unix"
)

func createShared(name string, size int64) (*os.File, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC)
	if err != nil {
		return createSharedTemp(size)
	}
	f := os.NewFile(uintptr(fd), name)
	if err := f.Truncate(size); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func mapShared(f *os.File, size int) ([]byte, error) {
	return unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
}

func unmapShared(b []byte) error { return unix.Munmap(b) }
