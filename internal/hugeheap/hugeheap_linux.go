//go:build linux

package hugeheap

import (
	"runtime"
	"runtime/debug"
	"unsafe"

	"golang.org/x/sys/unix"
)

// hugePage is the size of an x86-64 or arm64 (4 KiB granule) huge page;
// advice on a range that holds none changes nothing.
const hugePage = 2 << 20

// Reserve makes the runtime map size more bytes of heap at once and advises
// the kernel to back them with huge pages. The bytes are free for the next
// allocations once the first collection after it has run (Reserve starts
// none), and are touched only as those allocations use them. It returns
// the error of madvise, if any: a kernel without transparent huge pages
// refuses the advice, and the process runs as it would have.
func Reserve(size int) error {
	_, _, err := reserve(size)
	return err
}

// reserve is Reserve, returning the advised range [from, end) for tests.
func reserve(size int) (from, end uintptr, err error) {
	if size < 2*hugePage {
		return 0, 0, nil
	}
	// Collecting while the reserve is referenced would keep it alive for a
	// cycle and double the heap's next goal: the process would then grow
	// its heap above the reserve instead of into it.
	old := debug.SetGCPercent(-1)
	defer debug.SetGCPercent(old)
	block := make([]byte, size)
	start := uintptr(unsafe.Pointer(unsafe.SliceData(block)))
	from = (start + hugePage - 1) &^ (hugePage - 1)
	end = (start + uintptr(size)) &^ (hugePage - 1)
	err = unix.Madvise(block[from-start:end-start], unix.MADV_HUGEPAGE)
	runtime.KeepAlive(block)
	return from, end, err
}
