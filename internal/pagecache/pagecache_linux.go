// Package pagecache tells tests which of a file's pages the kernel's page
// cache holds, for the tests of what outputs leave cached.
package pagecache

import (
	"fmt"
	"os"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Resident returns how many of the pages of f's first n bytes (n > 0) are
// in the page cache (mincore).
func Resident(f *os.File, n int64) (int, error) {
	m, err := unix.Mmap(int(f.Fd()), 0, int(n), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return 0, fmt.Errorf("mapping %s: %w", f.Name(), err)
	}
	defer unix.Munmap(m)
	page := int64(os.Getpagesize())
	vec := make([]byte, (n+page-1)/page)
	_, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0])))
	if errno != 0 {
		return 0, fmt.Errorf("mincore of %s: %w", f.Name(), errno)
	}
	resident := 0
	for _, v := range vec {
		resident += int(v & 1)
	}
	return resident, nil
}

// ResidentPath is Resident of the file at path.
func ResidentPath(path string, n int64) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return Resident(f, n)
}

// drops reports whether the file system of dir drops a synced file's pages
// from the page cache when asked to (posix_fadvise DONTNEED); tmpfs keeps
// them: they are the file.
func drops(dir string) (bool, error) {
	f, err := os.CreateTemp(dir, "probe")
	if err != nil {
		return false, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	const n = 1 << 20
	if _, err := f.Write(make([]byte, n)); err != nil {
		return false, err
	}
	if err := f.Sync(); err != nil {
		return false, err
	}
	if err := unix.Fadvise(int(f.Fd()), 0, n, unix.FADV_DONTNEED); err != nil {
		return false, fmt.Errorf("dropping the pages of %s: %w", f.Name(), err)
	}
	r, err := Resident(f, n)
	return r == 0, err
}

// SkipUnlessDropping skips t when the file system of dir keeps a synced
// file's pages cached when asked to drop them, where a test of what is
// dropped sees nothing.
func SkipUnlessDropping(t testing.TB, dir string) {
	t.Helper()
	ok, err := drops(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		t.Skip("this file system keeps a synced file's pages cached when asked to drop them (tmpfs?)")
	}
}
