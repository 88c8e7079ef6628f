//go:build !linux

package plugin

import (
	"errors"
	"os"

	"github.com/sluice-ml/sluice/sdk/tensor"
)

var errUnsupported = errors.New("copy_file_range unsupported")

func errorsIsUnsupported(err error) bool { return errors.Is(err, errUnsupported) }

func copyFileRange(dst *os.File, off int64, ref tensor.FileRef) error { return errUnsupported }

// startWriteback does nothing where sync_file_range is not available.
func startWriteback(f *os.File, off, n int64) {}
