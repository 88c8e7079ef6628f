//go:build !linux

package atomicfile

// writebackHints says whether StartWriteback does anything here.
const writebackHints = false

// StartWriteback does nothing where sync_file_range is not available.
func StartWriteback(fd uintptr, off, n int64) {}

func datasync(fd uintptr) error { return nil }

// dropPages does nothing where posix_fadvise is not used.
func dropPages(fd uintptr, off, n int64) {}
