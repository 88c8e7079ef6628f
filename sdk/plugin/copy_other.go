//go:build !linux

package plugin

import (
	"errors"

	"github.com/sluice-ml/sluice/sdk/tensor"
)

var errUnsupported = errors.New("copy_file_range unsupported")

func errorsIsUnsupported(err error) bool { return errors.Is(err, errUnsupported) }

func copyFileRange(dst OutputFile, off int64, ref tensor.FileRef) error { return errUnsupported }

// makeCopies cannot copy inside the kernel here.
func makeCopies(dst OutputFile, jobs []*writeJob) {
	for _, j := range jobs {
		j.err = errUnsupported
	}
}

// writeVectored leaves the jobs to WriteAt here.
func writeVectored(dst OutputFile, jobs []*writeJob) int { return 0 }
