package run

import (
	"container/heap"
	"context"
	"sync"
)

// rankGate is a semaphore that hands what is freed to the waiter of lowest
// rank (of equal ranks, the first to arrive) rather than to the one that
// waited longest; a waiter takes n units at once, and the one of lowest
// rank waits until its n are free, the others behind it.
//
// The run has two. The cores: at most Workers ops at once, a unit each. A
// rank is a tensor's place in the run, so of the tensors in flight the
// earliest gets the cores first and finishes first: tensors are then
// completed about in the order the sinks lay them out, and a sink's digest,
// which follows its file from the start, hashes during the run instead of
// after the last tensor. (With first-come grants every tensor in flight got
// an even share of the cores, so a large early one, such as the embedding,
// was done last.) And the read-ahead: the bytes of the chunks read for ops
// that do not have a core yet (runner.ahead).
type rankGate struct {
	size    int // units in all
	mu      sync.Mutex
	free    int
	seq     uint64
	waiters gateQueue
}

func newRankGate(n int) *rankGate { return &rankGate{size: n, free: n} }

// Acquire takes a unit; see AcquireN.
func (g *rankGate) Acquire(ctx context.Context, rank int) error { return g.AcquireN(ctx, rank, 1) }

// Release returns a unit; see ReleaseN.
func (g *rankGate) Release() { g.ReleaseN(1) }

// AcquireN takes n units, waiting until they are free and no waiter of a
// lower rank is left; it returns the context's error, holding nothing, if
// ctx ends first. n must not exceed the gate's size.
func (g *rankGate) AcquireN(ctx context.Context, rank, n int) error {
	g.mu.Lock()
	if g.free >= n && len(g.waiters) == 0 {
		g.free -= n
		g.mu.Unlock()
		return nil
	}
	w := &gateWaiter{rank: rank, n: n, seq: g.seq, ready: make(chan struct{})}
	g.seq++
	heap.Push(&g.waiters, w)
	g.grant()
	g.mu.Unlock()
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
		g.mu.Lock()
		if w.index >= 0 {
			heap.Remove(&g.waiters, w.index)
			g.grant() // the next in line may fit now
			g.mu.Unlock()
			return ctx.Err()
		}
		g.mu.Unlock()
		// Granted meanwhile: pass the units on.
		g.ReleaseN(n)
		return ctx.Err()
	}
}

// ReleaseN returns n units, to the waiters of lowest rank they suffice for.
func (g *rankGate) ReleaseN(n int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.free += n
	g.grant()
}

// grant hands free units to waiters in rank order while the first one's
// share is free; g.mu is held.
func (g *rankGate) grant() {
	for len(g.waiters) > 0 && g.waiters[0].n <= g.free {
		w := heap.Pop(&g.waiters).(*gateWaiter)
		g.free -= w.n
		close(w.ready)
	}
}

// gateWaiter is a goroutine waiting in AcquireN.
type gateWaiter struct {
	rank  int
	n     int
	seq   uint64
	ready chan struct{}
	index int // in the queue; -1 once out of it
}

// gateQueue is a heap of waiters, lowest (rank, seq) first.
type gateQueue []*gateWaiter

func (q gateQueue) Len() int { return len(q) }
func (q gateQueue) Less(i, j int) bool {
	if q[i].rank != q[j].rank {
		return q[i].rank < q[j].rank
	}
	return q[i].seq < q[j].seq
}
func (q gateQueue) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].index, q[j].index = i, j
}
func (q *gateQueue) Push(x any) {
	w := x.(*gateWaiter)
	w.index = len(*q)
	*q = append(*q, w)
}
func (q *gateQueue) Pop() any {
	old := *q
	w := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	w.index = -1
	return w
}
