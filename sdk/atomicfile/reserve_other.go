//go:build !linux

package atomicfile

import "os"

// reserve sets the file's size; without fallocate a full disk shows only
// when the bytes are written.
func reserve(f *os.File, size int64) error { return f.Truncate(size) }
