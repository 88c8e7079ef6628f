package gguf

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/sluice-ml/sluice/internal/hfcache"
	"github.com/sluice-ml/sluice/sdk/plugin"
)

// TestSplitSetStaysInItsDirectory reads a split set stored as the Hugging
// Face cache stores files (links to ../../blobs/SHA), and refuses a set whose
// sibling shard is a link out of the directory (or out of the cache
// repository).
func TestSplitSetStaysInItsDirectory(t *testing.T) {
	dir := t.TempDir()
	_, _, paths := writeSplit(t, dir, "model", 0)
	snap, err := hfcache.Make(t.TempDir(), "org/model", dir)
	if err != nil {
		t.Skipf("cannot build a cache layout: %v", err)
	}
	set, err := OpenSet(filepath.Join(snap, filepath.Base(paths[0])))
	if err != nil {
		t.Fatalf("a split set in the cache layout: %v", err)
	}
	set.Close()

	outside := filepath.Join(t.TempDir(), filepath.Base(paths[1]))
	b, _ := os.ReadFile(paths[1])
	os.WriteFile(outside, b, 0o644)
	plain := t.TempDir()
	_, _, plainPaths := writeSplit(t, plain, "model", 0)
	os.Remove(plainPaths[1])
	os.Symlink(outside, plainPaths[1])
	evil, err := hfcache.Make(t.TempDir(), "org/evil", dir)
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(evil, filepath.Base(paths[1])))
	hfcache.Link(evil, filepath.Base(paths[1]), outside)
	for _, p := range []string{plainPaths[0], filepath.Join(evil, filepath.Base(paths[0]))} {
		set, err := OpenSet(p)
		if err == nil {
			set.Close()
		}
		if err == nil || !plugin.IsBadInput(err) {
			t.Errorf("%s: a sibling shard linked out of the directory: got %v, want a bad-input error", p, err)
		}
	}
}
