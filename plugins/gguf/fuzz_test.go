package gguf

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sluice-ml/sluice/sdk/tensor"
)

// seedFiles are small GGUF files built in code for the fuzz corpus.
func seedFiles() map[string][]byte {
	seeds := map[string][]byte{"vocab": vocabFile(5)}
	m, _ := smallManifest(
		TensorSpec{Name: "a", DType: tensor.F32, Shape: []uint64{3, 5}},
		TensorSpec{Name: "q", DType: tensor.Q8_0, Shape: []uint64{2, 64}},
	)
	m.Metadata.Set("test.arr", tensor.Int32Array([]int32{1, -2}))
	m.Metadata.Set("test.strs", tensor.StringArray([]string{"x", ""}))
	var specs []TensorSpec
	for _, t := range m.Tensors {
		specs = append(specs, TensorSpec{Name: t.Name, DType: t.DType, Shape: t.Shape})
	}
	for _, align := range []uint64{32, 64} {
		md := m.Metadata.Clone()
		if align != 32 {
			md.Set(KeyAlignment, tensor.U32Value(uint32(align)))
		}
		l, err := PlanFile(&md, specs, align)
		if err != nil {
			panic(err)
		}
		b := make([]byte, l.FileSize)
		copy(b, l.Header)
		seeds[fmt.Sprintf("written_align%d", align)] = b
	}
	r := header(3, 0, 1)
	r.str("nested").u32(9).u32(9).u64(2).u32(5).u64(1).u32(1).u32(8).u64(1).str("s")
	seeds["nested"] = r.Bytes()
	return seeds
}

// TestWriteFuzzCorpus regenerates testdata/fuzz/FuzzNewFile with -update:
// the seeds above plus the small ggml reference files when present.
func TestWriteFuzzCorpus(t *testing.T) {
	if !*update {
		t.Skip("run with -update to regenerate the fuzz seed corpus")
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzNewFile")
	os.MkdirAll(dir, 0o755)
	files := seedFiles()
	if ref := refDir(t); ref != "" {
		for _, n := range []string{"sample", "nested", "naive64", "nopad", "trunc", "v2"} {
			b, err := os.ReadFile(filepath.Join(ref, n+".gguf"))
			if err != nil {
				t.Fatal(err)
			}
			files["ref_"+n] = b
		}
	}
	for name, b := range files {
		var sb strings.Builder
		fmt.Fprintf(&sb, "go test fuzz v1\n[]byte(%q)\n", b)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(sb.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// FuzzNewFile checks that no input makes the reader panic or allocate
// without bound, that accepted files describe data inside themselves, and
// that a header the writer can hold re-encodes to a header that reads back
// the same.
func FuzzNewFile(f *testing.F) {
	for _, b := range seedFiles() {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := parse(data)
		if err != nil {
			return
		}
		var specs []TensorSpec
		for i := range file.Tensors {
			ti := &file.Tensors[i]
			if end := file.AbsOffset(ti) + ti.Size; end > uint64(len(data)) {
				t.Fatalf("tensor %s ends at %d, past the %d-byte file", ti.Name, end, len(data))
			}
			specs = append(specs, TensorSpec{Name: ti.Name, DType: ti.DType, Shape: ti.Shape()})
		}
		l, err := PlanFile(&file.Metadata, specs, file.Alignment)
		if err != nil {
			return // nested arrays, long names: readable, not writable
		}
		if bound := headerBound(&file.Metadata, specs); bound != len(l.Header) {
			t.Fatalf("PlanFile reserved %d bytes for a header of %d", bound, len(l.Header))
		}
		back, err := NewFile(&zeroTail{head: l.Header}, int64(l.FileSize), "again.gguf")
		if err != nil {
			t.Fatalf("re-encoded header does not parse: %v", err)
		}
		if !back.Metadata.Equal(&file.Metadata) && !boolsDiffer(&back.Metadata, &file.Metadata) {
			t.Fatalf("metadata changed in a round trip")
		}
		if len(back.Tensors) != len(file.Tensors) {
			t.Fatalf("%d tensors after a round trip, %d before", len(back.Tensors), len(file.Tensors))
		}
		for i := range back.Tensors {
			a, b := &back.Tensors[i], &file.Tensors[i]
			if a.Name != b.Name || a.DType != b.DType || !slices.Equal(a.Shape(), b.Shape()) || a.Offset != b.Offset || a.Size != b.Size {
				t.Fatalf("tensor %d changed in a round trip: %+v vs %+v", i, a, b)
			}
		}
	})
}

// boolsDiffer reports whether two metadata differ only in bool bytes other
// than 0/1, which the writer normalizes.
func boolsDiffer(a, b *tensor.Metadata) bool {
	if a.Len() != b.Len() {
		return false
	}
	for i, k := range a.Keys() {
		if b.Keys()[i] != k {
			return false
		}
		va, _ := a.Get(k)
		vb, _ := b.Get(k)
		if va.Equal(vb) {
			continue
		}
		ba, okA := va.Bool()
		bb, okB := vb.Bool()
		if okA && okB && ba == bb {
			continue
		}
		ra, _ := va.Raw()
		rb, _ := vb.Raw()
		if va.Elem() == tensor.TypeBool && vb.Elem() == tensor.TypeBool && len(ra) == len(rb) {
			same := true
			for j := range ra {
				same = same && (ra[j] != 0) == (rb[j] != 0)
			}
			if same {
				continue
			}
		}
		return false
	}
	return true
}

// zeroTail reads as head followed by zeros, so a re-encoded header can be
// parsed as a file of its full size without allocating that size.
type zeroTail struct{ head []byte }

func (z *zeroTail) ReadAt(p []byte, off int64) (int, error) {
	clear(p)
	if off < int64(len(z.head)) {
		copy(p, z.head[off:])
	}
	return len(p), nil
}
