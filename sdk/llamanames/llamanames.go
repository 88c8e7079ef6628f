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
	layerBack = invert(Layer)
	topBack   = invert(Top)
)

// Prefixes of the layer tensor names: model.layers.N.REST and blk.N.REST.
const (
	hfLayerPrefix   = "model.layers."
	ggufLayerPrefix = "blk."
)

// HFLayer splits a Hugging Face layer tensor name, model.layers.N.REST, into
// the layer number N (decimal digits) and REST (not empty, on one line).
func HFLayer(name string) (n, rest string, ok bool) { return splitLayer(name, hfLayerPrefix) }

// splitLayer splits prefix + N + "." + REST into N and REST, as the pattern
// ^PREFIX([0-9]+)\.(.+)$ would.
func splitLayer(name, prefix string) (n, rest string, ok bool) {
	s, ok := strings.CutPrefix(name, prefix)
	if !ok {
		return "", "", false
	}
	i := 0
	for i < len(s) && '0' <= s[i] && s[i] <= '9' {
		i++
	}
	if i == 0 || i == len(s) || s[i] != '.' {
		return "", "", false
	}
	rest = s[i+1:]
	if rest == "" || strings.IndexByte(rest, '\n') >= 0 {
		return "", "", false
	}
	return s[:i], rest, true
}

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
	if n, rest, ok := splitLayer(stem, hfLayerPrefix); ok {
		if out, ok := Layer[rest]; ok {
			return ggufLayerPrefix + n + "." + out + suffix, true
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
	if n, rest, ok := splitLayer(stem, ggufLayerPrefix); ok {
		if out, ok := layerBack[rest]; ok {
			return hfLayerPrefix + n + "." + out + suffix, true
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
	digits, _, ok := splitLayer(name, ggufLayerPrefix)
	if !ok {
		digits, _, ok = splitLayer(name, hfLayerPrefix)
	}
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(digits)
	if err != nil {
		return 0, false
	}
	return n, true
}
