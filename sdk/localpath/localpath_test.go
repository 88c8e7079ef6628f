package localpath

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluice-ml/sluice/internal/fuzzseed"
)

var nameSeeds = []string{"model.safetensors", "a/b.bin", "../x", "/abs", "a/./b", "a//b", `c:\x`, "."}

func TestFuzzSeeds(t *testing.T) {
	var seeds []fuzzseed.Seed
	for i, s := range nameSeeds {
		seeds = append(seeds, fuzzseed.Seed{Name: fmt.Sprintf("seed%d", i), Values: []any{s}})
	}
	fuzzseed.Sync(t, "FuzzCheckName", seeds)
}

func write(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func link(t *testing.T, target, p string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, p); err != nil {
		t.Skipf("symbolic links unavailable: %v", err)
	}
}

func TestCheckName(t *testing.T) {
	for _, ok := range []string{"model.safetensors", "onnx/weights.bin", "a..b", "..a"} {
		if err := CheckName("d", ok); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"", ".", "a/..", "/etc/passwd", "../x", "a/../../x", "a/..", "..", `a\b`, "a\x00b", "./../x"} {
		err := CheckName("d", bad)
		var le *Error
		if !errors.As(err, &le) || !le.BadInput() {
			t.Errorf("%q: got %v, want a *localpath.Error", bad, err)
		}
	}
}

func TestResolveRefusesLinksOutOfTheDirectory(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "model")
	write(t, filepath.Join(dir, "shard.bin"))
	write(t, filepath.Join(dir, "sub", "w.bin"))
	write(t, filepath.Join(root, "secret"))
	link(t, "shard.bin", filepath.Join(dir, "alias.bin"))
	link(t, "../secret", filepath.Join(dir, "escape.bin"))
	link(t, filepath.Join(root, "secret"), filepath.Join(dir, "abs.bin"))
	link(t, root, filepath.Join(dir, "up"))

	for _, ok := range []string{"shard.bin", "alias.bin", "sub/w.bin"} {
		p, err := Resolve(dir, ok)
		if err != nil {
			t.Errorf("%s refused: %v", ok, err)
		} else if p != filepath.Join(dir, ok) {
			t.Errorf("%s resolved to %s", ok, p)
		}
	}
	for _, bad := range []string{"escape.bin", "abs.bin", "up/secret"} {
		_, err := Resolve(dir, bad)
		var le *Error
		if !errors.As(err, &le) {
			t.Errorf("%s: got %v, want a refusal", bad, err)
		}
	}
	if _, err := Resolve(dir, "missing.bin"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file: got %v, want fs.ErrNotExist", err)
	}
}

// TestHuggingFaceCache builds the layout huggingface_hub writes:
// models--ORG--NAME/{blobs/SHA, snapshots/REV/FILE -> ../../blobs/SHA}.
func TestHuggingFaceCache(t *testing.T) {
	root := t.TempDir()
	repo := filepath.Join(root, "hub", "models--org--tiny")
	snap := filepath.Join(repo, "snapshots", "0123abc")
	write(t, filepath.Join(repo, "blobs", "aaaa"))
	write(t, filepath.Join(repo, "blobs", "bbbb"))
	write(t, filepath.Join(root, "hub", "models--org--other", "blobs", "cccc"))
	write(t, filepath.Join(root, "secret"))
	link(t, "../../blobs/aaaa", filepath.Join(snap, "model.safetensors"))
	link(t, "../../../blobs/bbbb", filepath.Join(snap, "onnx", "model.onnx_data"))
	link(t, "../../../models--org--other/blobs/cccc", filepath.Join(snap, "other.safetensors"))
	link(t, "../../../../secret", filepath.Join(snap, "escape.safetensors"))

	if _, err := Resolve(snap, "model.safetensors"); err != nil {
		t.Errorf("a snapshot file linked to its blob: %v", err)
	}
	if _, err := Resolve(filepath.Join(snap, "onnx"), "model.onnx_data"); err != nil {
		t.Errorf("a file in a snapshot subdirectory linked to its blob: %v", err)
	}
	for _, bad := range []string{"other.safetensors", "escape.safetensors"} {
		if _, err := Resolve(snap, bad); err == nil {
			t.Errorf("%s: a link out of the cache repository was accepted", bad)
		}
	}

	// The same links outside a cache repository are refused.
	plain := filepath.Join(root, "plain", "snapshots", "rev")
	write(t, filepath.Join(root, "plain", "blobs", "aaaa"))
	link(t, "../../blobs/aaaa", filepath.Join(plain, "model.safetensors"))
	if _, err := Resolve(plain, "model.safetensors"); err == nil {
		t.Errorf("a snapshots/ directory whose parent is not models--… was treated as a cache repository")
	}
}

func TestCacheRepo(t *testing.T) {
	for _, tc := range []struct {
		dir, repo string
	}{
		{"/c/hub/models--a--b/snapshots/r", "/c/hub/models--a--b"},
		{"/c/hub/datasets--a--b/snapshots/r/sub/deeper", "/c/hub/datasets--a--b"},
		{"/c/hub/models--a--b/snapshots", ""},
		{"/c/hub/models--a--b/blobs", ""},
		{"/c/x/snapshots/r", ""},
		{"/c/models--/snapshots/r", ""},
		{"/", ""},
	} {
		got, ok := CacheRepo(tc.dir)
		if got != tc.repo || ok != (tc.repo != "") {
			t.Errorf("CacheRepo(%s) = %q, %v; want %q", tc.dir, got, ok, tc.repo)
		}
	}
}

// FuzzCheckName checks that every name CheckName accepts stays under its
// directory once joined.
func FuzzCheckName(f *testing.F) {
	for _, s := range nameSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if CheckName("/d/e", name) != nil {
			return
		}
		p := filepath.Join("/d/e", name)
		if !within("/d/e", p) || p == "/d/e" {
			t.Fatalf("accepted %q, which joins to %s", name, p)
		}
	})
}
