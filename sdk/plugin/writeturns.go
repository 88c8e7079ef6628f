package plugin

import (
	"cmp"
	"os"
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
//
// A copy of a file reference waiting for its turn (copyInTurn) lets the
// holder of the turn make it: when a turn ends and the writes of lowest
// offset waiting are copies, the goroutine ending it makes them, those that
// lie end to end in the output and in one source in one copy_file_range,
// before it hands the turn on. A model of tens of thousands of small
// tensors was otherwise copied one goroutine switch and one system call a
// tensor, the next writer woken only once the last was done.
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
	job  *copyJob // a copy the holder may make for the waiter; nil for other writes
}

// copyJob is a copy of a file reference into an output: n bytes from src at
// srcOff to off.
type copyJob struct {
	src    *os.File
	path   string // src's
	srcOff int64
	off    int64
	n      int64

	made bool  // the holder of a turn made it; err is its outcome
	err  error // errUnsupported when copy_file_range cannot copy it
}

// follows reports whether j starts where prev ends, in the output and in
// the same source file.
func (j *copyJob) follows(prev *copyJob) bool {
	return j.path == prev.path && j.off == prev.off+prev.n && j.srcOff == prev.srcOff+prev.n
}

// Bounds of what the holder of a turn copies for waiters before it hands
// the turn on: those that lie end to end in one call of at most copyRun
// bytes, and at most servedJobs of them over the calls, so that its own
// caller goes on.
const (
	copyRun    = 8 << 20
	servedJobs = 256
)

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
	t.waitLocked(f, waiting, turnWaiter{off: off, wake: make(chan struct{})})
	return func() { t.pass(f) }
}

// waitLocked queues w among f's waiting writes, by offset, unlocks t and
// waits until w is woken.
func (t *turnTable) waitLocked(f OutputFile, waiting []turnWaiter, w turnWaiter) {
	i, _ := slices.BinarySearchFunc(waiting, w.off, func(w turnWaiter, off int64) int { return cmp.Compare(w.off, off) })
	t.files[f] = slices.Insert(waiting, i, w)
	t.mu.Unlock()
	<-w.wake
}

// copyInTurn makes job in its turn, or has the holder of the turn make it
// (see writeTurns), and returns its outcome.
func (t *turnTable) copyInTurn(f OutputFile, job *copyJob) error {
	t.mu.Lock()
	if waiting, busy := t.files[f]; busy {
		t.waitLocked(f, waiting, turnWaiter{off: job.off, wake: make(chan struct{}), job: job})
		if job.made {
			return job.err
		}
	} else {
		t.files[f] = nil
		t.mu.Unlock()
	}
	defer t.pass(f)
	makeCopies(f, []*copyJob{job})
	return job.err
}

// pass makes the copies of lowest offset waiting for f's turn, as many as
// the bounds allow, then hands the turn to the next waiter, or frees it.
func (t *turnTable) pass(f OutputFile) {
	var run []*copyJob
	var woken []chan struct{}
	for served := 0; ; served += len(run) {
		t.mu.Lock()
		waiting := t.files[f]
		if len(waiting) == 0 {
			delete(t.files, f)
			t.mu.Unlock()
			return
		}
		if waiting[0].job == nil || served >= servedJobs {
			t.files[f] = waiting[1:]
			t.mu.Unlock()
			close(waiting[0].wake)
			return
		}
		run, woken = run[:0], woken[:0]
		size := int64(0)
		for _, w := range waiting {
			if w.job == nil || len(run) > 0 && (!w.job.follows(run[len(run)-1]) || size+w.job.n > copyRun) {
				break
			}
			run, woken = append(run, w.job), append(woken, w.wake)
			size += w.job.n
		}
		t.files[f] = waiting[len(run):]
		t.mu.Unlock()
		makeCopies(f, run)
		for i, j := range run {
			j.made = true
			close(woken[i])
		}
	}
}
