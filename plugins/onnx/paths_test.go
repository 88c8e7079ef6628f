package onnx

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluice-ml/sluice/internal/hfcache"
	"github.com/sluice-ml/sluice/sdk/plugin"
)

// TestHuggingFaceCacheLayout reads a model with external data stored as the
// hub's cache stores files (onnx/model.onnx and its data are links to
// ../../../blobs/SHA), and refuses external data linked out of the cache
// repository.
func TestHuggingFaceCacheLayout(t *testing.T) {
	src := t.TempDir()
	for _, n := range []string{"model.onnx", "weights.data"} {
		b, err := os.ReadFile(filepath.Join("testdata", "external", n))
		if err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(filepath.Join(src, "onnx"), 0o755)
		os.WriteFile(filepath.Join(src, "onnx", n), b, 0o644)
	}
	describeAll := func(p string) (map[string][]byte, error) {
		s, err := NewSource(Config{Path: p})
		if err != nil {
			return nil, err
		}
		defer s.Close()
		m, err := s.Describe(context.Background())
		if err != nil {
			return nil, err
		}
		out := map[string][]byte{}
		for _, ti := range m.Tensors {
			b, err := read(t, s, ti.Name)
			if err != nil {
				return nil, err
			}
			out[ti.Name] = b
		}
		return out, nil
	}
	want, err := describeAll(filepath.Join(src, "onnx", "model.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	snap, err := hfcache.Make(t.TempDir(), "org/model", src)
	if err != nil {
		t.Skipf("cannot build a cache layout: %v", err)
	}
	got, err := describeAll(filepath.Join(snap, "onnx", "model.onnx"))
	if err != nil {
		t.Fatalf("a model in the cache layout: %v", err)
	}
	for name, b := range want {
		if !bytes.Equal(got[name], b) {
			t.Errorf("%s: bytes differ in the cache layout", name)
		}
	}

	evil, err := hfcache.Make(t.TempDir(), "org/evil", src)
	if err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "weights.data")
	b, _ := os.ReadFile(filepath.Join(src, "onnx", "weights.data"))
	os.WriteFile(outside, b, 0o644)
	os.Remove(filepath.Join(evil, "onnx", "weights.data"))
	hfcache.Link(evil, filepath.Join("onnx", "weights.data"), outside)
	if _, err := describeAll(filepath.Join(evil, "onnx", "model.onnx")); err == nil || !plugin.IsBadInput(err) {
		t.Errorf("external data linked out of the cache repository: got %v, want a bad-input error", err)
	}
}
