package apr

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluice-ml/sluice/internal/hfcache"
	"github.com/sluice-ml/sluice/sdk/plugin"
)

// TestShardsStayInTheirDirectory reads a sharded set stored as the Hugging
// Face cache stores files (links to ../../blobs/SHA), and refuses a set
// whose sibling shard is a link out of the directory or the cache
// repository.
func TestShardsStayInTheirDirectory(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	write(t, filepath.Join(dir, "model.apr"), WriteOptions{}, shardedModel())
	describe := func(p string) error {
		src, err := openSourceCfg(t, map[string]any{"path": p})
		if err != nil {
			return err
		}
		defer src.Close()
		_, err = src.Describe(ctx)
		return err
	}
	snap, err := hfcache.Make(t.TempDir(), "org/model", dir)
	if err != nil {
		t.Skipf("cannot build a cache layout: %v", err)
	}
	if err := describe(filepath.Join(snap, "model-00001-of-00003.apr")); err != nil {
		t.Fatalf("a sharded set in the cache layout: %v", err)
	}

	outside := filepath.Join(t.TempDir(), "model-00002-of-00003.apr")
	b, _ := os.ReadFile(filepath.Join(dir, "model-00002-of-00003.apr"))
	os.WriteFile(outside, b, 0o644)
	plain := t.TempDir()
	for _, n := range []string{"model-00001-of-00003.apr", "model-00003-of-00003.apr"} {
		b, _ := os.ReadFile(filepath.Join(dir, n))
		os.WriteFile(filepath.Join(plain, n), b, 0o644)
	}
	os.Symlink(outside, filepath.Join(plain, "model-00002-of-00003.apr"))
	evil, err := hfcache.Make(t.TempDir(), "org/evil", dir)
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(evil, "model-00002-of-00003.apr"))
	hfcache.Link(evil, "model-00002-of-00003.apr", outside)
	for _, d := range []string{plain, evil} {
		if err := describe(filepath.Join(d, "model-00001-of-00003.apr")); err == nil || !plugin.IsBadInput(err) {
			t.Errorf("%s: a sibling shard linked out of the directory: got %v, want a bad-input error", d, err)
		}
	}
}
