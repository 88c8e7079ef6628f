package plugin

import (
	"cmp"
	"slices"
	"sync"
)

// writeTurns makes the writes CopyToFile makes to one file take turns,
// lowest offset first.
//
// A buffered write to a file holds the file's inode lock in the kernel
// (ext4, xfs and most others take it exclusively, and copy_file_range
// writes through the same path), so two writers of one file wait for each
// other however many cores there are, and the kernel's waiter spins on a
// core while the holder copies. Waiting here parks the goroutine instead and
// leaves the core to the goroutines that convert or hash.
//
// Handing the turn to the lowest offset waiting fills the file from its
// start, which is the order a digest following the writer
// (atomicfile.File.Final) can hash it in: with the turns in arrival order,
// tensors written side by side finish together at the end, and the digest
// waits for them and then hashes most of the file after the last write.
// Writes to different files still run at once.
var writeTurns = &turnTable{files: map[OutputFile][]turnWaiter{}}

// turnTable holds the turns of every file that has writes waiting or
// running: a file is in files while one of its writes runs, with the
// writes waiting for it sorted by offset.
type turnTable struct {
	mu    sync.Mutex
	files map[OutputFile][]turnWaiter
}

type turnWaiter struct {
	off  int64
	wake chan struct{}
}

// take waits for the turn to write f at off and returns the function that
// ends it.
func (t *turnTable) take(f OutputFile, off int64) (release func()) {
	t.mu.Lock()
	waiting, busy := t.files[f]
	if !busy {
		t.files[f] = nil
		t.mu.Unlock()
		return func() { t.pass(f) }
	}
	w := turnWaiter{off: off, wake: make(chan struct{})}
	i, _ := slices.BinarySearchFunc(waiting, off, func(w turnWaiter, off int64) int { return cmp.Compare(w.off, off) })
	t.files[f] = slices.Insert(waiting, i, w)
	t.mu.Unlock()
	<-w.wake
	return func() { t.pass(f) }
}

// pass hands f's turn to the waiter of lowest offset, or frees it.
func (t *turnTable) pass(f OutputFile) {
	t.mu.Lock()
	defer t.mu.Unlock()
	waiting := t.files[f]
	if len(waiting) == 0 {
		delete(t.files, f)
		return
	}
	t.files[f] = waiting[1:]
	close(waiting[0].wake)
}
