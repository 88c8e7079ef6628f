package gguf

import (
	"bytes"
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sluice-ml/sluice/sdk/tensor"
	"github.com/sluice-ml/sluice/sdk/tokenizer"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

// hfCheckpoint builds a tiny Hugging Face checkpoint of the given family as
// a Hugging Face source describes it: bf16 tensors with HF names and
// config.json carried verbatim in the metadata.
func hfCheckpoint(family string) (*tensor.Manifest, map[string][]byte) {
	const hidden, inter, heads, kvHeads, headDim, vocab, layers = 64, 128, 4, 2, 16, 288, 2
	arch := map[string]string{"llama": "LlamaForCausalLM", "mistral": "MistralForCausalLM", "qwen2": "Qwen2ForCausalLM", "qwen3": "Qwen3ForCausalLM"}[family]
	config := fmt.Sprintf(`{"architectures":[%q],"model_type":%q,"_name_or_path":"tiny/%s-test","hidden_size":%d,"intermediate_size":%d,
"num_hidden_layers":%d,"num_attention_heads":%d,"num_key_value_heads":%d,"max_position_embeddings":256,"rms_norm_eps":1e-05,
"rope_theta":10000.0,"vocab_size":%d,"tie_word_embeddings":false%s}`,
		arch, family, family, hidden, inter, layers, heads, kvHeads, vocab,
		map[bool]string{true: fmt.Sprintf(`,"head_dim":%d`, headDim)}[family == "qwen3"])
	var specs []TensorSpec
	add := func(name string, shape ...uint64) {
		specs = append(specs, TensorSpec{Name: name, DType: tensor.BF16, Shape: shape})
	}
	add("model.embed_tokens.weight", vocab, hidden)
	for l := 0; l < layers; l++ {
		p := fmt.Sprintf("model.layers.%d.", l)
		add(p+"input_layernorm.weight", hidden)
		add(p+"self_attn.q_proj.weight", heads*headDim, hidden)
		add(p+"self_attn.k_proj.weight", kvHeads*headDim, hidden)
		add(p+"self_attn.v_proj.weight", kvHeads*headDim, hidden)
		if family == "qwen2" {
			add(p+"self_attn.q_proj.bias", heads*headDim)
			add(p+"self_attn.k_proj.bias", kvHeads*headDim)
			add(p+"self_attn.v_proj.bias", kvHeads*headDim)
		}
		if family == "qwen3" {
			add(p+"self_attn.q_norm.weight", headDim)
			add(p+"self_attn.k_norm.weight", headDim)
		}
		add(p+"self_attn.o_proj.weight", hidden, heads*headDim)
		add(p+"post_attention_layernorm.weight", hidden)
		add(p+"mlp.gate_proj.weight", inter, hidden)
		add(p+"mlp.up_proj.weight", inter, hidden)
		add(p+"mlp.down_proj.weight", hidden, inter)
	}
	specs = append(specs, TensorSpec{Name: "model.layers.0.self_attn.rotary_emb.inv_freq", DType: tensor.F32, Shape: []uint64{headDim / 2}})
	add("model.norm.weight", hidden)
	add("lm_head.weight", vocab, hidden)
	m, data := smallManifest(specs...)
	m.Metadata = tensor.Metadata{}
	m.Metadata.Set(tensor.MetaHFConfig, tensor.StringValue(config))
	m.Metadata.Set(tensor.MetaHFGenerationConfig, tensor.StringValue(`{"bos_token_id":1}`))
	tok, tokCfg := spmTokenizer()
	if family == "qwen2" || family == "qwen3" {
		tok, tokCfg = byteLevelTokenizer()
	}
	m.Metadata.Set(tensor.MetaHFTokenizer, tensor.StringValue(tok))
	m.Metadata.Set(tensor.MetaHFTokenizerConfig, tensor.StringValue(tokCfg))
	m.Metadata.Set("format", tensor.StringValue("pt"))
	return m, data
}

// bf16ToF32 stands in for the core's cast: bf16 widens to f32 exactly.
func bf16ToF32(t *tensor.TensorInfo, to tensor.DType, b []byte) ([]byte, error) {
	if t.DType != tensor.BF16 || to != tensor.F32 {
		return nil, fmt.Errorf("test cast %s → %s not implemented", t.DType, to)
	}
	out := make([]byte, 2*len(b))
	for i := 0; i < len(b)/2; i++ {
		binary.LittleEndian.PutUint32(out[4*i:], uint32(binary.LittleEndian.Uint16(b[2*i:]))<<16)
	}
	return out, nil
}

// describeGGUF renders a file's keys (with types) and tensors for golden comparison.
func describeGGUF(f *File) string {
	var b strings.Builder
	f.Metadata.All(func(k string, v tensor.Value) bool {
		if v.Type() == tensor.TypeArray {
			fmt.Fprintf(&b, "key %s array[%s]\n", k, v.Elem())
		} else {
			fmt.Fprintf(&b, "key %s %s\n", k, v.Type())
		}
		return true
	})
	for _, t := range f.Tensors {
		fmt.Fprintf(&b, "tensor %s %s %v\n", t.Name, t.DType, t.Shape())
	}
	return b.String()
}

func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file:\n--- got\n%s--- want\n%s", name, got, want)
	}
}

// rotateHalfToInterleaved is the converter's permutation, written out
// independently of sdk/layout: row h·hd+2b+a ← row h·hd+a·hd/2+b.
func rotateHalfToInterleaved(src []byte, heads, rowBytes int) []byte {
	rows := len(src) / rowBytes
	hd := rows / heads
	out := make([]byte, len(src))
	for h := 0; h < heads; h++ {
		for a := 0; a < 2; a++ {
			for b := 0; b < hd/2; b++ {
				to, from := h*hd+2*b+a, h*hd+a*hd/2+b
				copy(out[to*rowBytes:], src[from*rowBytes:(from+1)*rowBytes])
			}
		}
	}
	return out
}

func convertHF(t *testing.T, family string) (*File, map[string][]byte) {
	t.Helper()
	m, data := hfCheckpoint(family)
	out := filepath.Join(t.TempDir(), family+".gguf")
	sink, err := NewSink(&SinkConfig{Path: out, Architecture: "auto"})
	if err != nil {
		t.Fatal(err)
	}
	_, plan, err := runPipeline(t, m, memOpen(data), sink, bf16ToF32)
	if err != nil {
		t.Fatal(err)
	}
	// Norms and 1-D tensors become f32; matrices keep bf16.
	for _, c := range plan.Convert {
		if c.To != tensor.F32 || !(strings.HasSuffix(c.Tensor, "norm.weight") || strings.HasSuffix(c.Tensor, ".bias")) {
			t.Errorf("unexpected conversion %+v", c)
		}
	}
	if len(plan.Drop) != 1 || !strings.HasSuffix(plan.Drop[0].Tensor, "inv_freq") {
		t.Errorf("drops %+v", plan.Drop)
	}
	return mustOpen(t, out), data
}

func sectionBytes(t *testing.T, f *File, name string) []byte {
	t.Helper()
	ti, ok := f.Tensor(name)
	if !ok {
		t.Fatalf("no tensor %s", name)
	}
	b, err := io.ReadAll(f.Section(ti))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestHuggingFaceLlamaToGGUF(t *testing.T) {
	f, data := convertHF(t, "llama")
	checkGolden(t, "hf_llama.golden", describeGGUF(f))
	if got := f.Metadata.String("general.architecture"); got != "llama" {
		t.Errorf("architecture %q", got)
	}
	for _, k := range f.Metadata.Keys() {
		if strings.HasPrefix(k, "hf.") {
			t.Errorf("Hugging Face file written as key %s", k)
		}
	}
	for key, want := range map[string]uint64{
		"llama.block_count": 2, "llama.context_length": 256, "llama.embedding_length": 64, "llama.feed_forward_length": 128,
		"llama.attention.head_count": 4, "llama.attention.head_count_kv": 2, "llama.vocab_size": 288,
		"llama.rope.dimension_count": 16, "general.file_type": 32, "general.quantization_version": 2,
	} {
		if v, _ := f.Metadata.Get(key); v.Type() != tensor.TypeU32 || v.Bits() != want {
			t.Errorf("%s = %v (%s), want u32 %d", key, v, v.Type(), want)
		}
	}
	if v, _ := f.Metadata.Get("llama.attention.layer_norm_rms_epsilon"); v.Bits() != uint64(math.Float32bits(1e-5)) {
		t.Errorf("rms epsilon %v", v)
	}
	if got := f.Metadata.String("general.name") + " " + f.Metadata.String("general.size_label") + " " + f.Metadata.String("tokenizer.ggml.model"); got != "llama-test 111K llama" {
		t.Errorf("name, size label, tokenizer model = %q", got)
	}
	if !strings.Contains(f.Metadata.String("tokenizer.chat_template"), "m.role") {
		t.Errorf("chat template %q", f.Metadata.String("tokenizer.chat_template"))
	}
	if _, err := tokenizer.FromGGUF(&f.Metadata); err != nil {
		t.Errorf("the written tokenizer keys do not load: %v", err)
	}
	// Q and K rows are permuted (K with the KV head count); V is not.
	rowBytes := 64 * 2
	if got, want := sectionBytes(t, f, "blk.1.attn_q.weight"), rotateHalfToInterleaved(data["model.layers.1.self_attn.q_proj.weight"], 4, rowBytes); !bytes.Equal(got, want) {
		t.Error("attn_q is not permuted as llama.cpp permutes it")
	}
	if got, want := sectionBytes(t, f, "blk.0.attn_k.weight"), rotateHalfToInterleaved(data["model.layers.0.self_attn.k_proj.weight"], 2, rowBytes); !bytes.Equal(got, want) {
		t.Error("attn_k is not permuted with the KV head count")
	}
	if got := sectionBytes(t, f, "blk.0.attn_v.weight"); !bytes.Equal(got, data["model.layers.0.self_attn.v_proj.weight"]) {
		t.Error("attn_v changed")
	}
}

func TestHuggingFaceQwenToGGUF(t *testing.T) {
	for _, family := range []string{"qwen2", "qwen3"} {
		t.Run(family, func(t *testing.T) {
			f, data := convertHF(t, family)
			checkGolden(t, "hf_"+family+".golden", describeGGUF(f))
			if got := f.Metadata.String("tokenizer.ggml.model") + "/" + f.Metadata.String("tokenizer.ggml.pre"); got != "gpt2/qwen2" {
				t.Errorf("tokenizer model/pre = %s", got)
			}
			if _, err := tokenizer.FromGGUF(&f.Metadata); err != nil {
				t.Errorf("the written tokenizer keys do not load: %v", err)
			}
			// NeoX RoPE: no permutation.
			if got := sectionBytes(t, f, "blk.0.attn_q.weight"); !bytes.Equal(got, data["model.layers.0.self_attn.q_proj.weight"]) {
				t.Error("attn_q permuted for a NeoX-RoPE architecture")
			}
		})
	}
}

func TestArchitectureOption(t *testing.T) {
	m, data := hfCheckpoint("mistral")
	dir := t.TempDir()
	sink, _ := NewSink(&SinkConfig{Path: filepath.Join(dir, "m.gguf"), Architecture: "gpt-neox"})
	if _, err := sink.Plan(context.Background(), m); err == nil || !strings.Contains(err.Error(), "llama, mistral, qwen2, qwen3") {
		t.Errorf("unsupported architecture: %v", err)
	}
	// A named architecture on a non-Hugging Face input only sets the key.
	plain, pdata := smallManifest(TensorSpec{Name: "x", DType: tensor.F32, Shape: []uint64{2}})
	out := filepath.Join(dir, "plain.gguf")
	sink, _ = NewSink(&SinkConfig{Path: out, Architecture: "llama"})
	if _, _, err := runPipeline(t, plain, memOpen(pdata), sink, nil); err != nil {
		t.Fatal(err)
	}
	if f := mustOpen(t, out); f.Metadata.String("general.architecture") != "llama" || f.Metadata.Keys()[0] != "general.architecture" {
		t.Errorf("keys %v", f.Metadata.Keys())
	}
	// Mistral converts as llama.
	out = filepath.Join(dir, "mistral.gguf")
	sink, _ = NewSink(&SinkConfig{Path: out, Architecture: "auto"})
	if _, _, err := runPipeline(t, m, memOpen(data), sink, bf16ToF32); err != nil {
		t.Fatal(err)
	}
	if f := mustOpen(t, out); f.Metadata.String("general.architecture") != "llama" {
		t.Errorf("mistral written as %q", f.Metadata.String("general.architecture"))
	}
	// Tensors already renamed upstream are refused with a hint, not permuted twice.
	renamed, rdata := hfCheckpoint("llama")
	renamed.Tensors[1].Name = "blk.0.attn_norm.weight"
	rdata["blk.0.attn_norm.weight"] = rdata["model.layers.0.input_layernorm.weight"]
	sink, _ = NewSink(&SinkConfig{Path: filepath.Join(dir, "renamed.gguf"), Architecture: "auto"})
	if _, err := sink.Plan(context.Background(), renamed); err == nil || !strings.Contains(err.Error(), "already has a llama.cpp name") {
		t.Errorf("pre-renamed tensor: %v", err)
	}
	// Without architecture the plan suggests it.
	p := planOf(t, SinkConfig{Path: filepath.Join(dir, "raw.gguf")}, m)
	if !strings.Contains(fmt.Sprint(p.Notes), `architecture = \"auto\"`) && !strings.Contains(fmt.Sprint(p.Notes), `architecture = "auto"`) {
		t.Errorf("notes %v should suggest architecture = \"auto\"", p.Notes)
	}
}

func TestSizeLabel(t *testing.T) {
	for n, want := range map[uint64]string{135_000_000: "135M", 1_100_000_000: "1.1B", 8_030_000_000: "8.0B", 70_600_000_000: "71B", 500_000: "500K", 62_000: "62K", 6_200: "6.2K", 500: "0.50K", 2_500: "2.5K"} {
		if got := sizeLabel(n); got != want {
			t.Errorf("sizeLabel(%d) = %s, want %s", n, got, want)
		}
	}
}

func TestLlama3RopeFreqs(t *testing.T) {
	m, data := hfCheckpoint("llama")
	cfg := m.Metadata.String(tensor.MetaHFConfig)
	cfg = strings.Replace(cfg, `"rope_theta":10000.0`, `"rope_theta":500000.0,"rope_scaling":{"rope_type":"llama3","factor":8.0,"low_freq_factor":1.0,"high_freq_factor":4.0,"original_max_position_embeddings":8192}`, 1)
	m.Metadata.Set(tensor.MetaHFConfig, tensor.StringValue(cfg))
	out := filepath.Join(t.TempDir(), "llama3.gguf")
	sink, _ := NewSink(&SinkConfig{Path: out, Architecture: "auto"})
	if _, _, err := runPipeline(t, m, memOpen(data), sink, bf16ToF32); err != nil {
		t.Fatal(err)
	}
	f := mustOpen(t, out)
	rf := &f.Tensors[0]
	if rf.Name != "rope_freqs.weight" || rf.DType != tensor.F32 || !slices.Equal(rf.Shape(), []uint64{8}) {
		t.Fatalf("first tensor %s %s %v, want rope_freqs.weight f32 [8]", rf.Name, rf.DType, rf.Shape())
	}
	if _, ok := f.Metadata.Get("llama.rope.scaling.type"); ok {
		t.Errorf("llama3 scaling is carried by rope_freqs, not by rope.scaling keys")
	}
	b := sectionBytes(t, f, "rope_freqs.weight")
	// Head dim 16, base 5e5: wavelengths 2π·5e5^(i/16) for i = 0, 2, …, 14.
	// Below 8192/4 the factor is 1, above 8192 it is 8, between it blends.
	for k := 0; k < 8; k++ {
		got := math.Float32frombits(binary.LittleEndian.Uint32(b[4*k:]))
		wavelen := 2 * math.Pi * math.Pow(500000, float64(2*k)/16)
		want := 1.0
		switch {
		case wavelen > 8192:
			want = 8
		case wavelen >= 2048:
			smooth := (8192/wavelen - 1) / 3
			want = 1 / ((1-smooth)/8 + smooth)
		}
		if math.Abs(float64(got)-want) > 1e-5*want {
			t.Errorf("factor %d = %v, want %v", k, got, want)
		}
	}
}

// TestGeneralNameFallsBackToTheDirectory: without _name_or_path in
// config.json, general.name is the checkpoint directory's name the source
// carried (tensor.MetaHFModelName), as llama.cpp's converter falls back to
// the directory's name; with it, _name_or_path wins.
func TestGeneralNameFallsBackToTheDirectory(t *testing.T) {
	m, _ := hfCheckpoint("llama")
	m.Metadata.Set(tensor.MetaHFModelName, tensor.StringValue("Llama-3.2-1B"))
	name := func(m *tensor.Manifest) string {
		c, err := newHFConversion("auto", m)
		if err != nil || c == nil {
			t.Fatalf("conversion: %v", err)
		}
		md, err := c.metadata(nil, tensor.BF16)
		if err != nil {
			t.Fatal(err)
		}
		return md.String("general.name")
	}
	if got := name(m); got != "llama-test" {
		t.Errorf("with _name_or_path: general.name %q, want llama-test", got)
	}
	cfg := m.Metadata.String(tensor.MetaHFConfig)
	m.Metadata.Set(tensor.MetaHFConfig, tensor.StringValue(strings.Replace(cfg, `"_name_or_path":"tiny/llama-test",`, "", 1)))
	if got := name(m); got != "Llama-3.2-1B" {
		t.Errorf("without _name_or_path: general.name %q, want Llama-3.2-1B", got)
	}
}
