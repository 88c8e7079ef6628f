//go:build !unix

package binio

import (
	"errors"
	"os"
)

// canMap reports whether View can map files here.
const canMap = false

// mapReadOnly is not available here: View copies.
func mapReadOnly(*os.File, int64) ([]byte, error) { return nil, errors.ErrUnsupported }
