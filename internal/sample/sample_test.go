package sample

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluice-ml/sluice/sdk/codec"
	st "github.com/sluice-ml/sluice/sdk/safetensors"
	"github.com/sluice-ml/sluice/sdk/tensor"
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

// referenceData builds every shard's bytes in memory, the straightforward
// way: one sequential pass of the generator over whole tensors.
func referenceData(t *testing.T, c Config) map[string][]byte {
	t.Helper()
	r := &rng{s: c.Seed}
	tensors := c.Tensors()
	data := map[string][]byte{}
	for _, tn := range tensors {
		vals := c.values(tn, r)
		n, _ := c.DType.ByteSize(uint64(len(vals)))
		b := make([]byte, n)
		if err := codec.EncodeFloat32(c.DType, b, vals); err != nil {
			t.Fatal(err)
		}
		data[tn.Name] = b
	}
	shards := max(c.Shards, 1)
	per := (len(tensors) + shards - 1) / shards
	out := map[string][]byte{}
	for s := 0; s < shards; s++ {
		lo, hi := s*per, min((s+1)*per, len(tensors))
		var entries []st.Tensor
		for _, tn := range tensors[lo:hi] {
			entries = append(entries, st.Tensor{Name: tn.Name, DType: c.DType, Shape: tn.Shape, Size: uint64(len(data[tn.Name]))})
		}
		l, err := st.PlanLayout(entries, map[string]string{"format": "pt"})
		if err != nil {
			t.Fatal(err)
		}
		name := "model.safetensors"
		if shards > 1 {
			name = fmt.Sprintf("model-%05d-of-%05d.safetensors", s+1, shards)
		}
		buf := append([]byte(nil), l.Prefix...)
		for _, e := range l.Tensors {
			buf = append(buf, data[e.Name]...)
		}
		out[name] = buf
	}
	return out
}

// TestStreamingMatchesOneSequentialPass checks that generating tensors in
// pieces, in parallel, gives the bytes of one sequential pass over whole
// tensors, for every dtype and with tensors cut into many pieces.
func TestStreamingMatchesOneSequentialPass(t *testing.T) {
	defer func(n int) { chunkElems = n }(chunkElems)
	chunkElems = 1000 // not a divisor of any tensor size
	for _, dt := range []tensor.DType{tensor.BF16, tensor.F16, tensor.F32} {
		c := Default
		c.DType, c.Shards, c.Seed = dt, 3, 99
		dir := t.TempDir()
		if err := Write(dir, c); err != nil {
			t.Fatal(err)
		}
		for name, want := range referenceData(t, c) {
			got, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s: %s differs from the sequential reference", dt, name)
			}
		}
	}
}
