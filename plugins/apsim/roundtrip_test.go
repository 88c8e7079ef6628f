package apsim

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/sluice-ml/sluice/sdk/codec"
	"github.com/sluice-ml/sluice/sdk/plugin"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

func TestRoundTrip(t *testing.T) {
	c := sampleCheckpoint(t, 1)
	path := tempPath(t, "model.apsim")
	arts := mustSave(t, SinkConfig{Path: path, Metadata: map[string]string{"run": "r1", "arch": "mlp-override"}}, c)
	if len(arts) != 1 || arts[0].Path != path {
		t.Fatalf("artifacts %+v", arts)
	}
	fi, err := os.Stat(path)
	if err != nil || uint64(fi.Size()) != arts[0].Size {
		t.Fatalf("file size %v, artifact says %d (%v)", fi.Size(), arts[0].Size, err)
	}
	got, err := loadAll(t, SourceConfig{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	want := &ckptData{m: c.m.Clone(), data: c.data}
	want.m.Metadata.Set("arch", tensor.StringValue("mlp-override")) // config overrides in place
	want.m.Metadata.Set("run", tensor.StringValue("r1"))
	sameCheckpoint(t, got, want)
	// Key order is kept.
	if !reflect.DeepEqual(got.m.Metadata.Keys(), want.m.Metadata.Keys()) {
		t.Errorf("metadata order %v, want %v", got.m.Metadata.Keys(), want.m.Metadata.Keys())
	}
	// Saving what was loaded gives the same file, byte for byte.
	path2 := tempPath(t, "again.apsim")
	mustSave(t, SinkConfig{Path: path2}, got)
	b1, _ := os.ReadFile(path)
	b2, _ := os.ReadFile(path2)
	if !bytes.Equal(b1, b2) {
		t.Error("saving a loaded checkpoint does not reproduce the file")
	}
}

func TestDeterministicOutput(t *testing.T) {
	c := sampleCheckpoint(t, 2)
	a, b := tempPath(t, "a.apsim"), tempPath(t, "b.apsim")
	mustSave(t, SinkConfig{Path: a}, c)
	mustSave(t, SinkConfig{Path: b}, c)
	ba, _ := os.ReadFile(a)
	bb, _ := os.ReadFile(b)
	if !bytes.Equal(ba, bb) {
		t.Error("two saves of one checkpoint differ")
	}
}

// independentRead parses a safetensors file without sdk/safetensors: the
// 8-byte length, the JSON header, and each tensor's bytes.
type stEntry struct {
	DType       string    `json:"dtype"`
	Shape       []uint64  `json:"shape"`
	DataOffsets [2]uint64 `json:"data_offsets"`
}

func independentRead(t *testing.T, b []byte) (map[string]string, map[string]stEntry, map[string][]byte) {
	t.Helper()
	if len(b) < 8 {
		t.Fatal("file shorter than 8 bytes")
	}
	n := binary.LittleEndian.Uint64(b)
	if n%8 != 0 || 8+n > uint64(len(b)) {
		t.Fatalf("header length %d", n)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b[8:8+n], &raw); err != nil {
		t.Fatalf("header is not JSON: %v", err)
	}
	meta := map[string]string{}
	if err := json.Unmarshal(raw["__metadata__"], &meta); err != nil {
		t.Fatalf("__metadata__ is not an object of strings: %v", err)
	}
	delete(raw, "__metadata__")
	sizes := map[string]uint64{"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U8": 1, "BOOL": 1, "F8_E4M3": 1, "F8_E5M2": 1}
	entries := map[string]stEntry{}
	data := map[string][]byte{}
	var spans [][2]uint64
	for name, r := range raw {
		var e stEntry
		if err := json.Unmarshal(r, &e); err != nil {
			t.Fatalf("tensor %q: %v", name, err)
		}
		count := uint64(1)
		for _, d := range e.Shape {
			count *= d
		}
		if e.DataOffsets[1]-e.DataOffsets[0] != count*sizes[e.DType] || sizes[e.DType] == 0 {
			t.Errorf("tensor %q: %s %v does not fill data_offsets %v", name, e.DType, e.Shape, e.DataOffsets)
		}
		entries[name] = e
		data[name] = b[8+n+e.DataOffsets[0] : 8+n+e.DataOffsets[1]]
		spans = append(spans, e.DataOffsets)
	}
	sort.Slice(spans, func(i, j int) bool {
		return spans[i][0] < spans[j][0] || spans[i][0] == spans[j][0] && spans[i][1] < spans[j][1]
	})
	var next uint64
	for _, s := range spans {
		if s[0] != next {
			t.Errorf("data is not contiguous at %d", s[0])
		}
		next = s[1]
	}
	if 8+n+next != uint64(len(b)) {
		t.Errorf("data ends at %d, file at %d", 8+n+next, len(b))
	}
	return meta, entries, data
}

func TestReadableAsPlainSafetensors(t *testing.T) {
	c := sampleCheckpoint(t, 3)
	path := tempPath(t, "model.apsim")
	mustSave(t, SinkConfig{Path: path}, c)
	b, _ := os.ReadFile(path)
	meta, entries, data := independentRead(t, b)
	if meta["format"] != "apsi-model" || meta["version"] != "1" || !strings.HasPrefix(meta["apsi"], "sluice-apsim ") || len(meta["sha256"]) != 64 {
		t.Errorf("metadata %v", meta)
	}
	for _, k := range []string{"units", "qtensors", "metadata"} {
		if !json.Valid([]byte(meta[k])) {
			t.Errorf("%s is not JSON: %q", k, meta[k])
		}
	}
	var units map[string][]float64
	json.Unmarshal([]byte(meta["units"]), &units)
	if !reflect.DeepEqual(units["mass"], []float64{0, 1, 0, 0, 0, 0, 0}) {
		t.Errorf("units %v", units)
	}
	for _, ti := range c.m.Tensors {
		if !codec.IsQTensor(ti.DType) {
			if !bytes.Equal(data[ti.Name], c.data[ti.Name]) {
				t.Errorf("tensor %q: bytes differ", ti.Name)
			}
			continue
		}
		// A QTensor: codes under its name, scales under NAME__qscale.
		q, _ := codec.QTensorOf(&ti)
		codes, scales := entries[ti.Name], entries[ti.Name+"__qscale"]
		if scales.DType != "F32" || !slices.Equal(scales.Shape, q.ScaleShape()) || !slices.Equal(codes.Shape, q.CodesShape()) {
			t.Errorf("tensor %q: codes %+v, scales %+v", ti.Name, codes, scales)
		}
		flow := append(append([]byte{}, data[ti.Name+"__qscale"]...), data[ti.Name]...)
		if !bytes.Equal(flow, c.data[ti.Name]) {
			t.Errorf("tensor %q: scales+codes differ from the QTensor's bytes", ti.Name)
		}
	}
	// Decode the per-row int8 QTensor by hand: code × its row's scale.
	codes, scales := data["layers.1.W"], data["layers.1.W__qscale"]
	if entries["layers.1.W"].DType != "I8" {
		t.Fatalf("int8 codes stored as %s", entries["layers.1.W"].DType)
	}
	info, _ := c.m.Tensor("layers.1.W")
	want := make([]float32, 32)
	if err := codec.DecodeQTensor(info, want, c.data["layers.1.W"]); err != nil {
		t.Fatal(err)
	}
	for i := range 32 {
		s := math.Float32frombits(binary.LittleEndian.Uint32(scales[4*(i/8):]))
		if got := float32(int8(codes[i])) * s; got != want[i] {
			t.Errorf("element %d: %v by hand, %v by the codec", i, got, want[i])
		}
	}
}

// TestReadByPythonSafetensors reads the file with Hugging Face's safetensors
// package when Python has it.
func TestReadByPythonSafetensors(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	if exec.Command(py, "-c", "import safetensors, numpy").Run() != nil {
		t.Skip("python3 has no safetensors or numpy package")
	}
	c := sampleCheckpoint(t, 4)
	path := tempPath(t, "model.apsim")
	mustSave(t, SinkConfig{Path: path}, c)
	script := `
import sys, json
from safetensors import safe_open
with safe_open(sys.argv[1], framework="numpy") as f:
    out = {"metadata": f.metadata(), "tensors": {k: [f.get_slice(k).get_dtype(), f.get_slice(k).get_shape()] for k in f.keys()}}
    out["scale"] = f.get_tensor("layers.1.W__qscale").tolist()
print(json.dumps(out))
`
	out, err := exec.Command(py, "-c", script, path).CombinedOutput()
	if err != nil {
		t.Fatalf("python safetensors cannot read the file: %v\n%s", err, out)
	}
	var res struct {
		Metadata map[string]string
		Tensors  map[string][2]any
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if res.Metadata["format"] != "apsi-model" || res.Tensors["layers.1.W__qscale"][0] != "F32" || len(res.Tensors) != 23 {
		t.Errorf("python reads %s", out)
	}
}

func TestConversionsForOtherSinks(t *testing.T) {
	// A QTensor from an apsim source decodes to f32 from its TensorInfo
	// alone, which is what the core does for sinks that ask for f32.
	c := sampleCheckpoint(t, 5)
	path := tempPath(t, "model.apsim")
	mustSave(t, SinkConfig{Path: path}, c)
	got, err := loadAll(t, SourceConfig{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	for _, ti := range got.m.Tensors {
		if !codec.IsQTensor(ti.DType) {
			continue
		}
		n, _ := ti.Elements()
		dst := make([]float32, n)
		if err := codec.DecodeQTensor(&ti, dst, got.data[ti.Name]); err != nil {
			t.Errorf("tensor %q: %v", ti.Name, err)
		}
	}
	// The apsim sink expands ggml block types to f32 and says why.
	m := &tensor.Manifest{Tensors: []tensor.TensorInfo{{Name: "q", DType: tensor.Q8_0, Shape: []uint64{2, 32}, Size: 68}}}
	s, _ := NewSink(&SinkConfig{Path: tempPath(t, "x.apsim")})
	p, err := s.Plan(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Convert) != 1 || p.Convert[0].To != tensor.F32 || !strings.Contains(p.Convert[0].Reason, "q8_0") {
		t.Errorf("plan converts %+v", p.Convert)
	}
	if len(p.Files) != 1 || p.Files[0].Size == 0 {
		t.Errorf("planned files %+v", p.Files)
	}
}

func TestPlanRefusesNameCollisions(t *testing.T) {
	c := sampleCheckpoint(t, 6)
	c.addPlain(t, testRNG(), "emb__qscale", tensor.F32, []uint64{3, 3}, "")
	s, _ := NewSink(&SinkConfig{Path: tempPath(t, "x.apsim")})
	if _, err := s.Plan(context.Background(), c.m); err == nil || !strings.Contains(err.Error(), "collides") {
		t.Errorf("collision: %v", err)
	}
	bad := &tensor.Manifest{Tensors: []tensor.TensorInfo{{Name: "w", DType: tensor.F32, Shape: []uint64{2}, Size: 8, Attrs: map[string]string{tensor.AttrUnit: "kg"}}}}
	if _, err := s.Plan(context.Background(), bad); err == nil || !strings.Contains(err.Error(), "dimension vector") {
		t.Errorf("bad unit: %v", err)
	}
	bad.Tensors[0].Attrs = nil
	bad.Tensors[0].Size = 7
	if _, err := s.Plan(context.Background(), bad); err == nil {
		t.Error("wrong size accepted")
	}
}

func TestSinkRefusesWrongWrites(t *testing.T) {
	c := sampleCheckpoint(t, 7)
	ctx := context.Background()
	path := tempPath(t, "x.apsim")
	s, _ := NewSink(&SinkConfig{Path: path})
	if err := s.Begin(ctx, c.m, plugin.BeginOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(ctx, "nope", plugin.BytesData(nil)); err == nil {
		t.Error("unknown tensor accepted")
	}
	if err := s.Write(ctx, "mass", plugin.BytesData(make([]byte, 3))); err == nil {
		t.Error("short data accepted")
	}
	if _, err := s.Commit(ctx); err == nil || !strings.Contains(err.Error(), "never written") {
		t.Errorf("commit with missing tensors: %v", err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Error("a failed commit left the file")
	}
	entries, _ := os.ReadDir(strings.TrimSuffix(path, "x.apsim"))
	if len(entries) != 0 {
		t.Errorf("temporary files remain: %v", entries)
	}
}

func TestTree(t *testing.T) {
	names := []string{"layers.10.W", "layers.2.W", "layers.0.W", "layers.0.b", "layers.1.W", "mass", "enc.q", "enc", "layers.3.x.1", "layers.3.x.0"}
	for i := 4; i < 10; i++ {
		names = append(names, "layers."+string(rune('0'+i))+".W")
	}
	names = append(names, "layers.1.b")
	root := Tree(names)
	layers := root.Child("layers")
	if layers == nil || !layers.IsList() || len(layers.Children) != 11 {
		t.Fatalf("layers: %+v", layers)
	}
	// layers has more children than a node scans: they are indexed, and found
	// in the index after the list was sorted.
	if w := layers.Child("10").Child("W"); w == nil || w.Tensor != "layers.10.W" || layers.Child("11") != nil {
		t.Errorf("layers.10.W by key: %+v", w)
	}
	if l0 := layers.Children[0]; l0.IsList() || len(l0.Children) != 2 || l0.Children[0].Key != "W" || l0.Children[0].Tensor != "layers.0.W" {
		t.Errorf("layers.0: %+v", l0)
	}
	if x := layers.Children[3].Child("x"); !x.IsList() || x.Children[0].Tensor != "layers.3.x.0" {
		t.Errorf("layers.3.x: %+v", x)
	}
	if e := root.Child("enc"); e.Tensor != "enc" || e.Child("q").Tensor != "enc.q" {
		t.Errorf("enc: %+v", e)
	}
	if keys := []string{root.Children[0].Key, root.Children[1].Key, root.Children[2].Key}; !reflect.DeepEqual(keys, []string{"layers", "mass", "enc"}) {
		t.Errorf("record order %v", keys)
	}
	s := root.String()
	if !strings.Contains(s, "layers [11]\n  0 {}\n    W = layers.0.W\n") {
		t.Errorf("tree rendering:\n%s", s)
	}
	// Every name comes back as exactly one tensor node.
	var found []string
	root.Walk(func(n *Node, _ int) bool {
		if n.Tensor != "" {
			found = append(found, n.Tensor)
		}
		return true
	})
	sort.Strings(found)
	sort.Strings(names)
	if !reflect.DeepEqual(found, names) {
		t.Errorf("tree holds %v, want %v", found, names)
	}
}

func TestProbe(t *testing.T) {
	c := sampleCheckpoint(t, 8)
	path := tempPath(t, "model.apsim")
	mustSave(t, SinkConfig{Path: path}, c)
	if p := Probe(path); p != 95 {
		t.Errorf("Probe(apsim) = %d", p)
	}
	plain := tempPath(t, "x.safetensors")
	os.WriteFile(plain, append([]byte{8, 0, 0, 0, 0, 0, 0, 0}, "{}      "...), 0o644)
	if p := Probe(plain); p != 0 {
		t.Errorf("Probe(plain safetensors) = %d", p)
	}
	if p := Probe(tempPath(t, "missing.apsim")); p != 0 {
		t.Errorf("Probe(missing) = %d", p)
	}
	pl := Plugin()
	if err := pl.Validate(); err != nil {
		t.Fatal(err)
	}
	sk, _ := pl.Sink("apsim")
	for _, name := range []string{"key"} {
		if a, ok := sk.Schema.Attribute(name); !ok || !a.Sensitive {
			t.Errorf("sink attribute %s is not sensitive", name)
		}
	}
	src, _ := pl.Source("apsim")
	if a, ok := src.Schema.Attribute("key"); !ok || !a.Sensitive {
		t.Error("source attribute key is not sensitive")
	}
}
