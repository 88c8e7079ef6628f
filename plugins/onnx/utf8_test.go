package onnx

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-ml/sluice/sdk/plugin"
)

// TestNamesMustBeUTF8 is a regression test: an initializer name of invalid
// UTF-8 was read, then made output formats whose names are UTF-8 (safetensors'
// JSON header) invalid when run in-process. It is now refused at its offset.
func TestNamesMustBeUTF8(t *testing.T) {
	p := filepath.Join(t.TempDir(), "m.onnx")
	os.WriteFile(p, modelBytes(rawF32("w\xff", 8, 2)), 0o644)
	s := openSource(t, Config{Path: p})
	_, err := s.Describe(context.Background())
	if err == nil || !plugin.IsBadInput(err) || !strings.Contains(err.Error(), "not valid UTF-8") || !strings.Contains(err.Error(), "at byte") {
		t.Errorf("got %v, want a format error at the name's offset", err)
	}
}
