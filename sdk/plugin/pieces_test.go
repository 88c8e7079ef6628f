package plugin

import (
	"bytes"
	"context"
	"testing"
	"time"
)

// Pieces cut from one slot do not overlap, start on 64-byte boundaries,
// are not slots to code that knows only slots, and give the slot back
// when the last of them is released.
func TestPiecesShareASlotAndGiveItBack(t *testing.T) {
	arena := newTestArena(t, 4, 4096)
	p := NewPieces(arena)
	var got []*Chunk
	for i := range 10 {
		c, ok := p.TryGet(100 + i)
		if !ok {
			t.Fatalf("piece %d: none", i)
		}
		for k := range c.Data {
			c.Data[k] = byte(i)
		}
		got = append(got, c)
	}
	slot0 := uint32(0)
	for i, c := range got {
		a, slot, off, ok := c.Piece()
		if !ok || a != arena || off%pieceAlign != 0 {
			t.Errorf("piece %d: arena %v, offset %d, cut %v", i, a == arena, off, ok)
		}
		if i == 0 {
			slot0 = slot
		} else if slot != slot0 {
			t.Errorf("piece %d in slot %d, the first in %d", i, slot, slot0)
		}
		if _, _, inSlot := c.Slot(); inSlot {
			t.Errorf("piece %d reports itself a whole slot", i)
		}
		if !bytes.Equal(c.Data, bytes.Repeat([]byte{byte(i)}, 100+i)) {
			t.Errorf("piece %d was overwritten by another", i)
		}
	}
	if arena.Free() != 3 {
		t.Errorf("%d slots free while pieces are out, want 3", arena.Free())
	}
	for _, c := range got {
		c.Release()
	}
	if arena.Free() != 4 {
		t.Errorf("%d slots free after every piece was released, want 4", arena.Free())
	}
}

// A full slot's pieces come from another slot; the full one goes back once
// its pieces do.
func TestPiecesMoveOnWhenASlotIsFull(t *testing.T) {
	arena := newTestArena(t, 3, 1024)
	p := NewPieces(arena)
	first, _ := p.TryGet(1000)
	second, ok := p.TryGet(100)
	if !ok {
		t.Fatal("no second piece")
	}
	_, s1, _, _ := first.Piece()
	_, s2, _, _ := second.Piece()
	if s1 == s2 {
		t.Fatalf("a piece of 100 bytes cut from a slot of 1024 with 1000 taken")
	}
	if arena.Free() != 1 {
		t.Errorf("%d slots free, want 1", arena.Free())
	}
	first.Release()
	if arena.Free() != 2 {
		t.Errorf("the full slot did not go back with its last piece: %d free", arena.Free())
	}
	second.Release()
	if arena.Free() != 3 {
		t.Errorf("%d slots free at the end, want 3", arena.Free())
	}
	if _, ok := p.TryGet(1025); ok {
		t.Error("a piece larger than a slot was cut")
	}
}

// TryGet never waits: with no slot free, or a reservation waiting in line
// for the slots, it reports false at once.
func TestPiecesNeverWaitForTheArena(t *testing.T) {
	arena := newTestArena(t, 2, 1024)
	p := NewPieces(arena)
	held, err := arena.Reserve(context.Background(), 2)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := p.TryGet(10); ok {
		t.Fatal("a piece cut from an arena with no slot free")
	}
	held.Close()
	one, _ := arena.Reserve(context.Background(), 1)
	waiting := make(chan *Pool)
	go func() {
		pool, _ := arena.Reserve(context.Background(), 2)
		waiting <- pool
	}()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		arena.mu.Lock()
		n := len(arena.waiting)
		arena.mu.Unlock()
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the reservation of two slots did not queue")
		}
	}
	if _, ok := p.TryGet(10); ok {
		t.Error("a piece took the slot a reservation waits in line for")
	}
	one.Close()
	(<-waiting).Close()
}
