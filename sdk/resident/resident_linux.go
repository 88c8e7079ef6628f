//go:build linux

package resident

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

var pageSize = uintptr(unix.Getpagesize())

func populate(p unsafe.Pointer, n uintptr) error {
	start, end := uintptr(p), uintptr(p)+n
	first := (start + pageSize - 1) &^ (pageSize - 1) // the first whole page
	last := end &^ (pageSize - 1)                     // the end of the last
	if last <= first {
		return nil
	}
	b := unsafe.Slice((*byte)(p), n)
	return unix.Madvise(b[first-start:last-start], unix.MADV_POPULATE_WRITE)
}
