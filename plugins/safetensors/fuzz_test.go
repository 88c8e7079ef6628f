package safetensors

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluice-ml/sluice/internal/fuzzseed"
	"github.com/sluice-ml/sluice/internal/sample"
	"github.com/sluice-ml/sluice/sdk/plugin"
)

// sampleIndex writes the sample checkpoint into a new directory and
// returns it with the bytes of its model.safetensors.index.json.
func sampleIndex(t testing.TB) (string, []byte) {
	t.Helper()
	dir := t.TempDir()
	if err := sample.Write(dir, sample.Default); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, IndexName))
	if err != nil {
		t.Fatal(err)
	}
	return dir, b
}

// indexSeeds are Hugging Face indexes over the sample checkpoint: the real
// one, and ones that name files out of the directory, missing shards, the
// wrong shard, or no weight_map.
func indexSeeds(t testing.TB) map[string][]byte {
	_, real := sampleIndex(t)
	one := func(file string) []byte {
		b, _ := json.Marshal(map[string]any{"metadata": map[string]any{"total_size": 1}, "weight_map": map[string]string{"model.norm.weight": file}})
		return b
	}
	return map[string][]byte{
		"sample":   real,
		"escape":   one("../model-00001-of-00002.safetensors"),
		"absolute": one("/etc/passwd"),
		"subdir":   one("sub/model.safetensors"),
		"missing":  one("model-00009-of-00009.safetensors"),
		"wrong":    one("model-00001-of-00002.safetensors"),
		"empty":    []byte(`{"weight_map":{}}`),
		"notjson":  []byte(`{"weight_map":`),
		"types":    []byte(`{"metadata":[],"weight_map":{"a":1}}`),
	}
}

// FuzzIndex reads a Hugging Face directory whose model.safetensors.index.json
// holds arbitrary bytes (the shards and side files of the sample checkpoint
// beside it): any index gives a manifest or a bad-input error, never a panic,
// and every tensor it describes lies in a shard of the directory.
func FuzzIndex(f *testing.F) {
	for _, b := range indexSeeds(f) {
		f.Add(b)
	}
	dir := f.TempDir()
	if err := sample.Write(dir, sample.Default); err != nil {
		f.Fatal(err)
	}
	idx := filepath.Join(dir, IndexName)
	f.Fuzz(func(t *testing.T, b []byte) {
		if err := os.WriteFile(idx, b, 0o644); err != nil {
			t.Fatal(err)
		}
		src, err := OpenSource(&SourceConfig{Path: dir})
		if err != nil {
			t.Fatal(err)
		}
		m, err := src.Describe(context.Background())
		if err != nil {
			if !plugin.IsBadInput(err) {
				t.Fatalf("a malformed index gave an error that does not blame the input: %v", err)
			}
			return
		}
		for _, ti := range m.Tensors {
			if filepath.Dir(ti.Location.Path) != dir {
				t.Fatalf("tensor %q read from %s, outside %s", ti.Name, ti.Location.Path, dir)
			}
			fi, err := os.Stat(ti.Location.Path)
			if err != nil || ti.Location.Offset+ti.Location.Length > uint64(fi.Size()) {
				t.Fatalf("tensor %q lies outside its shard: %+v", ti.Name, ti.Location)
			}
		}
	})
}

func TestFuzzSeeds(t *testing.T) {
	var list []fuzzseed.Seed
	for name, b := range indexSeeds(t) {
		list = append(list, fuzzseed.Seed{Name: name, Values: []any{b}})
	}
	fuzzseed.Sync(t, "FuzzIndex", list)
}
