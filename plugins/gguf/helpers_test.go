package gguf

import (
	"path/filepath"
	"testing"

	"github.com/sluice-ml/sluice/internal/refdata"
)

// refDir returns ../shared/ref/gguf relative to the module root, or skips the
// test when it is absent.
func refDir(t testing.TB) string {
	t.Helper()
	return filepath.Dir(refdata.Path(t, "ref", "gguf", "sample.gguf"))
}
