package gguf

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-ml/sluice/sdk/plugin"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

func planOf(t *testing.T, cfg SinkConfig, m *tensor.Manifest) *plugin.SinkPlan {
	t.Helper()
	s, err := NewSink(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Plan(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func conversions(p *plugin.SinkPlan) map[string]plugin.Conversion {
	out := map[string]plugin.Conversion{}
	for _, c := range p.Convert {
		out[c.Tensor] = c
	}
	return out
}

func notes(p *plugin.SinkPlan) map[string]string {
	out := map[string]string{}
	for _, n := range p.Notes {
		out[n.Tensor] = n.Msg
	}
	return out
}

func TestDTypeDecisions(t *testing.T) {
	m, _ := smallManifest(
		TensorSpec{Name: "w", DType: tensor.F32, Shape: []uint64{4, 64}},
		TensorSpec{Name: "w_bf16", DType: tensor.BF16, Shape: []uint64{4, 64}},
		TensorSpec{Name: "bias", DType: tensor.F16, Shape: []uint64{64}},
		TensorSpec{Name: "lead1", DType: tensor.F16, Shape: []uint64{1, 64}},
		TensorSpec{Name: "odd", DType: tensor.F32, Shape: []uint64{4, 48}},
		TensorSpec{Name: "odd_bf16", DType: tensor.BF16, Shape: []uint64{4, 48}},
		TensorSpec{Name: "ids", DType: tensor.I32, Shape: []uint64{4, 64}},
		TensorSpec{Name: "bytes", DType: tensor.U8, Shape: []uint64{4, 64}},
		TensorSpec{Name: "fp8", DType: tensor.F8E4M3, Shape: []uint64{4, 64}},
		TensorSpec{Name: "q", DType: tensor.Q4_K, Shape: []uint64{2, 256}},
	)
	dir := t.TempDir()

	p := planOf(t, SinkConfig{Path: filepath.Join(dir, "q8.gguf"), DType: "q8_0"}, m)
	c := conversions(p)
	want := map[string]tensor.DType{
		"w": tensor.Q8_0, "w_bf16": tensor.Q8_0, "bias": tensor.F32, "lead1": tensor.F32, "odd": tensor.F16,
		"bytes": tensor.I16, "fp8": tensor.Q8_0, "q": tensor.Q8_0,
	}
	for name, to := range want {
		if c[name].To != to {
			t.Errorf("q8_0: %s → %q, want %s", name, c[name].To, to)
		}
	}
	for _, name := range []string{"odd_bf16", "ids"} {
		if _, ok := c[name]; ok {
			t.Errorf("q8_0: %s converted to %s; it should keep its type", name, c[name].To)
		}
	}
	if r := c["bias"].Reason; !strings.Contains(r, "1-D") || !strings.Contains(r, "f32") {
		t.Errorf("bias reason %q should say 1-D and f32", r)
	}
	if r := c["odd"].Reason; !strings.Contains(r, "48") || !strings.Contains(r, "block size 32") || !strings.Contains(r, "f16") {
		t.Errorf("odd reason %q", r)
	}
	if n := notes(p)["odd_bf16"]; !strings.Contains(n, "bf16") {
		t.Errorf("odd_bf16 note %q should say it stays bf16", n)
	}

	p = planOf(t, SinkConfig{Path: filepath.Join(dir, "keep.gguf")}, m)
	c = conversions(p)
	if len(c) != 2 || c["bytes"].To != tensor.I16 || c["fp8"].To != tensor.F16 {
		t.Errorf("default dtype converts %v; only u8 → i16 and f8_e4m3 → f16 are needed", c)
	}
	if len(p.Files) != 1 || p.Files[0].Tensors != len(m.Tensors) || p.Files[0].Size == 0 {
		t.Errorf("files %+v", p.Files)
	}

	p = planOf(t, SinkConfig{Path: filepath.Join(dir, "f16.gguf"), DType: "f16"}, m)
	c = conversions(p)
	if c["w_bf16"].To != tensor.F16 || !strings.Contains(c["w_bf16"].Reason, "65504") || c["odd"].To != tensor.F16 || c["q"].To != tensor.F16 {
		t.Errorf("f16: %v", c)
	}
	if _, ok := c["ids"]; ok {
		t.Errorf("f16: integer tensor converted")
	}

	// general.file_type follows the dtype option.
	m2, data := smallManifest(TensorSpec{Name: "w", DType: tensor.Q8_0, Shape: []uint64{2, 64}})
	m2.Metadata.Set(KeyFileType, tensor.U32Value(1))
	out := filepath.Join(dir, "ft.gguf")
	sink, _ := NewSink(&SinkConfig{Path: out, DType: "q8_0"})
	if _, _, err := runPipeline(t, m2, memOpen(data), sink, nil); err != nil {
		t.Fatal(err)
	}
	if v, _ := mustOpen(t, out).Metadata.Get(KeyFileType); v.Bits() != 7 {
		t.Errorf("general.file_type = %v after dtype = q8_0, want 7", v)
	}

	// Begin refuses a manifest that did not get the planned conversions.
	s, _ := NewSink(&SinkConfig{Path: filepath.Join(dir, "x.gguf"), DType: "q8_0"})
	if err := s.Begin(context.Background(), m, plugin.BeginOptions{}); err == nil || !strings.Contains(err.Error(), "did not happen") {
		t.Errorf("Begin with unconverted tensors: %v", err)
	}
}
