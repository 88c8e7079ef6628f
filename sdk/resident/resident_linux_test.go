package resident

import (
	"errors"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// mapFresh maps n bytes of anonymous memory no one has touched.
func mapFresh(t *testing.T, n int) []byte {
	t.Helper()
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Munmap(b) })
	return b
}

// residentPages reports which pages of b (page-aligned) are resident.
func residentPages(t *testing.T, b []byte) []bool {
	t.Helper()
	vec := make([]byte, (len(b)+int(pageSize)-1)/int(pageSize))
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		t.Fatalf("mincore: %v", errno)
	}
	in := make([]bool, len(vec))
	for i, v := range vec {
		in[i] = v&1 != 0
	}
	return in
}

func skipWithoutPopulate(t *testing.T) {
	t.Helper()
	if err := Bytes(mapFresh(t, int(pageSize))); errors.Is(err, unix.EINVAL) {
		t.Skip("this kernel has no MADV_POPULATE_WRITE (Linux 5.14): pages fault in as they are touched")
	} else if err != nil {
		t.Fatal(err)
	}
}

// TestBytesPopulatesWholePagesInside: the pages b covers whole become
// resident, the pages it only reaches into and the pages past it do not,
// and no byte changes.
func TestBytesPopulatesWholePagesInside(t *testing.T) {
	skipWithoutPopulate(t)
	const pages = 8
	m := mapFresh(t, pages*int(pageSize))
	m[7*int(pageSize)] = 42 // the last page: touched, so resident
	if err := Bytes(m[100 : 5*int(pageSize)+100]); err != nil {
		t.Fatal(err)
	}
	want := []bool{false, true, true, true, true, false, false, true}
	got := residentPages(t, m)
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("page %d resident %v, want %v", i, got[i], want[i])
		}
	}
	for i, c := range m {
		if c != 0 && i != 7*int(pageSize) {
			t.Fatalf("byte %d is %d after Bytes", i, c)
		}
	}
	if m[7*int(pageSize)] != 42 {
		t.Fatal("Bytes changed a byte already written")
	}
	if err := Bytes(m[10:20]); err != nil { // no whole page: nothing to do
		t.Fatal(err)
	}
	if err := Bytes(nil); err != nil {
		t.Fatal(err)
	}
}

// TestSliceTakesTheCapacityFromMinBytes: Slice makes the backing array
// resident up to its capacity, and leaves arrays under MinBytes alone.
func TestSliceTakesTheCapacityFromMinBytes(t *testing.T) {
	skipWithoutPopulate(t)
	m := mapFresh(t, 2*MinBytes)
	words := unsafe.Slice((*uint64)(unsafe.Pointer(&m[0])), len(m)/8)
	Slice(words[: 0 : MinBytes/8-1]) // a word short of MinBytes
	for i, in := range residentPages(t, m) {
		if in {
			t.Fatalf("page %d resident after Slice of less than MinBytes", i)
		}
	}
	Slice(words[: 1 : MinBytes/8]) // length 1, capacity MinBytes
	for i, in := range residentPages(t, m) {
		if want := i < MinBytes/int(pageSize); in != want {
			t.Errorf("page %d resident %v, want %v", i, in, want)
		}
	}
}
