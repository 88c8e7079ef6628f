package atomicfile

import "golang.org/x/sys/unix"

// writebackHints says whether StartWriteback does anything here.
const writebackHints = true

// StartWriteback asks the kernel to start writing [off, off+n) of the file
// fd to disk (sync_file_range), without waiting for it. It is a hint:
// errors are ignored, and a later fsync still decides durability. Where
// the system has no such call it does nothing.
func StartWriteback(fd uintptr, off, n int64) {
	unix.SyncFileRange(int(fd), off, n, unix.SYNC_FILE_RANGE_WRITE)
}

// datasync syncs the data of the file fd.
func datasync(fd uintptr) error {
	return unix.Fdatasync(int(fd))
}

// dropPages asks the kernel to drop the clean pages of [off, off+n) of the
// file fd from the page cache (posix_fadvise POSIX_FADV_DONTNEED). It is a
// hint: errors are ignored.
func dropPages(fd uintptr, off, n int64) {
	unix.Fadvise(int(fd), off, n, unix.FADV_DONTNEED)
}
