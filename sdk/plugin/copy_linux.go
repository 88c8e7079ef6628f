//go:build linux

package plugin

import (
	"errors"
	"fmt"
	"os"
	"runtime"

	"golang.org/x/sys/unix"

	"github.com/sluice-ml/sluice/sdk/atomicfile"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

var errUnsupported = errors.New("copy_file_range unsupported")

// kernelCopies caps the copy_file_range calls running at once over the
// process at the cores, so they do not take the cores from the goroutines
// that hash what they copied. Copies into one file take turns besides
// (writeTurns).
var kernelCopies = make(chan struct{}, runtime.GOMAXPROCS(0))

// copyStep is the most one copy_file_range call copies while it holds a
// slot of kernelCopies.
const copyStep = 64 << 20

func errorsIsUnsupported(err error) bool { return errors.Is(err, errUnsupported) }

// copyFileRange copies ref into dst at off inside the kernel, in its turn
// to write dst (writeTurns).
func copyFileRange(dst OutputFile, off int64, ref tensor.FileRef) error {
	src, done, err := openSource(dst, ref.Path)
	if err != nil {
		return err
	}
	defer done()
	job := &writeJob{off: off, n: int64(ref.Length), src: src, path: ref.Path, srcOff: int64(ref.Offset)}
	writeTurns.inTurn(dst, job)
	return job.err
}

// makeCopies makes jobs, copies that lie end to end in dst and in one
// source file, with as few copy_file_range calls as it can, and sets each
// job's err. Once a call fails, each job not yet whole is copied on its
// own, so that its error is its own.
func makeCopies(dst OutputFile, jobs []*writeJob) {
	first, last := jobs[0], jobs[len(jobs)-1]
	if len(jobs) == 1 {
		first.err = copyRange(dst, first)
		return
	}
	total := last.off + last.n - first.off
	roff, woff := first.srcOff, first.off
	left := total
	for left > 0 {
		n, err := copyStepOf(dst, first.src, &roff, &woff, left)
		if err != nil || n == 0 {
			break
		}
		left -= int64(n)
	}
	for _, j := range jobs {
		if j.off+j.n-first.off > total-left {
			j.err = copyRange(dst, j)
		}
	}
}

// copyRange makes the copy job on its own.
func copyRange(dst OutputFile, job *writeJob) error {
	roff, woff, left := job.srcOff, job.off, job.n
	for left > 0 {
		c, err := copyStepOf(dst, job.src, &roff, &woff, left)
		if err != nil {
			if left == job.n && (err == unix.EXDEV || err == unix.ENOSYS || err == unix.EINVAL || err == unix.EOPNOTSUPP) {
				return errUnsupported
			}
			return fmt.Errorf("copying %s [%d, +%d): %w", job.path, job.srcOff, job.n, err)
		}
		if c == 0 {
			return fmt.Errorf("copying %s: source ended %d bytes early", job.path, left)
		}
		left -= int64(c)
	}
	return nil
}

// writeVectored writes the bytes of jobs, which lie end to end, with
// pwritev calls, when dst's writes are its file's (an *os.File, an
// *atomicfile.File, the host's view of a sink's file), and returns how many
// jobs from the first it wrote whole.
func writeVectored(dst OutputFile, jobs []*writeJob) int {
	switch dst.(type) {
	case *os.File, *atomicfile.File, *directFile:
	default:
		return 0 // its WriteAt may do more
	}
	bufs := make([][]byte, len(jobs))
	for i, j := range jobs {
		bufs[i] = j.data
	}
	off := jobs[0].off
	for len(bufs) > 0 {
		n, err := pwritevCall(int(dst.Fd()), bufs, off)
		if err != nil || n <= 0 {
			break
		}
		off += int64(n)
		for n > 0 && len(bufs) > 0 {
			if n < len(bufs[0]) {
				bufs[0] = bufs[0][n:]
				break
			}
			n -= len(bufs[0])
			bufs = bufs[1:]
		}
	}
	whole := len(jobs) - len(bufs)
	for _, j := range jobs[:whole] {
		j.written = len(j.data)
	}
	return whole
}

// pwritevCall is pwritev; tests count the calls.
var pwritevCall = unix.Pwritev

// copyStepOf makes one copy_file_range call of at most copyStep of the left
// bytes, holding a slot of kernelCopies.
func copyStepOf(dst OutputFile, src *os.File, roff, woff *int64, left int64) (int, error) {
	kernelCopies <- struct{}{}
	defer func() { <-kernelCopies }()
	return copyFileRangeCall(int(src.Fd()), roff, int(dst.Fd()), woff, int(min(left, copyStep)), 0)
}

// copyFileRangeCall is copy_file_range; tests count the calls.
var copyFileRangeCall = unix.CopyFileRange
