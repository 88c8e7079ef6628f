//go:build unix

package plugin

import "os"

// createSharedTemp backs an arena with an unlinked temporary file where
// memfd is unavailable.
func createSharedTemp(size int64) (*os.File, error) {
	f, err := os.CreateTemp("", "sluice-arena-*")
	if err != nil {
		return nil, err
	}
	os.Remove(f.Name())
	if err := f.Truncate(size); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
