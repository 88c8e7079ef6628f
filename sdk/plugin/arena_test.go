package plugin

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/sluice-ml/sluice/internal/testwait"
)

// newTestArena returns an arena of slots × slotSize bytes, closed when the
// test ends.
func newTestArena(t *testing.T, slots, slotSize int) *Arena {
	t.Helper()
	a, err := NewArena(slots, slotSize)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

// reserveAsync starts a Reserve of n slots and returns where its pool (or
// error) arrives.
func reserveAsync(ctx context.Context, a *Arena, n int) chan any {
	ch := make(chan any, 1)
	go func() {
		p, err := a.Reserve(ctx, n)
		if err != nil {
			ch <- err
			return
		}
		ch <- p
	}()
	return ch
}

// waitQueued waits until n Reserve calls wait in the arena's line.
func waitQueued(t *testing.T, a *Arena, n int) {
	t.Helper()
	testwait.Until(t, fmt.Sprintf("%d reservations queuing", n), func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		return len(a.waiting) == n
	})
}

// granted returns the pool ch delivered, failing if it delivered an error or
// nothing within a second.
func granted(t *testing.T, ch chan any) *Pool {
	t.Helper()
	select {
	case v := <-ch:
		p, ok := v.(*Pool)
		if !ok {
			t.Fatalf("reservation failed: %v", v)
		}
		return p
	case <-time.After(5 * time.Second):
		t.Fatal("reservation not granted")
	}
	return nil
}

// TestReserveGrantsInOrder: a small reservation that would fit does not pass
// a larger one that came first (the larger one was starved so: tensors that
// need more slots finished last); a reservation that gives up lets the next
// one through.
func TestReserveGrantsInOrder(t *testing.T) {
	a := newTestArena(t, 4, 1<<12)
	ctx := context.Background()
	first, err := a.Reserve(ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	large := reserveAsync(ctx, a, 2)
	waitQueued(t, a, 1)
	small := reserveAsync(ctx, a, 1)
	waitQueued(t, a, 2)
	select {
	case v := <-small:
		t.Fatalf("the 1-slot reservation passed the 2-slot one that came first: %v", v)
	case <-time.After(50 * time.Millisecond):
	}
	first.Close()
	granted(t, large).Close()
	granted(t, small).Close()

	// A reservation that gives up leaves the line.
	hold, err := a.Reserve(ctx, 4)
	if err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	gaveUp := reserveAsync(cctx, a, 3)
	waitQueued(t, a, 1)
	next := reserveAsync(ctx, a, 1)
	waitQueued(t, a, 2)
	cancel()
	if v := <-gaveUp; !errors.Is(v.(error), context.Canceled) {
		t.Fatalf("cancelled reservation: %v", v)
	}
	hold.Close()
	granted(t, next).Close()
	if got := a.Free(); got != 4 {
		t.Errorf("%d slots free at the end, want 4", got)
	}
}

// Slots given back at once go to as many reservations waiting in line as
// they fit, in order, and no further: the first that does not fit stops
// the ones behind it, even those that would.
func TestReserveGrantsWhatFitsInOrder(t *testing.T) {
	a := newTestArena(t, 6, 1<<12)
	ctx := context.Background()
	all, err := a.Reserve(ctx, 6)
	if err != nil {
		t.Fatal(err)
	}
	two := reserveAsync(ctx, a, 2)
	waitQueued(t, a, 1)
	three := reserveAsync(ctx, a, 3)
	waitQueued(t, a, 2)
	four := reserveAsync(ctx, a, 4)
	waitQueued(t, a, 3)
	one := reserveAsync(ctx, a, 1)
	waitQueued(t, a, 4)
	all.Close()
	p2, p3 := granted(t, two), granted(t, three)
	waitQueued(t, a, 2)
	select {
	case v := <-one:
		t.Fatalf("the 1-slot reservation passed the 4-slot one before it: %v", v)
	case <-time.After(50 * time.Millisecond):
	}
	if got := a.Free(); got != 1 {
		t.Errorf("%d slots free with 2 + 3 granted, want 1", got)
	}
	p2.Close()
	p3.Close()
	granted(t, four).Close()
	granted(t, one).Close()
	if got := a.Free(); got != 6 {
		t.Errorf("%d slots free at the end, want 6", got)
	}
}

// Closing the arena fails every reservation waiting in line.
func TestReserveFailsWhenTheArenaCloses(t *testing.T) {
	a := newTestArena(t, 2, 1<<12)
	ctx := context.Background()
	hold, err := a.Reserve(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Close()
	waiting := []chan any{reserveAsync(ctx, a, 1), reserveAsync(ctx, a, 2)}
	waitQueued(t, a, 2)
	a.Close()
	for i, ch := range waiting {
		select {
		case v := <-ch:
			if err, ok := v.(error); !ok || !errors.Is(err, ErrArenaClosed) {
				t.Errorf("reservation %d after the close: %v, want ErrArenaClosed", i, v)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("reservation %d still waits after the close", i)
		}
	}
	if _, err := a.Reserve(ctx, 1); !errors.Is(err, ErrArenaClosed) {
		t.Errorf("Reserve after Close: %v, want ErrArenaClosed", err)
	}
}

// slotOf returns the arena slot of a chunk taken from a pool.
func slotOf(t *testing.T, c *Chunk) uint32 {
	t.Helper()
	_, i, ok := c.Slot()
	if !ok {
		t.Fatal("a pool's chunk is not in a slot")
	}
	return i
}

// A chunk gets the slot released last, whichever pool it went back to, so a
// task that holds two chunks at a time uses two slots however large its
// pool: the pages of the others are never touched.
func TestPoolReusesTheSlotReleasedLast(t *testing.T) {
	a := newTestArena(t, 8, 4096)
	ctx := context.Background()
	pool, err := a.Reserve(ctx, 6)
	if err != nil {
		t.Fatal(err)
	}
	used := map[uint32]bool{}
	held, err := pool.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		next, err := pool.Get(ctx)
		if err != nil {
			t.Fatal(err)
		}
		used[slotOf(t, held)] = true
		used[slotOf(t, next)] = true
		held.Release()
		held = next
	}
	if len(used) != 2 {
		t.Errorf("holding two chunks at a time used %d slots, want 2", len(used))
	}
	last := slotOf(t, held)
	held.Release()
	pool.Close()

	other, err := a.Reserve(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	c, err := other.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	if got := slotOf(t, c); got != last {
		t.Errorf("another pool's first chunk got slot %d, want %d, the one released last", got, last)
	}
}

// Closing a pool while a chunk still holds one of its slots returns the
// others at once and that one when the chunk is released; the slot is not
// lost to the arena.
func TestPoolClosedWhileAChunkIsHeld(t *testing.T) {
	a := newTestArena(t, 4, 4096)
	ctx := context.Background()
	pool, err := a.Reserve(ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	c, err := pool.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pool.Close()
	if got := a.Free(); got != 3 {
		t.Errorf("%d slots free after the close, want 3 (all but the held one)", got)
	}
	c.Release()
	if got := a.Free(); got != 4 {
		t.Errorf("%d slots free after the last chunk's release, want 4", got)
	}
	all, ok := a.TryReserve(4)
	if !ok {
		t.Fatal("the whole arena cannot be reserved after every chunk was released")
	}
	defer all.Close()
	seen := map[uint32]bool{}
	for range 4 {
		c, ok := all.TryGet()
		if !ok {
			t.Fatalf("only %d of 4 slots could be taken", len(seen))
		}
		seen[slotOf(t, c)] = true
		defer c.Release()
	}
	if len(seen) != 4 {
		t.Errorf("4 chunks got %d distinct slots", len(seen))
	}
}
