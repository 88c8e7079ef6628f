package safetensors

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-ml/sluice/internal/sample"
	"github.com/sluice-ml/sluice/sdk/plugin"
	"github.com/sluice-ml/sluice/sdk/plugintest"
	st "github.com/sluice-ml/sluice/sdk/safetensors"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

func TestMain(m *testing.M) {
	plugintest.ServeIfChild(Plugin())
	os.Exit(m.Run())
}

var allDTypes = []tensor.DType{
	tensor.F64, tensor.F32, tensor.F16, tensor.BF16, tensor.F8E4M3, tensor.F8E5M2,
	tensor.I64, tensor.I32, tensor.I16, tensor.I8, tensor.U64, tensor.U32, tensor.U16, tensor.U8, tensor.Bool,
}

func TestConformance(t *testing.T) {
	md := &tensor.Metadata{}
	md.Set("format", tensor.StringValue("pt"))
	md.Set("note", tensor.StringValue("ünïcödé <&>"))
	plugintest.Run(t, plugintest.Suite{
		Plugin: Plugin(), Source: "safetensors", Sink: "safetensors", File: "model.safetensors",
		DTypes: allDTypes, Metadata: md,
		Digests: true,
		Header:  func(r io.ReaderAt, size int64) error { _, err := st.ReadHeader(r, size, "x"); return err },
	})
}

func describe(t *testing.T, cfg SourceConfig) *tensor.Manifest {
	t.Helper()
	src, err := OpenSource(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	m, err := src.Describe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestHuggingFaceDirectory(t *testing.T) {
	dir := t.TempDir()
	if err := sample.Write(dir, sample.Default); err != nil {
		t.Fatal(err)
	}
	m := describe(t, SourceConfig{Path: dir})
	want := sample.Default.Tensors()
	if len(m.Tensors) != len(want) {
		t.Fatalf("%d tensors, want %d", len(m.Tensors), len(want))
	}
	for _, key := range []string{tensor.MetaHFConfig, tensor.MetaHFTokenizer, tensor.MetaHFTokenizerConfig, tensor.MetaHFGenerationConfig} {
		v, ok := m.Metadata.Get(key)
		s, _ := v.Str()
		if !ok || !json.Valid([]byte(s)) {
			t.Errorf("metadata %s missing or not JSON", key)
		}
	}
	if m.Metadata.String("format") != "pt" {
		t.Errorf("__metadata__ not kept: %v", m.Metadata.Keys())
	}
	// The index file and the directory describe the same checkpoint.
	m2 := describe(t, SourceConfig{Path: filepath.Join(dir, IndexName)})
	if len(m2.Tensors) != len(m.Tensors) {
		t.Errorf("index path gives %d tensors, directory %d", len(m2.Tensors), len(m.Tensors))
	}
	only := describe(t, SourceConfig{Path: dir, Only: []string{"*.self_attn.q_proj.weight"}})
	if len(only.Tensors) != sample.Default.Layers {
		t.Errorf("only= selected %d tensors, want %d", len(only.Tensors), sample.Default.Layers)
	}
}

func TestIndexRefusesPathsOutsideItsDirectory(t *testing.T) {
	dir := t.TempDir()
	if err := sample.Write(dir, sample.Default); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "x.safetensors"), []byte("x"), 0o644)
	os.Symlink(filepath.Join(outside, "x.safetensors"), filepath.Join(dir, "link.safetensors"))
	for _, name := range []string{"../x.safetensors", "/etc/passwd", "sub/x.safetensors", "link.safetensors"} {
		idx := map[string]any{"weight_map": map[string]string{"model.norm.weight": name}}
		b, _ := json.Marshal(idx)
		os.WriteFile(filepath.Join(dir, IndexName), b, 0o644)
		src, _ := OpenSource(&SourceConfig{Path: dir})
		_, err := src.Describe(context.Background())
		if err == nil || !plugin.IsBadInput(err) {
			t.Errorf("index naming %q: got %v, want a bad-input error", name, err)
		}
	}
}

// Written through Write, or in place as a host writes the tensors a sink
// offers (plugin.DirectWriter), the shard set is the same.
func TestSinkWritesShardSetLikeHuggingFace(t *testing.T) {
	for _, direct := range []bool{false, true} {
		t.Run(map[bool]string{false: "Write", true: "in place"}[direct], func(t *testing.T) { testShardSet(t, direct) })
	}
}

func testShardSet(t *testing.T, direct bool) {
	in := t.TempDir()
	if err := sample.Write(in, sample.Default); err != nil {
		t.Fatal(err)
	}
	m := describe(t, SourceConfig{Path: in})
	// Assign shards 1/2 and 2/2 alternately, as a shard stage would.
	for i := range m.Tensors {
		m.Tensors[i].SetAttr(tensor.AttrShard, tensor.FormatShard(i%2+1, 2))
	}
	out := filepath.Join(t.TempDir(), "model.safetensors")
	s, err := NewSink(&SinkConfig{Path: out})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	p, err := s.Plan(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Convert) != 0 || len(p.Drop) != 0 {
		t.Fatalf("plan converts %v and drops %v", p.Convert, p.Drop)
	}
	if err := s.Begin(ctx, m, plugin.BeginOptions{}); err != nil {
		t.Fatal(err)
	}
	targets := s.DirectTargets()
	if len(targets) != len(m.Tensors) {
		t.Fatalf("%d tensors offered to write in place, of %d", len(targets), len(m.Tensors))
	}
	if direct {
		for _, tg := range targets {
			ti, _ := m.Tensor(tg.Tensor)
			if _, err := tg.File.(io.WriterAt).WriteAt(readLoc(t, ti.Location), int64(tg.Offset)); err != nil {
				t.Fatal(err)
			}
			if err := s.WrittenDirect(tg.Tensor); err != nil {
				t.Fatal(err)
			}
		}
	} else {
		for _, ti := range m.Tensors {
			if err := s.Write(ctx, ti.Name, plugin.FileData(*ti.Location)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := s.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	outDir := filepath.Dir(out)
	for _, name := range []string{"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors", "model.safetensors.index.json", "config.json", "tokenizer.json"} {
		if _, err := os.Stat(filepath.Join(outDir, name)); err != nil {
			t.Errorf("missing %s: %v", name, err)
		}
	}
	idx, _ := os.ReadFile(filepath.Join(outDir, "model.safetensors.index.json"))
	if !bytes.HasPrefix(idx, []byte("{\n  \"metadata\": {\n    \"total_size\": ")) || !bytes.HasSuffix(idx, []byte("}\n")) {
		t.Errorf("index is not laid out as Hugging Face writes it:\n%s", idx)
	}
	back := describe(t, SourceConfig{Path: outDir})
	if len(back.Tensors) != len(m.Tensors) {
		t.Fatalf("read back %d tensors, want %d", len(back.Tensors), len(m.Tensors))
	}
	for _, ti := range m.Tensors {
		b, _ := back.Tensor(ti.Name)
		if !bytes.Equal(readLoc(t, ti.Location), readLoc(t, b.Location)) {
			t.Errorf("tensor %s changed", ti.Name)
		}
	}
}

func readLoc(t *testing.T, l *tensor.FileRef) []byte {
	f, err := os.Open(l.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, l.Length)
	if _, err := f.ReadAt(b, int64(l.Offset)); err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSinkPlanDecisions(t *testing.T) {
	m := &tensor.Manifest{}
	m.Metadata.Set("general.architecture", tensor.StringValue("llama"))
	m.Metadata.Set("llama.block_count", tensor.U32Value(2))
	m.Metadata.Set(tensor.MetaHFConfig, tensor.StringValue("{}"))
	m.Tensors = []tensor.TensorInfo{
		{Name: "q", DType: tensor.Q8_0, Shape: []uint64{2, 32}, Size: 68},
		{Name: "w", DType: tensor.BF16, Shape: []uint64{2, 2}, Size: 8},
		{Name: "lm_head.weight", DType: tensor.BF16, Shape: []uint64{2, 2}, Size: 8, Attrs: map[string]string{tensor.AttrTiedTo: "w"}},
	}
	s, err := NewSink(&SinkConfig{Path: filepath.Join(t.TempDir(), "m.safetensors"), DType: "f16"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Plan(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	conv := map[string]tensor.DType{}
	for _, c := range p.Convert {
		conv[c.Tensor] = c.To
	}
	if conv["q"] != tensor.F32 || conv["w"] != tensor.F16 {
		t.Errorf("conversions %v: want q → f32 (safetensors has no q8_0) and w → f16 (dtype)", conv)
	}
	if len(p.Drop) != 1 || p.Drop[0].Tensor != "lm_head.weight" {
		t.Errorf("drops %v, want the tied lm_head.weight", p.Drop)
	}
	var notes []string
	for _, n := range p.Notes {
		notes = append(notes, n.Msg)
	}
	if !strings.Contains(strings.Join(notes, "\n"), "llama.block_count") {
		t.Errorf("plan does not say the non-string metadata key is left out: %v", notes)
	}
	if _, err := NewSink(&SinkConfig{Path: "x.safetensors", DType: "q8_0"}); !plugin.IsBadConfig(err) {
		t.Errorf("dtype q8_0: got %v, want a config error", err)
	}
}

// The index decides which of a shard's tensors are read: a tensor it leaves
// out is not, and one it places in a shard that does not hold it is an
// error naming both.
func TestIndexDecidesEachShardsTensors(t *testing.T) {
	dir, b := sampleIndex(t)
	var idx hfIndex
	if err := json.Unmarshal(b, &idx); err != nil {
		t.Fatal(err)
	}
	writeIndex := func() {
		b, _ := json.Marshal(idx)
		if err := os.WriteFile(filepath.Join(dir, IndexName), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	home := idx.WeightMap["model.norm.weight"]
	delete(idx.WeightMap, "model.norm.weight")
	writeIndex()
	m := describe(t, SourceConfig{Path: dir})
	if len(m.Tensors) != len(sample.Default.Tensors())-1 {
		t.Errorf("%d tensors, want all but the one the index leaves out", len(m.Tensors))
	}
	if _, ok := m.Index()["model.norm.weight"]; ok {
		t.Error("the tensor the index leaves out was read")
	}
	other := ""
	for _, file := range idx.WeightMap {
		if file != home {
			other = file
		}
	}
	idx.WeightMap["model.norm.weight"] = other
	writeIndex()
	src, _ := OpenSource(&SourceConfig{Path: dir})
	_, err := src.Describe(context.Background())
	if err == nil || !plugin.IsBadInput(err) {
		t.Fatalf("a tensor placed in the wrong shard: got %v, want a bad-input error", err)
	}
	for _, want := range []string{"model.norm.weight", other, "does not hold it"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error %q does not name %q", err, want)
		}
	}
}

// TestDescribeManyTensors: a file of more tensors than describeEntries
// takes in one piece is described tensor for tensor as the header lists
// them, with the same descriptions a selection of them gets.
func TestDescribeManyTensors(t *testing.T) {
	n := parallelDescribeFrom + 3
	var hdr bytes.Buffer
	hdr.WriteString("{")
	for i := range n {
		if i > 0 {
			hdr.WriteString(",")
		}
		fmt.Fprintf(&hdr, `"t.%d":{"dtype":"U8","shape":[1,%d],"data_offsets":[%d,%d]}`, i, 1+i%2, i+i/2, i+i/2+1+i%2)
	}
	hdr.WriteString("}")
	dataSize := n + n/2
	file := make([]byte, 8, 8+hdr.Len()+dataSize)
	binary.LittleEndian.PutUint64(file, uint64(hdr.Len()))
	file = append(append(file, hdr.Bytes()...), make([]byte, dataSize)...)
	path := filepath.Join(t.TempDir(), "many.safetensors")
	if err := os.WriteFile(path, file, 0o644); err != nil {
		t.Fatal(err)
	}
	m := describe(t, SourceConfig{Path: path})
	if len(m.Tensors) != n {
		t.Fatalf("%d tensors, want %d", len(m.Tensors), n)
	}
	dataStart := uint64(8 + hdr.Len())
	for i, ti := range m.Tensors {
		size := uint64(1 + i%2)
		if ti.Name != fmt.Sprintf("t.%d", i) || ti.Size != size || ti.DType != tensor.U8 || len(ti.Shape) != 2 || ti.Shape[1] != size {
			t.Fatalf("tensor %d: %+v", i, ti)
		}
		if l := ti.Location; l == nil || l.Path != path || l.Offset != dataStart+uint64(i+i/2) || l.Length != size {
			t.Fatalf("tensor %d (%s) located at %+v", i, ti.Name, l)
		}
	}
	picked := describe(t, SourceConfig{Path: path, Only: []string{"t.1*"}})
	for _, p := range picked.Tensors {
		var i int
		fmt.Sscanf(p.Name, "t.%d", &i)
		if w := m.Tensors[i]; p.Name != w.Name || p.Size != w.Size || *p.Location != *w.Location {
			t.Errorf("%s selected: %+v at %+v, all: %+v at %+v", p.Name, p, p.Location, w, w.Location)
		}
	}
	if len(picked.Tensors) == 0 {
		t.Error("the selection took no tensor")
	}
}
