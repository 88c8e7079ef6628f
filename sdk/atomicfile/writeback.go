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
// An early sync's error is kept for Wait: the kernel reports a failed
// writeback to one sync of an open file only, so the final fsync would not
// see it. Where sync_file_range is not available it does nothing. Its zero
// value is ready.
type Writeback struct {
	mu      sync.Mutex
	dirty   span          // written since their writeback last started
	bytes   int64         // the bytes written in dirty
	started int64         // bytes whose writeback started since the last early sync
	syncing chan struct{} // closed when the early sync in flight ends; nil when none runs
	err     error         // the first early sync's error
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
	if w.started < EarlySyncStep || w.syncing != nil {
		return
	}
	w.started = 0
	done := make(chan struct{})
	w.syncing = done
	go func() {
		err := syncData(f)
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
