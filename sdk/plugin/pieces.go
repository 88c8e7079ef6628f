package plugin

import (
	"sync"
)

// Pieces cuts arena slots into pieces for small chunks, so that many small
// tensors share one slot: a tensor of a few kilobytes waiting for its write
// would otherwise hold a slot of megabytes, and the arena would bound how
// many wait at once. It never waits for the arena: it takes a slot only
// when one is free and no reservation waits in line (TryReserve), and gives
// a slot back as soon as no piece cut from it is out, so that it holds no
// slot a reservation could wait for while nothing is being written. A
// piece is not a slot (Chunk.Slot reports false): a plugin reads it only
// where the protocol names a slot and an offset (WriteStart.data).
type Pieces struct {
	arena *Arena
	mu    sync.Mutex
	cur   *sharedSlot // the slot pieces are cut from; nil when none
}

// sharedSlot is an arena slot cut into pieces.
type sharedSlot struct {
	owner *Pieces
	pool  *Pool  // the slot's reservation
	whole *Chunk // the slot, held until the last piece goes
	slot  uint32
	used  int // bytes cut, rounded to pieceAlign
	refs  int // pieces out
}

// pieceAlign keeps every piece on a cache line of its own.
const pieceAlign = 64

// pieceSpan is how much of a slot is cut into pieces: a slot goes back
// once its pieces are released, and the next one is most often another
// slot, whose pages are touched for the first time (a page fault each);
// cutting only the first MiB of each keeps the memory a run touches small.
const pieceSpan = 1 << 20

// NewPieces returns a piece cutter over arena.
func NewPieces(arena *Arena) *Pieces { return &Pieces{arena: arena} }

// TryGet returns a chunk of n bytes cut from a shared slot, or false when
// the current slot has no room for it and the arena has no slot free to
// cut from without waiting.
func (p *Pieces) TryGet(n int) (*Chunk, bool) {
	span := min(p.arena.SlotSize(), pieceSpan)
	if n <= 0 || n > span {
		return nil, false
	}
	p.mu.Lock()
	if s := p.cur; s != nil && s.used+n <= span {
		c := s.cut(n)
		p.mu.Unlock()
		return c, true
	}
	p.cur = nil // full: it goes back when its last piece does
	p.mu.Unlock()
	pool, ok := p.arena.TryReserve(1)
	if !ok {
		return nil, false
	}
	whole, _ := pool.TryGet()
	_, slot, _ := whole.Slot()
	s := &sharedSlot{owner: p, pool: pool, whole: whole, slot: slot}
	p.mu.Lock()
	c := s.cut(n)
	if p.cur == nil {
		p.cur = s
	} // else another TryGet took a slot meanwhile: cut from that one next
	p.mu.Unlock()
	return c, true
}

// cut takes n bytes of the slot; p.mu is held.
func (s *sharedSlot) cut(n int) *Chunk {
	off := s.used
	s.used += (n + pieceAlign - 1) / pieceAlign * pieceAlign
	s.refs++
	c := &Chunk{Data: s.whole.Data[off : off+n : off+n], slot: -1, share: s, shareOff: off, onRelease: s.unref}
	c.refs.Store(1)
	c.Prefault(n)
	return c
}

// unref drops a piece; the last gives the slot back to the arena, and
// pieces are then cut from another.
func (s *sharedSlot) unref() {
	p := s.owner
	p.mu.Lock()
	s.refs--
	last := s.refs == 0
	if last && p.cur == s {
		p.cur = nil
	}
	p.mu.Unlock()
	if last {
		s.whole.Release()
		s.pool.Close()
	}
}

// Piece reports where a chunk cut by Pieces lies: its arena, slot and the
// offset of its bytes in the slot.
func (c *Chunk) Piece() (*Arena, uint32, int, bool) {
	if c.share == nil {
		return nil, 0, 0, false
	}
	return c.share.pool.arena, c.share.slot, c.shareOff, true
}
