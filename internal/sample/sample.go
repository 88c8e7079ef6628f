// Package sample generates Sluice's sample checkpoint: a tiny llama-shaped
// Hugging Face directory (config.json, generation_config.json, a small
// byte-level BPE tokenizer.json, tokenizer_config.json with a chat template,
// and bf16 weights sharded into two safetensors files with an index).
//
// The output is deterministic: the same bytes on every machine, so the copy
// committed under testdata/sample can be checked against the generator.
// Tests use Write to build checkpoints of other shapes, and the benchmark
// (bench/) uses it for llama-shaped checkpoints of many GiB: Write streams,
// so its memory does not grow with the checkpoint.
package sample

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"

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
// little noise, other weights N(0, 0.02). It is the reference for the
// streaming generator, which produces the same values without holding a
// whole tensor.
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

// draws is the number of generator steps one value takes (Box–Muller uses
// two uniforms and keeps one normal).
const draws = 2

// fill writes the values of elements [first, first+len(v)) of the stream
// that starts at seed. splitmix64 advances its state by a constant per step,
// so any element can be reached directly, and parts of a tensor can be
// generated in parallel with the same result as one sequential pass.
func fill(v []float32, seed, first uint64, norm bool) {
	r := &rng{s: seed + first*draws*0x9e3779b97f4a7c15}
	for i := range v {
		x := r.normal() * 0.02
		if norm {
			x += 1
		}
		v[i] = float32(x)
	}
}

// chunkElems is how many values one generating goroutine makes at a time.
var chunkElems = 1 << 20

// Write generates the checkpoint into dir. Tensors are generated piece by
// piece, on every core, and written at their planned offsets, so memory
// stays at a few MiB per core whatever the checkpoint's size.
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
	tensors := c.Tensors()
	sizes := make([]uint64, len(tensors))
	for i, t := range tensors {
		if sizes[i], err = c.DType.ShapeByteSize(t.Shape); err != nil {
			return fmt.Errorf("sample: tensor %s: %w", t.Name, err)
		}
	}
	shards := max(c.Shards, 1)
	per := (len(tensors) + shards - 1) / shards
	weightMap := map[string]string{}
	var total uint64
	// Where each tensor goes: its file and offset.
	type place struct {
		f   *os.File
		off int64
	}
	places := make([]place, len(tensors))
	var outs []*os.File
	defer func() {
		for _, f := range outs {
			f.Close()
		}
	}()
	for s := 0; s < shards; s++ {
		lo, hi := s*per, min((s+1)*per, len(tensors))
		var entries []st.Tensor
		index := map[string]int{}
		for i, t := range tensors[lo:hi] {
			entries = append(entries, st.Tensor{Name: t.Name, DType: c.DType, Shape: t.Shape, Size: sizes[lo+i]})
			index[t.Name] = lo + i
		}
		l, err := st.PlanLayout(entries, map[string]string{"format": "pt"})
		if err != nil {
			return err
		}
		name := "model.safetensors"
		if shards > 1 {
			name = fmt.Sprintf("model-%05d-of-%05d.safetensors", s+1, shards)
		}
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		outs = append(outs, f)
		if _, err := f.Write(l.Prefix); err != nil {
			return fmt.Errorf("sample: writing %s: %w", name, err)
		}
		for _, e := range l.Tensors {
			places[index[e.Name]] = place{f: f, off: l.EntryOffset(e)}
			weightMap[e.Name] = name
			total += e.Size()
		}
	}
	var first uint64
	for i, t := range tensors {
		n := sizes[i] / uint64(c.elemBytes())
		if err := c.generate(places[i].f, places[i].off, n, first, len(t.Shape) == 1); err != nil {
			return fmt.Errorf("sample: tensor %s: %w", t.Name, err)
		}
		first += n
	}
	for _, f := range outs {
		if err := f.Close(); err != nil {
			return err
		}
	}
	outs = nil
	if shards > 1 {
		idx := map[string]any{"metadata": map[string]any{"total_size": total}, "weight_map": weightMap}
		if err := os.WriteFile(filepath.Join(dir, "model.safetensors.index.json"), mustJSON(idx), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// elemBytes is the size of one value in the checkpoint's dtype.
func (c Config) elemBytes() int {
	n, _ := c.DType.ByteSize(1)
	return int(n)
}

// generate writes n values, elements [first, first+n) of the checkpoint's
// stream, at off in f: pieces of chunkElems values are made by one
// goroutine per core and written in place.
func (c Config) generate(f *os.File, off int64, n, first uint64, norm bool) error {
	pieces := (n + uint64(chunkElems) - 1) / uint64(chunkElems)
	workers := min(uint64(runtime.GOMAXPROCS(0)), pieces)
	var next atomic.Uint64
	errs := make([]error, workers)
	var wg sync.WaitGroup
	eb := uint64(c.elemBytes())
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			vals := make([]float32, chunkElems)
			buf := make([]byte, uint64(chunkElems)*eb)
			for {
				p := next.Add(1) - 1
				if p >= pieces {
					return
				}
				lo := p * uint64(chunkElems)
				k := min(uint64(chunkElems), n-lo)
				fill(vals[:k], c.Seed, first+lo, norm)
				if err := codec.EncodeFloat32(c.DType, buf[:k*eb], vals[:k]); err != nil {
					errs[w] = err
					return
				}
				if _, err := f.WriteAt(buf[:k*eb], off+int64(lo*eb)); err != nil {
					errs[w] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
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
