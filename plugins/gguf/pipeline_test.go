package gguf

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/sluice-ml/sluice/sdk/plugin"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// convertFunc produces the bytes of a tensor in the dtype a sink asked for;
// tests that need no conversion pass nil.
type convertFunc func(t *tensor.TensorInfo, to tensor.DType, data []byte) ([]byte, error)

// runPipeline does what the core does for source → sink: describe, plan,
// begin, write every tensor concurrently (file references when the source
// gives them), commit.
func runPipeline(t testing.TB, m *tensor.Manifest, open func(name string) (plugin.TensorData, error), sink plugin.Sink, conv convertFunc) ([]plugin.Artifact, *plugin.SinkPlan, error) {
	t.Helper()
	return runPipelineWith(t, m, open, sink, conv, plugin.BeginOptions{})
}

// runPipelineWith is runPipeline with the options Begin gets.
func runPipelineWith(t testing.TB, m *tensor.Manifest, open func(name string) (plugin.TensorData, error), sink plugin.Sink, conv convertFunc, opts plugin.BeginOptions) ([]plugin.Artifact, *plugin.SinkPlan, error) {
	t.Helper()
	ctx := context.Background()
	plan, err := sink.Plan(ctx, m)
	if err != nil {
		return nil, nil, err
	}
	arrive, converted, err := arrival(m, plan, conv != nil)
	if err != nil {
		return nil, plan, err
	}
	dropped := map[string]bool{}
	for _, d := range plan.Drop {
		dropped[d.Tensor] = true
	}
	if err := sink.Begin(ctx, arrive, opts); err != nil {
		return nil, plan, err
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(m.Tensors))
	for i := range m.Tensors {
		ti := &m.Tensors[i]
		if dropped[ti.Name] {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			data, err := open(ti.Name)
			if err == nil {
				if to, ok := converted[ti.Name]; ok {
					var raw []byte
					if raw, err = io.ReadAll(data); err == nil {
						raw, err = conv(ti, to, raw)
						data = plugin.BytesData(raw)
					}
				}
			}
			if err == nil {
				err = sink.Write(ctx, ti.Name, data)
			}
			if err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		sink.Abort(ctx)
		return nil, plan, err
	}
	arts, err := sink.Commit(ctx)
	return arts, plan, err
}

// arrival is the manifest a sink's Begin gets after plan, as the core makes
// it: the tensors plan drops left out, those it converts in their new dtype
// and size, no longer in a file; and the conversions by tensor. canConvert
// false makes any conversion an error.
func arrival(m *tensor.Manifest, plan *plugin.SinkPlan, canConvert bool) (*tensor.Manifest, map[string]tensor.DType, error) {
	converted := map[string]tensor.DType{}
	for _, c := range plan.Convert {
		if !canConvert {
			return nil, nil, fmt.Errorf("test pipeline cannot convert %s to %s", c.Tensor, c.To)
		}
		converted[c.Tensor] = c.To
	}
	dropped := map[string]bool{}
	for _, d := range plan.Drop {
		dropped[d.Tensor] = true
	}
	arrive := &tensor.Manifest{Metadata: m.Metadata.Clone()}
	for i := range m.Tensors {
		ti := m.Tensors[i].Clone()
		if dropped[ti.Name] {
			continue
		}
		if to, ok := converted[ti.Name]; ok {
			size, err := to.ShapeByteSize(ti.Shape)
			if err != nil {
				return nil, nil, err
			}
			ti.DType, ti.Size, ti.Location = to, size, nil
		}
		arrive.Tensors = append(arrive.Tensors, ti)
	}
	return arrive, converted, nil
}

// copyGGUF runs a gguf source into a gguf sink.
func copyGGUF(t *testing.T, srcCfg SourceConfig, sinkCfg SinkConfig) ([]plugin.Artifact, *plugin.SinkPlan, error) {
	t.Helper()
	src, err := NewSource(&srcCfg)
	if err != nil {
		return nil, nil, err
	}
	defer src.Close()
	m, err := src.Describe(context.Background())
	if err != nil {
		return nil, nil, err
	}
	sink, err := NewSink(&sinkCfg)
	if err != nil {
		return nil, nil, err
	}
	open := func(name string) (plugin.TensorData, error) {
		ti, _ := m.Tensor(name)
		if ti.Location != nil {
			return plugin.FileData(*ti.Location), nil
		}
		rc, err := src.Open(context.Background(), name)
		if err != nil {
			return nil, err
		}
		b, err := io.ReadAll(rc)
		return plugin.BytesData(b), err
	}
	return runPipeline(t, m, open, sink, nil)
}

func TestRewriteIsByteIdentical(t *testing.T) {
	ref := refDir(t)
	for _, name := range []string{"sample.gguf", "align64.gguf", "v2.gguf"} {
		t.Run(name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out.gguf")
			arts, _, err := copyGGUF(t, SourceConfig{Path: filepath.Join(ref, name)}, SinkConfig{Path: out})
			if err != nil {
				t.Fatal(err)
			}
			want, _ := os.ReadFile(filepath.Join(ref, name))
			if name == "v2.gguf" {
				// v2 is read like v3 and written as v3; everything else is equal.
				want = append([]byte(nil), want...)
				want[4] = 3
			}
			got, _ := os.ReadFile(out)
			if !bytes.Equal(got, want) {
				t.Fatalf("rewrite differs from %s (%d vs %d bytes; first difference at %d)", name, len(got), len(want), firstDiff(got, want))
			}
			if len(arts) != 1 || arts[0].Path != out || arts[0].Size != uint64(len(want)) {
				t.Errorf("artifacts %+v", arts)
			}
		})
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func TestAlignmentOption(t *testing.T) {
	ref := refDir(t)
	dir := t.TempDir()
	// sample (alignment 32) written with alignment 64 gives align64.gguf's
	// layout: same data, general.alignment appended last.
	out := filepath.Join(dir, "a64.gguf")
	if _, _, err := copyGGUF(t, SourceConfig{Path: filepath.Join(ref, "sample.gguf")}, SinkConfig{Path: out, Alignment: 64}); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(out)
	want, _ := os.ReadFile(filepath.Join(ref, "align64.gguf"))
	if !bytes.Equal(got, want) {
		t.Fatalf("sample.gguf with alignment 64 differs from align64.gguf at byte %d", firstDiff(got, want))
	}
	// And back to 32: the key stays (it was in the input) with value 32.
	out32 := filepath.Join(dir, "a32.gguf")
	if _, _, err := copyGGUF(t, SourceConfig{Path: out}, SinkConfig{Path: out32, Alignment: 32}); err != nil {
		t.Fatal(err)
	}
	f := mustOpen(t, out32)
	if v, _ := f.Metadata.Get(KeyAlignment); f.Alignment != 32 || v.Type() != tensor.TypeU32 {
		t.Errorf("alignment %d, key %v", f.Alignment, v)
	}
	if _, err := NewSink(&SinkConfig{Path: out, Alignment: 48}); !plugin.IsBadConfig(err) {
		t.Errorf("alignment 48: %v, want a config error", err)
	}
}

// smallManifest builds an in-memory model with the given tensors, filled
// with deterministic bytes.
func smallManifest(specs ...TensorSpec) (*tensor.Manifest, map[string][]byte) {
	m := &tensor.Manifest{}
	m.Metadata.Set("general.architecture", tensor.StringValue("test"))
	data := map[string][]byte{}
	for i, s := range specs {
		size, err := s.DType.ShapeByteSize(s.Shape)
		if err != nil {
			panic(err)
		}
		b := make([]byte, size)
		for j := range b {
			b[j] = byte(i*31 + j*7)
		}
		data[s.Name] = b
		m.Tensors = append(m.Tensors, tensor.TensorInfo{Name: s.Name, DType: s.DType, Shape: s.Shape, Size: size})
	}
	return m, data
}

func memOpen(data map[string][]byte) func(string) (plugin.TensorData, error) {
	return func(name string) (plugin.TensorData, error) { return plugin.BytesData(data[name]), nil }
}

func TestSinkRefusals(t *testing.T) {
	dir := t.TempDir()
	long := strings.Repeat("x", 64)
	m, data := smallManifest(TensorSpec{Name: long, DType: tensor.F32, Shape: []uint64{4}})
	sink, _ := NewSink(&SinkConfig{Path: filepath.Join(dir, "long.gguf")})
	if _, _, err := runPipeline(t, m, memOpen(data), sink, nil); err == nil || !strings.Contains(err.Error(), long) || !strings.Contains(err.Error(), "63") {
		t.Errorf("64-byte name: %v", err)
	}
	m, data = smallManifest(TensorSpec{Name: strings.Repeat("y", 63), DType: tensor.F32, Shape: []uint64{4}})
	sink, _ = NewSink(&SinkConfig{Path: filepath.Join(dir, "ok.gguf")})
	if _, _, err := runPipeline(t, m, memOpen(data), sink, nil); err != nil {
		t.Errorf("63-byte name: %v", err)
	}

	m, data = smallManifest(TensorSpec{Name: "a", DType: tensor.F32, Shape: []uint64{4}})
	inner := tensor.Int32Array([]int32{1, 2})
	nested, _ := tensor.NestedArray([]tensor.Value{inner})
	m.Metadata.Set("test.nested", nested)
	sink, _ = NewSink(&SinkConfig{Path: filepath.Join(dir, "nested.gguf")})
	if _, _, err := runPipeline(t, m, memOpen(data), sink, nil); err == nil || !strings.Contains(err.Error(), "test.nested") || !strings.Contains(err.Error(), "nested") {
		t.Errorf("nested array: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "nested.gguf")); !os.IsNotExist(err) {
		t.Errorf("a refused output exists: %v", err)
	}

	if _, err := NewSink(&SinkConfig{Path: "x.gguf", DType: "q8_1"}); !plugin.IsBadConfig(err) {
		t.Errorf("dtype q8_1: %v", err)
	}
	if _, err := NewSink(&SinkConfig{Path: "x.gguf", DType: "f8_e4m3"}); !plugin.IsBadConfig(err) {
		t.Errorf("dtype f8_e4m3: %v", err)
	}
}

func TestBoolsWrittenAsZeroOne(t *testing.T) {
	m, data := smallManifest(TensorSpec{Name: "a", DType: tensor.F32, Shape: []uint64{4}})
	b, _ := tensor.Scalar(tensor.TypeBool, 7)
	m.Metadata.Set("test.bool", b)
	arr, _ := tensor.ArrayValue(tensor.TypeBool, []byte{0, 2, 1})
	m.Metadata.Set("test.bools", arr)
	out := filepath.Join(t.TempDir(), "b.gguf")
	sink, _ := NewSink(&SinkConfig{Path: out})
	if _, _, err := runPipeline(t, m, memOpen(data), sink, nil); err != nil {
		t.Fatal(err)
	}
	f := mustOpen(t, out)
	v, _ := f.Metadata.Get("test.bool")
	a, _ := f.Metadata.Get("test.bools")
	raw, _ := a.Raw()
	if v.Bits() != 1 || !bytes.Equal(raw, []byte{0, 1, 1}) {
		t.Errorf("bools written as %d and %v", v.Bits(), raw)
	}
}

func TestUnitsRoundTrip(t *testing.T) {
	m, data := smallManifest(
		TensorSpec{Name: "w", DType: tensor.F32, Shape: []uint64{2, 4}},
		TensorSpec{Name: "b", DType: tensor.F32, Shape: []uint64{4}},
	)
	m.Tensors[0].SetAttr(tensor.AttrUnit, `{"m":1,"s":-2}`)
	out := filepath.Join(t.TempDir(), "u.gguf")
	sink, _ := NewSink(&SinkConfig{Path: out})
	if _, _, err := runPipeline(t, m, memOpen(data), sink, nil); err != nil {
		t.Fatal(err)
	}
	f := mustOpen(t, out)
	if got := f.Metadata.String(UnitKeyPrefix + "w"); got != `{"m":1,"s":-2}` {
		t.Errorf("unit key = %q", got)
	}
	src, _ := NewSource(&SourceConfig{Path: out})
	defer src.Close()
	back, err := src.Describe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if back.Tensors[0].Attr(tensor.AttrUnit) != `{"m":1,"s":-2}` || back.Tensors[1].Attr(tensor.AttrUnit) != "" {
		t.Errorf("units read back: %v / %v", back.Tensors[0].Attrs, back.Tensors[1].Attrs)
	}
	if _, ok := back.Metadata.Get(UnitKeyPrefix + "w"); ok {
		t.Errorf("unit key kept in metadata as well as in the attribute")
	}
	// Rewriting what we wrote gives the same bytes.
	again := filepath.Join(t.TempDir(), "again.gguf")
	if _, _, err := copyGGUF(t, SourceConfig{Path: out}, SinkConfig{Path: again}); err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(out)
	b, _ := os.ReadFile(again)
	if !bytes.Equal(a, b) {
		t.Errorf("rewrite of a file with units differs at %d", firstDiff(a, b))
	}
}
