package transform_test

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-ml/sluice/core/runtest"
	"github.com/sluice-ml/sluice/sdk/codec"
	"github.com/sluice-ml/sluice/sdk/plugin"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// one wraps a transform body named "t" between a mem source "in" and a mem
// sink "out".
func one(typ, body string) string {
	return fmt.Sprintf(`
source "mem" "in" { id = "in" }
transform %q "t" {
  input = source.in
%s
}
sink "mem" "out" {
  input = transform.t
  id    = "out"
}
`, typ, body)
}

func sources(c *runtest.Checkpoint) map[string]*runtest.Checkpoint {
	return map[string]*runtest.Checkpoint{"in": c}
}

// TestQuantizeMatchesGGMLThroughRunner quantizes ggml's reference input
// through the planner and the runner, cut into many chunks over two
// workers, and compares every byte with ggml's own output; then decodes it
// back through a dequantize stage and compares with ggml's dequantization.
func TestQuantizeMatchesGGMLThroughRunner(t *testing.T) {
	ref := refDir(t)
	raw, err := os.ReadFile(filepath.Join(ref, "normal.f32"))
	if err != nil {
		t.Fatal(err)
	}
	n := len(raw) / 4
	shape := []uint64{uint64(n / 1024), 1024}
	for _, dt := range []tensor.DType{tensor.Q8_0, tensor.Q4_0, tensor.Q4_1, tensor.Q5_0, tensor.Q5_1,
		tensor.Q2_K, tensor.Q3_K, tensor.Q4_K, tensor.Q5_K, tensor.Q6_K,
		tensor.TQ1_0, tensor.TQ2_0, tensor.MXFP4, tensor.IQ4NL, tensor.IQ4XS} {
		t.Run(string(dt), func(t *testing.T) {
			want, err := os.ReadFile(filepath.Join(ref, "normal."+string(dt)))
			if err != nil {
				t.Skip(err)
			}
			wantF32, err := os.ReadFile(filepath.Join(ref, "normal."+string(dt)+".f32"))
			if err != nil {
				t.Skip(err)
			}
			c := &runtest.Checkpoint{}
			c.Add("w", tensor.F32, shape, raw)
			src := fmt.Sprintf(`
source "mem" "in" { id = "in" }
transform "quantize" "q" {
  input = source.in
  type  = %q
}
transform "dequantize" "dq" { input = transform.q }
sink "mem" "quantized" {
  input = transform.q
  id    = "q"
}
sink "mem" "decoded" {
  input = transform.dq
  id    = "dq"
}
`, dt)
			// 64 KiB slots: the 256 KiB tensor streams in several chunks.
			res := run(t, src, runtest.Options{Sources: sources(c), Workers: 2, Slots: 32, SlotSize: 64 << 10})
			got := res.Sinks["q"].Data["w"]
			if !bytes.Equal(got, want) {
				t.Fatalf("quantized bytes differ from ggml's (%d vs %d bytes)", len(got), len(want))
			}
			if res.Sinks["q"].Manifest.Tensors[0].DType != dt {
				t.Fatalf("the sink was told %s", res.Sinks["q"].Manifest.Tensors[0].DType)
			}
			if !bytes.Equal(res.Sinks["dq"].Data["w"], wantF32) {
				t.Fatal("dequantized values differ from ggml's")
			}
		})
	}
}

// TestQuantizeIsTheSameInAnyChunking runs one quantization with one worker
// and whole-slot chunks, and with two workers and small chunks.
func TestQuantizeIsTheSameInAnyChunking(t *testing.T) {
	c := &runtest.Checkpoint{}
	addFloat(t, c, "a", tensor.BF16, []uint64{96, 512}, 1)
	addFloat(t, c, "b", tensor.F16, []uint64{40, 256}, 2)
	src := one("quantize", `type = "q4_K"`)
	r1 := run(t, src, runtest.Options{Sources: sources(c), Workers: 1, Slots: 16, SlotSize: 1 << 20})
	r2 := run(t, src, runtest.Options{Sources: sources(c), Workers: 2, Slots: 64, SlotSize: 8 << 10})
	for _, name := range []string{"a", "b"} {
		a, b := r1.Sinks["out"].Data[name], r2.Sinks["out"].Data[name]
		if len(a) == 0 || !bytes.Equal(a, b) {
			t.Errorf("tensor %s: %d bytes with one worker, %d with two, equal %v", name, len(a), len(b), bytes.Equal(a, b))
		}
		// Independently: decode the source, encode with the codec.
		in := c.Manifest.Tensors[map[string]int{"a": 0, "b": 1}[name]]
		vals := decode(t, in.DType, c.Data[name], elements(in.Shape))
		if want := encode(t, tensor.Q4_K, vals); !bytes.Equal(a, want) {
			t.Errorf("tensor %s: not the codec's q4_K of the decoded source", name)
		}
	}
}

// llamaGGUF builds a GGUF-named llama checkpoint (as llama.cpp's converter
// writes it) of n layers with row length h, in dtype dt.
func llamaGGUF(t testing.TB, layers int, h, ff uint64, dt tensor.DType, withData bool) *runtest.Checkpoint {
	t.Helper()
	c := &runtest.Checkpoint{Manifest: &tensor.Manifest{}}
	c.Manifest.Metadata.Set("general.architecture", tensor.StringValue("llama"))
	c.Manifest.Metadata.Set("llama.block_count", tensor.U32Value(uint32(layers)))
	c.Manifest.Metadata.Set("llama.attention.head_count", tensor.U32Value(4))
	c.Manifest.Metadata.Set("llama.attention.head_count_kv", tensor.U32Value(2))
	seed := uint64(10)
	add := func(name string, d tensor.DType, shape ...uint64) {
		seed++
		if withData {
			addFloat(t, c, name, d, shape, seed)
			return
		}
		size, err := d.ShapeByteSize(shape)
		if err != nil {
			t.Fatal(err)
		}
		c.Manifest.Tensors = append(c.Manifest.Tensors, tensor.TensorInfo{Name: name, DType: d, Shape: shape, Size: size})
	}
	kv := h / 2
	add("token_embd.weight", dt, 512, h)
	for i := 0; i < layers; i++ {
		p := fmt.Sprintf("blk.%d.", i)
		add(p+"attn_norm.weight", tensor.F32, h)
		add(p+"attn_q.weight", dt, h, h)
		add(p+"attn_k.weight", dt, kv, h)
		add(p+"attn_v.weight", dt, kv, h)
		add(p+"attn_output.weight", dt, h, h)
		add(p+"ffn_norm.weight", tensor.F32, h)
		add(p+"ffn_gate.weight", dt, ff, h)
		add(p+"ffn_up.weight", dt, ff, h)
		add(p+"ffn_down.weight", dt, h, ff)
	}
	add("output_norm.weight", tensor.F32, h)
	add("output.weight", dt, 512, h)
	return c
}

// TestRequantizeQ8ToQ4KM re-quantizes a q8_0 GGUF-style checkpoint with the
// Q4_K_M preset: each matrix becomes the preset's type for it, with the
// codec's bytes for the decoded q8_0 values, and norms stay f32.
func TestRequantizeQ8ToQ4KM(t *testing.T) {
	c := llamaGGUF(t, 8, 256, 256, tensor.Q8_0, true)
	res := run(t, one("quantize", `preset = "Q4_K_M"`), runtest.Options{Sources: sources(c), Workers: 2})
	out := res.Sinks["out"]
	if v, ok := out.Manifest.Metadata.Get("general.file_type"); !ok || v.String() != "15" {
		t.Errorf("general.file_type = %v, want 15 (MOSTLY_Q4_K_M)", v)
	}
	moreBits := map[int]bool{}
	for i := 0; i < 8; i++ {
		// use_more_bits for 8 layers: i < 1, i >= 7, (i-1)%3 == 2.
		moreBits[i] = i < 1 || i >= 7 || (i-1)%3 == 2
	}
	for _, ti := range out.Manifest.Tensors {
		in, _ := c.Manifest.Tensor(ti.Name)
		var want tensor.DType
		var layer int
		switch {
		case in.DType == tensor.F32:
			want = tensor.F32
		case ti.Name == "output.weight":
			want = tensor.Q6_K
		case strings.Contains(ti.Name, "attn_v") || strings.Contains(ti.Name, "ffn_down"):
			fmt.Sscanf(ti.Name, "blk.%d.", &layer)
			want = tensor.Q4_K
			if moreBits[layer] {
				want = tensor.Q6_K
			}
		default:
			want = tensor.Q4_K
		}
		if ti.DType != want {
			t.Errorf("%s: %s, want %s", ti.Name, ti.DType, want)
			continue
		}
		if want == tensor.F32 {
			if !bytes.Equal(out.Data[ti.Name], c.Data[ti.Name]) {
				t.Errorf("%s: a kept tensor changed", ti.Name)
			}
			continue
		}
		vals := decode(t, tensor.Q8_0, c.Data[ti.Name], elements(in.Shape))
		if !bytes.Equal(out.Data[ti.Name], encode(t, want, vals)) {
			t.Errorf("%s: bytes are not the codec's %s of the q8_0 values", ti.Name, want)
		}
	}
}

func TestQuantizeDefaultsAndFallback(t *testing.T) {
	c := &runtest.Checkpoint{}
	addFloat(t, c, "wide", tensor.BF16, []uint64{4, 256}, 1)
	addFloat(t, c, "narrow", tensor.BF16, []uint64{4, 64}, 2)
	addFloat(t, c, "odd", tensor.F32, []uint64{3, 20}, 3)
	addFloat(t, c, "norm", tensor.F32, []uint64{64}, 4)
	c.Add("ids", tensor.I64, []uint64{2, 32}, make([]byte, 8*64))

	res := run(t, one("quantize", `type = "q4_K"`), runtest.Options{Sources: sources(c)})
	got := map[string]tensor.DType{}
	for _, ti := range res.Sinks["out"].Manifest.Tensors {
		got[ti.Name] = ti.DType
	}
	want := map[string]tensor.DType{"wide": tensor.Q4_K, "narrow": tensor.F16, "odd": tensor.F16, "norm": tensor.F32, "ids": tensor.I64}
	for n, w := range want {
		if got[n] != w {
			t.Errorf("%s: %s, want %s", n, got[n], w)
		}
	}
	d := res.Decisions("transform.t")
	mustContain(t, d, "narrow: bf16 → f16 (type chose q4_K, but rows of 64 are not a whole number of its blocks of 256; fallback_type (default f16))",
		"norm: kept f32: 1-D", "ids: kept i64: integer tensor")
	if !bytes.Equal(res.Sinks["out"].Data["ids"], c.Data["ids"]) {
		t.Error("the integer tensor changed")
	}

	// An explicit fallback, and integers opted in through a rule.
	res = run(t, one("quantize", `
  type             = "q4_K"
  fallback_type    = "q8_0"
  convert_integers = true
  rule {
    match = ["ids"]
    type  = "f32"
  }
  rule {
    match = ["odd"]
    type  = "keep"
  }`), runtest.Options{Sources: sources(c)})
	got = map[string]tensor.DType{}
	for _, ti := range res.Sinks["out"].Manifest.Tensors {
		got[ti.Name] = ti.DType
	}
	if got["narrow"] != tensor.Q8_0 || got["ids"] != tensor.F32 {
		t.Errorf("narrow %s (want q8_0), ids %s (want f32)", got["narrow"], got["ids"])
	}
	// "odd" rows of 20 fit neither q4_K nor the q8_0 fallback.
	err := runErr(t, one("quantize", `
  type          = "q4_K"
  fallback_type = "q8_0"`), runtest.Options{Sources: sources(c)})
	mustContain(t, err.Error(), `tensor "odd"`, "rows of 20 do not fit fallback_type q8_0")
	if !plugin.IsBadConfig(err) {
		t.Errorf("%v is not reported as a configuration error", err)
	}
	// A dtype the codecs cannot decode is the input's fault.
	bad := &runtest.Checkpoint{}
	bad.Add("iq", tensor.IQ2XXS, []uint64{1, 256}, make([]byte, 66))
	err = runErr(t, one("quantize", `type = "q8_0"`), runtest.Options{Sources: sources(bad), PlanOnly: true})
	mustContain(t, err.Error(), `tensor "iq"`, "iq2_xxs cannot be decoded")
	if !plugin.IsBadInput(err) {
		t.Errorf("%v is not reported as bad input", err)
	}
}

func TestQuantizeRulesFirstMatchWins(t *testing.T) {
	c := &runtest.Checkpoint{}
	addFloat(t, c, "model.layers.0.self_attn.v_proj.weight", tensor.BF16, []uint64{32, 256}, 1)
	addFloat(t, c, "model.layers.0.mlp.down_proj.weight", tensor.BF16, []uint64{32, 256}, 2)
	addFloat(t, c, "model.layers.0.input_layernorm.weight", tensor.BF16, []uint64{256}, 3)
	addFloat(t, c, "experts", tensor.BF16, []uint64{2, 4, 256}, 4)
	addFloat(t, c, "small", tensor.BF16, []uint64{2, 256}, 5)
	res := run(t, one("quantize", `
  type = "q4_0"
  rule {
    match = ["*attn_v.weight"]    # GGUF style; matches the Hugging Face name too
    type  = "q8_0"
  }
  rule {
    match = ["*attn_v*", "*down_proj*"]
    type  = "q6_K"
  }
  rule {
    max_dims = 1
    type     = "f32"
  }
  rule {
    min_dims = 3
    type     = "keep"
  }
  rule {
    match        = ["small"]
    min_elements = 1024
    type         = "q5_0"
  }`), runtest.Options{Sources: sources(c)})
	want := map[string]tensor.DType{
		"model.layers.0.self_attn.v_proj.weight": tensor.Q8_0,
		"model.layers.0.mlp.down_proj.weight":    tensor.Q6_K,
		"model.layers.0.input_layernorm.weight":  tensor.F32,
		"experts":                                tensor.BF16,
		"small":                                  tensor.Q4_0, // 512 elements < min_elements
	}
	for _, ti := range res.Sinks["out"].Manifest.Tensors {
		if ti.DType != want[ti.Name] {
			t.Errorf("%s: %s, want %s", ti.Name, ti.DType, want[ti.Name])
		}
	}
	mustContain(t, res.Decisions("transform.t"), `(rule 1 (match ["*attn_v.weight"]))`, "rule 4 (min_dims 3)")
}

// TestQuantizeQTensor quantizes to apsim QTensor formats with scales per
// axis and per block; the output describes its scale layout and decodes
// within the format's step.
func TestQuantizeQTensor(t *testing.T) {
	c := &runtest.Checkpoint{}
	vals := addFloat(t, c, "w", tensor.F32, []uint64{8, 96}, 1)
	for _, tc := range []struct {
		body string
		dt   tensor.DType
		attr string
		val  string
		qmax float64
	}{
		{`type = "int8"` + "\n  axis = 0", codec.QTInt8, codec.AttrQAxis, "0", 127},
		{`type = "int4"` + "\n  block = 32", codec.QTInt4, codec.AttrQBlock, "32", 7},
	} {
		res := run(t, one("quantize", tc.body)+`
transform "dequantize" "back" { input = transform.t }
sink "mem" "dq" {
  input = transform.back
  id    = "dq"
}`, runtest.Options{Sources: sources(c)})
		out := res.Sinks["out"].Manifest.Tensors[0]
		if out.DType != tc.dt || out.Attr(tc.attr) != tc.val {
			t.Fatalf("%s: got %s with %v", tc.dt, out.DType, out.Attrs)
		}
		if err := codec.CheckQTensor(&out); err != nil {
			t.Fatal(err)
		}
		back := f32Values(res.Sinks["dq"].Data["w"])
		amax := 0.0
		for _, v := range vals {
			amax = math.Max(amax, math.Abs(float64(v)))
		}
		for i := range vals {
			// Each group's step is at most amax/qmax; rounding is within half a step.
			if d := math.Abs(float64(back[i] - vals[i])); d > amax/tc.qmax/2*1.0001 {
				t.Fatalf("%s: element %d: %v came back as %v", tc.dt, i, vals[i], back[i])
			}
		}
		dq := res.Sinks["dq"].Manifest.Tensors[0]
		if dq.Attr(codec.AttrQAxis) != "" || dq.Attr(codec.AttrQBlock) != "" {
			t.Errorf("the dequantized tensor keeps QTensor attributes %v", dq.Attrs)
		}
	}
}

func TestQuantizeConfigErrors(t *testing.T) {
	c := &runtest.Checkpoint{}
	addFloat(t, c, "w", tensor.F32, []uint64{4, 32}, 1)
	for body, want := range map[string]string{
		`type = "q4_K"` + "\n preset = \"Q4_K_M\"":      "set type or preset, not both",
		`preset = "Q7_K"`:                               `unknown preset "Q7_K"`,
		`type = "q9_0"`:                                 `unknown type "q9_0"`,
		`type = "q8_0"` + "\n axis = 0":                 "only applies to apsim QTensor types",
		`type = "int8"` + "\n axis = 0\n block = 4":     "set axis or block, not both",
		`fallback_type = "f16"`:                         "say what to quantize to",
		"rule {\n match = [\"[x\"]\n type = \"f16\"\n}": "unclosed [",
	} {
		err := runErr(t, one("quantize", body), runtest.Options{Sources: sources(c), PlanOnly: true})
		mustContain(t, err.Error(), want)
		if !plugin.IsBadConfig(err) {
			t.Errorf("%q: %v is not reported as a configuration error", body, err)
		}
	}
	// A float → integer rule needs the opt-in.
	err := runErr(t, one("quantize", "rule {\n type = \"i8\"\n}"), runtest.Options{Sources: sources(c), PlanOnly: true})
	mustContain(t, err.Error(), "convert_integers = true")
	var te interface{ Error() string }
	if !errors.As(err, &te) {
		t.Fatal(err)
	}
}
