package transform

import (
	"fmt"
	"sort"
	"strings"

	"github.com/sluice-ml/sluice/sdk/llamanames"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// A preset reproduces one of llama-quantize's file types (llama.cpp's
// LlamaFileType): a default tensor type, and llama.cpp's choice of which
// tensors get another type (llama_tensor_get_type in src/llama-quant.cpp,
// studied at commit 007dbbf3). docs/transforms.md lists what is reproduced.
type preset struct {
	name string
	// fileType is general.file_type (LlamaFileType).
	fileType uint32
	def      tensor.DType
}

// Preset names, as llama-quantize spells them.
var presets = map[string]preset{}

func init() {
	for _, p := range []preset{
		{"F32", 0, tensor.F32},
		{"F16", 1, tensor.F16},
		{"Q4_0", 2, tensor.Q4_0},
		{"Q4_1", 3, tensor.Q4_1},
		{"Q8_0", 7, tensor.Q8_0},
		{"Q5_0", 8, tensor.Q5_0},
		{"Q5_1", 9, tensor.Q5_1},
		{"Q2_K", 10, tensor.Q2_K},
		{"Q3_K_S", 11, tensor.Q3_K},
		{"Q3_K_M", 12, tensor.Q3_K},
		{"Q3_K_L", 13, tensor.Q3_K},
		{"Q4_K_S", 14, tensor.Q4_K},
		{"Q4_K_M", 15, tensor.Q4_K},
		{"Q5_K_S", 16, tensor.Q5_K},
		{"Q5_K_M", 17, tensor.Q5_K},
		{"Q6_K", 18, tensor.Q6_K},
		{"IQ4_NL", 25, tensor.IQ4NL},
		{"IQ4_XS", 30, tensor.IQ4XS},
		{"BF16", 32, tensor.BF16},
		{"TQ1_0", 36, tensor.TQ1_0},
		{"TQ2_0", 37, tensor.TQ2_0},
	} {
		presets[p.name] = p
	}
}

// presetNames lists the presets, sorted.
func presetNames() []string {
	out := make([]string, 0, len(presets))
	for n := range presets {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func lookupPreset(name string) (preset, bool) {
	p, ok := presets[strings.ToUpper(name)]
	return p, ok
}

// category is llama.cpp's coarse grouping of tensors by name.
type category int

const (
	catOther category = iota
	catTokenEmbd
	catAttnQ
	catAttnV
	catAttnK
	catAttnQKV
	catAttnKVB
	catAttnOutput
	catFFNUp
	catFFNGate
	catFFNDown
	catOutput
)

// categoryOf classifies a GGUF-style name as llama.cpp does (first match).
func categoryOf(name string) category {
	switch {
	case name == "output.weight":
		return catOutput
	case name == "token_embd.weight" || name == "per_layer_token_embd.weight":
		return catTokenEmbd
	case strings.Contains(name, "attn_qkv.weight"):
		return catAttnQKV
	case strings.Contains(name, "attn_kv_b.weight"):
		return catAttnKVB
	case strings.Contains(name, "attn_v.weight"):
		return catAttnV
	case strings.Contains(name, "attn_k.weight"):
		return catAttnK
	case strings.Contains(name, "attn_q.weight"):
		return catAttnQ
	case strings.Contains(name, "attn_output.weight"):
		return catAttnOutput
	case strings.Contains(name, "ffn_up"):
		return catFFNUp
	case strings.Contains(name, "ffn_gate"):
		return catFFNGate
	case strings.Contains(name, "ffn_down"):
		return catFFNDown
	}
	return catOther
}

func (c category) attnVLike() bool { return c == catAttnV || c == catAttnQKV || c == catAttnKVB }

// notQuantized lists name fragments llama.cpp never quantizes
// (tensor_allows_quantization): norms, MoE router weights, position and
// token-type embeddings, small convolution and RWKV tensors, relative
// position biases and some multimodal tensors.
var notQuantized = []string{
	"_norm.weight", "ffn_gate_inp.weight", "ffn_gate_tid2eid.weight", "altup", "laurel", "per_layer_model_proj",
	"ssm_conv1d", "shortconv.conv.weight", "indexer.k_proj.weight", "indexer.q_proj.weight",
	"time_mix_first.weight", "time_mix_w0.weight", "time_mix_w1.weight", "time_mix_w2.weight",
	"time_mix_v0.weight", "time_mix_v1.weight", "time_mix_v2.weight", "time_mix_a0.weight",
	"time_mix_a1.weight", "time_mix_a2.weight", "time_mix_g1.weight", "time_mix_g2.weight",
	"time_mix_decay_w1.weight", "time_mix_decay_w2.weight", "time_mix_lerp_fused.weight",
	"attn_rel_b.weight", ".position_embd", "sam.pos_embd", "sam.neck.", "sam.net_", ".rel_pos",
	".patch_embd", ".patch_merger", "a.rvq.codebook", "mm.a.code_embd",
}

// allowsQuantization is llama.cpp's test of whether a tensor may change
// type at all, on its GGUF-style name: at least 2 dimensions, a name ending
// in "weight", and none of the exceptions above.
func allowsQuantization(name string, dims int) (bool, string) {
	if dims < 2 {
		return false, fmt.Sprintf("%d-D", dims)
	}
	if !strings.HasSuffix(name, "weight") {
		return false, "not a weight"
	}
	if name == "position_embd.weight" || name == "token_types.weight" {
		return false, "position or token-type embedding"
	}
	for _, s := range notQuantized {
		if strings.Contains(name, s) {
			return false, fmt.Sprintf("llama.cpp never quantizes %q tensors", strings.Trim(s, "."))
		}
	}
	return true, ""
}

// useMoreBits is llama.cpp's choice of layers that get more bits: the first
// and last eighth, and every third layer in between.
func useMoreBits(i, n int) bool {
	return i < n/8 || i >= 7*n/8 || (i-n/8)%3 == 2
}

// presetTensor is one tensor the preset logic decides.
type presetTensor struct {
	index int    // position in the manifest
	name  string // GGUF-style name
	cat   category
	layer int // -1 outside layers
	row   uint64
}

// presetState is llama.cpp's quantize_state_impl: counters over the tensors
// in llama.cpp's order (by layer number, then name).
type presetState struct {
	p      preset
	model  modelInfo
	tied   bool // no output.weight: the token embeddings double as output
	nAttnV int
	iAttnV int
	nDown  int
	iDown  int
	is70B  bool
}

// presetChoice is the type chosen for one tensor and why.
type presetChoice struct {
	dtype  tensor.DType
	reason string
}

// llamaOrder sorts like llama.cpp's weight_name_comparer: layer number (-1
// outside layers) first, then the name.
func llamaOrder(ts []presetTensor) {
	sort.SliceStable(ts, func(i, j int) bool {
		if ts[i].layer != ts[j].layer {
			return ts[i].layer < ts[j].layer
		}
		return ts[i].name < ts[j].name
	})
}

func newPresetState(p preset, model modelInfo, all []presetTensor) *presetState {
	st := &presetState{p: p, model: model, tied: true}
	maxLayer := -1
	for _, t := range all {
		if t.cat.attnVLike() {
			st.nAttnV++
		}
		if t.cat == catOutput {
			st.tied = false
		}
		if t.cat == catFFNDown {
			st.nDown++
		}
		maxLayer = max(maxLayer, t.layer)
	}
	// llama.cpp counts ffn_down layers from the model's layer count.
	if model.nLayer > 0 {
		st.nDown = model.nLayer
	} else if maxLayer >= 0 && st.nDown == 0 {
		st.nDown = maxLayer + 1
	}
	// LLM_TYPE_70B: 80 layers, with grouped-query attention for llama.
	switch model.arch {
	case "llama":
		st.is70B = model.nLayer == 80 && headsAt(model.nHeadKV, 0) < headsAt(model.nHead, 0)
	case "qwen2":
		st.is70B = model.nLayer == 80
	}
	return st
}

// choose returns the type of one tensor that passed allowsQuantization and
// no user rule, and advances the counters as llama.cpp does.
func (st *presetState) choose(t presetTensor) (presetChoice, error) {
	def := st.p.def
	info, _ := def.Info()
	if info.Kind != tensor.KindBlock {
		return presetChoice{def, "preset " + st.p.name}, nil
	}
	c, err := st.chooseQuantized(t)
	if err != nil {
		return c, err
	}
	if !fits(c.dtype, []uint64{t.row}) {
		fb, why := llamaFallback(c.dtype, t.row)
		c = presetChoice{fb, fmt.Sprintf("%s; %s", c.reason, why)}
	}
	return c, nil
}

func (st *presetState) chooseQuantized(t presetTensor) (presetChoice, error) {
	ft := st.p.name
	typ := st.p.def
	reason := "preset " + ft
	set := func(dt tensor.DType, why string) {
		typ = dt
		reason = fmt.Sprintf("preset %s: %s", ft, why)
	}
	arch := st.model.arch
	nExpert := st.model.nExpert
	layerText := func(i, n int) string { return fmt.Sprintf("layer %d of %d", i, n) }

	switch {
	case t.cat == catOutput || (st.tied && t.cat == catTokenEmbd):
		what := "output"
		if t.cat == catTokenEmbd {
			what = "token embeddings tied to the output"
		}
		switch {
		case arch == "falcon":
			set(tensor.Q8_0, what+" of a falcon model")
		case t.row%blockSize(typ) != 0:
			set(tensor.Q8_0, fmt.Sprintf("%s rows of %d do not fit %s blocks", what, t.row, typ))
		case typ != tensor.Q8_0:
			set(tensor.Q6_K, what)
		}
	case t.cat == catTokenEmbd:
		if ft == "TQ1_0" || ft == "TQ2_0" {
			set(tensor.Q4_K, "token embeddings")
		}
	case t.cat.attnVLike():
		i, n := st.iAttnV, st.nAttnV
		gqa := st.model.gqa()
		switch {
		case ft == "Q2_K":
			if gqa >= 4 {
				set(tensor.Q4_K, fmt.Sprintf("attn_v with %d query heads per key/value head", gqa))
			} else {
				set(tensor.Q3_K, "attn_v")
			}
		case ft == "Q3_K_M":
			if i < 2 {
				set(tensor.Q5_K, fmt.Sprintf("attn_v, one of the first two (%d of %d)", i, n))
			} else {
				set(tensor.Q4_K, "attn_v")
			}
		case ft == "Q3_K_L":
			set(tensor.Q5_K, "attn_v")
		case (ft == "IQ4_NL" || ft == "IQ4_XS") && gqa >= 4:
			set(tensor.Q5_K, fmt.Sprintf("attn_v with %d query heads per key/value head", gqa))
		case (ft == "Q4_K_M" || ft == "Q5_K_M") && useMoreBits(i, n):
			set(tensor.Q6_K, "attn_v of "+layerText(i, n)+", a use_more_bits layer")
		case ft == "Q4_K_S" && i < 4:
			set(tensor.Q5_K, fmt.Sprintf("attn_v, one of the first four (%d of %d)", i, n))
		}
		if st.is70B && (typ == tensor.Q3_K || typ == tensor.Q4_K) {
			set(tensor.Q5_K, "attn_v of a 70B model")
		}
		if nExpert == 8 {
			set(tensor.Q8_0, "attn_v of an 8-expert model")
		}
		st.iAttnV++
	case t.cat == catAttnK:
		if nExpert == 8 {
			set(tensor.Q8_0, "attn_k of an 8-expert model")
		}
	case t.cat == catAttnQ:
		// Only the IQ3 file types change attn_q.
	case t.cat == catFFNDown:
		i, n := st.iDown, st.nDown
		if nExpert > 1 {
			if t.layer < 0 {
				return presetChoice{}, fmt.Errorf("cannot tell the layer of %q, which llama.cpp needs for a mixture-of-experts model", t.name)
			}
			if n > 0 && t.layer >= n {
				return presetChoice{}, fmt.Errorf("layer %d of %q is beyond the model's %d layers", t.layer, t.name, n)
			}
			i = t.layer
		}
		lt := layerText(i, n)
		switch {
		case ft == "Q2_K":
			set(tensor.Q3_K, "ffn_down")
		case ft == "Q3_K_M":
			switch {
			case i < n/16:
				set(tensor.Q5_K, "ffn_down of "+lt+", in the first sixteenth")
			case arch != "falcon" || useMoreBits(i, n):
				set(tensor.Q4_K, "ffn_down of "+lt)
			}
		case ft == "Q3_K_L":
			if arch == "falcon" {
				set(tensor.Q4_K, "ffn_down of a falcon model")
			} else {
				set(tensor.Q5_K, "ffn_down")
			}
		case ft == "Q4_K_M":
			if arch == "falcon" {
				switch {
				case i < n/16:
					set(tensor.Q6_K, "ffn_down of "+lt+" of a falcon model, in the first sixteenth")
				case useMoreBits(i, n):
					set(tensor.Q5_K, "ffn_down of "+lt+" of a falcon model, a use_more_bits layer")
				}
			} else if useMoreBits(i, n) {
				set(tensor.Q6_K, "ffn_down of "+lt+", a use_more_bits layer")
			}
		case i < n/8 && (ft == "IQ4_NL" || ft == "IQ4_XS"):
			set(tensor.Q5_K, "ffn_down of "+lt+", in the first eighth")
		case ft == "Q5_K_M" && useMoreBits(i, n):
			set(tensor.Q6_K, "ffn_down of "+lt+", a use_more_bits layer")
		case ft == "Q4_K_S" && arch != "falcon" && i < n/8:
			set(tensor.Q5_K, "ffn_down of "+lt+", in the first eighth")
		}
		st.iDown++
	case t.cat == catAttnOutput:
		if arch != "falcon" {
			if nExpert == 8 {
				switch ft {
				case "Q2_K", "Q3_K_S", "Q3_K_M", "IQ4_NL", "Q4_K_S", "Q4_K_M", "IQ4_XS":
					set(tensor.Q5_K, "attn_output of an 8-expert model")
				}
			} else {
				switch ft {
				case "Q2_K":
					set(tensor.Q3_K, "attn_output")
				case "Q3_K_M":
					set(tensor.Q4_K, "attn_output")
				case "Q3_K_L":
					set(tensor.Q5_K, "attn_output")
				}
			}
		} else if ft == "Q3_K_L" {
			set(tensor.Q4_K, "attn_output of a falcon model")
		}
	}
	return presetChoice{typ, reason}, nil
}

// llamaFallback is llama.cpp's tensor_type_fallback: the type used when a
// tensor's rows are not a whole number of the chosen type's blocks.
func llamaFallback(dt tensor.DType, row uint64) (tensor.DType, string) {
	fb := tensor.F16
	switch dt {
	case tensor.Q2_K, tensor.Q3_K, tensor.TQ1_0, tensor.TQ2_0:
		fb = tensor.Q4_0
	case tensor.Q4_K:
		fb = tensor.Q5_0
	case tensor.Q5_K:
		fb = tensor.Q5_1
	case tensor.Q6_K:
		fb = tensor.Q8_0
	case tensor.IQ4XS:
		fb = tensor.IQ4NL
	}
	if !fits(fb, []uint64{row}) {
		fb = tensor.F16
	}
	return fb, fmt.Sprintf("rows of %d are not a whole number of %s blocks of %d, so %s (llama.cpp's fallback)", row, dt, blockSize(dt), fb)
}

// presetTensorOf describes a manifest tensor for the preset logic: its
// GGUF-style name (Hugging Face llama names are mapped), category and layer.
func presetTensorOf(i int, t *tensor.TensorInfo) presetTensor {
	name := llamanames.Canonical(t.Name)
	layer, ok := llamanames.LayerIndex(name)
	if !ok {
		layer = -1
	}
	return presetTensor{index: i, name: name, cat: categoryOf(name), layer: layer, row: rowLen(t.Shape)}
}
