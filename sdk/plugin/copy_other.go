//go:build !linux

package plugin

import (
	"errors"

	"github.com/sluice-ml/sluice/sdk/tensor"
)

var errUnsupported = errors.New("copy_file_range unsupported")

func errorsIsUnsupported(err error) bool { return errors.Is(err, errUnsupported) }

func copyFileRange(dst OutputFile, off int64, ref tensor.FileRef) error { return errUnsupported }
