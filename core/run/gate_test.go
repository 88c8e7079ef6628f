package run

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/sluice-ml/sluice/internal/testwait"
)

// queued waits until n goroutines wait at the gate.
func queued(t *testing.T, g *cpuGate, n int) {
	t.Helper()
	testwait.Until(t, fmt.Sprintf("%d waiters queuing", n), func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		return len(g.waiters) == n
	})
}

// TestCPUGateGrantsLowestRankFirst: a freed unit goes to the waiter of the
// lowest rank, equal ranks in arrival order, whatever order they came in; a
// waiter whose context ends leaves without taking a unit.
func TestCPUGateGrantsLowestRankFirst(t *testing.T) {
	g := newCPUGate(1)
	ctx := context.Background()
	if err := g.Acquire(ctx, 9); err != nil {
		t.Fatal(err)
	}
	order := make(chan int, 8)
	ranks := []int{5, 2, 7, 2, 0}
	for i, rank := range ranks {
		go func() {
			if err := g.Acquire(ctx, rank); err != nil {
				t.Error(err)
				return
			}
			order <- 10*rank + i // rank and arrival
			g.Release()
		}()
		queued(t, g, i+1)
	}
	cctx, cancel := context.WithCancel(ctx)
	gaveUp := make(chan error, 1)
	go func() { gaveUp <- g.Acquire(cctx, 1) }()
	queued(t, g, len(ranks)+1)
	cancel()
	if err := <-gaveUp; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Acquire: %v", err)
	}
	g.Release()
	want := []int{4, 21, 23, 50, 72}
	for _, w := range want {
		select {
		case got := <-order:
			if got != w {
				t.Fatalf("granted %d (10×rank + arrival), want %d; order wanted %v", got, w, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("a waiter was never granted")
		}
	}
	// The last one releases after it reported.
	testwait.Until(t, "the unit coming back free", func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.free == 1
	})
}
