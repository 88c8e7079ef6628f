package gguf

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"path"
	"strconv"
	"strings"

	"github.com/sluice-ml/sluice/sdk/llamanames"
	"github.com/sluice-ml/sluice/sdk/plugin"
	"github.com/sluice-ml/sluice/sdk/tensor"
	"github.com/sluice-ml/sluice/sdk/tokenizer"
)

// QuantizationVersion is ggml's GGML_QNT_VERSION, written as
// general.quantization_version.
const QuantizationVersion = 2

// KeyFileType is llama.cpp's general.file_type (LlamaFileType, u32).
const KeyFileType = "general.file_type"

// hfConfig holds the config.json fields llama.cpp's converter reads for the
// llama family.
type hfConfig struct {
	Architectures         []string        `json:"architectures"`
	ModelType             string          `json:"model_type"`
	NameOrPath            string          `json:"_name_or_path"`
	HiddenSize            *uint64         `json:"hidden_size"`
	IntermediateSize      *uint64         `json:"intermediate_size"`
	NumHiddenLayers       *uint64         `json:"num_hidden_layers"`
	NumAttentionHeads     *uint64         `json:"num_attention_heads"`
	NumKeyValueHeads      *uint64         `json:"num_key_value_heads"`
	MaxPositionEmbeddings *uint64         `json:"max_position_embeddings"`
	HeadDim               *uint64         `json:"head_dim"`
	VocabSize             *uint64         `json:"vocab_size"`
	RMSNormEps            *float64        `json:"rms_norm_eps"`
	RopeTheta             *float64        `json:"rope_theta"`
	RopeScaling           json.RawMessage `json:"rope_scaling"`
	TieWordEmbeddings     bool            `json:"tie_word_embeddings"`
	// OriginalMaxPositionEmbeddings is read when rope_scaling lacks it.
	OriginalMaxPositionEmbeddings *float64 `json:"original_max_position_embeddings"`
}

// families maps a Hugging Face architecture class or model_type to the
// family name Sluice uses; familyArch maps a family to llama.cpp's
// general.architecture.
var (
	families = map[string]string{
		"LlamaForCausalLM": "llama", "MistralForCausalLM": "mistral",
		"Qwen2ForCausalLM": "qwen2", "Qwen3ForCausalLM": "qwen3",
		"llama": "llama", "mistral": "mistral", "qwen2": "qwen2", "qwen3": "qwen3",
	}
	familyArch = map[string]string{"llama": "llama", "mistral": "llama", "qwen2": "qwen2", "qwen3": "qwen3"}
)

// SupportedArchitectures lists the families architecture = "auto" converts.
var SupportedArchitectures = []string{"llama", "mistral", "qwen2", "qwen3"}

// hfConversion plans a Hugging Face → llama.cpp conversion for one manifest.
type hfConversion struct {
	family string // llama, mistral, qwen2, qwen3
	arch   string // general.architecture
	cfg    hfConfig
	in     *tensor.Manifest
	note   string // set by metadata: what the plan should say about the tokenizer
}

// newHFConversion returns nil when no conversion applies: no architecture
// option, or an input without config.json (then a named architecture only
// sets general.architecture).
func newHFConversion(option string, in *tensor.Manifest) (*hfConversion, error) {
	if option == "" {
		return nil, nil
	}
	raw, ok := in.Metadata.Get(tensor.MetaHFConfig)
	if !ok {
		return nil, nil
	}
	text, _ := raw.Str()
	c := &hfConversion{in: in}
	if err := json.Unmarshal([]byte(text), &c.cfg); err != nil {
		return nil, &plugin.InputError{File: "config.json", Msg: "not valid JSON", Err: err}
	}
	if option == "auto" {
		for _, a := range c.cfg.Architectures {
			if f, ok := families[a]; ok {
				c.family = f
				break
			}
		}
		if c.family == "" {
			c.family = families[c.cfg.ModelType]
		}
		if c.family == "" {
			return nil, plugin.ConfigErrorf("architecture", "config.json names architectures %v, model_type %q; architecture = \"auto\" converts %s", c.cfg.Architectures, c.cfg.ModelType, strings.Join(SupportedArchitectures, ", "))
		}
	} else {
		c.family = option
		if _, ok := familyArch[option]; !ok {
			return nil, plugin.ConfigErrorf("architecture", "%q: converting a Hugging Face checkpoint is implemented for %s (or \"auto\")", option, strings.Join(SupportedArchitectures, ", "))
		}
	}
	c.arch = familyArch[c.family]
	for _, f := range []struct {
		name string
		v    *uint64
	}{{"hidden_size", c.cfg.HiddenSize}, {"num_hidden_layers", c.cfg.NumHiddenLayers}, {"num_attention_heads", c.cfg.NumAttentionHeads}} {
		if f.v == nil || *f.v == 0 {
			return nil, &plugin.InputError{File: "config.json", Msg: fmt.Sprintf("%s is missing or zero; the %s conversion needs it", f.name, c.family)}
		}
	}
	return c, nil
}

// rename maps a Hugging Face tensor name to llama.cpp's, or says why the
// tensor is not written.
func (c *hfConversion) rename(name string) (string, string, error) {
	if strings.HasSuffix(name, ".rotary_emb.inv_freq") {
		return "", "rotary frequency buffer; llama.cpp computes it", nil
	}
	if name == "lm_head.weight" && c.cfg.TieWordEmbeddings {
		if t, ok := c.in.Tensor(name); ok && t.Attr(tensor.AttrTiedTo) != "" {
			return "", "tied to the token embeddings; llama.cpp reuses token_embd", nil
		}
	}
	// The name table is shared with the rename transform (sdk/llamanames).
	if out, ok := llamanames.ToGGUF(name); ok {
		return out, "", nil
	}
	if isGGUFName(name) {
		return "", "", &plugin.InputError{Tensor: name, Msg: "already has a llama.cpp name; architecture = \"auto\" renames and permutes Hugging Face tensors itself, so remove the rename/permute stages before this sink (or leave architecture unset)"}
	}
	return "", "", &plugin.InputError{Tensor: name, Msg: fmt.Sprintf("has no llama.cpp name in the %s architecture (as llama.cpp's converter says: cannot map tensor)", c.family)}
}

// isGGUFName reports whether name is already one of llama.cpp's tensor names.
func isGGUFName(name string) bool {
	_, ok := llamanames.ToHF(name)
	return ok
}

// permuteHeads returns the head count to permute a tensor's rows with, or 0.
func (c *hfConversion) permuteHeads(name string) int {
	if c.family != "llama" && c.family != "mistral" {
		return 0 // qwen2/qwen3 use NeoX RoPE: no permutation
	}
	_, rest, ok := llamanames.HFLayer(name)
	if !ok {
		return 0
	}
	heads := *c.cfg.NumAttentionHeads
	switch rest {
	case "self_attn.q_proj.weight", "self_attn.q_proj.bias":
	case "self_attn.k_proj.weight", "self_attn.k_proj.bias":
		if c.cfg.NumKeyValueHeads != nil && *c.cfg.NumKeyValueHeads != 0 {
			heads = *c.cfg.NumKeyValueHeads
		}
	default:
		return 0
	}
	return int(heads)
}

// keepF32 reports whether llama.cpp's converter keeps a tensor f32: 1-D
// tensors, norms, and everything that is not a .weight (biases).
func (c *hfConversion) keepF32(name string, shape []uint64) bool {
	out, skip, err := c.rename(name)
	if err != nil || skip != "" {
		return false
	}
	return len(NeFromShape(shape)) <= 1 || strings.HasSuffix(out, "_norm.weight") || !strings.HasSuffix(out, ".weight")
}

// fileTypes maps a dtype to llama.cpp's general.file_type (LlamaFileType).
// K-quants map to their _S variant, the uniform one.
var fileTypes = map[tensor.DType]uint32{
	tensor.F32: 0, tensor.F16: 1, tensor.Q4_0: 2, tensor.Q4_1: 3, tensor.Q8_0: 7, tensor.Q5_0: 8, tensor.Q5_1: 9,
	tensor.Q2_K: 10, tensor.Q3_K: 11, tensor.Q4_K: 14, tensor.Q5_K: 16, tensor.Q6_K: 18,
	tensor.IQ4NL: 25, tensor.IQ4XS: 30, tensor.BF16: 32, tensor.TQ1_0: 36, tensor.TQ2_0: 37, tensor.MXFP4: 38,
}

// fileType picks general.file_type: the dtype option, else the dtype most of
// the matrices are written in.
func fileType(specs []TensorSpec, dtype tensor.DType) uint32 {
	if ft, ok := fileTypes[dtype]; ok {
		return ft
	}
	count := map[tensor.DType]int{}
	best := tensor.F32
	for _, s := range specs {
		if len(NeFromShape(s.Shape)) < 2 {
			continue
		}
		count[s.DType]++
		if count[s.DType] > count[best] || (count[s.DType] == count[best] && s.DType < best) {
			best = s.DType
		}
	}
	return fileTypes[best]
}

// sizeLabel renders a parameter count as gguf-py does for general.size_label
// ("135M", "1.1B", "8.0B"): scaled to K/M/B/T, at least two significant digits.
func sizeLabel(n uint64) string {
	v, suffix := float64(n), "K"
	switch {
	case v > 1e12:
		v, suffix = v*1e-12, "T"
	case v > 1e9:
		v, suffix = v*1e-9, "B"
	case v > 1e6:
		v, suffix = v*1e-6, "M"
	default:
		v *= 1e-3
	}
	digits := len(strings.TrimLeft(strconv.FormatFloat(math.RoundToEven(v), 'f', 0, 64), "0")) // Python's round
	fix := max(2-digits, 0)
	return strconv.FormatFloat(v, 'f', fix, 64) + suffix
}

// metadata builds the keys llama.cpp's converter writes, in its order.
func (c *hfConversion) metadata(specs []TensorSpec, dtype tensor.DType) (tensor.Metadata, error) {
	var md tensor.Metadata
	a := c.arch
	u32 := func(key string, v *uint64) error {
		if v == nil {
			return nil
		}
		if *v > math.MaxUint32 {
			return &plugin.InputError{File: "config.json", Msg: fmt.Sprintf("%s = %d does not fit llama.cpp's u32", key, *v)}
		}
		md.Set(key, tensor.U32Value(uint32(*v)))
		return nil
	}
	f32 := func(key string, v *float64) {
		if v != nil {
			md.Set(key, tensor.F32Value(float32(*v)))
		}
	}
	md.Set("general.architecture", tensor.StringValue(a))
	md.Set("general.type", tensor.StringValue("model"))
	if c.cfg.NameOrPath != "" {
		md.Set("general.name", tensor.StringValue(path.Base(strings.TrimRight(c.cfg.NameOrPath, "/"))))
	} else if name := c.in.Metadata.String(tensor.MetaHFModelName); name != "" {
		md.Set("general.name", tensor.StringValue(name))
	}
	var params uint64
	for _, s := range specs {
		n, _ := tensor.ElementCount(s.Shape)
		params += n
	}
	md.Set("general.size_label", tensor.StringValue(sizeLabel(params)))

	cfg := &c.cfg
	for _, kv := range []struct {
		key string
		v   *uint64
	}{
		{a + ".block_count", cfg.NumHiddenLayers},
		{a + ".context_length", cfg.MaxPositionEmbeddings},
		{a + ".embedding_length", cfg.HiddenSize},
		{a + ".feed_forward_length", cfg.IntermediateSize},
		{a + ".attention.head_count", cfg.NumAttentionHeads},
		{a + ".attention.head_count_kv", cfg.NumKeyValueHeads},
	} {
		if err := u32(kv.key, kv.v); err != nil {
			return md, err
		}
	}
	f32(a+".rope.freq_base", cfg.RopeTheta)
	f32(a+".attention.layer_norm_rms_epsilon", cfg.RMSNormEps)
	if err := u32(a+".attention.key_length", cfg.HeadDim); err != nil {
		return md, err
	}
	if err := u32(a+".attention.value_length", cfg.HeadDim); err != nil {
		return md, err
	}
	ft := fileType(specs, dtype)
	// A quantize preset upstream (Q4_K_M, …) names the file type better than
	// the most common dtype can, unless the dtype option re-types the model.
	if v, ok := c.in.Metadata.Get(KeyFileType); ok && dtype == "" {
		if u, ok := v.Uint(); ok && u <= math.MaxUint32 {
			ft = uint32(u)
		}
	}
	md.Set(KeyFileType, tensor.U32Value(ft))
	if c.arch == "llama" {
		vocab := cfg.VocabSize
		if vocab == nil {
			if t, ok := c.in.Tensor("model.embed_tokens.weight"); ok && len(t.Shape) == 2 {
				vocab = &t.Shape[0]
			}
		}
		if err := u32(a+".vocab_size", vocab); err != nil {
			return md, err
		}
		headDim := *cfg.HiddenSize / *cfg.NumAttentionHeads
		if cfg.HeadDim != nil {
			headDim = *cfg.HeadDim
		}
		md.Set(a+".rope.dimension_count", tensor.U32Value(uint32(headDim)))
	}
	if err := c.ropeScaling(&md); err != nil {
		return md, err
	}
	tok, note, err := tokenizerMetadata(&c.in.Metadata)
	if err != nil {
		return md, err
	}
	c.note = note
	tok.All(func(k string, v tensor.Value) bool {
		md.Set(k, v)
		return true
	})
	md.Set("general.quantization_version", tensor.U32Value(QuantizationVersion))
	return md, nil
}

// ropeScaling writes {arch}.rope.scaling.* for linear and yarn scaling and
// refuses kinds whose conversion is not implemented.
func (c *hfConversion) ropeScaling(md *tensor.Metadata) error {
	raw := c.cfg.RopeScaling
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var rs struct {
		Type     string   `json:"type"`
		RopeType string   `json:"rope_type"`
		Factor   *float64 `json:"factor"`
		Original *uint64  `json:"original_max_position_embeddings"`
	}
	if err := json.Unmarshal(raw, &rs); err != nil {
		return &plugin.InputError{File: "config.json", Msg: "rope_scaling is not an object", Err: err}
	}
	kind := rs.RopeType
	if kind == "" {
		kind = rs.Type
	}
	a := c.arch
	switch kind {
	case "", "default":
		return nil
	case "llama3":
		if c.arch == "llama" {
			return nil // carried by the generated rope_freqs.weight tensor
		}
	case "linear", "yarn":
		md.Set(a+".rope.scaling.type", tensor.StringValue(kind))
		if rs.Factor != nil {
			md.Set(a+".rope.scaling.factor", tensor.F32Value(float32(*rs.Factor)))
		}
		if kind == "yarn" && rs.Original != nil {
			md.Set(a+".rope.scaling.original_context_length", tensor.U32Value(uint32(*rs.Original)))
		}
		return nil
	}
	return &plugin.InputError{File: "config.json", Msg: fmt.Sprintf("rope_scaling type %q is not converted for the %s architecture; supported: linear, yarn, llama3 (llama family)", kind, c.family)}
}

// tokenizerMetadata converts the checkpoint's tokenizer.json and
// tokenizer_config.json into llama.cpp's tokenizer.ggml.* keys and the chat
// template, with sdk/tokenizer (the pre-tokenizer is named from
// tokenizer.json's own configuration, never from a hash). A checkpoint
// without tokenizer.json gets no tokenizer keys; the plan says so.
func tokenizerMetadata(md *tensor.Metadata) (tensor.Metadata, string, error) {
	tokJSON, ok := md.Get(tensor.MetaHFTokenizer)
	if !ok {
		return tensor.Metadata{}, "the checkpoint has no tokenizer.json: no tokenizer.ggml.* keys are written, and llama.cpp needs them to run the model", nil
	}
	tj, _ := tokJSON.Str()
	var tc, cfg []byte
	if v, ok := md.Get(tensor.MetaHFTokenizerConfig); ok {
		s, _ := v.Str()
		tc = []byte(s)
	}
	if v, ok := md.Get(tensor.MetaHFConfig); ok {
		s, _ := v.Str()
		cfg = []byte(s)
	}
	out, err := tokenizer.GGUFMetadata([]byte(tj), tc, tokenizer.GGUFOptions{ConfigJSON: cfg})
	if err != nil {
		return tensor.Metadata{}, "", &plugin.InputError{File: "tokenizer.json", Msg: "cannot be converted to GGUF tokenizer keys", Err: err}
	}
	return *out, "", nil
}

// generatedTensor is a tensor the sink writes itself.
type generatedTensor struct {
	spec TensorSpec
	data []byte
	why  string
}

// ropeParams reads rope_scaling's llama3 parameters, or reports none.
type ropeParams struct {
	RopeType        string   `json:"rope_type"`
	Type            string   `json:"type"`
	Factor          *float64 `json:"factor"`
	LowFreqFactor   *float64 `json:"low_freq_factor"`
	HighFreqFactor  *float64 `json:"high_freq_factor"`
	OriginalContext *float64 `json:"original_max_position_embeddings"`
	RopeTheta       *float64 `json:"rope_theta"`
}

// extraTensors returns the tensors llama.cpp's converter generates: for
// llama3 rope scaling, rope_freqs.weight (f32, head_dim/2 frequency factors).
func (c *hfConversion) extraTensors() ([]generatedTensor, error) {
	raw := c.cfg.RopeScaling
	if c.arch != "llama" || len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var rp ropeParams
	if err := json.Unmarshal(raw, &rp); err != nil {
		return nil, &plugin.InputError{File: "config.json", Msg: "rope_scaling is not an object", Err: err}
	}
	if !strings.EqualFold(rp.RopeType, "llama3") && !strings.EqualFold(rp.Type, "llama3") {
		return nil, nil
	}
	base := 10000.0
	if rp.RopeTheta != nil {
		base = *rp.RopeTheta
	} else if c.cfg.RopeTheta != nil {
		base = *c.cfg.RopeTheta
	}
	dim := *c.cfg.HiddenSize / *c.cfg.NumAttentionHeads
	if c.cfg.HeadDim != nil {
		dim = *c.cfg.HeadDim
	}
	if dim == 0 || dim%2 != 0 || dim > 1<<16 {
		return nil, &plugin.InputError{File: "config.json", Msg: fmt.Sprintf("head dimension %d cannot carry llama3 rope factors", dim)}
	}
	get := func(p *float64, def float64) float64 {
		if p != nil {
			return *p
		}
		return def
	}
	oldContext := get(rp.OriginalContext, 8192)
	if rp.OriginalContext == nil && c.cfg.OriginalMaxPositionEmbeddings != nil {
		oldContext = *c.cfg.OriginalMaxPositionEmbeddings
	}
	factors := llama3RopeFactors(base, int(dim), get(rp.Factor, 8), get(rp.LowFreqFactor, 1), get(rp.HighFreqFactor, 4), oldContext)
	data := make([]byte, 4*len(factors))
	for i, f := range factors {
		binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(f))
	}
	return []generatedTensor{{
		spec: TensorSpec{Name: "rope_freqs.weight", DType: tensor.F32, Shape: []uint64{uint64(len(factors))}},
		data: data,
		why:  "generated from config.json's llama3 rope_scaling, as llama.cpp's converter does",
	}}, nil
}

// llama3RopeFactors computes Llama 3's per-frequency RoPE scaling factors the
// way llama.cpp's converter does, in float32 where it uses float32 tensors:
// frequencies 1/base^(i/dim) for even i; factor 1 for short wavelengths,
// factor for long ones, and a smooth blend in between.
func llama3RopeFactors(base float64, dim int, factor, lowFreq, highFreq, oldContext float64) []float32 {
	lowWavelen := oldContext / lowFreq
	highWavelen := oldContext / highFreq
	out := make([]float32, 0, dim/2)
	for i := 0; i < dim; i += 2 {
		exp := float32(i) / float32(dim)
		freq := 1 / float32(math.Pow(base, float64(exp)))
		wavelen := float32(2*math.Pi) / freq
		switch {
		case float64(wavelen) < highWavelen:
			out = append(out, 1)
		case float64(wavelen) > lowWavelen:
			out = append(out, float32(factor))
		default:
			smooth := (float32(oldContext)/wavelen - float32(lowFreq)) / float32(highFreq-lowFreq)
			out = append(out, 1/((1-smooth)/float32(factor)+smooth))
		}
	}
	return out
}
