package run

import (
	"context"
	"math"
	"os"
	"sync"
)

// readFront lets the digest of an input the run reads tensors from follow
// the run through the file instead of racing ahead of it.
//
// An input's digest and the run both read the whole file. Unpaced, the
// digest (1 GB/s and more) runs ahead of a quantizing run (0.2–1 GB/s), so
// when the file is larger than the page cache can hold, the pages it read
// are gone by the time the run gets there: the file is read from the disk
// twice. Paced, the digest reads no further than the furthest tensor the run
// has finished, so it reads pages the run has just brought in, and the file
// is read from the disk once. A run that reads ahead of its digest (a
// passthrough) is not slowed: its front is always ahead.
//
// The front of a file is the end of the furthest tensor read from it, not
// the end of the bytes read without a gap before it: the digest passes over
// tensors still in flight and tensors the run does not read (those it reads
// from the disk itself, once). When the run ends (release), every digest
// reads on to the end of its file.
type readFront struct {
	mu       sync.Mutex
	ends     map[string]int64 // by paced file: how far the digest may read
	released bool
	changed  chan struct{} // closed, and replaced, at every change
}

func newReadFront(paced map[string]bool) *readFront {
	f := &readFront{ends: map[string]int64{}, changed: make(chan struct{})}
	for p := range paced {
		f.ends[p] = 0
	}
	return f
}

// advance records that the run has read path up to end.
func (f *readFront) advance(path string, end int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if cur, ok := f.ends[path]; !ok || end <= cur {
		return
	}
	f.ends[path] = end
	f.signalLocked()
}

// release lets every digest read to the end of its file: the run reads no
// more.
func (f *readFront) release() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.released {
		f.released = true
		f.signalLocked()
	}
}

func (f *readFront) signalLocked() {
	close(f.changed)
	f.changed = make(chan struct{})
}

// limit returns how far path may be read, waiting while that is not past
// off. A file that is not paced, or a released front, has no limit.
func (f *readFront) limit(ctx context.Context, path string, off int64) (int64, error) {
	for {
		f.mu.Lock()
		end, paced := f.ends[path]
		if !paced || f.released {
			f.mu.Unlock()
			return math.MaxInt64, nil
		}
		if end > off {
			f.mu.Unlock()
			return end, nil
		}
		changed := f.changed
		f.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

// pacedReader reads a file of size bytes from its start, no further than
// its read front allows. At the end it reads on without waiting (to find
// io.EOF, or the bytes of a file that grew, which its caller reports).
type pacedReader struct {
	ctx   context.Context
	f     *os.File
	path  string
	size  int64
	off   int64
	front *readFront
}

func (r *pacedReader) Read(p []byte) (int, error) {
	if len(p) == 0 || r.off >= r.size {
		n, err := r.f.Read(p)
		r.off += int64(n)
		return n, err
	}
	lim, err := r.front.limit(r.ctx, r.path, r.off)
	if err != nil {
		return 0, err
	}
	if room := lim - r.off; room < int64(len(p)) {
		p = p[:room]
	}
	n, err := r.f.Read(p)
	r.off += int64(n)
	return n, err
}
