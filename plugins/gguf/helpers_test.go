package gguf

import (
	"os"
	"path/filepath"
	"testing"
)

// refDir returns ../shared/ref/gguf relative to the module root, or skips the
// test when it is absent.
func refDir(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Skip("module root (go.mod) not found; reference data unavailable")
		}
		dir = parent
	}
	ref := filepath.Join(dir, "..", "shared", "ref", "gguf")
	if _, err := os.Stat(filepath.Join(ref, "sample.gguf")); err != nil {
		t.Skipf("ggml reference files not found at ../shared/ref/gguf from the module root (%v); skipping", err)
	}
	return ref
}
