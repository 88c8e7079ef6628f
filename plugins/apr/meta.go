package apr

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/sluice-ml/sluice/sdk/tensor"
)

// fieldKind is the JSON type aprender's metadata struct gives a field.
type fieldKind uint8

const (
	kindString fieldKind = iota + 1
	kindU64
	kindU32
	kindF32
	kindObject
)

// canonicalFields lists the typed fields of aprender's metadata struct in
// its serialization order.
var canonicalFields = []struct {
	name string
	kind fieldKind
}{
	{"model_type", kindString}, {"name", kindString}, {"description", kindString}, {"author", kindString},
	{"license", kindString}, {"data_source", kindString}, {"data_license", kindString}, {"version", kindString},
	{"source", kindString}, {"original_format", kindString}, {"created_at", kindString},
	{"total_size", kindU64}, {"param_count", kindU64}, {"quantization", kindObject}, {"sharding", kindObject},
	{"chat_template", kindString}, {"chat_format", kindString}, {"special_tokens", kindObject},
	{"architecture", kindString}, {"hf_architecture", kindString}, {"hf_model_type", kindString},
	{"hidden_size", kindU64}, {"num_layers", kindU64}, {"num_heads", kindU64}, {"num_kv_heads", kindU64},
	{"vocab_size", kindU64}, {"intermediate_size", kindU64}, {"max_position_embeddings", kindU64},
	{"rope_theta", kindF32}, {"rope_type", kindU32}, {"rms_norm_eps", kindF32}, {"head_dim", kindU64},
	{"num_experts", kindU64}, {"num_experts_per_tok", kindU64}, {"moe_intermediate_size", kindU64},
}

var canonicalKind = func() map[string]fieldKind {
	m := make(map[string]fieldKind, len(canonicalFields))
	for _, f := range canonicalFields {
		m[f.name] = f.kind
	}
	return m
}()

// alwaysWritten are written as null when unset, as aprender's writer does.
var alwaysNull = setOf("license", "data_source", "data_license")

// aliases maps the alternative spellings aprender's inference reader
// accepts (serde aliases) to the canonical field. A file holding both makes
// that reader drop all metadata silently, so aliases are never written.
var aliases = map[string]string{
	"hidden_dim": "hidden_size", "d_model": "hidden_size", "n_embd": "hidden_size",
	"n_layers": "num_layers", "num_hidden_layers": "num_layers", "n_layer": "num_layers",
	"n_heads": "num_heads", "num_attention_heads": "num_heads", "n_head": "num_heads",
	"n_kv_heads": "num_kv_heads", "num_key_value_heads": "num_kv_heads",
	"n_vocab": "vocab_size",
	"ffn_dim": "intermediate_size", "intermediate_dim": "intermediate_size", "n_inner": "intermediate_size",
	"max_seq_len": "max_position_embeddings", "context_length": "max_position_embeddings", "n_ctx": "max_position_embeddings",
	"layer_norm_eps": "rms_norm_eps", "norm_eps": "rms_norm_eps",
}

// typedCustom are keys outside aprender's struct that its inference
// reader types (a wrong type there also drops all metadata).
var typedCustom = map[string]tensor.ValueType{"norm_topk_prob": tensor.TypeBool}

// member is one top-level JSON member.
type member struct {
	key  string
	json []byte
}

// aprMeta is the metadata of an output, derived once from the manifest and
// rendered per file (sharding and tensor_shapes differ between shards).
type aprMeta struct {
	fields       map[string][]byte
	custom       []member
	tensorShapes bool
	hasVocab     bool
	quantized    bool
	notes        []string
}

// buildMeta derives aprender's metadata from a manifest: its own APR keys
// first, then what a GGUF or Hugging Face source carried.
func buildMeta(m *tensor.Manifest) (*aprMeta, error) {
	a := &aprMeta{fields: map[string][]byte{}}
	md := &m.Metadata
	aliasVals := map[string]tensor.Value{}
	aliasSeen := map[string]string{}
	customSeen := map[string]bool{}
	var droppedHF []string

	addCustom := func(key string, js []byte) {
		if customSeen[key] {
			for i := range a.custom {
				if a.custom[i].key == key {
					a.custom[i].json = js
				}
			}
			return
		}
		customSeen[key] = true
		a.custom = append(a.custom, member{key, js})
	}

	var gg *derived
	if arch := md.String("general.architecture"); arch != "" {
		gg = deriveGGUF(md, arch)
	}
	var hf *derived
	if _, ok := md.Get(tensor.MetaHFConfig); ok {
		hf = deriveHF(md, &a.notes)
	} else if _, ok := md.Get(tensor.MetaHFTokenizer); ok {
		hf = deriveHF(md, &a.notes)
	}

	for _, key := range md.Keys() {
		v, _ := md.Get(key)
		switch {
		case strings.HasPrefix(key, tensor.MetaHFPrefix):
			droppedHF = append(droppedHF, key)
		case gg != nil && gg.consumed[key]:
		case strings.HasPrefix(key, RawJSONPrefix):
			name := strings.TrimPrefix(key, RawJSONPrefix)
			s, ok := v.Str()
			if !ok || !json.Valid([]byte(s)) {
				a.notes = append(a.notes, fmt.Sprintf("metadata %q dropped: not JSON text", key))
				continue
			}
			switch k, canonical := canonicalKind[name]; {
			case name == "sharding":
				// Recomputed for the files this sink writes.
			case name == "tensor_shapes":
				a.tensorShapes = true
			case canonical && k == kindObject:
				if s == "null" {
					continue
				}
				if !strings.HasPrefix(s, "{") {
					a.notes = append(a.notes, fmt.Sprintf("metadata %q dropped: aprender needs an object", name))
					continue
				}
				a.fields[name] = []byte(s)
			case canonical:
				a.notes = append(a.notes, fmt.Sprintf("metadata %q dropped: aprender needs a %s", name, kindName(k)))
			case aliases[name] != "":
				a.notes = append(a.notes, fmt.Sprintf("metadata %q dropped: an alias of %q that aprender's inference reader would refuse", name, aliases[name]))
			case typedCustom[name] != 0:
				a.notes = append(a.notes, fmt.Sprintf("metadata %q dropped: aprender's inference reader needs a %s", name, typedCustom[name]))
			default:
				addCustom(name, []byte(s))
			}
		case canonicalKind[key] != 0:
			if key == "sharding" {
				continue
			}
			js, err := canonicalJSON(key, v)
			if err != nil {
				a.notes = append(a.notes, fmt.Sprintf("metadata %q dropped: %v", key, err))
				continue
			}
			a.fields[key] = js
		case aliases[key] != "":
			canon := aliases[key]
			if _, dup := aliasVals[canon]; !dup {
				aliasVals[canon] = v
				aliasSeen[canon] = key
			}
		case typedCustom[key] != 0:
			if v.Type() != typedCustom[key] {
				a.notes = append(a.notes, fmt.Sprintf("metadata %q dropped: aprender's inference reader needs a %s, not %s", key, typedCustom[key], v.Type()))
				continue
			}
			js, _ := appendJSONValue(nil, v)
			addCustom(key, js)
		default:
			js, err := appendJSONValue(nil, v)
			if err != nil {
				a.notes = append(a.notes, fmt.Sprintf("metadata %q dropped: %v", key, err))
				continue
			}
			addCustom(key, js)
		}
	}
	if len(droppedHF) > 0 {
		a.notes = append(a.notes, fmt.Sprintf("Hugging Face files %s read into aprender's keys, not copied", strings.Join(droppedHF, ", ")))
	}

	// Aliases fill their canonical field when it is unset; never written.
	for _, f := range canonicalFields {
		v, ok := aliasVals[f.name]
		if !ok {
			continue
		}
		if _, set := a.fields[f.name]; set {
			a.notes = append(a.notes, fmt.Sprintf("metadata %q dropped: %q is set (aprender's inference reader refuses both)", aliasSeen[f.name], f.name))
			continue
		}
		js, err := canonicalJSON(f.name, v)
		if err != nil {
			a.notes = append(a.notes, fmt.Sprintf("metadata %q dropped: %v", aliasSeen[f.name], err))
			continue
		}
		a.fields[f.name] = js
		a.notes = append(a.notes, fmt.Sprintf("metadata %q written as %q (aliases are never written)", aliasSeen[f.name], f.name))
	}

	// Derived values fill what is still unset; GGUF before Hugging Face.
	for _, d := range []*derived{gg, hf} {
		if d == nil {
			continue
		}
		for _, f := range canonicalFields {
			if js, ok := d.fields[f.name]; ok {
				if _, set := a.fields[f.name]; !set {
					a.fields[f.name] = js
				}
			}
		}
		if !customSeen["tokenizer.vocabulary"] {
			for _, c := range d.custom {
				if !customSeen[c.key] {
					addCustom(c.key, c.json)
				}
			}
		} else {
			for _, c := range d.custom {
				if !strings.HasPrefix(c.key, "tokenizer.") && !customSeen[c.key] {
					addCustom(c.key, c.json)
				}
			}
		}
		if d.tensorShapes {
			a.tensorShapes = true
		}
		for _, u := range d.unmapped {
			if !customSeen[u.key] {
				addCustom(u.key, u.json)
			}
		}
	}

	if _, ok := a.fields["model_type"]; !ok {
		if arch, ok := a.fields["architecture"]; ok {
			a.fields["model_type"] = arch
		} else {
			a.fields["model_type"] = []byte(`""`)
		}
	}
	if _, ok := a.fields["total_size"]; !ok {
		a.fields["total_size"] = strconv.AppendUint(nil, m.TotalSize(), 10)
	}
	if _, ok := a.fields["param_count"]; !ok {
		a.fields["param_count"] = strconv.AppendUint(nil, m.Params(), 10)
	}
	for _, c := range a.custom {
		if c.key == "tokenizer.vocabulary" && len(c.json) > 2 && c.json[0] == '[' && c.json[1] == '"' {
			a.hasVocab = true
		}
	}
	if a.hasVocab {
		if _, ok := a.fields["chat_template"]; ok {
			a.notes = append(a.notes, "tokenizer embedded in tokenizer.* keys (HAS_VOCAB), chat template kept")
		} else {
			a.notes = append(a.notes, "tokenizer embedded in tokenizer.* keys (HAS_VOCAB)")
		}
	}
	return a, nil
}

func kindName(k fieldKind) string {
	switch k {
	case kindString:
		return "string"
	case kindU64, kindU32:
		return "non-negative integer"
	case kindF32:
		return "number"
	}
	return "object"
}

// canonicalJSON renders a value for a typed field, or says why it cannot.
func canonicalJSON(key string, v tensor.Value) ([]byte, error) {
	switch canonicalKind[key] {
	case kindString:
		s, ok := v.Str()
		if !ok {
			return nil, fmt.Errorf("aprender needs a string, not %s", v.Type())
		}
		return appendJSONString(nil, s), nil
	case kindU64, kindU32:
		u, ok := v.Uint()
		if !ok || v.Type() == tensor.TypeBool {
			return nil, fmt.Errorf("aprender needs a non-negative integer, not %s %s", v.Type(), v)
		}
		if canonicalKind[key] == kindU32 && u > math.MaxUint32 {
			return nil, fmt.Errorf("aprender needs a 32-bit integer, not %d", u)
		}
		return strconv.AppendUint(nil, u, 10), nil
	case kindF32:
		f, ok := v.Float()
		if !ok || v.Type() == tensor.TypeBool || math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) > math.MaxFloat32 {
			return nil, fmt.Errorf("aprender needs a finite number, not %s %s", v.Type(), v)
		}
		return []byte(formatFloat(float64(float32(f)), 32)), nil
	}
	return nil, fmt.Errorf("aprender needs an object (use key %q with its JSON text)", RawJSONPrefix+key)
}

// shardMeta is the sharding object of one file.
type shardMeta struct {
	count, index int // index is 0-based
	totalSize    uint64
	pattern      string
}

// render returns the compact JSON of one file's metadata.
func (a *aprMeta) render(shard *shardMeta, tensors []tensor.TensorInfo) []byte {
	b := []byte{'{'}
	first := true
	put := func(key string, js []byte) {
		if !first {
			b = append(b, ',')
		}
		first = false
		b = appendJSONString(b, key)
		b = append(b, ':')
		b = append(b, js...)
	}
	for _, f := range canonicalFields {
		if f.name == "sharding" {
			if shard != nil {
				var s []byte
				s = append(s, `{"shard_count":`...)
				s = strconv.AppendInt(s, int64(shard.count), 10)
				s = append(s, `,"shard_index":`...)
				s = strconv.AppendInt(s, int64(shard.index), 10)
				s = append(s, `,"total_size":`...)
				s = strconv.AppendUint(s, shard.totalSize, 10)
				s = append(s, `,"pattern":`...)
				s = appendJSONString(s, shard.pattern)
				s = append(s, '}')
				put("sharding", s)
			}
			continue
		}
		if js, ok := a.fields[f.name]; ok {
			put(f.name, js)
		} else if alwaysNull[f.name] {
			put(f.name, []byte("null"))
		}
	}
	for _, c := range a.custom {
		put(c.key, c.json)
	}
	if a.tensorShapes {
		sorted := make([]tensor.TensorInfo, len(tensors))
		copy(sorted, tensors)
		sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
		s := []byte{'{'}
		for i, t := range sorted {
			if i > 0 {
				s = append(s, ',')
			}
			s = appendJSONString(s, t.Name)
			s = append(s, ':', '[')
			for j, d := range t.Shape {
				if j > 0 {
					s = append(s, ',')
				}
				s = strconv.AppendUint(s, d, 10)
			}
			s = append(s, ']')
		}
		put("tensor_shapes", append(s, '}'))
	}
	return append(b, '}')
}

// derived is what a GGUF or Hugging Face source's metadata says in
// aprender's terms.
type derived struct {
	fields       map[string][]byte
	custom       []member
	consumed     map[string]bool // source keys mapped (and so not copied)
	unmapped     []member        // source keys copied as custom keys
	tensorShapes bool
}

func (d *derived) setField(name string, v tensor.Value) bool {
	js, err := canonicalJSON(name, v)
	if err != nil {
		return false
	}
	d.fields[name] = js
	return true
}

func (d *derived) addCustom(key string, v tensor.Value) {
	js, err := appendJSONValue(nil, v)
	if err == nil {
		d.custom = append(d.custom, member{key, js})
	}
}

// ropeTypes gives llama.cpp's RoPE style per architecture (names with '_'
// and '-' removed): 0 = NORM (adjacent pairs), 2 = NEOX (split halves).
// Architectures not listed get no rope_type.
var ropeTypes = map[string]uint32{
	"llama": 0, "mistral": 0, "mixtral": 0, "granite": 0, "granitemoe": 0, "deepseek": 0, "deepseek2": 0,
	"baichuan": 0, "internlm2": 0, "minicpm": 0, "commandr": 0, "cohere": 0, "olmo": 0,
	"qwen": 2, "qwen2": 2, "qwen2moe": 2, "qwen3": 2, "qwen3moe": 2, "phi": 2, "phi2": 2, "phi3": 2,
	"phimoe": 2, "gemma": 2, "gemma2": 2, "gemma3": 2, "stablelm": 2, "gptneox": 2, "falcon": 2,
	"starcoder2": 2, "olmo2": 2, "olmoe": 2, "nemotron": 2, "exaone": 2,
}

func ropeTypeOf(arch string) (uint32, bool) {
	k := strings.NewReplacer("_", "", "-", "").Replace(strings.ToLower(arch))
	t, ok := ropeTypes[k]
	return t, ok
}

// deriveGGUF maps a GGUF source's general.*, <arch>.* and tokenizer.* keys.
func deriveGGUF(md *tensor.Metadata, arch string) *derived {
	d := &derived{fields: map[string][]byte{}, consumed: map[string]bool{}, tensorShapes: true}
	use := func(field, key string) {
		if v, ok := md.Get(key); ok && d.setField(field, v) {
			d.consumed[key] = true
		}
	}
	archV := tensor.StringValue(arch)
	d.setField("architecture", archV)
	d.setField("model_type", archV)
	d.setField("hf_model_type", archV)
	d.setField("original_format", tensor.StringValue("gguf"))
	d.consumed["general.architecture"] = true
	use("name", "general.name")
	use("author", "general.author")
	use("license", "general.license")
	use("description", "general.description")
	use("version", "general.version")
	p := arch + "."
	use("hidden_size", p+"embedding_length")
	use("num_layers", p+"block_count")
	use("num_heads", p+"attention.head_count")
	use("num_kv_heads", p+"attention.head_count_kv")
	use("intermediate_size", p+"feed_forward_length")
	use("max_position_embeddings", p+"context_length")
	use("rope_theta", p+"rope.freq_base")
	use("rms_norm_eps", p+"attention.layer_norm_rms_epsilon")
	if _, ok := d.fields["rms_norm_eps"]; !ok {
		use("rms_norm_eps", p+"attention.layer_norm_epsilon")
	}
	use("head_dim", p+"attention.key_length")
	use("num_experts", p+"expert_count")
	use("num_experts_per_tok", p+"expert_used_count")
	use("moe_intermediate_size", p+"expert_feed_forward_length")
	use("vocab_size", p+"vocab_size")
	if rt, ok := ropeTypeOf(arch); ok {
		d.setField("rope_type", tensor.U32Value(rt))
	}

	if _, ok := d.fields["vocab_size"]; !ok {
		if tokens, ok := md.Get("tokenizer.ggml.tokens"); ok && tokens.Len() > 0 {
			d.setField("vocab_size", tensor.U64Value(uint64(tokens.Len())))
		}
	}
	if d.addGGUFTokenizer(md, arch) {
		if v, ok := md.Get("general.name"); ok {
			d.addCustom("tokenizer.model_name", v)
		}
	}
	for _, k := range md.Keys() {
		if d.consumed[k] || strings.HasPrefix(k, tensor.MetaHFPrefix) || strings.HasPrefix(k, RawJSONPrefix) {
			continue
		}
		if strings.HasPrefix(k, "general.") || strings.HasPrefix(k, p) || strings.HasPrefix(k, "tokenizer.ggml.") {
			d.consumed[k] = true
			v, _ := md.Get(k)
			if js, err := appendJSONValue(nil, v); err == nil {
				d.unmapped = append(d.unmapped, member{k, js})
			}
		}
	}
	return d
}

// addGGUFTokenizer maps GGUF tokenizer keys (tokenizer.ggml.*,
// tokenizer.chat_template) to aprender's tokenizer.* keys, chat_template
// and special_tokens. It reports false when md holds no token list.
func (d *derived) addGGUFTokenizer(md *tensor.Metadata, arch string) bool {
	if tmpl, ok := md.Get("tokenizer.chat_template"); ok {
		if d.setField("chat_template", tmpl) {
			d.consumed["tokenizer.chat_template"] = true
		}
	}
	tokens, _ := md.Get("tokenizer.ggml.tokens")
	vocab, ok := tokens.StringSlice()
	if !ok || len(vocab) == 0 {
		return false
	}
	d.consumed["tokenizer.ggml.tokens"] = true
	d.addCustom("tokenizer.vocabulary", tokens)
	d.addCustom("tokenizer.vocab_size", tensor.U64Value(uint64(len(vocab))))
	copyKey := func(to, from string) {
		if v, ok := md.Get(from); ok {
			d.consumed[from] = true
			d.addCustom(to, v)
		}
	}
	if v, ok := md.Get("tokenizer.ggml.model"); ok {
		d.consumed["tokenizer.ggml.model"] = true
		d.addCustom("tokenizer.model", v)
		d.addCustom("tokenizer.model_type", v)
	}
	copyKey("tokenizer.pre_type", "tokenizer.ggml.pre")
	copyKey("tokenizer.merges", "tokenizer.ggml.merges")
	copyKey("tokenizer.scores", "tokenizer.ggml.scores")
	copyKey("tokenizer.token_type", "tokenizer.ggml.token_type")
	copyKey("tokenizer.bos_token_id", "tokenizer.ggml.bos_token_id")
	copyKey("tokenizer.eos_token_id", "tokenizer.ggml.eos_token_id")
	copyKey("tokenizer.padding_token_id", "tokenizer.ggml.padding_token_id")
	copyKey("tokenizer.add_bos_token", "tokenizer.ggml.add_bos_token")
	if v, ok := md.Get("tokenizer.chat_template"); ok {
		d.addCustom("tokenizer.chat_template", v)
	}
	if arch != "" {
		d.addCustom("tokenizer.architecture", tensor.StringValue(arch))
	}
	tokenAt := func(key string) *string {
		v, ok := md.Get(key)
		if !ok {
			return nil
		}
		id, ok := v.Uint()
		if !ok || id >= uint64(len(vocab)) {
			return nil
		}
		return &vocab[id]
	}
	st := specialTokens{
		bos: tokenAt("tokenizer.ggml.bos_token_id"), eos: tokenAt("tokenizer.ggml.eos_token_id"),
		unk: tokenAt("tokenizer.ggml.unknown_token_id"), pad: tokenAt("tokenizer.ggml.padding_token_id"),
	}
	st.findChatML(vocab)
	if js, ok := st.json(); ok {
		d.fields["special_tokens"] = js
	}
	return true
}

// specialTokens is aprender's special_tokens object.
type specialTokens struct {
	bos, eos, unk, pad, imStart, imEnd *string
}

func (s *specialTokens) findChatML(vocab []string) {
	for i := range vocab {
		switch vocab[i] {
		case "<|im_start|>":
			s.imStart = &vocab[i]
		case "<|im_end|>":
			s.imEnd = &vocab[i]
		}
	}
}

func (s *specialTokens) json() ([]byte, bool) {
	if s.bos == nil && s.eos == nil && s.unk == nil && s.pad == nil && s.imStart == nil && s.imEnd == nil {
		return nil, false
	}
	b := []byte{'{'}
	for i, f := range []struct {
		key string
		v   *string
	}{{"bos_token", s.bos}, {"eos_token", s.eos}, {"unk_token", s.unk}, {"pad_token", s.pad}, {"im_start_token", s.imStart}, {"im_end_token", s.imEnd}} {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, f.key)
		b = append(b, ':')
		if f.v == nil {
			b = append(b, "null"...)
		} else {
			b = appendJSONString(b, *f.v)
		}
	}
	return append(b, '}'), true
}
