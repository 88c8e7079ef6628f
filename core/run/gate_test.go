package run

import (
	"context"
	"errors"
	"testing"
	"time"
)

// queued waits until n goroutines wait at the gate.
func queued(t *testing.T, g *cpuGate, n int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		g.mu.Lock()
		got := len(g.waiters)
		g.mu.Unlock()
		if got == n {
			return
		}
	}
	t.Fatalf("%d waiters never queued", n)
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
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		g.mu.Lock()
		free := g.free
		g.mu.Unlock()
		if free == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d units free at the end, want 1", free)
		}
	}
}
