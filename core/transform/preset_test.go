package transform_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/sluice-ml/sluice/core/runtest"
	"github.com/sluice-ml/sluice/sdk/llamanames"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs from the plan (run go test -run %s -update to accept):\n%s", path, t.Name(), diffLines(string(want), got))
	}
}

func diffLines(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	var out []string
	for i := 0; i < max(len(al), len(bl)); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			out = append(out, fmt.Sprintf("line %d:\n  want %s\n  got  %s", i+1, x, y))
			if len(out) > 10 {
				break
			}
		}
	}
	return strings.Join(out, "\n")
}

// llamaShape describes a llama model for manifests without data.
type llamaShape struct {
	layers          int
	hidden, ff, kv  uint64
	vocab           uint64
	heads, kvHeads  int
	tied            bool
	hfNames         bool
	dtype, normType tensor.DType
}

// llama3_8B has the shapes of Meta-Llama-3-8B.
var llama3_8B = llamaShape{layers: 32, hidden: 4096, ff: 14336, kv: 1024, vocab: 128256, heads: 32, kvHeads: 8, dtype: tensor.F16, normType: tensor.F32}

// manifest builds the manifest of a llama model in GGUF or Hugging Face
// names, in the order llama.cpp's converter writes (or safetensors sorts).
func (s llamaShape) manifest() *tensor.Manifest {
	m := &tensor.Manifest{}
	if s.hfNames {
		cfg := fmt.Sprintf(`{"model_type":"llama","num_hidden_layers":%d,"num_attention_heads":%d,"num_key_value_heads":%d,"tie_word_embeddings":%v}`,
			s.layers, s.heads, s.kvHeads, s.tied)
		m.Metadata.Set(tensor.MetaHFConfig, tensor.StringValue(cfg))
	} else {
		m.Metadata.Set("general.architecture", tensor.StringValue("llama"))
		m.Metadata.Set("llama.block_count", tensor.U32Value(uint32(s.layers)))
		m.Metadata.Set("llama.attention.head_count", tensor.U32Value(uint32(s.heads)))
		m.Metadata.Set("llama.attention.head_count_kv", tensor.U32Value(uint32(s.kvHeads)))
		m.Metadata.Set("general.file_type", tensor.U32Value(1))
	}
	add := func(gguf string, dt tensor.DType, shape ...uint64) {
		name := gguf
		if s.hfNames {
			hf, ok := llamanames.ToHF(gguf)
			if !ok {
				panic(gguf)
			}
			name = hf
		}
		size, err := dt.ShapeByteSize(shape)
		if err != nil {
			panic(err)
		}
		m.Tensors = append(m.Tensors, tensor.TensorInfo{Name: name, DType: dt, Shape: shape, Size: size})
	}
	add("token_embd.weight", s.dtype, s.vocab, s.hidden)
	for i := 0; i < s.layers; i++ {
		p := fmt.Sprintf("blk.%d.", i)
		add(p+"attn_norm.weight", s.normType, s.hidden)
		add(p+"attn_q.weight", s.dtype, s.hidden, s.hidden)
		add(p+"attn_k.weight", s.dtype, s.kv, s.hidden)
		add(p+"attn_v.weight", s.dtype, s.kv, s.hidden)
		add(p+"attn_output.weight", s.dtype, s.hidden, s.hidden)
		add(p+"ffn_norm.weight", s.normType, s.hidden)
		add(p+"ffn_gate.weight", s.dtype, s.ff, s.hidden)
		add(p+"ffn_up.weight", s.dtype, s.ff, s.hidden)
		add(p+"ffn_down.weight", s.dtype, s.hidden, s.ff)
	}
	add("output_norm.weight", s.normType, s.hidden)
	if !s.tied {
		add("output.weight", s.dtype, s.vocab, s.hidden)
	}
	if s.hfNames {
		// safetensors headers list names sorted: layer 10 before layer 2.
		sort.Slice(m.Tensors, func(i, j int) bool { return m.Tensors[i].Name < m.Tensors[j].Name })
	}
	return m
}

// planQuantize plans one quantize stage over a manifest without data.
func planQuantize(t *testing.T, m *tensor.Manifest, body string) *runtest.Result {
	t.Helper()
	c := &runtest.Checkpoint{Manifest: m}
	return run(t, one("quantize", body), runtest.Options{Sources: sources(c), PlanOnly: true})
}

func outTypes(r *runtest.Result) map[string]tensor.DType {
	out := map[string]tensor.DType{}
	for _, ti := range r.Stage("transform.t").Out.Tensors {
		out[ti.Name] = ti.DType
	}
	return out
}

func typeCounts(r *runtest.Result) string {
	n := map[tensor.DType]int{}
	for _, dt := range outTypes(r) {
		n[dt]++
	}
	var keys []string
	for k := range n {
		keys = append(keys, string(k))
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s:%d", k, n[tensor.DType(k)]))
	}
	return strings.Join(parts, " ")
}

// TestPresetsOnLlama3_8B checks each preset's type counts on a model shaped
// like Meta-Llama-3-8B against what llama-quantize reports for it
// ("llama_model_loader: - type q4_K: 193 tensors" …), and keeps the
// per-tensor plan as a golden file.
func TestPresetsOnLlama3_8B(t *testing.T) {
	for _, tc := range []struct {
		preset, counts string
	}{
		{"Q4_K_M", "f32:65 q4_K:193 q6_K:33"},
		{"Q5_K_M", "f32:65 q5_K:193 q6_K:33"},
		{"Q4_K_S", "f32:65 q4_K:217 q5_K:8 q6_K:1"},
		{"Q3_K_M", "f32:65 q3_K:129 q4_K:92 q5_K:4 q6_K:1"},
		{"Q2_K", "f32:65 q2_K:129 q3_K:64 q4_K:32 q6_K:1"},
		{"Q6_K", "f32:65 q6_K:226"},
		{"Q8_0", "f32:65 q8_0:226"},
		{"Q4_0", "f32:65 q4_0:225 q6_K:1"},
		{"F16", "f16:226 f32:65"},
	} {
		t.Run(tc.preset, func(t *testing.T) {
			r := planQuantize(t, llama3_8B.manifest(), fmt.Sprintf("preset = %q", tc.preset))
			if got := typeCounts(r); got != tc.counts {
				t.Errorf("type counts %s, want %s", got, tc.counts)
			}
			golden(t, "plan/llama3-8b-"+strings.ToLower(tc.preset)+".golden", r.Decisions("transform.t"))
		})
	}
}

// TestPresetsNameStyles: a Hugging Face-named checkpoint, listed in
// safetensors' sorted order, gets the same type per tensor as the GGUF one.
func TestPresetsNameStyles(t *testing.T) {
	for _, preset := range []string{"Q4_K_M", "Q5_K_M", "Q3_K_M", "Q4_K_S"} {
		hf := llama3_8B
		hf.hfNames = true
		gg := outTypes(planQuantize(t, llama3_8B.manifest(), fmt.Sprintf("preset = %q", preset)))
		got := outTypes(planQuantize(t, hf.manifest(), fmt.Sprintf("preset = %q", preset)))
		if len(got) != len(gg) {
			t.Fatalf("%s: %d tensors, want %d", preset, len(got), len(gg))
		}
		for name, dt := range got {
			g, _ := llamanames.ToGGUF(name)
			if gg[g] != dt {
				t.Errorf("%s: %s is %s, but %s in GGUF names is %s", preset, name, dt, g, gg[g])
			}
		}
	}
}

func TestPresetSmallModels(t *testing.T) {
	small := llamaShape{layers: 6, hidden: 64, ff: 256, kv: 32, vocab: 300, heads: 4, kvHeads: 2, dtype: tensor.BF16, normType: tensor.BF16}
	tied := llamaShape{layers: 4, hidden: 256, ff: 512, kv: 64, vocab: 300, heads: 8, kvHeads: 2, tied: true, hfNames: true, dtype: tensor.BF16, normType: tensor.BF16}
	for _, tc := range []struct {
		name string
		m    *tensor.Manifest
		body string
	}{
		// Rows of 64 fit no K-quant: llama.cpp's fallbacks (q4_K → q5_0,
		// q6_K → q8_0), and the output goes to q8_0.
		{"fallback-q4_k_m", small.manifest(), `preset = "Q4_K_M"`},
		// Tied embeddings: the token embeddings get the output's q6_K; 4
		// query heads per key/value head make Q2_K's attn_v q4_K.
		{"tied-q2_k", tied.manifest(), `preset = "Q2_K"`},
		// Rules are llama.cpp's --tensor-type overrides: they win, and the
		// attn_v they take do not advance the use_more_bits counter.
		{"rules-over-preset", tied.manifest(), `
  preset = "Q4_K_M"
  rule {
    match = ["blk.0.attn_v.weight"]
    type  = "q8_0"
  }
  rule {
    match = ["*_norm.weight", "*layernorm*"]
    type  = "f32"
  }`},
		{"fallback-type-option", small.manifest(), `
  preset        = "Q4_K_M"
  fallback_type = "f32"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			golden(t, "plan/"+tc.name+".golden", planQuantize(t, tc.m, tc.body).Decisions("transform.t"))
		})
	}
}

func TestUseMoreBitsLayers(t *testing.T) {
	// For 32 layers llama.cpp gives attn_v and ffn_down of layers 0–3, 6, 9,
	// …, 27 and 28–31 more bits under Q4_K_M.
	want := map[int]bool{}
	for _, i := range []int{0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 28, 29, 30, 31} {
		want[i] = true
	}
	types := outTypes(planQuantize(t, llama3_8B.manifest(), `preset = "Q4_K_M"`))
	for i := 0; i < 32; i++ {
		for _, part := range []string{"attn_v", "ffn_down"} {
			dt := types[fmt.Sprintf("blk.%d.%s.weight", i, part)]
			if (dt == tensor.Q6_K) != want[i] {
				t.Errorf("layer %d %s: %s", i, part, dt)
			}
		}
	}
}
