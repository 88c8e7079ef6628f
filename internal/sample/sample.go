// Package sample generates Sluice's sample checkpoint: a tiny llama-shaped
// Hugging Face directory (config.json, generation_config.json, a small
// byte-level BPE tokenizer.json, tokenizer_config.json with a chat template,
// and bf16 weights sharded into two safetensors files with an index).
//
// The output is deterministic: the same bytes on every machine, so the copy
// committed under testdata/sample can be checked against the generator.
// Tests use Write to build checkpoints of other shapes.
package sample

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/sluice-ml/sluice/sdk/codec"
	st "github.com/sluice-ml/sluice/sdk/safetensors"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// Config shapes a generated llama checkpoint.
type Config struct {
	Vocab        int // must be at least the tokenizer's size
	Hidden       int
	Layers       int
	Heads        int
	KVHeads      int
	Intermediate int
	// Shards splits the weights into this many files (1: model.safetensors).
	Shards int
	// DType is bf16, f16 or f32.
	DType tensor.DType
	// Seed seeds the weights.
	Seed uint64
}

// Default is the shipped sample: about 250 KB.
var Default = Config{Vocab: 256 + merges + 5, Hidden: 64, Layers: 2, Heads: 4, KVHeads: 2, Intermediate: 128, Shards: 2, DType: tensor.BF16, Seed: 1}

// Tensor is one generated weight.
type Tensor struct {
	Name  string
	Shape []uint64
}

// Tensors lists the weights of a llama model of this shape, in Hugging Face
// names and row-major shapes.
func (c Config) Tensors() []Tensor {
	h, hd := uint64(c.Hidden), uint64(c.Hidden/c.Heads)
	kv := uint64(c.KVHeads) * hd
	out := []Tensor{{"model.embed_tokens.weight", []uint64{uint64(c.Vocab), h}}}
	for i := 0; i < c.Layers; i++ {
		p := fmt.Sprintf("model.layers.%d.", i)
		out = append(out,
			Tensor{p + "input_layernorm.weight", []uint64{h}},
			Tensor{p + "self_attn.q_proj.weight", []uint64{h, h}},
			Tensor{p + "self_attn.k_proj.weight", []uint64{kv, h}},
			Tensor{p + "self_attn.v_proj.weight", []uint64{kv, h}},
			Tensor{p + "self_attn.o_proj.weight", []uint64{h, h}},
			Tensor{p + "post_attention_layernorm.weight", []uint64{h}},
			Tensor{p + "mlp.gate_proj.weight", []uint64{uint64(c.Intermediate), h}},
			Tensor{p + "mlp.up_proj.weight", []uint64{uint64(c.Intermediate), h}},
			Tensor{p + "mlp.down_proj.weight", []uint64{h, uint64(c.Intermediate)}},
		)
	}
	out = append(out,
		Tensor{"model.norm.weight", []uint64{h}},
		Tensor{"lm_head.weight", []uint64{uint64(c.Vocab), h}},
	)
	return out
}

// rng is a small deterministic generator (splitmix64).
type rng struct{ s uint64 }

func (r *rng) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	z := r.s
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// normal draws from N(0,1) with the Box–Muller transform.
func (r *rng) normal() float64 {
	u1 := (float64(r.next()>>11) + 1) / (1 << 53)
	u2 := float64(r.next()>>11) / (1 << 53)
	return math.Sqrt(-2*math.Log(u1)) * math.Cos(2*math.Pi*u2)
}

// values returns the float32 values of one tensor: norms are ones plus a
// little noise, other weights N(0, 0.02).
func (c Config) values(t Tensor, r *rng) []float32 {
	n := 1
	for _, d := range t.Shape {
		n *= int(d)
	}
	v := make([]float32, n)
	norm := len(t.Shape) == 1
	for i := range v {
		x := r.normal() * 0.02
		if norm {
			x += 1
		}
		v[i] = float32(x)
	}
	return v
}

// Write generates the checkpoint into dir.
func Write(dir string, c Config) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tok, tokCfg, err := Tokenizer()
	if err != nil {
		return err
	}
	if c.Vocab < TokenizerSize() {
		return fmt.Errorf("sample: vocabulary %d is smaller than the tokenizer's %d tokens", c.Vocab, TokenizerSize())
	}
	files := map[string][]byte{
		"config.json":            mustJSON(c.hfConfig()),
		"generation_config.json": mustJSON(map[string]any{"_from_model_config": true, "bos_token_id": BOS, "eos_token_id": EOS, "transformers_version": "4.44.0"}),
		"tokenizer.json":         tok,
		"tokenizer_config.json":  tokCfg,
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return err
		}
	}
	r := &rng{s: c.Seed}
	tensors := c.Tensors()
	data := map[string][]byte{}
	for _, t := range tensors {
		vals := c.values(t, r)
		n, _ := c.DType.ByteSize(uint64(len(vals)))
		b := make([]byte, n)
		if err := codec.EncodeFloat32(c.DType, b, vals); err != nil {
			return err
		}
		data[t.Name] = b
	}
	shards := max(c.Shards, 1)
	per := (len(tensors) + shards - 1) / shards
	weightMap := map[string]string{}
	var total uint64
	for s := 0; s < shards; s++ {
		lo, hi := s*per, min((s+1)*per, len(tensors))
		var entries []st.Tensor
		for _, t := range tensors[lo:hi] {
			entries = append(entries, st.Tensor{Name: t.Name, DType: c.DType, Shape: t.Shape, Size: uint64(len(data[t.Name]))})
		}
		l, err := st.PlanLayout(entries, map[string]string{"format": "pt"})
		if err != nil {
			return err
		}
		name := "model.safetensors"
		if shards > 1 {
			name = fmt.Sprintf("model-%05d-of-%05d.safetensors", s+1, shards)
		}
		buf := append([]byte(nil), l.Prefix...)
		for _, e := range l.Tensors {
			buf = append(buf, data[e.Name]...)
			weightMap[e.Name] = name
			total += e.Size()
		}
		if err := os.WriteFile(filepath.Join(dir, name), buf, 0o644); err != nil {
			return err
		}
	}
	if shards > 1 {
		idx := map[string]any{"metadata": map[string]any{"total_size": total}, "weight_map": weightMap}
		if err := os.WriteFile(filepath.Join(dir, "model.safetensors.index.json"), mustJSON(idx), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func (c Config) hfConfig() map[string]any {
	return map[string]any{
		"architectures":           []string{"LlamaForCausalLM"},
		"model_type":              "llama",
		"vocab_size":              c.Vocab,
		"hidden_size":             c.Hidden,
		"intermediate_size":       c.Intermediate,
		"num_hidden_layers":       c.Layers,
		"num_attention_heads":     c.Heads,
		"num_key_value_heads":     c.KVHeads,
		"max_position_embeddings": 2048,
		"rms_norm_eps":            1e-5,
		"rope_theta":              500000.0,
		"hidden_act":              "silu",
		"tie_word_embeddings":     false,
		"bos_token_id":            BOS,
		"eos_token_id":            EOS,
		"torch_dtype":             torchDType(c.DType),
	}
}

func torchDType(d tensor.DType) string {
	switch d {
	case tensor.F16:
		return "float16"
	case tensor.F32:
		return "float32"
	}
	return "bfloat16"
}

// mustJSON encodes with sorted keys and two-space indentation.
func mustJSON(v any) []byte {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		panic(err)
	}
	return append(b, '\n')
}
