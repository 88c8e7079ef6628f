package plugin

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	"github.com/sluice-ml/sluice/sdk/resident"
)

// DefaultSlotSize is the arena slot size: large enough that the descriptor
// round trip per slot is negligible, small enough to keep many in flight.
const DefaultSlotSize = 8 << 20

// Arena is shared memory divided into equal slots. The host creates it
// (a memfd on Linux) and passes it to every plugin process at spawn; tensor
// bytes then cross processes as slot indexes instead of gRPC payloads.
//
// On the host, slots are handed out through Pools; a plugin only maps the
// arena and uses the slots it is granted.
type Arena struct {
	file     *os.File
	mem      []byte
	slotSize int
	slots    int
	// resident holds, for each slot, how many of its first bytes this
	// process has made resident (prefault).
	resident []atomic.Int64

	mu sync.Mutex
	// free counts the slots no pool has reserved.
	free   int
	closed bool

	// idleMu guards idle and each pool's closed flag. It is apart from mu,
	// which reservations wait on, because chunks are taken and released
	// far more often than pools are reserved.
	idleMu sync.Mutex
	// idle holds the slots no chunk holds, the one released last on top:
	// a pool takes its slots from it one at a time, as chunks are taken,
	// so a run reuses the slots whose pages it has touched and touches
	// others only when it holds that many chunks at once.
	idle []uint32
	// waiting holds the Reserve calls that wait, in the order they came;
	// only the first may take slots (admit).
	waiting []*reservation
}

// reservation is one waiting Reserve call, for n slots. admit grants it
// its pool and closes ready; Close closes ready without a pool.
type reservation struct {
	n     int
	pool  *Pool // a.mu
	ready chan struct{}
}

// NewArena creates an arena of slots × slotSize bytes backed by anonymous
// shared memory.
func NewArena(slots, slotSize int) (*Arena, error) {
	if slots <= 0 || slotSize <= 0 {
		return nil, fmt.Errorf("arena needs a positive slot count and size, got %d × %d", slots, slotSize)
	}
	f, err := createShared("sluice-arena", int64(slots)*int64(slotSize))
	if err != nil {
		return nil, fmt.Errorf("creating shared arena of %d bytes: %w", int64(slots)*int64(slotSize), err)
	}
	a, err := MapArena(f, slots, slotSize)
	if err != nil {
		f.Close()
		return nil, err
	}
	a.free = slots
	a.idle = make([]uint32, slots)
	for i := range a.idle {
		a.idle[i] = uint32(slots - 1 - i)
	}
	return a, nil
}

// MapArena maps an arena received from the host.
func MapArena(f *os.File, slots, slotSize int) (*Arena, error) {
	mem, err := mapShared(f, slots*slotSize)
	if err != nil {
		return nil, fmt.Errorf("mapping shared arena: %w", err)
	}
	return &Arena{file: f, mem: mem, slotSize: slotSize, slots: slots, resident: make([]atomic.Int64, slots)}, nil
}

// prefaultStep is the granularity of prefault: a slot's pages are made
// resident up to the next multiple of it past what is needed, so that a
// slot filled a little at a time (Pieces) costs few system calls.
const prefaultStep = 64 << 10

// prefault makes the first n bytes of slot i resident in this process's
// mapping before they are filled or read, in one system call rather than a
// page fault per page. Each process maps the arena on its own, so each pays
// for the first touch of every page it uses, however often the slot is
// then reused; on a virtual machine a page fault costs about as much as
// copying the page many times over (a 192 MiB arena: 0.5 s of faults, half
// that made resident at once). It does nothing past what was made resident
// before, and never changes the bytes.
func (a *Arena) prefault(i uint32, n int) {
	if int(i) >= a.slots {
		return
	}
	r := &a.resident[i]
	for {
		done := r.Load()
		if int64(n) <= done {
			return
		}
		end := min((int64(n)+prefaultStep-1)/prefaultStep*prefaultStep, int64(a.slotSize))
		if r.CompareAndSwap(done, end) {
			off := int64(i) * int64(a.slotSize)
			_ = resident.Bytes(a.mem[off+done : off+end]) // on failure, pages fault in as before
			return
		}
	}
}

// File returns the arena's file, to pass to a plugin process.
func (a *Arena) File() *os.File { return a.file }

// SlotSize returns the size of one slot.
func (a *Arena) SlotSize() int { return a.slotSize }

// Slots returns the number of slots.
func (a *Arena) Slots() int { return a.slots }

// Slot returns the memory of slot i.
func (a *Arena) Slot(i uint32) ([]byte, error) {
	if int(i) >= a.slots {
		return nil, fmt.Errorf("arena slot %d out of range (0..%d)", i, a.slots-1)
	}
	off := int(i) * a.slotSize
	return a.mem[off : off+a.slotSize : off+a.slotSize], nil
}

// Close unmaps the arena and closes its file. Slots must no longer be used.
func (a *Arena) Close() error {
	a.mu.Lock()
	a.closed = true
	for _, r := range a.waiting {
		close(r.ready) // without a pool: Reserve fails
	}
	a.waiting = nil
	a.mu.Unlock()
	err := unmapShared(a.mem)
	if cerr := a.file.Close(); err == nil {
		err = cerr
	}
	return err
}

// ErrArenaClosed is returned by Reserve after Close.
var ErrArenaClosed = errors.New("arena closed")

// Reserve takes n slots out of the arena for the exclusive use of one pool,
// waiting until n are free. Reservations are granted in order, so a large
// one is not starved by small ones. It fails at once when n exceeds the
// arena.
//
// A waiting reservation sleeps until it is granted: slots given back are
// handed to the first in line (admit), which alone is woken. Waking every
// waiter to see which may go cost more than the work when many small
// tensors wait (sixty-four trees in a run of 20,000 tensors of 16 KiB).
func (a *Arena) Reserve(ctx context.Context, n int) (*Pool, error) {
	if n <= 0 || n > a.slots {
		return nil, fmt.Errorf("cannot reserve %d slots of an arena of %d", n, a.slots)
	}
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return nil, ErrArenaClosed
	}
	if len(a.waiting) == 0 && a.free >= n {
		defer a.mu.Unlock()
		return a.take(n), nil
	}
	r := &reservation{n: n, ready: make(chan struct{})}
	a.waiting = append(a.waiting, r)
	a.mu.Unlock()
	select {
	case <-r.ready:
	case <-ctx.Done():
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if r.pool != nil {
		return r.pool, nil // granted, even if ctx ended meanwhile
	}
	if a.closed {
		return nil, ErrArenaClosed
	}
	a.leave(r)
	return nil, ctx.Err()
}

// admit grants the reservations at the head of the line whatever fits in
// the free slots, in order; a.mu is held.
func (a *Arena) admit() {
	for len(a.waiting) > 0 && a.free >= a.waiting[0].n {
		r := a.waiting[0]
		a.waiting[0] = nil
		a.waiting = a.waiting[1:]
		r.pool = a.take(r.n)
		close(r.ready)
	}
	if len(a.waiting) == 0 {
		a.waiting = nil // let the line's array go
	}
}

// TryReserve is Reserve without waiting: it reports false when n slots are
// not free, or when other reservations wait in line.
func (a *Arena) TryReserve(n int) (*Pool, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if n <= 0 || a.closed || len(a.waiting) > 0 || a.free < n {
		return nil, false
	}
	return a.take(n), true
}

// take reserves n free slots for a new pool; a.mu is held.
func (a *Arena) take(n int) *Pool {
	p := &Pool{arena: a, unheld: make(chan struct{}, n), size: n}
	for range n {
		p.unheld <- struct{}{}
	}
	a.free -= n
	return p
}

// leave takes a reservation that gave up out of the line, and admits those
// behind it: the next may now be first, and fit.
func (a *Arena) leave(r *reservation) {
	for i, w := range a.waiting {
		if w == r {
			a.waiting = append(a.waiting[:i], a.waiting[i+1:]...)
			break
		}
	}
	a.admit()
}

// Free returns the number of slots not reserved by any pool.
func (a *Arena) Free() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.free
}

// Pool is a set of slots reserved from an arena for one task. Its slots are
// recycled within the pool, so a task that holds a pool can always make
// progress. Which slot a chunk gets is chosen when it is taken: the one of
// the arena released last, whose pages are most likely resident.
type Pool struct {
	arena *Arena
	// unheld has a token for each of the pool's slots that no chunk holds.
	unheld chan struct{}
	size   int
	closed bool // arena.idleMu
	once   sync.Once
}

// Arena returns the arena the pool's slots belong to.
func (p *Pool) Arena() *Arena { return p.arena }

// Size returns the number of slots the pool holds.
func (p *Pool) Size() int { return p.size }

// Get waits for a free slot of the pool and returns it as an empty chunk
// whose Data has the slot's full capacity.
func (p *Pool) Get(ctx context.Context) (*Chunk, error) {
	select {
	case <-p.unheld:
		return p.hold(), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// TryGet is Get without waiting: it reports false when every slot is in use.
func (p *Pool) TryGet() (*Chunk, bool) {
	select {
	case <-p.unheld:
		return p.hold(), true
	default:
		return nil, false
	}
}

// hold takes the idle slot on top for a chunk, once the pool's token for
// it is taken. There is always one: every pool's tokens, and the slots no
// pool reserved, each stand for an idle slot.
func (p *Pool) hold() *Chunk {
	a := p.arena
	a.idleMu.Lock()
	i := a.idle[len(a.idle)-1]
	a.idle = a.idle[:len(a.idle)-1]
	a.idleMu.Unlock()
	mem, _ := a.Slot(i)
	c := &Chunk{Data: mem, slot: int32(i), arena: a, pool: p}
	c.refs.Store(1)
	return c
}

// put makes slot i idle again and gives its token back to the pool, or,
// once the pool is closed, its reservation back to the arena. The token
// goes back under idleMu so that Close counts it either way.
func (p *Pool) put(i uint32) {
	a := p.arena
	a.idleMu.Lock()
	a.idle = append(a.idle, i)
	closed := p.closed
	if !closed {
		p.unheld <- struct{}{} // never blocks: one token per slot
	}
	a.idleMu.Unlock()
	if closed {
		a.unreserve(1)
	}
}

// Close returns the pool's slots to the arena; a slot still held by a
// chunk goes back when the chunk is released.
func (p *Pool) Close() {
	p.once.Do(func() {
		a := p.arena
		a.idleMu.Lock()
		p.closed = true
		n := 0
		for range p.size {
			select {
			case <-p.unheld:
				n++
			default:
			}
		}
		a.idleMu.Unlock()
		a.unreserve(n)
	})
}

// unreserve gives n slots back to the arena's free count and grants them to
// the reservations waiting first in line, as far as they go.
func (a *Arena) unreserve(n int) {
	a.mu.Lock()
	a.free += n
	if !a.closed {
		a.admit()
	}
	a.mu.Unlock()
}

// Chunk is a piece of a tensor's bytes. Chunks taken from a Pool live in an
// arena slot and go back to their pool when the last holder releases them;
// others live on the Go heap.
type Chunk struct {
	// Data holds the bytes.
	Data []byte
	// Offset is the position of Data within its tensor.
	Offset uint64

	slot      int32
	arena     *Arena
	pool      *Pool
	onRelease func()
	refs      atomic.Int32
	// share, for a chunk cut from a slot shared with others (Pieces), is
	// that slot; Data begins at byte shareOff of it.
	share    *sharedSlot
	shareOff int
}

// NewChunk wraps bytes with a function called when the last holder releases
// them; release may be nil.
func NewChunk(b []byte, offset uint64, release func()) *Chunk {
	c := &Chunk{Data: b, Offset: offset, slot: -1, onRelease: release}
	c.refs.Store(1)
	return c
}

// HeapChunk wraps bytes that live outside any arena.
func HeapChunk(b []byte, offset uint64) *Chunk {
	c := &Chunk{Data: b, Offset: offset, slot: -1}
	c.refs.Store(1)
	return c
}

// Slot returns the arena and slot index holding the chunk, when it lives in
// an arena.
func (c *Chunk) Slot() (*Arena, uint32, bool) {
	if c.slot < 0 || c.arena == nil {
		return nil, 0, false
	}
	return c.arena, uint32(c.slot), true
}

// Prefault makes the first n bytes of the chunk's memory resident before
// they are filled, when the chunk lives in an arena slot (whole, or a piece
// of one): in one system call, where touching each page costs a page fault.
// Call it with the length about to be written or read. It changes no bytes
// and does nothing for heap chunks or for bytes made resident before.
func (c *Chunk) Prefault(n int) {
	switch {
	case c.share != nil:
		c.share.pool.arena.prefault(c.share.slot, c.shareOff+n)
	case c.slot >= 0 && c.arena != nil:
		c.arena.prefault(uint32(c.slot), n)
	}
}

// Retain adds a holder; each holder calls Release once.
func (c *Chunk) Retain() { c.refs.Add(1) }

// Release drops a holder; the last one returns the slot to its pool.
func (c *Chunk) Release() {
	n := c.refs.Add(-1)
	if n == 0 {
		if c.onRelease != nil {
			c.onRelease()
		}
		if c.pool != nil {
			c.pool.put(uint32(c.slot))
		}
	}
	if n < 0 {
		panic("plugin: chunk released more times than retained")
	}
}
