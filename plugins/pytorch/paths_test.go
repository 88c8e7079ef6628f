package pytorch

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluice-ml/sluice/internal/hfcache"
	"github.com/sluice-ml/sluice/sdk/plugin"
)

// TestHuggingFaceCacheLayout reads the fixtures as the hub's cache stores
// them (snapshot files are links to ../../blobs/SHA) and refuses checkpoint,
// index entries and side files that lead out of the directory.
func TestHuggingFaceCacheLayout(t *testing.T) {
	for _, fixture := range []string{"hf_sharded", "hf_single"} {
		snap, err := hfcache.Make(t.TempDir(), "org/"+fixture, filepath.Join("testdata", fixture))
		if err != nil {
			t.Skipf("cannot build a cache layout: %v", err)
		}
		checkAgainst(t, Config{Path: snap}, fixture)
	}

	describe := func(p string) error {
		s, err := NewSource(Config{Path: p})
		if err != nil {
			return err
		}
		defer s.Close()
		_, err = s.Describe(context.Background())
		return err
	}
	outside := t.TempDir()
	secretBin := filepath.Join(outside, "secret.bin")
	b, _ := os.ReadFile(filepath.Join("testdata", "hf_single", "pytorch_model.bin"))
	os.WriteFile(secretBin, b, 0o644)
	os.WriteFile(filepath.Join(outside, "secret.json"), []byte(`{"secret": 1}`), 0o644)
	for _, tc := range []struct{ name, fixture, file, target string }{
		{"shard", "hf_sharded", "pytorch_model-00002-of-00002.bin", filepath.Join("testdata", "hf_sharded", "pytorch_model-00002-of-00002.bin")},
		{"single checkpoint", "hf_single", "pytorch_model.bin", secretBin},
		{"side file", "hf_sharded", "config.json", filepath.Join(outside, "secret.json")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap, err := hfcache.Make(t.TempDir(), "org/evil", filepath.Join("testdata", tc.fixture))
			if err != nil {
				t.Fatal(err)
			}
			target, _ := filepath.Abs(tc.target)
			if tc.name == "shard" {
				// The shard's bytes, but outside the cache repository.
				target = filepath.Join(outside, filepath.Base(tc.file))
				b, _ := os.ReadFile(tc.target)
				os.WriteFile(target, b, 0o644)
			}
			os.Remove(filepath.Join(snap, tc.file))
			if err := hfcache.Link(snap, tc.file, target); err != nil {
				t.Fatal(err)
			}
			if err := describe(snap); err == nil || !plugin.IsBadInput(err) {
				t.Errorf("%s linked out of the cache repository: got %v, want a bad-input error", tc.file, err)
			}
		})
	}

	t.Run("index entries", func(t *testing.T) {
		for _, name := range []string{"../secret.bin", secretBin, `sub\..\..\x.bin`, "."} {
			dir := filepath.Join(t.TempDir(), "m")
			os.MkdirAll(dir, 0o755)
			idx, _ := json.Marshal(map[string]any{"weight_map": map[string]string{"w": name}})
			os.WriteFile(filepath.Join(dir, "pytorch_model.bin.index.json"), idx, 0o644)
			os.WriteFile(filepath.Join(filepath.Dir(dir), "secret.bin"), b, 0o644)
			if err := describe(dir); err == nil || !plugin.IsBadInput(err) {
				t.Errorf("an index naming %q: got %v, want a bad-input error", name, err)
			}
		}
	})
}
