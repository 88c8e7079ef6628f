package apsim

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sluice-ml/sluice/sdk/codec"
	"github.com/sluice-ml/sluice/sdk/plugin"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// checkpoint data for tests: a manifest and every tensor's bytes as they flow.
type ckptData struct {
	m    *tensor.Manifest
	data map[string][]byte
}

func randBytes(rng *rand.Rand, n uint64) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

func f32Bytes(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// addPlain adds a tensor of a fixed-geometry dtype with random bytes.
func (c *ckptData) addPlain(t *testing.T, rng *rand.Rand, name string, dt tensor.DType, shape []uint64, unit string) {
	t.Helper()
	n, err := dt.ShapeByteSize(shape)
	if err != nil {
		t.Fatal(err)
	}
	b := randBytes(rng, n)
	if dt == tensor.Bool {
		for i := range b {
			b[i] &= 1
		}
	}
	info := tensor.TensorInfo{Name: name, DType: dt, Shape: shape, Size: n}
	if unit != "" {
		info.SetAttr(tensor.AttrUnit, unit)
	}
	c.m.Tensors = append(c.m.Tensors, info)
	c.data[name] = b
}

// addQ adds a QTensor encoded from random normal values.
func (c *ckptData) addQ(t *testing.T, rng *rand.Rand, name string, dt tensor.DType, shape []uint64, s codec.QScaling, unit string) {
	t.Helper()
	q, err := codec.NewQTensor(dt, shape, s)
	if err != nil {
		t.Fatal(err)
	}
	src := make([]float32, q.Elements())
	for i := range src {
		src[i] = float32(rng.NormFloat64())
	}
	b, err := q.Encode(src)
	if err != nil {
		t.Fatal(err)
	}
	info := tensor.TensorInfo{Name: name}
	q.SetAttrs(&info)
	if unit != "" {
		info.SetAttr(tensor.AttrUnit, unit)
	}
	c.m.Tensors = append(c.m.Tensors, info)
	c.data[name] = b
}

// sampleCheckpoint builds a checkpoint with every kind of tensor and metadata
// value apsim keeps.
func sampleCheckpoint(t *testing.T, seed uint64) *ckptData {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	c := &ckptData{m: &tensor.Manifest{}, data: map[string][]byte{}}
	c.addPlain(t, rng, "layers.0.W", tensor.F32, []uint64{4, 8}, "")
	c.addPlain(t, rng, "layers.0.b", tensor.F16, []uint64{8}, "")
	c.addQ(t, rng, "layers.1.W", codec.QTInt8, []uint64{4, 8}, codec.QScaling{PerAxis: true, Axis: 0}, "")
	c.addPlain(t, rng, "layers.1.b", tensor.BF16, []uint64{8}, "")
	c.addPlain(t, rng, "mass", tensor.F32, []uint64{2}, "[0,1,0,0,0,0,0]")
	c.addQ(t, rng, "emb", codec.QTInt4, []uint64{3, 5}, codec.QScaling{Block: 2}, "[1,0,-2,0.5]")
	c.addQ(t, rng, "heads.fp8", codec.QTFP8E5M2, []uint64{2, 3}, codec.QScaling{}, "")
	c.addQ(t, rng, "heads.fp6", codec.QTFP6, []uint64{3, 7}, codec.QScaling{PerAxis: true, Axis: 1}, "")
	c.addQ(t, rng, "heads.fp4", codec.QTFP4, []uint64{5}, codec.QScaling{Block: 4}, "")
	c.addQ(t, rng, "heads.e4m3", codec.QTFP8E4M3, []uint64{2, 2}, codec.QScaling{}, "")
	c.addQ(t, rng, "heads.bf16", codec.QTBF16, []uint64{2, 2}, codec.QScaling{PerAxis: true, Axis: 1}, "")
	c.addPlain(t, rng, "steps", tensor.I64, []uint64{3}, "[0,0,1]")
	c.addPlain(t, rng, "flags", tensor.Bool, []uint64{2}, "")
	c.addPlain(t, rng, "scale", tensor.F64, []uint64{}, "")
	c.addPlain(t, rng, "empty", tensor.F32, []uint64{0, 3}, "")
	c.addPlain(t, rng, "fp8raw", tensor.F8E4M3, []uint64{4}, "")

	md := &c.m.Metadata
	md.Set("arch", tensor.StringValue("mlp"))
	md.Set("step", tensor.I64Value(12000))
	md.Set("lr", tensor.F32Value(3e-4))
	md.Set("nan", tensor.F64Value(math.Float64frombits(0x7ff8000000000123)))
	md.Set("negzero", tensor.F32Value(float32(math.Copysign(0, -1))))
	md.Set("u8", tensor.U8Value(255))
	md.Set("i8", tensor.I8Value(-128))
	md.Set("u64", tensor.U64Value(math.MaxUint64))
	md.Set("ok", tensor.BoolValue(true))
	md.Set("vocab", tensor.StringArray([]string{"a", "b\"", "ü"}))
	md.Set("scores", tensor.Float32Array([]float32{1, float32(math.Inf(-1)), -0.5}))
	nested, _ := tensor.NestedArray([]tensor.Value{tensor.Int32Array([]int32{1, 2}), tensor.StringArray([]string{"x"})})
	md.Set("nested", nested)
	md.Set("hf.config.json", tensor.StringValue(`{"model_type":"llama"}`))
	return c
}

// save writes c with a sink of the given configuration, writing tensors in
// reverse order, and returns the artifacts.
func save(t *testing.T, cfg SinkConfig, c *ckptData, opts plugin.BeginOptions) ([]plugin.Artifact, error) {
	t.Helper()
	ctx := context.Background()
	s, err := NewSink(&cfg)
	if err != nil {
		return nil, err
	}
	p, err := s.Plan(ctx, c.m)
	if err != nil {
		return nil, err
	}
	if !p.EmbedsSignature {
		t.Error("plan does not say the sink embeds signatures")
	}
	if len(p.Convert) != 0 {
		t.Errorf("plan converts %v", p.Convert)
	}
	if err := s.Begin(ctx, c.m, opts); err != nil {
		return nil, err
	}
	for i := len(c.m.Tensors) - 1; i >= 0; i-- {
		name := c.m.Tensors[i].Name
		if err := s.Write(ctx, name, plugin.BytesData(c.data[name])); err != nil {
			s.Abort(ctx)
			return nil, err
		}
	}
	return s.Commit(ctx)
}

func mustSave(t *testing.T, cfg SinkConfig, c *ckptData) []plugin.Artifact {
	t.Helper()
	arts, err := save(t, cfg, c, plugin.BeginOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return arts
}

// loadAll opens a source, describes it and reads every tensor, both through
// Open and, where set, through its Location.
func loadAll(t *testing.T, cfg SourceConfig) (*ckptData, error) {
	t.Helper()
	ctx := context.Background()
	src, err := OpenSource(&cfg)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	m, err := src.Describe(ctx)
	if err != nil {
		return nil, err
	}
	out := &ckptData{m: m.Clone(), data: map[string][]byte{}}
	for _, ti := range m.Tensors {
		r, err := src.Open(ctx, ti.Name)
		if err != nil {
			return nil, err
		}
		b, err := io.ReadAll(r)
		r.Close()
		if err != nil {
			return nil, err
		}
		if uint64(len(b)) != ti.Size {
			t.Errorf("tensor %q: Open gives %d bytes, Size says %d", ti.Name, len(b), ti.Size)
		}
		if ti.Location != nil {
			fh, err := os.Open(ti.Location.Path)
			if err != nil {
				t.Fatal(err)
			}
			loc := make([]byte, ti.Location.Length)
			_, err = fh.ReadAt(loc, int64(ti.Location.Offset))
			fh.Close()
			if err != nil && len(loc) > 0 {
				t.Fatal(err)
			}
			if !bytes.Equal(loc, b) {
				t.Errorf("tensor %q: bytes at its Location differ from Open's", ti.Name)
			}
		} else if !codec.IsQTensor(ti.DType) {
			t.Errorf("plain tensor %q has no Location", ti.Name)
		}
		out.data[ti.Name] = b
	}
	return out, nil
}

// sameCheckpoint compares two checkpoints: metadata, tensors (in any order)
// with their dtype, shape, size and attributes (Location and shard
// assignments aside), and bytes.
func sameCheckpoint(t *testing.T, got, want *ckptData) {
	t.Helper()
	if !got.m.Metadata.Equal(&want.m.Metadata) {
		t.Errorf("metadata differs:\n got %v\nwant %v", dumpMeta(&got.m.Metadata), dumpMeta(&want.m.Metadata))
	}
	if len(got.m.Tensors) != len(want.m.Tensors) {
		t.Errorf("%d tensors, want %d", len(got.m.Tensors), len(want.m.Tensors))
	}
	for _, w := range want.m.Tensors {
		g, ok := got.m.Tensor(w.Name)
		if !ok {
			t.Errorf("tensor %q is missing", w.Name)
			continue
		}
		if g.DType != w.DType || !slices.Equal(g.Shape, w.Shape) || g.Size != w.Size {
			t.Errorf("tensor %q: %s %v %d bytes, want %s %v %d", w.Name, g.DType, g.Shape, g.Size, w.DType, w.Shape, w.Size)
		}
		wa := map[string]string{}
		for k, v := range w.Attrs {
			if k != tensor.AttrShard {
				wa[k] = v
			}
		}
		if len(g.Attrs) != len(wa) {
			t.Errorf("tensor %q: attrs %v, want %v", w.Name, g.Attrs, wa)
		}
		for k, v := range wa {
			if g.Attrs[k] != v {
				t.Errorf("tensor %q: attr %s = %q, want %q", w.Name, k, g.Attrs[k], v)
			}
		}
		if !bytes.Equal(got.data[w.Name], want.data[w.Name]) {
			t.Errorf("tensor %q: bytes differ", w.Name)
		}
	}
}

func dumpMeta(m *tensor.Metadata) []string {
	var out []string
	m.All(func(k string, v tensor.Value) bool {
		out = append(out, k+"="+v.String())
		return true
	})
	return out
}

func testRNG() *rand.Rand { return rand.New(rand.NewPCG(9, 9)) }

func tempPath(t *testing.T, name string) string { return filepath.Join(t.TempDir(), name) }
