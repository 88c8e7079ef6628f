//go:build linux

package plugin

import (
	"errors"
	"fmt"
	"os"
	"runtime"

	"golang.org/x/sys/unix"

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
	return writeTurns.copyInTurn(dst, &copyJob{src: src, path: ref.Path, srcOff: int64(ref.Offset), off: off, n: int64(ref.Length)})
}

// makeCopies makes jobs, which lie end to end in dst and in one source
// file, with as few copy_file_range calls as it can, and sets each job's
// err. Once a call fails, each job not yet whole is made on its own, so
// that its error is its own.
func makeCopies(dst OutputFile, jobs []*copyJob) {
	first := jobs[0]
	if len(jobs) == 1 {
		first.err = copyRange(dst, first, first.srcOff, first.off, first.n)
		return
	}
	last := jobs[len(jobs)-1]
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
	copied := total - left
	for _, j := range jobs {
		if j.off+j.n-first.off > copied {
			j.err = copyRange(dst, j, j.srcOff, j.off, j.n)
		}
	}
}

// copyRange copies n bytes of job's source from roff to woff in dst.
func copyRange(dst OutputFile, job *copyJob, roff, woff, n int64) error {
	left := n
	for left > 0 {
		c, err := copyStepOf(dst, job.src, &roff, &woff, left)
		if err != nil {
			if left == n && (err == unix.EXDEV || err == unix.ENOSYS || err == unix.EINVAL || err == unix.EOPNOTSUPP) {
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

// copyStepOf makes one copy_file_range call of at most copyStep of the left
// bytes, holding a slot of kernelCopies.
func copyStepOf(dst OutputFile, src *os.File, roff, woff *int64, left int64) (int, error) {
	kernelCopies <- struct{}{}
	defer func() { <-kernelCopies }()
	return copyFileRangeCall(int(src.Fd()), roff, int(dst.Fd()), woff, int(min(left, copyStep)), 0)
}

// copyFileRangeCall is copy_file_range; tests count the calls.
var copyFileRangeCall = unix.CopyFileRange
