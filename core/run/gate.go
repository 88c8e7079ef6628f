package run

import (
	"container/heap"
	"context"
	"sync"
)

// cpuGate lets at most n ops run at once, like a semaphore of n units taken
// one at a time, but hands a freed unit to the waiter of lowest rank (of
// equal ranks, the first to arrive) rather than to the one that waited
// longest. A rank is a tensor's place in the run, so of the tensors in
// flight the earliest gets the cores first and finishes first: tensors are
// then completed about in the order the sinks lay them out, and a sink's
// digest, which follows its file from the start, hashes during the run
// instead of after the last tensor. (With first-come grants every tensor in
// flight got an even share of the cores, so a large early one, such as the
// embedding, was done last.)
type cpuGate struct {
	mu      sync.Mutex
	free    int
	seq     uint64
	waiters gateQueue
}

func newCPUGate(n int) *cpuGate { return &cpuGate{free: n} }

// Acquire takes a unit, waiting for one if none is free; it returns the
// context's error, holding nothing, if ctx ends first.
func (g *cpuGate) Acquire(ctx context.Context, rank int) error {
	g.mu.Lock()
	if g.free > 0 {
		g.free--
		g.mu.Unlock()
		return nil
	}
	w := &gateWaiter{rank: rank, seq: g.seq, ready: make(chan struct{})}
	g.seq++
	heap.Push(&g.waiters, w)
	g.mu.Unlock()
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
		g.mu.Lock()
		if w.index >= 0 {
			heap.Remove(&g.waiters, w.index)
			g.mu.Unlock()
			return ctx.Err()
		}
		g.mu.Unlock()
		// Granted meanwhile: pass the unit on.
		g.Release()
		return ctx.Err()
	}
}

// Release returns a unit: to the waiter of lowest rank, if any.
func (g *cpuGate) Release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.waiters) == 0 {
		g.free++
		return
	}
	w := heap.Pop(&g.waiters).(*gateWaiter)
	close(w.ready)
}

// gateWaiter is a goroutine waiting in Acquire.
type gateWaiter struct {
	rank  int
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
