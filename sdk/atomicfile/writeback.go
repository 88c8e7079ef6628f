package atomicfile

import (
	"os"
	"sync"
)

// Steps of an output's writeback.
const (
	// WritebackStep is how many written bytes a Writeback gathers before it
	// starts their writeback: one sync_file_range per tensor of a few
	// kilobytes costs more than it gains, as each submits its own small
	// disk write.
	WritebackStep = 8 << 20

	// EarlySyncStep is how many bytes, their writeback started, make a
	// Writeback sync the file's data in the background. The kernel's
	// writeback leaves the disk's own cache to flush: a final fsync of a
	// few hundred MB written back already still waited 0.1-0.25 s on this
	// project's test machines, against 20 ms after syncs every 64 MiB.
	EarlySyncStep = 64 << 20
)

// Writeback hands an output's written bytes to the kernel's writeback as
// the run goes on, so that the disk works while the run computes and the
// fsync of a Commit finds little left to do:
//
//   - it gathers the bytes written and starts their writeback
//     (sync_file_range, without waiting) once per WritebackStep bytes;
//   - once per EarlySyncStep bytes whose writeback started, it syncs the
//     file's data (fdatasync) in a goroutine of its own, one at a time.
//
// With DropBehind, each early sync also drops from the page cache the pages
// it made durable that nobody will read again.
//
// An early sync's error is kept for Wait: the kernel reports a failed
// writeback to one sync of an open file only, so the final fsync would not
// see it. Where sync_file_range is not available it does nothing. Its zero
// value is ready.
type Writeback struct {
	mu        sync.Mutex
	dirty     span          // written since their writeback last started
	bytes     int64         // the bytes written in dirty
	started   int64         // bytes whose writeback started since the last early sync
	front     int64         // the end of the furthest bytes whose writeback started
	readFront func() int64  // DropBehind's; nil keeps the pages cached
	syncing   chan struct{} // closed when the early sync in flight ends; nil when none runs
	err       error         // the first early sync's error
}

// DropBehind makes every early sync, once it ended, drop from the page
// cache the file's pages before the furthest bytes whose writeback had
// started when it began, and before readFront() (the offset before which
// this process reads nothing back any more: a digest that follows the
// writes), so that an output's pages do not pile up in memory as it is
// written. Dropping is a hint: a page still dirty, or written again since,
// stays. It cannot lose a byte: the pages dropped are on the disk, and a
// later read reads them from there.
//
// Bytes written to a file take new page-cache pages, which the kernel has
// to find memory for; without DropBehind a run of a model larger than the
// free memory makes the kernel reclaim other pages (other processes' files)
// for them, and on a virtual machine that hands its free memory back to the
// host every new page traps to the hypervisor. Pages dropped behind the
// writer are free again at once, and the next writes take them.
func (w *Writeback) DropBehind(readFront func() int64) {
	w.mu.Lock()
	w.readFront = readFront
	w.mu.Unlock()
}

// Written records that bytes [off, off+n) of f were just written, and
// starts their writeback, or an early sync, when one is due.
func (w *Writeback) Written(f *os.File, off, n int64) {
	if n <= 0 || !writebackHints {
		return
	}
	from, length, due := w.gather(off, n)
	if !due {
		return
	}
	StartWriteback(f.Fd(), from, length)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.started += length
	w.front = max(w.front, from+length)
	if w.started < EarlySyncStep || w.syncing != nil {
		return
	}
	w.started = 0
	done := make(chan struct{})
	w.syncing = done
	synced, readFront := w.front, w.readFront
	go func() {
		err := syncData(f)
		if err == nil && readFront != nil {
			if end := min(synced, readFront()); end > 0 {
				dropCached(f, end)
			}
		}
		w.mu.Lock()
		if err != nil && w.err == nil {
			w.err = err
		}
		w.syncing = nil
		w.mu.Unlock()
		close(done)
	}()
}

// gather records that bytes [off, off+n) were written. Once the bytes it
// recorded since it last returned ok reach WritebackStep, it returns the
// span they lie in and ok, and starts gathering anew. Bytes still gathered
// at Commit are synced there.
func (w *Writeback) gather(off, n int64) (from, length int64, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.bytes == 0 {
		w.dirty = span{off, off + n}
	} else {
		w.dirty = span{min(w.dirty.off, off), max(w.dirty.end, off+n)}
	}
	w.bytes += n
	if w.bytes < WritebackStep {
		return 0, 0, false
	}
	r := w.dirty
	w.dirty, w.bytes = span{}, 0
	return r.off, r.end - r.off, true
}

// Wait waits for the early sync in flight, if any, and returns the first
// error an early sync met. Call it before the file's final sync and before
// closing the file.
func (w *Writeback) Wait() error {
	w.mu.Lock()
	done := w.syncing
	w.mu.Unlock()
	if done != nil {
		<-done
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// syncData syncs f's data; tests count the calls.
var syncData = syncFileData

// dropCached drops f's clean pages before offset end from the page cache;
// tests record the calls.
var dropCached = dropFileCache

// dropFileCache drops f's clean pages before offset end from the page
// cache (posix_fadvise POSIX_FADV_DONTNEED where the system has it),
// holding f open while it runs. It is a hint; errors are ignored.
func dropFileCache(f *os.File, end int64) {
	if rc, err := f.SyscallConn(); err == nil {
		rc.Control(func(fd uintptr) { dropPages(fd, 0, end) })
	}
}

// syncFileData syncs f's data (fdatasync where the system has it), holding
// f open while it runs.
func syncFileData(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = datasync(fd) }); err != nil {
		return err
	}
	return serr
}
