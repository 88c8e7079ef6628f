package sample

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestShippedSampleMatchesGenerator keeps testdata/sample in step with the
// generator: regenerate it with `go run ./internal/sample/mksample testdata/sample`.
func TestShippedSampleMatchesGenerator(t *testing.T) {
	dir := t.TempDir()
	if err := Write(dir, Default); err != nil {
		t.Fatal(err)
	}
	shipped := filepath.Join("..", "..", "testdata", "sample")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		want, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		got, err := os.ReadFile(filepath.Join(shipped, e.Name()))
		if err != nil {
			t.Errorf("shipped sample lacks %s", e.Name())
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("shipped %s differs from the generator's output; regenerate it", e.Name())
		}
	}
	shippedEntries, _ := os.ReadDir(shipped)
	if len(shippedEntries) != len(entries) {
		t.Errorf("shipped sample has %d files, the generator writes %d", len(shippedEntries), len(entries))
	}
}

func TestGeneratorIsDeterministic(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	cfg := Default
	cfg.Shards = 3
	cfg.Seed = 42
	if err := Write(a, cfg); err != nil {
		t.Fatal(err)
	}
	if err := Write(b, cfg); err != nil {
		t.Fatal(err)
	}
	ea, _ := os.ReadDir(a)
	for _, e := range ea {
		x, _ := os.ReadFile(filepath.Join(a, e.Name()))
		y, _ := os.ReadFile(filepath.Join(b, e.Name()))
		if !bytes.Equal(x, y) {
			t.Errorf("%s differs between two runs", e.Name())
		}
	}
}
