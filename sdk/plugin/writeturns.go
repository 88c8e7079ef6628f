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
// A write waiting for its turn lets the holder of the turn make it: when a
// turn ends, the goroutine ending it makes the writes of lowest offset
// waiting, those that lie end to end in the output in one system call (one
// copy_file_range for copies from one source, one pwritev for bytes),
// before it hands the turn on. A model of tens of thousands of small
// tensors was otherwise written one goroutine switch and one system call a
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
	job  *writeJob
	wake chan struct{} // closed once job is made, or the turn is the waiter's
}

// writeJob is one write into an output at off: data, or a copy of n bytes
// of the file src from srcOff when data is nil.
type writeJob struct {
	off  int64
	n    int64
	data []byte

	src    *os.File
	path   string // src's
	srcOff int64

	made    bool  // the holder of a turn made it; written and err are its outcome
	written int   // bytes of data written
	err     error // errUnsupported when copy_file_range cannot copy it
}

// follows reports whether j starts where prev ends in the output, both
// bytes or both copies from one source, where prev's source bytes end.
func (j *writeJob) follows(prev *writeJob) bool {
	if j.off != prev.off+prev.n || (j.data == nil) != (prev.data == nil) {
		return false
	}
	return j.data != nil || j.path == prev.path && j.srcOff == prev.srcOff+prev.n
}

// Bounds of what the holder of a turn writes for waiters before it hands
// the turn on: at most servedJobs writes, of servedBytes in all, so that its
// own caller goes on. A write larger than what is left of servedBytes is
// left to its own goroutine: for a tensor of megabytes, waking it costs
// little against its write, while its holder would otherwise tell the sink
// of its own write (which a digest following the writes waits for) only
// once the other is done.
const (
	servedJobs  = 256
	servedBytes = 4 << 20
)

// inTurn makes job in its turn to write f, or has the holder of the turn
// make it (see writeTurns). Its outcome is in job.
func (t *turnTable) inTurn(f OutputFile, job *writeJob) {
	t.mu.Lock()
	if waiting, busy := t.files[f]; busy {
		w := turnWaiter{job: job, wake: make(chan struct{})}
		i, _ := slices.BinarySearchFunc(waiting, job.off, func(w turnWaiter, off int64) int { return cmp.Compare(w.job.off, off) })
		t.files[f] = slices.Insert(waiting, i, w)
		t.mu.Unlock()
		<-w.wake
		if job.made {
			return
		}
	} else {
		t.files[f] = nil
		t.mu.Unlock()
	}
	defer t.pass(f)
	makeJobs(f, []*writeJob{job})
}

// pass makes the writes of lowest offset waiting for f's turn, as many as
// the bounds allow (servedJobs, servedBytes), then hands the turn to the
// next waiter, or frees it.
func (t *turnTable) pass(f OutputFile) {
	var run []*writeJob
	var woken []chan struct{}
	served, bytes := 0, int64(0)
	for ; ; served += len(run) {
		t.mu.Lock()
		waiting := t.files[f]
		if len(waiting) == 0 {
			delete(t.files, f)
			t.mu.Unlock()
			return
		}
		if served >= servedJobs || bytes+waiting[0].job.n > servedBytes {
			t.files[f] = waiting[1:]
			t.mu.Unlock()
			close(waiting[0].wake)
			return
		}
		run, woken = run[:0], woken[:0]
		for _, w := range waiting {
			if len(run) > 0 && (!w.job.follows(run[len(run)-1]) || served+len(run) >= servedJobs || bytes+w.job.n > servedBytes) {
				break
			}
			run, woken = append(run, w.job), append(woken, w.wake)
			bytes += w.job.n
		}
		t.files[f] = waiting[len(run):]
		t.mu.Unlock()
		makeJobs(f, run)
		for i, j := range run {
			j.made = true
			close(woken[i])
		}
	}
}

// makeJobs makes jobs, which lie end to end in dst, all bytes or all copies
// from one source, with as few system calls as it can, and sets each job's
// outcome. Once a call fails, each job not yet whole is made on its own, so
// that its error is its own.
func makeJobs(dst OutputFile, jobs []*writeJob) {
	if jobs[0].data == nil {
		makeCopies(dst, jobs)
		return
	}
	whole := 0
	if len(jobs) > 1 {
		whole = writeVectored(dst, jobs)
	}
	for _, j := range jobs[whole:] {
		j.written, j.err = dst.WriteAt(j.data, j.off)
	}
}
