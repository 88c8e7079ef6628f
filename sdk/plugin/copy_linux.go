//go:build linux

package plugin

import (
	"errors"
	"fmt"
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

// copyFileRange copies ref into dst at off inside the kernel.
func copyFileRange(dst OutputFile, off int64, ref tensor.FileRef) error {
	src, done, err := openSource(dst, ref.Path)
	if err != nil {
		return err
	}
	defer done()
	roff := int64(ref.Offset)
	woff := off
	left := int64(ref.Length)
	// The whole range in one turn: the file fills in order, and the range
	// is final (and hashed) as early as it can be.
	release := writeTurns.take(dst, off)
	defer release()
	for left > 0 {
		kernelCopies <- struct{}{}
		n, err := unix.CopyFileRange(int(src.Fd()), &roff, int(dst.Fd()), &woff, int(min(left, copyStep)), 0)
		<-kernelCopies
		if err != nil {
			if left == int64(ref.Length) && (err == unix.EXDEV || err == unix.ENOSYS || err == unix.EINVAL || err == unix.EOPNOTSUPP) {
				return errUnsupported
			}
			return fmt.Errorf("copying %s [%d, +%d): %w", ref.Path, ref.Offset, ref.Length, err)
		}
		if n == 0 {
			return fmt.Errorf("copying %s: source ended %d bytes early", ref.Path, left)
		}
		left -= int64(n)
	}
	return nil
}
