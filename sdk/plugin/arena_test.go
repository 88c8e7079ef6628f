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
