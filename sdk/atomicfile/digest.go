package atomicfile

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"math"
	"runtime"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
)

// digestRead is how many bytes a digest reads back at a time.
const digestRead = 1 << 20

var (
	// digestBuffers holds the read buffers of digests that are hashing; a
	// digest waiting for bytes holds none.
	digestBuffers = sync.Pool{New: func() any { b := make([]byte, digestRead); return &b }}
	// digestSlots caps the digests hashing at once over the process at the
	// cores, however many files are open.
	digestSlots = make(chan struct{}, runtime.GOMAXPROCS(0))
)

// span is a byte range [off, end).
type span struct{ off, end int64 }

// Follower hashes a file's bytes behind its writer: from its starting
// offset on, it reads back and hashes the bytes as far as they are final
// (File.Final, Follower.Final), while the writer goes on, and the rest when
// told the end (Finish). It reads what was just written, from the page
// cache, instead of reading the whole file back once it is done.
type Follower struct {
	r    io.ReaderAt
	name string // the file's final name, for errors

	mu      sync.Mutex
	ready   int64  // bytes from the starting offset up to ready are final
	pending []span // final ranges past ready, sorted, not touching ready
	end     int64  // when closing: hash up to here
	closing bool
	stop    bool // aborted: hash no more
	// relay, once set (File.RelayDigest), takes the place of hashing: it
	// is told how far the bytes are final, and relayed is how far it was.
	relay   func(end int64)
	relayed int64
	wake    chan struct{}

	h      hash.Hash
	hashed atomic.Int64 // written by run alone; atomic for tests that watch it
	err    error
	done   chan struct{}
}

// StartDigest makes the file compute its SHA-256 as it is written: Commit
// then reports it (Digest). Bytes are hashed in file order as soon as every
// byte before them is final (see Final); whatever is not final by Commit is
// hashed there, while the file is synced. Call StartDigest before the first
// Final, at most once.
func (f *File) StartDigest() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.dig != nil || f.done {
		return
	}
	f.dig = f.followLocked(sha256.New(), 0)
}

// Follow starts hashing into h the file's bytes from offset from on, as they
// become final (Final). Finish hashes the rest and waits; h then holds the
// digest of [from, end). A sink uses it for a digest its format keeps of
// part of the file. Abort and Commit stop every follower.
func (f *File) Follow(h hash.Hash, from int64) *Follower {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.followLocked(h, from)
}

func (f *File) followLocked(h hash.Hash, from int64) *Follower {
	d := newFollower(f.File, f.final, h, from)
	if f.done {
		d.stop, d.closing = true, true
		close(d.done)
		return d
	}
	followers := append(slices.Clip(f.followerList()), d)
	f.followers.Store(&followers)
	go d.run()
	return d
}

func newFollower(r io.ReaderAt, name string, h hash.Hash, from int64) *Follower {
	d := &Follower{r: r, name: name, h: h, ready: from, wake: make(chan struct{}, 1), done: make(chan struct{})}
	d.hashed.Store(from)
	return d
}

// NewFollower starts hashing into h the bytes of a file some other code
// writes, read through r, from offset from on, as they become final
// (Follower.Final); name is the file's name for errors. Finish hashes the
// rest and waits; Stop abandons it. A host uses it for the digest of a file
// a plugin's sink handed over (File.RelayDigest).
func NewFollower(r io.ReaderAt, name string, h hash.Hash, from int64) *Follower {
	d := newFollower(r, name, h, from)
	go d.run()
	return d
}

// RelayDigest hands the file's digest (StartDigest) to another reader of
// the file, such as a host that hashes in its own process an output a
// plugin's sink writes: the file stops hashing, and calls relay with the
// offset before which every byte is final (Final) at once, before
// RelayDigest returns, and then from another goroutine each time it grows,
// until Commit or Abort. The bytes already hashed are not handed over: the
// other reader hashes from the start. Commit then does not wait for a
// digest, and Digest reports none. It returns false, and changes nothing,
// when the file has no digest, has one relayed already, or has ended.
func (f *File) RelayDigest(relay func(end int64)) bool {
	f.mu.Lock()
	d := f.dig
	ok := d != nil && !f.done
	f.mu.Unlock()
	if !ok {
		return false
	}
	d.mu.Lock()
	if d.relay != nil || d.closing {
		d.mu.Unlock()
		return false
	}
	d.relay, d.relayed = relay, d.ready
	end := d.ready
	d.mu.Unlock()
	relay(end)
	d.signal() // a hashing run stops at its next read and relays from then on
	return true
}

// relaying reports whether the digest was relayed.
func (d *Follower) relaying() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.relay != nil
}

// ReadFront returns the offset before which the follower reads nothing any
// more: how far it hashed; the end of any file once it was stopped; 0 once
// its digest was relayed (File.RelayDigest), as the reader it went to
// hashes the file from the start. A writer that drops the file's pages from
// the page cache (Writeback.DropBehind) keeps those it has yet to read.
func (d *Follower) ReadFront() int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case d.relay != nil:
		return 0
	case d.stop:
		return math.MaxInt64
	}
	return d.hashed.Load()
}

// relayFurther tells the relay how far the bytes are final, if further
// than it was told.
func (d *Follower) relayFurther() {
	d.mu.Lock()
	relay, end := d.relay, d.ready
	grew := end > d.relayed
	if grew {
		d.relayed = end
	}
	d.mu.Unlock()
	if grew {
		relay(end)
	}
}

// Final tells the file's digest that bytes [off, off+n) are written and
// will not be written again, padding included: a range no call covers (the
// zeros of a gap between tensors, a header rewritten at the end) holds the
// digest back until Commit, which is slower but never wrong. Without a
// digest or a follower it does nothing.
func (f *File) Final(off, n int64) {
	if n <= 0 {
		return
	}
	for _, d := range f.followerList() {
		d.final(span{off, off + n})
	}
}

// Digest returns the hex SHA-256 and the size of a committed file whose
// digest was started and not relayed (RelayDigest); ok is false otherwise.
func (f *File) Digest() (sha string, size int64, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.dig == nil || !f.committed || f.dig.relaying() {
		return "", 0, false
	}
	return hex.EncodeToString(f.dig.h.Sum(nil)), f.dig.hashed.Load(), true
}

// Final tells the follower that bytes [off, off+n) are written and will not
// be written again, as File.Final does for the followers of a File.
func (d *Follower) Final(off, n int64) {
	if n > 0 {
		d.final(span{off, off + n})
	}
}

func (d *Follower) final(s span) {
	d.mu.Lock()
	defer d.mu.Unlock()
	i := sort.Search(len(d.pending), func(i int) bool { return d.pending[i].off >= s.off })
	d.pending = append(d.pending, span{})
	copy(d.pending[i+1:], d.pending[i:])
	d.pending[i] = s
	grew := false
	for len(d.pending) > 0 && d.pending[0].off <= d.ready {
		if d.pending[0].end > d.ready {
			d.ready, grew = d.pending[0].end, true
		}
		d.pending = d.pending[1:]
	}
	if grew {
		d.signal()
	}
}

func (d *Follower) signal() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// target returns how far the digest may hash now, and whether it is to end
// there.
func (d *Follower) target() (limit int64, last, stop bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closing {
		return d.end, true, d.stop
	}
	return d.ready, false, d.stop
}

func (d *Follower) run() {
	defer close(d.done)
	for {
		limit, last, stop := d.target()
		if stop {
			return
		}
		if d.relaying() {
			if last {
				return
			}
			d.relayFurther()
			<-d.wake
			continue
		}
		hashed := d.hashed.Load()
		if !last {
			// Whole reads only, until the end is known: the bytes short of
			// a read wait for those after them (or for Finish). A file's
			// header so waits for its first tensors, and a digest handed
			// over before them (RelayDigest) has read nothing in vain.
			limit = hashed + (limit-hashed)/digestRead*digestRead
		}
		if hashed < limit {
			if err := d.hashTo(limit); err != nil {
				d.err = err
				return
			}
			continue
		}
		if last {
			return
		}
		<-d.wake
	}
}

// hashTo reads back and hashes the file from where the digest stands to
// limit.
func (d *Follower) hashTo(limit int64) error {
	digestSlots <- struct{}{}
	defer func() { <-digestSlots }()
	bp := digestBuffers.Get().(*[]byte)
	defer digestBuffers.Put(bp)
	buf := *bp
	for d.hashed.Load() < limit {
		if d.stopped() || d.relaying() {
			return nil // cancel, or relayed: the caller reads no digest
		}
		at := d.hashed.Load()
		n := min(int64(len(buf)), limit-at)
		got, err := d.r.ReadAt(buf[:n], at)
		if int64(got) != n {
			return fmt.Errorf("reading %s back for its SHA-256 at offset %d: %w", d.name, at, err)
		}
		d.h.Write(buf[:n])
		d.hashed.Add(n)
	}
	return nil
}

// stopped reports whether the follower was cancelled.
func (d *Follower) stopped() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stop
}

// Finish hashes the rest of the follower's range, up to end (the bytes
// before it must all be written by now), and waits for it.
func (d *Follower) Finish(end int64) error {
	d.mu.Lock()
	if d.closing {
		d.mu.Unlock()
		<-d.done
		return fmt.Errorf("%s: the digest was stopped", d.name)
	}
	d.closing, d.end = true, end
	d.mu.Unlock()
	d.signal()
	<-d.done
	if d.err != nil {
		return d.err
	}
	if got := d.hashed.Load(); got != end {
		return fmt.Errorf("%s: hashed up to offset %d, not %d", d.name, got, end)
	}
	return nil
}

// Stop abandons the digest and waits for the follower to stop reading, so
// the file can be closed.
func (d *Follower) Stop() { d.cancel() }

// cancel stops the digest and waits for it, so the file can be closed.
func (d *Follower) cancel() {
	d.mu.Lock()
	d.closing, d.stop = true, true
	d.mu.Unlock()
	d.signal()
	<-d.done
}

// Extents returns, for pieces of a file of fileSize bytes that start at the
// given offsets (in any order) and hold the given sizes, the length from
// each start to the next piece's start or to the end: the piece and the
// padding after it, as Final wants them. An empty piece gets 0, so that
// declaring it final never covers a piece that starts at the same offset.
// extents[i] belongs to starts[i].
func Extents(starts, sizes []int64, fileSize int64) []int64 {
	order := make([]int, 0, len(starts))
	for i := range starts {
		if sizes[i] > 0 {
			order = append(order, i)
		}
	}
	sort.Slice(order, func(a, b int) bool { return starts[order[a]] < starts[order[b]] })
	extents := make([]int64, len(starts))
	for k, i := range order {
		next := fileSize
		if k+1 < len(order) {
			next = starts[order[k+1]]
		}
		extents[i] = max(next-starts[i], sizes[i])
	}
	return extents
}

// Sum appends the digest to b, after Finish.
func (d *Follower) Sum(b []byte) []byte { return d.h.Sum(b) }
