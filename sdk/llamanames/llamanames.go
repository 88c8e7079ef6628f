// Package llamanames maps the tensor names of llama-family checkpoints
// (llama, mistral, qwen2, qwen3) between Hugging Face's style
// (model.layers.3.self_attn.q_proj.weight) and llama.cpp's GGUF style
// (blk.3.attn_q.weight), as llama.cpp's converter does (tensor_mapping.py;
// see spec/gguf.md §7). It is the one table the GGUF plugin and the rename
// transform share.
//
// The package only renames: it does not decide which tensors a converter
// drops (rotary frequency buffers, tied output heads) or permutes.
package llamanames

import (
	"regexp"
	"strconv"
	"strings"
)

// Layer maps the part of a Hugging Face layer tensor name after
// "model.layers.N." to llama.cpp's part after "blk.N.", both without the
// ".weight"/".bias" suffix.
var Layer = map[string]string{
	"input_layernorm":          "attn_norm",
	"self_attn.q_proj":         "attn_q",
	"self_attn.k_proj":         "attn_k",
	"self_attn.v_proj":         "attn_v",
	"self_attn.o_proj":         "attn_output",
	"self_attn.q_norm":         "attn_q_norm",
	"self_attn.k_norm":         "attn_k_norm",
	"post_attention_layernorm": "ffn_norm",
	"mlp.gate_proj":            "ffn_gate",
	"mlp.up_proj":              "ffn_up",
	"mlp.down_proj":            "ffn_down",
}

// Top maps the Hugging Face names of tensors outside the layers to
// llama.cpp's, without the ".weight"/".bias" suffix.
var Top = map[string]string{
	"model.embed_tokens": "token_embd",
	"model.norm":         "output_norm",
	"lm_head":            "output",
}

var (
	hfLayer   = regexp.MustCompile(`^model\.layers\.([0-9]+)\.(.+)$`)
	ggufLayer = regexp.MustCompile(`^blk\.([0-9]+)\.(.+)$`)

	layerBack = invert(Layer)
	topBack   = invert(Top)
)

func invert(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[v] = k
	}
	return out
}

// splitSuffix cuts ".weight" or ".bias" off a name.
func splitSuffix(name string) (stem, suffix string, ok bool) {
	for _, s := range []string{".weight", ".bias"} {
		if strings.HasSuffix(name, s) {
			return strings.TrimSuffix(name, s), s, true
		}
	}
	return name, "", false
}

// ToGGUF returns llama.cpp's name for a Hugging Face tensor name, or false
// when the name has none (rotary buffers, unknown tensors).
func ToGGUF(name string) (string, bool) {
	stem, suffix, ok := splitSuffix(name)
	if !ok {
		return "", false
	}
	if out, ok := Top[stem]; ok {
		return out + suffix, true
	}
	if m := hfLayer.FindStringSubmatch(stem); m != nil {
		if out, ok := Layer[m[2]]; ok {
			return "blk." + m[1] + "." + out + suffix, true
		}
	}
	return "", false
}

// ToHF returns the Hugging Face name of a llama.cpp tensor name, or false
// when the name has none.
func ToHF(name string) (string, bool) {
	stem, suffix, ok := splitSuffix(name)
	if !ok {
		return "", false
	}
	if out, ok := topBack[stem]; ok {
		return out + suffix, true
	}
	if m := ggufLayer.FindStringSubmatch(stem); m != nil {
		if out, ok := layerBack[m[2]]; ok {
			return "model.layers." + m[1] + "." + out + suffix, true
		}
	}
	return "", false
}

// Canonical returns the GGUF-style name of a tensor: the name itself when it
// is already in llama.cpp's style or has no mapping, its ToGGUF name
// otherwise. Rules written against GGUF names can match either style
// through it.
func Canonical(name string) string {
	if g, ok := ToGGUF(name); ok {
		return g
	}
	return name
}

// LayerIndex returns N of a "blk.N." or "model.layers.N." name.
func LayerIndex(name string) (int, bool) {
	m := ggufLayer.FindStringSubmatch(name)
	if m == nil {
		m = hfLayer.FindStringSubmatch(name)
	}
	if m == nil {
		return 0, false
	}
	n, err := strconv.Atoi(m[1])
	if err != nil {
		return 0, false
	}
	return n, true
}
