package apr

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/sluice-ml/sluice/sdk/tensor"
	"github.com/sluice-ml/sluice/sdk/tokenizer"
)

// maxVocab caps the vocabulary a tokenizer.json may declare (by its largest
// token id), so a bad file cannot make the sink allocate without bound.
const maxVocab = 1 << 24

// deriveHF maps the Hugging Face files a safetensors directory source
// carries (config.json, tokenizer.json, tokenizer_config.json,
// generation_config.json) to aprender's fields and tokenizer.* keys.
func deriveHF(md *tensor.Metadata, notes *[]string) *derived {
	d := &derived{fields: map[string][]byte{}, consumed: map[string]bool{}, tensorShapes: true}
	cfg := jsonObject(md, tensor.MetaHFConfig, notes)
	gen := jsonObject(md, tensor.MetaHFGenerationConfig, notes)
	tokCfg := jsonObject(md, tensor.MetaHFTokenizerConfig, notes)
	text, _ := cfg["text_config"].(map[string]any)
	get := func(keys ...string) any {
		for _, src := range []map[string]any{cfg, text} {
			for _, k := range keys {
				if v, ok := src[k]; ok && v != nil {
					return v
				}
			}
		}
		return nil
	}
	setNum := func(field string, keys ...string) {
		if v := jsonNumberValue(get(keys...)); v.IsValid() {
			d.setField(field, v)
		}
	}
	if cfg != nil {
		d.setField("original_format", tensor.StringValue("safetensors"))
	}
	if mt, ok := get("model_type").(string); ok && mt != "" {
		d.setField("architecture", tensor.StringValue(mt))
		d.setField("model_type", tensor.StringValue(mt))
		d.setField("hf_model_type", tensor.StringValue(mt))
		if rt, ok := ropeTypeOf(mt); ok {
			d.setField("rope_type", tensor.U32Value(rt))
		}
	}
	if archs, ok := cfg["architectures"].([]any); ok && len(archs) > 0 {
		if s, ok := archs[0].(string); ok {
			d.setField("hf_architecture", tensor.StringValue(s))
		}
	}
	setNum("hidden_size", "hidden_size", "n_embd", "d_model")
	setNum("num_layers", "num_hidden_layers", "n_layer", "num_layers")
	setNum("num_heads", "num_attention_heads", "n_head", "num_heads")
	setNum("num_kv_heads", "num_key_value_heads")
	setNum("vocab_size", "vocab_size")
	setNum("intermediate_size", "intermediate_size", "n_inner", "ffn_dim")
	setNum("max_position_embeddings", "max_position_embeddings", "n_positions", "n_ctx")
	setNum("rope_theta", "rope_theta")
	setNum("rms_norm_eps", "rms_norm_eps", "layer_norm_eps", "layer_norm_epsilon")
	setNum("head_dim", "head_dim")
	setNum("num_experts", "num_experts", "num_local_experts")
	setNum("num_experts_per_tok", "num_experts_per_tok")
	setNum("moe_intermediate_size", "moe_intermediate_size")
	if b, ok := get("norm_topk_prob").(bool); ok {
		d.addCustom("norm_topk_prob", tensor.BoolValue(b))
	}

	if tmpl, ok := chatTemplate(tokCfg); ok {
		d.setField("chat_template", tensor.StringValue(tmpl))
	}
	raw, ok := md.Get(tensor.MetaHFTokenizer)
	if !ok {
		return d
	}
	tokJSON, _ := raw.Str()
	var archSlug string
	if js, ok := d.fields["architecture"]; ok {
		json.Unmarshal(js, &archSlug)
	}
	// sdk/tokenizer turns the files into the keys llama.cpp's converter
	// writes, with the pre-tokenizer's name; those map to aprender's keys
	// as a GGUF source's do.
	tokMD, err := tokenizer.GGUFMetadata([]byte(tokJSON), []byte(md.String(tensor.MetaHFTokenizerConfig)),
		tokenizer.GGUFOptions{ConfigJSON: []byte(md.String(tensor.MetaHFConfig))})
	if err == nil && d.addGGUFTokenizer(tokMD, archSlug) {
		for _, k := range tokMD.Keys() {
			if !d.consumed[k] {
				v, _ := tokMD.Get(k)
				if js, err := appendJSONValue(nil, v); err == nil {
					d.unmapped = append(d.unmapped, member{k, js})
				}
			}
		}
		return d
	}
	tok, perr := parseHFTokenizer([]byte(tokJSON), cfg, gen, tokCfg)
	if perr != nil {
		*notes = append(*notes, fmt.Sprintf("tokenizer.json not embedded: %v", perr))
		return d
	}
	*notes = append(*notes, fmt.Sprintf("tokenizer.json embedded as read (no pre-tokenizer name: %v)", err))
	tok.addTo(d)
	return d
}

// jsonObject parses a carried JSON file; a malformed one is noted and
// skipped.
func jsonObject(md *tensor.Metadata, key string, notes *[]string) map[string]any {
	v, ok := md.Get(key)
	if !ok {
		return nil
	}
	s, _ := v.Str()
	var obj map[string]any
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	if err := dec.Decode(&obj); err != nil {
		*notes = append(*notes, fmt.Sprintf("%s ignored: not a JSON object: %v", key, err))
		return nil
	}
	return obj
}

// jsonNumberValue turns a JSON number into an integer value when it is one,
// else a float; anything else gives the invalid Value.
func jsonNumberValue(x any) tensor.Value {
	n, ok := x.(json.Number)
	if !ok {
		return tensor.Value{}
	}
	return numberValue("", n)
}

// chatTemplate returns tokenizer_config.json's chat template: a string, or
// from a list of named templates the one called "default" (else the first).
func chatTemplate(tokCfg map[string]any) (string, bool) {
	switch t := tokCfg["chat_template"].(type) {
	case string:
		return t, true
	case []any:
		first := ""
		for i, it := range t {
			m, _ := it.(map[string]any)
			tmpl, _ := m["template"].(string)
			if i == 0 {
				first = tmpl
			}
			if name, _ := m["name"].(string); name == "default" {
				return tmpl, true
			}
		}
		return first, first != ""
	}
	return "", false
}

// hfTokenizer is a tokenizer read from tokenizer.json, in aprender's terms.
type hfTokenizer struct {
	model        string
	vocab        []string
	types        []int32
	scores       []float32
	merges       []string
	bos, eos     *uint32
	pad, unk     *uint32
	addBOS       *bool
	chatTemplate *string
}

// Token types, numbered as GGUF's tokenizer.ggml.token_type.
const (
	tokNormal      = 1
	tokUnknown     = 2
	tokControl     = 3
	tokUserDefined = 4
	tokUnused      = 5
	tokByte        = 6
)

var byteToken = regexp.MustCompile(`^<0x[0-9A-Fa-f]{2}>$`)

type hfTokenizerJSON struct {
	Model struct {
		Type         string          `json:"type"`
		Vocab        json.RawMessage `json:"vocab"`
		Merges       json.RawMessage `json:"merges"`
		ByteFallback bool            `json:"byte_fallback"`
		UnkToken     *string         `json:"unk_token"`
		UnkID        *uint32         `json:"unk_id"`
	} `json:"model"`
	AddedTokens []struct {
		ID      uint64 `json:"id"`
		Content string `json:"content"`
		Special bool   `json:"special"`
	} `json:"added_tokens"`
}

// parseHFTokenizer builds the vocabulary (base vocabulary and added tokens
// by id; gaps up to config.json's vocab_size filled with "[PADn]" tokens as
// llama.cpp's converter does), merges, scores and special token ids.
func parseHFTokenizer(tokJSON []byte, cfg, gen, tokCfg map[string]any) (*hfTokenizer, error) {
	var tj hfTokenizerJSON
	if err := json.Unmarshal(tokJSON, &tj); err != nil {
		return nil, fmt.Errorf("tokenizer.json: %w", err)
	}
	t := &hfTokenizer{}
	byID := map[uint64]string{}
	types := map[uint64]int32{}
	var scores map[uint64]float32
	var maxID uint64
	note := func(id uint64, tok string, typ int32) error {
		if id >= maxVocab {
			return fmt.Errorf("tokenizer.json: token id %d is over the limit of %d", id, maxVocab)
		}
		byID[id] = tok
		types[id] = typ
		maxID = max(maxID, id+1)
		return nil
	}
	kind := strings.ToLower(tj.Model.Type)
	vocab := bytes.TrimSpace(tj.Model.Vocab)
	switch {
	case len(vocab) > 0 && vocab[0] == '{':
		var m map[string]uint64
		if err := json.Unmarshal(vocab, &m); err != nil {
			return nil, fmt.Errorf("tokenizer.json: model.vocab: %w", err)
		}
		for tok, id := range m {
			if err := note(id, tok, tokNormal); err != nil {
				return nil, err
			}
		}
		if kind == "" {
			kind = "bpe"
		}
	case len(vocab) > 0 && vocab[0] == '[':
		var list [][2]json.RawMessage
		if err := json.Unmarshal(vocab, &list); err != nil {
			return nil, fmt.Errorf("tokenizer.json: model.vocab: %w", err)
		}
		scores = map[uint64]float32{}
		for i, pair := range list {
			var tok string
			var score float64
			if json.Unmarshal(pair[0], &tok) != nil || json.Unmarshal(pair[1], &score) != nil {
				return nil, fmt.Errorf("tokenizer.json: model.vocab entry %d is not [token, score]", i)
			}
			if err := note(uint64(i), tok, tokNormal); err != nil {
				return nil, err
			}
			scores[uint64(i)] = float32(score)
		}
		if kind == "" {
			kind = "unigram"
		}
	default:
		return nil, fmt.Errorf("tokenizer.json has no model.vocab")
	}
	if tj.Model.UnkID != nil {
		types[uint64(*tj.Model.UnkID)] = tokUnknown
		id := *tj.Model.UnkID
		t.unk = &id
	}
	if tj.Model.ByteFallback {
		for id, tok := range byID {
			if byteToken.MatchString(tok) {
				types[id] = tokByte
			}
		}
	}
	for _, at := range tj.AddedTokens {
		typ := int32(tokUserDefined)
		if at.Special {
			typ = tokControl
		}
		if err := note(at.ID, at.Content, typ); err != nil {
			return nil, err
		}
	}
	if n, ok := jsonNumberValue(cfg["vocab_size"]).Uint(); ok && n > maxID && n <= maxVocab {
		maxID = n
	}
	if maxID > uint64(len(byID))+1<<20 {
		return nil, fmt.Errorf("tokenizer.json: ids up to %d for %d tokens leave too many gaps", maxID-1, len(byID))
	}
	t.vocab = make([]string, maxID)
	t.types = make([]int32, maxID)
	for i := range t.vocab {
		tok, ok := byID[uint64(i)]
		if !ok {
			t.vocab[i] = fmt.Sprintf("[PAD%d]", i)
			t.types[i] = tokUnused
			continue
		}
		t.vocab[i] = tok
		t.types[i] = types[uint64(i)]
	}
	if scores != nil {
		t.scores = make([]float32, maxID)
		for id, s := range scores {
			t.scores[id] = s
		}
	}
	index := make(map[string]uint32, len(t.vocab))
	for i, tok := range t.vocab {
		if _, dup := index[tok]; !dup {
			index[tok] = uint32(i)
		}
	}
	if tj.Model.UnkToken != nil && t.unk == nil {
		if id, ok := index[*tj.Model.UnkToken]; ok {
			t.unk = &id
			t.types[id] = tokUnknown
		}
	}

	switch kind {
	case "bpe":
		merges, err := parseMerges(tj.Model.Merges)
		if err != nil {
			return nil, err
		}
		t.merges = merges
		_, byteLevel := index["\u0120"]
		if tj.Model.ByteFallback || (!byteLevel && hasSentencePieceSpace(t.vocab)) {
			t.model = "llama"
		} else {
			t.model = "gpt2"
		}
	case "unigram":
		t.model = "unigram"
	case "wordpiece":
		t.model = "bert"
	default:
		t.model = kind
	}

	idOf := func(x any) *uint32 {
		switch v := x.(type) {
		case string:
			if id, ok := index[v]; ok {
				return &id
			}
		case map[string]any:
			if s, ok := v["content"].(string); ok {
				if id, ok := index[s]; ok {
					return &id
				}
			}
		case json.Number:
			if u, ok := numberValue("", v).Uint(); ok && u < uint64(len(t.vocab)) {
				id := uint32(u)
				return &id
			}
		case []any:
			if len(v) > 0 {
				if n, ok := v[0].(json.Number); ok {
					if u, ok := numberValue("", n).Uint(); ok && u < uint64(len(t.vocab)) {
						id := uint32(u)
						return &id
					}
				}
			}
		}
		return nil
	}
	firstID := func(vals ...any) *uint32 {
		for _, v := range vals {
			if id := idOf(v); id != nil {
				return id
			}
		}
		return nil
	}
	t.bos = firstID(tokCfg["bos_token"], cfg["bos_token_id"], gen["bos_token_id"])
	t.eos = firstID(tokCfg["eos_token"], cfg["eos_token_id"], gen["eos_token_id"])
	t.pad = firstID(tokCfg["pad_token"], cfg["pad_token_id"], gen["pad_token_id"])
	if t.unk == nil {
		t.unk = firstID(tokCfg["unk_token"])
	}
	if b, ok := tokCfg["add_bos_token"].(bool); ok {
		t.addBOS = &b
	}
	if tmpl, ok := chatTemplate(tokCfg); ok {
		t.chatTemplate = &tmpl
	}
	return t, nil
}

func hasSentencePieceSpace(vocab []string) bool {
	for _, tok := range vocab {
		if strings.HasPrefix(tok, "\u2581") {
			return true
		}
	}
	return false
}

// parseMerges reads BPE merges given as "a b" strings or as [a, b] pairs.
func parseMerges(raw json.RawMessage) ([]string, error) {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return nil, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, fmt.Errorf("tokenizer.json: model.merges: %w", err)
	}
	out := make([]string, len(items))
	for i, it := range items {
		var s string
		if json.Unmarshal(it, &s) == nil {
			out[i] = s
			continue
		}
		var pair []string
		if err := json.Unmarshal(it, &pair); err != nil || len(pair) != 2 {
			return nil, fmt.Errorf("tokenizer.json: merge %d is neither \"a b\" nor [a, b]", i)
		}
		out[i] = pair[0] + " " + pair[1]
	}
	return out, nil
}

// addTo writes the tokenizer as aprender's tokenizer.* keys and special
// tokens object.
func (t *hfTokenizer) addTo(d *derived) {
	d.addCustom("tokenizer.vocabulary", tensor.StringArray(t.vocab))
	d.addCustom("tokenizer.vocab_size", tensor.U64Value(uint64(len(t.vocab))))
	d.addCustom("tokenizer.model", tensor.StringValue(t.model))
	d.addCustom("tokenizer.model_type", tensor.StringValue(t.model))
	if len(t.merges) > 0 {
		d.addCustom("tokenizer.merges", tensor.StringArray(t.merges))
	}
	if t.scores != nil {
		d.addCustom("tokenizer.scores", tensor.Float32Array(t.scores))
	}
	d.addCustom("tokenizer.token_type", tensor.Int32Array(t.types))
	for _, f := range []struct {
		key string
		id  *uint32
	}{{"tokenizer.bos_token_id", t.bos}, {"tokenizer.eos_token_id", t.eos}, {"tokenizer.padding_token_id", t.pad}} {
		if f.id != nil {
			d.addCustom(f.key, tensor.U64Value(uint64(*f.id)))
		}
	}
	if t.addBOS != nil {
		d.addCustom("tokenizer.add_bos_token", tensor.BoolValue(*t.addBOS))
	}
	if t.chatTemplate != nil {
		d.addCustom("tokenizer.chat_template", tensor.StringValue(*t.chatTemplate))
	}
	if arch, ok := d.fields["architecture"]; ok {
		var s string
		if json.Unmarshal(arch, &s) == nil {
			d.addCustom("tokenizer.architecture", tensor.StringValue(s))
		}
	}
	at := func(id *uint32) *string {
		if id == nil {
			return nil
		}
		return &t.vocab[*id]
	}
	st := specialTokens{bos: at(t.bos), eos: at(t.eos), unk: at(t.unk), pad: at(t.pad)}
	st.findChatML(t.vocab)
	if js, ok := st.json(); ok {
		d.fields["special_tokens"] = js
	}
}
