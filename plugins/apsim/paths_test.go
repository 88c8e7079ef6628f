package apsim

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/sluice-ml/sluice/internal/hfcache"
	"github.com/sluice-ml/sluice/sdk/plugin"
)

// TestHuggingFaceCacheLayout reads a sharded set stored as the hub's cache
// stores files (links to ../../blobs/SHA) and refuses one whose shard link
// leaves the cache repository.
func TestHuggingFaceCacheLayout(t *testing.T) {
	c := sampleCheckpoint(t, 51)
	dir := t.TempDir()
	arts := mustSave(t, SinkConfig{Path: filepath.Join(dir, "m.apsim"), Shard: "300B"}, c)
	if len(arts) < 3 {
		t.Fatalf("%d files; the test needs a set", len(arts))
	}
	snap, err := hfcache.Make(t.TempDir(), "org/m", dir)
	if err != nil {
		t.Skipf("cannot build a cache layout: %v", err)
	}
	idx := filepath.Base(arts[len(arts)-1].Path)
	got, err := loadAll(t, SourceConfig{Path: filepath.Join(snap, idx)})
	if err != nil {
		t.Fatalf("a set in the cache layout: %v", err)
	}
	sameCheckpoint(t, got, c)

	evil, err := hfcache.Make(t.TempDir(), "org/evil", dir)
	if err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "shard.apsim")
	b, _ := os.ReadFile(arts[0].Path)
	os.WriteFile(outside, b, 0o644)
	first := filepath.Base(arts[0].Path)
	os.Remove(filepath.Join(evil, first))
	if err := hfcache.Link(evil, first, outside); err != nil {
		t.Fatal(err)
	}
	if _, err := loadAll(t, SourceConfig{Path: filepath.Join(evil, idx)}); err == nil || !plugin.IsBadInput(err) {
		t.Errorf("a shard linked out of the cache repository: got %v, want a bad-input error", err)
	}
}
