// Package resident makes fresh memory resident before a program fills it.
//
// On Linux a page of anonymous or shared memory becomes resident when it is
// first touched, at the price of a page fault; on a virtual machine whose
// faults trap to the hypervisor that costs several microseconds a page, more
// than the writes themselves. Making a range resident in one system call
// (madvise MADV_POPULATE_WRITE, Linux 5.14) costs about half as much. Where
// the kernel lacks the call, or off Linux, nothing happens and the pages
// fault in as they are touched, as before.
package resident

import "unsafe"

// Bytes makes the whole pages inside b resident. The error is the system
// call's; callers that only want the speed ignore it.
func Bytes(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	return populate(unsafe.Pointer(unsafe.SliceData(b)), uintptr(len(b)))
}

// Slice makes the whole pages under s's backing array, up to its capacity,
// resident, if the array is at least MinBytes long. It is for a large slice
// just made that the program is about to fill: a fresh allocation of the
// Go heap is memory no one has touched yet.
func Slice[T any](s []T) {
	var zero T
	n := uintptr(cap(s)) * unsafe.Sizeof(zero)
	if n < MinBytes {
		return
	}
	_ = populate(unsafe.Pointer(unsafe.SliceData(s[:cap(s)])), n)
}

// MinBytes is the smallest backing array Slice makes resident: below it the
// system call costs more than the faults it saves.
const MinBytes = 64 << 10
