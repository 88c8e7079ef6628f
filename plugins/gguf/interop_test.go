package gguf

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sluice-ml/sluice/sdk/tensor"
)

// interopDir returns testdata/interop when Node.js and the installed
// @huggingface/gguf package are available, or skips the test.
func interopDir(t testing.TB) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("Node.js (node) is not installed; skipping the @huggingface/gguf interop test")
	}
	dir, _ := filepath.Abs(filepath.Join("testdata", "interop"))
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@huggingface", "gguf", "package.json")); err != nil {
		t.Skip("@huggingface/gguf is not installed; run `npm ci` in plugins/gguf/testdata/interop to enable the interop test")
	}
	return dir
}

// jsView is what read.mjs prints for one file.
type jsView struct {
	Path             string   `json:"path"`
	Version          int      `json:"version"`
	TensorCount      string   `json:"tensorCount"`
	KVCount          string   `json:"kvCount"`
	LittleEndian     bool     `json:"littleEndian"`
	TensorDataOffset string   `json:"tensorDataOffset"`
	Keys             []string `json:"keys"`
	Metadata         map[string]struct {
		Type    uint32          `json:"type"`
		SubType *uint32         `json:"subType"`
		Value   json.RawMessage `json:"value"`
	} `json:"metadata"`
	Tensors []struct {
		Name   string   `json:"name"`
		NDims  int      `json:"nDims"`
		Shape  []string `json:"shape"`
		DType  uint32   `json:"dtype"`
		Offset string   `json:"offset"`
	} `json:"tensors"`
}

// normValue renders a value as read.mjs renders it.
func normValue(v tensor.Value) any {
	if v.Type() == tensor.TypeArray {
		out := []any{}
		for i := 0; i < v.Len(); i++ {
			out = append(out, normValue(v.Index(i)))
		}
		return out
	}
	switch v.Type() {
	case tensor.TypeF32, tensor.TypeF64:
		f, _ := v.Float()
		if math.IsNaN(f) {
			return "nan"
		}
		return fmt.Sprintf("%016x", math.Float64bits(f))
	case tensor.TypeBool:
		if b, _ := v.Bool(); b {
			return "1"
		}
		return "0"
	case tensor.TypeString:
		s, _ := v.Str()
		return s
	}
	if i, ok := v.Int(); ok {
		return strconv.FormatInt(i, 10)
	}
	u, _ := v.Uint()
	return strconv.FormatUint(u, 10)
}

// interopManifest covers every value type, empty and long arrays and
// tensors of many ggml types.
func interopManifest() (*tensor.Manifest, map[string][]byte) {
	m, data := smallManifest(
		TensorSpec{Name: "f32", DType: tensor.F32, Shape: []uint64{3, 5}},
		TensorSpec{Name: "f16", DType: tensor.F16, Shape: []uint64{7}},
		TensorSpec{Name: "bf16", DType: tensor.BF16, Shape: []uint64{2, 2, 2}},
		TensorSpec{Name: "q8_0", DType: tensor.Q8_0, Shape: []uint64{2, 64}},
		TensorSpec{Name: "q4_0", DType: tensor.Q4_0, Shape: []uint64{32}},
		TensorSpec{Name: "q4_K", DType: tensor.Q4_K, Shape: []uint64{1, 2, 256}},
		TensorSpec{Name: "q6_K", DType: tensor.Q6_K, Shape: []uint64{256}},
		TensorSpec{Name: "i8", DType: tensor.I8, Shape: []uint64{3}},
		TensorSpec{Name: "i16", DType: tensor.I16, Shape: []uint64{3}},
		TensorSpec{Name: "i32", DType: tensor.I32, Shape: []uint64{2, 3, 4, 5}},
		TensorSpec{Name: "i64", DType: tensor.I64, Shape: []uint64{3}},
		TensorSpec{Name: "f64", DType: tensor.F64, Shape: []uint64{3}},
		TensorSpec{Name: strings.Repeat("n", 63), DType: tensor.F32, Shape: []uint64{1}},
	)
	md := &m.Metadata
	md.Set("test.u8", tensor.U8Value(254))
	md.Set("test.i8", tensor.I8Value(-100))
	md.Set("test.u16", tensor.U16Value(65000))
	md.Set("test.i16", tensor.I16Value(-30000))
	md.Set("test.u32", tensor.U32Value(4000000000))
	md.Set("test.i32", tensor.I32Value(-2000000000))
	md.Set("test.u64", tensor.U64Value(18000000000000000000))
	md.Set("test.i64", tensor.I64Value(-9000000000000000000))
	md.Set("test.f32", tensor.F32Value(3.1415927))
	md.Set("test.f32_neg_zero", tensor.F32Value(float32(math.Copysign(0, -1))))
	md.Set("test.f32_denormal", tensor.F32Value(math.Float32frombits(1)))
	md.Set("test.f32_inf", tensor.F32Value(float32(math.Inf(1))))
	md.Set("test.f64", tensor.F64Value(math.E))
	md.Set("test.true", tensor.BoolValue(true))
	md.Set("test.false", tensor.BoolValue(false))
	md.Set("test.string", tensor.StringValue("héllo \"world\"\n\t€ 😀"))
	md.Set("test.empty", tensor.StringValue(""))
	md.Set("test.arr_i32", tensor.Int32Array([]int32{math.MinInt32, -1, 0, 1, math.MaxInt32}))
	md.Set("test.arr_f32", tensor.Float32Array([]float32{0, -1.5, 1e-30, math.MaxFloat32}))
	for _, et := range []tensor.ValueType{tensor.TypeU8, tensor.TypeI8, tensor.TypeU16, tensor.TypeI16, tensor.TypeU32, tensor.TypeU64, tensor.TypeI64, tensor.TypeF64, tensor.TypeBool} {
		raw := make([]byte, 3*et.Size())
		for i := range raw {
			raw[i] = byte(i * 37)
		}
		if et == tensor.TypeBool {
			raw = []byte{1, 0, 1}
		}
		if et == tensor.TypeF64 {
			raw = []byte{0, 0, 0, 0, 0, 0, 0xf0, 0x3f, 0, 0, 0, 0, 0, 0, 0x04, 0xc0, 1, 0, 0, 0, 0, 0, 0, 0}
		}
		v, _ := tensor.ArrayValue(et, raw)
		md.Set("test.arr_"+et.String(), v)
	}
	md.Set("test.arr_str", tensor.StringArray([]string{"", "a", "ünïcödé", "with\nnewline"}))
	md.Set("test.arr_empty_i32", tensor.Int32Array(nil))
	md.Set("test.arr_empty_str", tensor.StringArray(nil))
	vocab := make([]string, 3000)
	for i := range vocab {
		vocab[i] = fmt.Sprintf("tok%d▁", i)
	}
	md.Set("tokenizer.ggml.tokens", tensor.StringArray(vocab))
	return m, data
}

func TestInteropHuggingFaceGGUF(t *testing.T) {
	dir := interopDir(t)
	out := t.TempDir()
	var paths []string
	write := func(name string, m *tensor.Manifest, data map[string][]byte, cfg SinkConfig, conv convertFunc) {
		cfg.Path = filepath.Join(out, name)
		sink, err := NewSink(&cfg)
		if err != nil {
			t.Fatal(err)
		}
		arts, _, err := runPipeline(t, m, memOpen(data), sink, conv)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range arts {
			paths = append(paths, a.Path)
		}
	}
	m, data := interopManifest()
	write("all.gguf", m, data, SinkConfig{}, nil)
	write("align64.gguf", m, data, SinkConfig{Alignment: 64}, nil)
	split := m.Clone()
	for i := range split.Tensors {
		split.Tensors[i].SetAttr(tensor.AttrShard, tensor.FormatShard(1+i%2, 2))
	}
	write("split.gguf", split, data, SinkConfig{}, nil)
	hf, hfData := hfCheckpoint("llama")
	write("llama.gguf", hf, hfData, SinkConfig{Architecture: "auto"}, bf16ToF32)

	cmd := exec.Command("node", append([]string{"read.mjs"}, paths...)...)
	cmd.Dir = dir
	stdout, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("@huggingface/gguf failed to read our files: %v\n%s", err, stderr)
	}
	var views []jsView
	if err := json.Unmarshal(stdout, &views); err != nil {
		t.Fatalf("read.mjs output: %v", err)
	}
	if len(views) != len(paths) {
		t.Fatalf("%d results for %d files", len(views), len(paths))
	}
	for i, v := range views {
		t.Run(filepath.Base(paths[i]), func(t *testing.T) { compareJSView(t, paths[i], &v) })
	}
}

func compareJSView(t *testing.T, path string, v *jsView) {
	f := mustOpen(t, path)
	if v.Version != 3 || !v.LittleEndian || v.TensorCount != fmt.Sprint(len(f.Tensors)) || v.KVCount != fmt.Sprint(f.Metadata.Len()) {
		t.Errorf("header: version %d LE %v tensors %s kvs %s", v.Version, v.LittleEndian, v.TensorCount, v.KVCount)
	}
	if v.TensorDataOffset != fmt.Sprint(f.DataOffset) {
		t.Errorf("data offset %s, ours %d", v.TensorDataOffset, f.DataOffset)
	}
	if strings.Join(v.Keys, ",") != strings.Join(f.Metadata.Keys(), ",") {
		t.Errorf("keys %v, ours %v", v.Keys, f.Metadata.Keys())
	}
	f.Metadata.All(func(k string, val tensor.Value) bool {
		js, ok := v.Metadata[k]
		if !ok {
			t.Errorf("%s: missing", k)
			return true
		}
		if js.Type != uint32(val.Type()) || (val.Type() == tensor.TypeArray && (js.SubType == nil || *js.SubType != uint32(val.Elem()))) {
			t.Errorf("%s: type %d/%v, ours %s/%s", k, js.Type, js.SubType, val.Type(), val.Elem())
		}
		want, _ := json.Marshal(normValue(val))
		var got any
		json.Unmarshal(js.Value, &got)
		gotJSON, _ := json.Marshal(got)
		if string(gotJSON) != string(want) {
			t.Errorf("%s: value %s, ours %s", k, abbreviate(gotJSON), abbreviate(want))
		}
		return true
	})
	if len(v.Tensors) != len(f.Tensors) {
		t.Fatalf("%d tensors, ours %d", len(v.Tensors), len(f.Tensors))
	}
	for i, jt := range v.Tensors {
		ot := &f.Tensors[i]
		var ne []string
		for _, d := range ot.Ne {
			ne = append(ne, fmt.Sprint(d))
		}
		if jt.Name != ot.Name || jt.NDims != len(ot.Ne) || strings.Join(jt.Shape, ",") != strings.Join(ne, ",") ||
			jt.DType != ot.Type || jt.Offset != fmt.Sprint(ot.Offset) {
			t.Errorf("tensor %d: %+v, ours %s ne %v type %d offset %d", i, jt, ot.Name, ot.Ne, ot.Type, ot.Offset)
		}
	}
}

func abbreviate(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "…"
	}
	return string(b)
}
