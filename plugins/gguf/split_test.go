package gguf

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sluice-ml/sluice/sdk/plugin"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// writeSplit writes a model of five tensors in three shards and returns the
// manifest, the data and the shard paths.
func writeSplit(t *testing.T, dir, name string, alignment int) (*tensor.Manifest, map[string][]byte, []string) {
	t.Helper()
	m, data := smallManifest(
		TensorSpec{Name: "a", DType: tensor.F32, Shape: []uint64{3, 5}},
		TensorSpec{Name: "b", DType: tensor.F16, Shape: []uint64{7}},
		TensorSpec{Name: "c", DType: tensor.Q8_0, Shape: []uint64{2, 64}},
		TensorSpec{Name: "d", DType: tensor.I32, Shape: []uint64{4}},
		TensorSpec{Name: "e", DType: tensor.BF16, Shape: []uint64{2, 2, 2}},
	)
	m.Metadata.Set("test.key", tensor.U32Value(7))
	for i, s := range []string{"1/3", "1/3", "2/3", "3/3", "3/3"} {
		m.Tensors[i].SetAttr(tensor.AttrShard, s)
	}
	sink, err := NewSink(&SinkConfig{Path: filepath.Join(dir, name+".gguf"), Alignment: alignment})
	if err != nil {
		t.Fatal(err)
	}
	arts, _, err := runPipeline(t, m, memOpen(data), sink, nil)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, a := range arts {
		paths = append(paths, a.Path)
	}
	return m, data, paths
}

func TestSplitSetWriteAndRead(t *testing.T) {
	dir := t.TempDir()
	m, data, paths := writeSplit(t, dir, "model", 0)
	want := []string{"model-00001-of-00003.gguf", "model-00002-of-00003.gguf", "model-00003-of-00003.gguf"}
	if len(paths) != 3 {
		t.Fatalf("artifacts %v", paths)
	}
	for i, p := range paths {
		if filepath.Base(p) != want[i] {
			t.Errorf("shard %d is %s, want %s", i+1, filepath.Base(p), want[i])
		}
		f := mustOpen(t, p)
		keys := f.Metadata.Keys()
		n := len(keys)
		if n < 3 || keys[n-3] != KeySplitNo || keys[n-2] != KeySplitCount || keys[n-1] != KeySplitTensorsCount {
			t.Fatalf("shard %d keys %v: split keys must come last", i+1, keys)
		}
		no, _ := f.Metadata.Get(KeySplitNo)
		count, _ := f.Metadata.Get(KeySplitCount)
		total, _ := f.Metadata.Get(KeySplitTensorsCount)
		if no.Type() != tensor.TypeU16 || no.Bits() != uint64(i) || count.Type() != tensor.TypeU16 || count.Bits() != 3 ||
			total.Type() != tensor.TypeI32 || total.Bits() != 5 {
			t.Errorf("shard %d split keys %v %v %v", i+1, no, count, total)
		}
		if i == 0 && n != 5 || i > 0 && n != 3 {
			t.Errorf("shard %d has keys %v; metadata belongs in the first shard only", i+1, keys)
		}
		if err := f.CheckPadding(); err != nil {
			t.Error(err)
		}
	}
	// Any shard opens the whole set.
	for _, p := range paths {
		src, _ := NewSource(&SourceConfig{Path: p})
		got, err := src.Describe(context.Background())
		if err != nil {
			t.Fatalf("from %s: %v", filepath.Base(p), err)
		}
		if got.Metadata.Len() != 2 || got.Metadata.String("general.architecture") != "test" {
			t.Errorf("from %s: metadata keys %v", filepath.Base(p), got.Metadata.Keys())
		}
		if len(got.Tensors) != len(m.Tensors) {
			t.Fatalf("from %s: %d tensors", filepath.Base(p), len(got.Tensors))
		}
		for i, ti := range got.Tensors {
			if ti.Name != m.Tensors[i].Name || ti.DType != m.Tensors[i].DType || !slices.Equal(ti.Shape, m.Tensors[i].Shape) {
				t.Errorf("tensor %d: %s %s %v", i, ti.Name, ti.DType, ti.Shape)
			}
			rc, _ := src.Open(context.Background(), ti.Name)
			b, _ := io.ReadAll(rc)
			if !bytes.Equal(b, data[ti.Name]) {
				t.Errorf("tensor %s: data differs", ti.Name)
			}
		}
		src.Close()
	}
	// A split set written through a sink without shard attributes merges.
	merged := filepath.Join(dir, "merged.gguf")
	if _, _, err := copyGGUF(t, SourceConfig{Path: paths[1]}, SinkConfig{Path: merged}); err != nil {
		t.Fatal(err)
	}
	f := mustOpen(t, merged)
	if len(f.Tensors) != 5 || f.Metadata.Len() != 2 {
		t.Errorf("merged: %d tensors, keys %v", len(f.Tensors), f.Metadata.Keys())
	}
}

func TestSplitSetAlignmentInEveryShard(t *testing.T) {
	_, _, paths := writeSplit(t, t.TempDir(), "m", 64)
	for _, p := range paths {
		if f := mustOpen(t, p); f.Alignment != 64 {
			t.Errorf("%s: alignment %d", filepath.Base(p), f.Alignment)
		}
	}
	if _, err := OpenSet(paths[2]); err != nil {
		t.Error(err)
	}
}

func TestSplitSetErrors(t *testing.T) {
	dir := t.TempDir()
	_, _, paths := writeSplit(t, dir, "model", 0)

	// A shard under another name cannot find its siblings.
	renamed := filepath.Join(dir, "renamed.gguf")
	copyFile(t, paths[0], renamed)
	if _, err := OpenSet(renamed); err == nil || !strings.Contains(err.Error(), "-00001-of-00003.gguf") || !plugin.IsBadInput(err) {
		t.Errorf("renamed shard: %v", err)
	}

	// A shard from another set.
	other := t.TempDir()
	m, data := smallManifest(
		TensorSpec{Name: "x", DType: tensor.F32, Shape: []uint64{4}},
		TensorSpec{Name: "y", DType: tensor.F32, Shape: []uint64{4}},
		TensorSpec{Name: "z", DType: tensor.F32, Shape: []uint64{4}},
	)
	for i := range m.Tensors {
		m.Tensors[i].SetAttr(tensor.AttrShard, tensor.FormatShard(i+1, 3))
	}
	sink, _ := NewSink(&SinkConfig{Path: filepath.Join(other, "model.gguf")})
	if _, _, err := runPipeline(t, m, memOpen(data), sink, nil); err != nil {
		t.Fatal(err)
	}
	copyFile(t, filepath.Join(other, "model-00002-of-00003.gguf"), paths[1])
	if _, err := OpenSet(paths[0]); err == nil || !strings.Contains(err.Error(), "another set") || !strings.Contains(err.Error(), paths[1]) {
		t.Errorf("shard from another set: %v", err)
	}

	// A missing shard.
	_, _, paths = writeSplit(t, t.TempDir(), "model", 0)
	os.Remove(paths[2])
	if _, err := OpenSet(paths[0]); err == nil || !strings.Contains(err.Error(), "missing") || !strings.Contains(err.Error(), paths[2]) {
		t.Errorf("missing shard: %v", err)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestSplitPathNames(t *testing.T) {
	if got := SplitPath("out/model", 2, 12); got != "out/model-00002-of-00012.gguf" {
		t.Errorf("SplitPath = %s", got)
	}
	prefix, no, count, ok := ParseSplitPath("a/b-c-00003-of-00010.gguf")
	if !ok || prefix != "a/b-c" || no != 3 || count != 10 {
		t.Errorf("ParseSplitPath = %q %d %d %v", prefix, no, count, ok)
	}
	for _, bad := range []string{"m-0001-of-0003.gguf", "m-00004-of-00003.gguf", "m-00000-of-00003.gguf", "m-00001-of-00003.bin"} {
		if _, _, _, ok := ParseSplitPath(bad); ok {
			t.Errorf("ParseSplitPath(%q) accepted", bad)
		}
	}
}

// TestSplitThenMergeIsIdentical splits ggml's sample.gguf in three, reads the
// set back from its middle shard and writes it as one file: the bytes are
// ggml's again.
func TestSplitThenMergeIsIdentical(t *testing.T) {
	ref := refDir(t)
	src, _ := NewSource(&SourceConfig{Path: filepath.Join(ref, "sample.gguf")})
	defer src.Close()
	m, err := src.Describe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for i := range m.Tensors {
		m.Tensors[i].SetAttr(tensor.AttrShard, tensor.FormatShard(1+i*3/len(m.Tensors), 3))
	}
	dir := t.TempDir()
	sink, _ := NewSink(&SinkConfig{Path: filepath.Join(dir, "sample.gguf")})
	open := func(name string) (plugin.TensorData, error) {
		ti, _ := m.Tensor(name)
		return plugin.FileData(*ti.Location), nil
	}
	arts, _, err := runPipeline(t, m, open, sink, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(arts) != 3 {
		t.Fatalf("%d files", len(arts))
	}
	merged := filepath.Join(dir, "merged.gguf")
	if _, _, err := copyGGUF(t, SourceConfig{Path: arts[1].Path}, SinkConfig{Path: merged}); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(merged)
	want, _ := os.ReadFile(filepath.Join(ref, "sample.gguf"))
	if !bytes.Equal(got, want) {
		t.Errorf("split then merged differs from sample.gguf at byte %d", firstDiff(got, want))
	}
}
