package run

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/sluice-ml/sluice/internal/testwait"
	"github.com/sluice-ml/sluice/sdk/plugin"
)

// freeUnits waits until the gate has n units free.
func freeUnits(t *testing.T, g *rankGate, n int) {
	t.Helper()
	testwait.Until(t, fmt.Sprintf("%d units free", n), func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.free == n
	})
}

// queued waits until n goroutines wait at the gate.
func queued(t *testing.T, g *rankGate, n int) {
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
	g := newRankGate(1)
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
	freeUnits(t, g, 1)
}

// An op's worker holds no slot of its tree while it waits for a core, and
// no core while it waits for a slot: it takes the core first, and gives it
// back when the tree's slots are all held, until one is released.
func TestCoreAndSlotHoldsNeitherWhileWaiting(t *testing.T) {
	arena, err := plugin.NewArena(2, 4096)
	if err != nil {
		t.Fatal(err)
	}
	defer arena.Close()
	ctx := context.Background()
	pool, err := arena.Reserve(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	r := &runner{cpu: newRankGate(1)}
	got := make(chan *plugin.Chunk, 1)
	take := func() {
		dst, err := r.coreAndSlot(ctx, pool, 0)
		if err != nil {
			t.Error(err)
		}
		got <- dst
	}

	// Waiting for the core: both slots stay free.
	if err := r.cpu.Acquire(ctx, 0); err != nil {
		t.Fatal(err)
	}
	go take()
	queued(t, r.cpu, 1)
	var held []*plugin.Chunk
	for range 2 {
		c, ok := pool.TryGet()
		if !ok {
			t.Fatalf("a worker waiting for a core holds a slot: %d of 2 free", len(held))
		}
		held = append(held, c)
	}

	// Waiting for a slot: the core is free for others.
	r.cpu.Release()
	freeUnits(t, r.cpu, 1)
	select {
	case <-got:
		t.Fatal("a slot was taken while every slot was held")
	default:
	}
	held[0].Release()
	dst := <-got
	if dst == nil {
		t.FailNow()
	}
	defer dst.Release()
	defer held[1].Release()
	r.cpu.mu.Lock()
	free := r.cpu.free
	r.cpu.mu.Unlock()
	if free != 0 {
		t.Errorf("the worker returned without the core: %d units free", free)
	}
	r.cpu.Release()
}

// TestRankGateWeights: a waiter takes its n units at once, in rank order:
// one of a higher rank waits behind it even when its own share is free,
// and goes ahead when the one before it gives up.
func TestRankGateWeights(t *testing.T) {
	g := newRankGate(10)
	ctx := context.Background()
	if err := g.AcquireN(ctx, 0, 6); err != nil {
		t.Fatal(err)
	}
	granted := make(chan int, 4)
	acquire := func(ctx context.Context, rank, n int) chan error {
		done := make(chan error, 1)
		go func() {
			err := g.AcquireN(ctx, rank, n)
			if err == nil {
				granted <- rank
			}
			done <- err
		}()
		return done
	}
	cctx, cancel := context.WithCancel(ctx)
	gaveUp := acquire(cctx, 1, 6)
	queued(t, g, 1)
	acquire(ctx, 3, 3)
	queued(t, g, 2)
	select {
	case rank := <-granted:
		t.Fatalf("rank %d was granted past a waiter of a lower rank", rank)
	case <-time.After(20 * time.Millisecond):
	}
	cancel()
	if err := <-gaveUp; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled AcquireN: %v", err)
	}
	if rank := <-granted; rank != 3 {
		t.Fatalf("rank %d granted, want 3 once the waiter before it left", rank)
	}
	freeUnits(t, g, 1)
	second := acquire(ctx, 2, 5)
	queued(t, g, 1)
	g.ReleaseN(6)
	if err := <-second; err != nil {
		t.Fatal(err)
	}
	freeUnits(t, g, 2)
}
