package safetensors

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluice-ml/sluice/internal/hfcache"
	"github.com/sluice-ml/sluice/internal/sample"
	"github.com/sluice-ml/sluice/sdk/plugin"
)

// TestHuggingFaceCacheLayout reads a checkpoint as the hub's cache stores it
// (snapshot files are links to ../../blobs/SHA) through the directory, the
// index and a shard, and refuses a snapshot whose link leaves the cache
// repository.
func TestHuggingFaceCacheLayout(t *testing.T) {
	src := t.TempDir()
	if err := sample.Write(src, sample.Default); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	snap, err := hfcache.Make(root, "org/tiny", src)
	if err != nil {
		t.Skipf("cannot build a cache layout: %v", err)
	}
	want := describe(t, SourceConfig{Path: src})
	for _, name := range []string{"", IndexName, "model-00001-of-00002.safetensors"} {
		want := describe(t, SourceConfig{Path: filepath.Join(src, name)})
		got := describe(t, SourceConfig{Path: filepath.Join(snap, name)})
		if len(got.Tensors) != len(want.Tensors) {
			t.Errorf("%s in the cache: %d tensors, want %d", name, len(got.Tensors), len(want.Tensors))
		}
	}
	got := describe(t, SourceConfig{Path: snap})
	if got.Metadata.Len() != want.Metadata.Len() {
		t.Errorf("the side files were not all carried from the cache: %v vs %v", got.Metadata.Keys(), want.Metadata.Keys())
	}

	// A shard, a side file, or the single model file linked out of the repository.
	secret := filepath.Join(root, "secret.safetensors")
	b, _ := os.ReadFile(filepath.Join(src, "model-00002-of-00002.safetensors"))
	os.WriteFile(secret, b, 0o644)
	os.WriteFile(filepath.Join(root, "secret.json"), []byte(`{"secret": true}`), 0o644)
	for _, tc := range []struct{ name, file, target string }{
		{"shard", "model-00002-of-00002.safetensors", secret},
		{"side file", "config.json", filepath.Join(root, "secret.json")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap, err := hfcache.Make(t.TempDir(), "org/evil", src)
			if err != nil {
				t.Fatal(err)
			}
			os.Remove(filepath.Join(snap, tc.file))
			if err := hfcache.Link(snap, tc.file, tc.target); err != nil {
				t.Fatal(err)
			}
			s, err := OpenSource(&SourceConfig{Path: snap})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Describe(context.Background()); err == nil || !plugin.IsBadInput(err) {
				t.Errorf("a snapshot %s linked out of the cache repository: got %v, want a bad-input error", tc.file, err)
			}
		})
	}
	t.Run("single file", func(t *testing.T) {
		dir := t.TempDir()
		os.Symlink(secret, filepath.Join(dir, "model.safetensors"))
		s, err := OpenSource(&SourceConfig{Path: dir})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Describe(context.Background()); err == nil || !plugin.IsBadInput(err) {
			t.Errorf("a directory whose model.safetensors links out of it: got %v, want a bad-input error", err)
		}
	})
}
