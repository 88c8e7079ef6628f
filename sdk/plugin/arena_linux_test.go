package plugin

import (
	"bytes"
	"errors"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/sluice-ml/sluice/sdk/resident"
)

// residentPages counts the pages of b that are resident (mincore).
func residentPages(t *testing.T, b []byte) int {
	t.Helper()
	vec := make([]byte, (len(b)+pageSize-1)/pageSize)
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		t.Fatalf("mincore: %v", errno)
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n
}

const pageSize = 4096

// TestPrefaultMakesSlotsResident: a slot's pages are made resident up to the
// next prefaultStep past what a chunk needs, never past the slot, once;
// the bytes another mapping (a plugin process) wrote stay as they are.
func TestPrefaultMakesSlotsResident(t *testing.T) {
	if unix.Getpagesize() != pageSize {
		t.Skipf("pages of %d bytes", unix.Getpagesize())
	}
	const slotSize = 4 * prefaultStep
	a := newTestArena(t, 3, slotSize)
	slot1, _ := a.Slot(1)
	if err := resident.Bytes(slot1[:pageSize]); errors.Is(err, unix.EINVAL) {
		t.Skip("this kernel has no MADV_POPULATE_WRITE (Linux 5.14); pages fault in as they are touched")
	}
	// Another mapping of the arena, as a plugin process has, writes slot 2.
	other, err := MapArena(a.File(), 3, slotSize)
	if err != nil {
		t.Fatal(err)
	}
	defer unmapShared(other.mem)
	theirs, _ := other.Slot(2)
	pattern := bytes.Repeat([]byte("sluice"), 1000)
	copy(theirs, pattern)

	slot0, _ := a.Slot(0)
	if n := residentPages(t, slot0); n != 0 {
		t.Fatalf("%d pages of an untouched slot are resident", n)
	}
	a.prefault(0, 100)
	if n, want := residentPages(t, slot0), prefaultStep/pageSize; n != want {
		t.Errorf("after prefault of 100 bytes, %d pages resident, want %d", n, want)
	}
	if got := a.resident[0].Load(); got != prefaultStep {
		t.Errorf("resident mark %d, want %d", got, prefaultStep)
	}
	a.prefault(0, prefaultStep+1)
	if n, want := residentPages(t, slot0), 2*prefaultStep/pageSize; n != want {
		t.Errorf("after prefault of one step and a byte, %d pages resident, want %d", n, want)
	}
	a.prefault(0, 10*slotSize) // past the slot: up to its end, not into the next
	if got := a.resident[0].Load(); got != slotSize {
		t.Errorf("resident mark %d, want the slot's %d", got, slotSize)
	}
	if n := residentPages(t, slot1); n != 1 {
		t.Errorf("prefault of slot 0 reached slot 1: %d pages resident", n)
	}
	a.prefault(7, 100) // no such slot: nothing

	// Slot 2's pages exist (the other mapping wrote them) but not in this
	// mapping's view until touched; prefault maps them without a change.
	a.prefault(2, len(pattern))
	if mine, _ := a.Slot(2); !bytes.Equal(mine[:len(pattern)], pattern) {
		t.Error("prefault changed the bytes another mapping wrote")
	}

	// Chunks: a whole slot's and a piece's.
	pool, err := a.Reserve(t.Context(), 1)
	if err != nil {
		t.Fatal(err)
	}
	c, err := pool.Get(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	_, i, _ := c.Slot()
	c.Prefault(3 * prefaultStep)
	if got := a.resident[i].Load(); got < 3*prefaultStep {
		t.Errorf("Chunk.Prefault of 3 steps left slot %d's mark at %d", i, got)
	}
	c.Release()
	pool.Close()
	pieces := NewPieces(a)
	pc, ok := pieces.TryGet(1000)
	if !ok {
		t.Fatal("no piece")
	}
	_, ps, off, _ := pc.Piece()
	if got := a.resident[ps].Load(); got < int64(off+1000) {
		t.Errorf("a piece of 1000 bytes at %d of slot %d: mark %d", off, ps, got)
	}
	pc.Release()
}
