package tokenizer

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/sluice-ml/sluice/sdk/tensor"
)

// GGUF metadata keys of a tokenizer, as llama.cpp names them.
const (
	KeyModel          = "tokenizer.ggml.model"
	KeyPre            = "tokenizer.ggml.pre"
	KeyTokens         = "tokenizer.ggml.tokens"
	KeyScores         = "tokenizer.ggml.scores"
	KeyTokenType      = "tokenizer.ggml.token_type"
	KeyMerges         = "tokenizer.ggml.merges"
	KeyBOSID          = "tokenizer.ggml.bos_token_id"
	KeyEOSID          = "tokenizer.ggml.eos_token_id"
	KeyUnknownID      = "tokenizer.ggml.unknown_token_id"
	KeySeparatorID    = "tokenizer.ggml.seperator_token_id" // sic: llama.cpp's spelling
	KeyPaddingID      = "tokenizer.ggml.padding_token_id"
	KeyCLSID          = "tokenizer.ggml.cls_token_id"
	KeyMaskID         = "tokenizer.ggml.mask_token_id"
	KeyAddBOS         = "tokenizer.ggml.add_bos_token"
	KeyAddEOS         = "tokenizer.ggml.add_eos_token"
	KeyAddSpacePrefix = "tokenizer.ggml.add_space_prefix"
	KeyChatTemplate   = "tokenizer.chat_template"
	KeyChatTemplates  = "tokenizer.chat_templates"
)

// FromGGUF builds a tokenizer from the tokenizer.ggml.* keys of a GGUF file's
// metadata, as llama.cpp reads them: model "gpt2" (byte-level BPE with
// merges, split by the pre-tokenizer named in tokenizer.ggml.pre) or "llama"
// (SentencePiece-style, merged by score). CONTROL, USER_DEFINED and UNKNOWN
// tokens are matched whole in the text; CONTROL and UNKNOWN ones are special.
func FromGGUF(md *tensor.Metadata) (*Tokenizer, error) {
	t, err := fromGGUF(md)
	if err != nil {
		return nil, fmt.Errorf("gguf tokenizer: %w", err)
	}
	return t, nil
}

func fromGGUF(md *tensor.Metadata) (*Tokenizer, error) {
	modelName, err := ggufString(md, KeyModel, true)
	if err != nil {
		return nil, err
	}
	model := Model(modelName)
	if model != ModelGPT2 && model != ModelLlama {
		return nil, fmt.Errorf("%s %q is not supported (supported: gpt2, llama)", KeyModel, modelName)
	}
	v, ok := md.Get(KeyTokens)
	if !ok {
		return nil, fmt.Errorf("%s is missing", KeyTokens)
	}
	tokens, ok := v.StringSlice()
	if !ok {
		return nil, fmt.Errorf("%s is %s, want an array of strings", KeyTokens, describe(v))
	}
	n := len(tokens)
	if n > math.MaxInt32 {
		return nil, fmt.Errorf("%s has %d entries, too many", KeyTokens, n)
	}
	types := make([]TokenType, n)
	for i := range types {
		types[i] = TokenNormal
	}
	if v, ok := md.Get(KeyTokenType); ok {
		raw, ok := v.Raw()
		if !ok || v.Elem() != tensor.TypeI32 {
			return nil, fmt.Errorf("%s is %s, want an array of i32", KeyTokenType, describe(v))
		}
		if v.Len() < n {
			return nil, fmt.Errorf("%s has %d entries for %d tokens", KeyTokenType, v.Len(), n)
		}
		for i := range types {
			types[i] = TokenType(int32(binary.LittleEndian.Uint32(raw[4*i:])))
		}
	}
	var scores []float32
	if v, ok := md.Get(KeyScores); ok {
		raw, ok := v.Raw()
		if !ok || (v.Elem() != tensor.TypeF32 && v.Elem() != tensor.TypeI32) {
			return nil, fmt.Errorf("%s is %s, want an array of f32", KeyScores, describe(v))
		}
		if v.Len() < n {
			return nil, fmt.Errorf("%s has %d entries for %d tokens", KeyScores, v.Len(), n)
		}
		scores = make([]float32, n)
		for i := range scores {
			bits := binary.LittleEndian.Uint32(raw[4*i:])
			if v.Elem() == tensor.TypeI32 {
				scores[i] = float32(int32(bits))
			} else {
				scores[i] = math.Float32frombits(bits)
			}
		}
	}

	t := &Tokenizer{
		model:   model,
		tokens:  tokens,
		types:   types,
		special: make([]bool, n),
		ids:     make(map[string]int32, n),
		bos:     -1, eos: -1, unk: -1, pad: -1,
	}
	b := &bpeModel{vocab: make(map[string]int32, n), unk: -1, byteLevel: model == ModelGPT2}
	var added []addedToken
	addedText := map[string]bool{}
	for i, tok := range tokens {
		id := int32(i)
		if tok == "" {
			continue
		}
		if prev, dup := t.ids[tok]; dup {
			return nil, fmt.Errorf("%s: token %q has ids %d and %d", KeyTokens, tok, prev, id)
		}
		t.ids[tok] = id
		switch types[i] {
		case TokenControl, TokenUserDefined, TokenUnknown:
			t.special[i] = types[i] != TokenUserDefined
			added = append(added, addedToken{content: tok, id: id, special: t.special[i]})
			addedText[tok] = true
			continue
		case TokenUnused:
			continue // padding entries ("[PAD123]") are never produced from text
		}
		key := tok
		if b.byteLevel {
			raw, ok := byteLevelDecode(tok)
			if !ok {
				continue
			}
			key = raw
		}
		if _, dup := b.vocab[key]; !dup {
			b.vocab[key] = id
		}
	}
	t.added = newAddedMatcher(added)
	for i := range b.byteID {
		b.byteID[i] = -1
		key := fmt.Sprintf("<0x%02X>", i)
		if b.byteLevel {
			key = string([]byte{byte(i)})
		}
		if id, ok := b.vocab[key]; ok {
			b.byteID[i] = id
		}
	}
	t.bpe = b

	// Special ids: the file's, else llama.cpp's defaults for SentencePiece.
	if model == ModelLlama {
		t.bos, t.eos, t.unk = 1, 2, 0
		for _, p := range []*int32{&t.bos, &t.eos, &t.unk} {
			if int(*p) >= n {
				*p = -1
			}
		}
	}
	for _, k := range []struct {
		key string
		id  *int32
	}{{KeyBOSID, &t.bos}, {KeyEOSID, &t.eos}, {KeyUnknownID, &t.unk}, {KeyPaddingID, &t.pad}} {
		v, ok := md.Get(k.key)
		if !ok {
			continue
		}
		u, ok := v.Uint()
		if !ok || u >= uint64(n) {
			return nil, fmt.Errorf("%s is %s, want a token id below %d", k.key, v, n)
		}
		*k.id = int32(u)
	}
	b.unk = t.unk

	addBOS := false
	if model == ModelLlama {
		addBOS = true
		if len(scores) == 0 {
			scores = make([]float32, n)
		}
		b.scores = scores
		t.preName = "default"
		t.addSpacePrefix = true
		if v, ok := md.Get(KeyAddSpacePrefix); ok {
			if t.addSpacePrefix, ok = v.Bool(); !ok {
				return nil, fmt.Errorf("%s is %s, want a bool", KeyAddSpacePrefix, describe(v))
			}
		}
		var norm normalizerSeq
		if t.addSpacePrefix {
			norm = append(norm, prependNormalizer("▁"))
		}
		t.norm = append(norm, replaceNormalizer{literal: " ", content: "▁"})
		t.decoder = []decodeStep{replaceStep{old: "▁", new: " "}, byteFallbackStep{}, fuseStep{}}
		if t.addSpacePrefix {
			t.decoder = append(t.decoder, stripStep{char: ' ', start: 1})
		}
		t.pre = newPreTokenizer(nil)
	} else {
		name, err := ggufString(md, KeyPre, false)
		if err != nil {
			return nil, err
		}
		if name == "" {
			name = "default" // llama.cpp's choice for a file without the key
		}
		spec, err := lookupPreTokenizer(name)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", KeyPre, err)
		}
		stages, err := spec.stages()
		if err != nil {
			return nil, err
		}
		t.pre = newPreTokenizer(stages)
		t.preName = name
		b.ignoreMerges = spec.ignoreMerges
		addBOS = spec.addBOS
		t.decoder = []decodeStep{byteLevelStep{added: addedText}}
		if err := t.readGGUFMerges(md); err != nil {
			return nil, err
		}
	}
	t.addedTokens = added

	addEOS := false
	for _, k := range []struct {
		key string
		v   *bool
	}{{KeyAddBOS, &addBOS}, {KeyAddEOS, &addEOS}} {
		v, ok := md.Get(k.key)
		if !ok {
			continue
		}
		if *k.v, ok = v.Bool(); !ok {
			return nil, fmt.Errorf("%s is %s, want a bool", k.key, describe(v))
		}
	}
	if addBOS {
		if t.bos < 0 {
			return nil, fmt.Errorf("%s is true but %s is not set", KeyAddBOS, KeyBOSID)
		}
		t.prefix = []int32{t.bos}
	}
	if addEOS {
		if t.eos < 0 {
			return nil, fmt.Errorf("%s is true but %s is not set", KeyAddEOS, KeyEOSID)
		}
		t.suffix = []int32{t.eos}
	}
	return t, nil
}

// readGGUFMerges reads tokenizer.ggml.merges ("left right", rank = index).
// A merge naming a token the vocabulary lacks is skipped, and the first of
// two equal pairs wins, as in llama.cpp.
func (t *Tokenizer) readGGUFMerges(md *tensor.Metadata) error {
	v, ok := md.Get(KeyMerges)
	if !ok {
		return fmt.Errorf("%s is missing (required for model gpt2)", KeyMerges)
	}
	merges, ok := v.StringSlice()
	if !ok {
		return fmt.Errorf("%s is %s, want an array of strings", KeyMerges, describe(v))
	}
	b := t.bpe
	b.merges = make(map[uint64]merge, len(merges))
	t.mergeList = make([][2]int32, 0, len(merges))
	for rank, s := range merges {
		if rank > math.MaxInt32 {
			break
		}
		k := -1
		if len(s) > 1 {
			if j := strings.IndexByte(s[1:], ' '); j >= 0 {
				k = j + 1
			}
		}
		if k < 0 {
			continue
		}
		left, lok := t.ids[s[:k]]
		right, rok := t.ids[s[k+1:]]
		merged, mok := t.ids[s[:k]+s[k+1:]]
		if !lok || !rok || !mok {
			continue
		}
		key := pairKey(left, right)
		if _, dup := b.merges[key]; dup {
			continue
		}
		b.merges[key] = merge{rank: int32(rank), id: merged}
		t.mergeList = append(t.mergeList, [2]int32{left, right})
	}
	return nil
}

func ggufString(md *tensor.Metadata, key string, required bool) (string, error) {
	v, ok := md.Get(key)
	if !ok {
		if required {
			return "", fmt.Errorf("%s is missing", key)
		}
		return "", nil
	}
	s, ok := v.Str()
	if !ok {
		return "", fmt.Errorf("%s is %s, want a string", key, describe(v))
	}
	return s, nil
}

func describe(v tensor.Value) string {
	if v.Type() == tensor.TypeArray {
		return "an array of " + v.Elem().String()
	}
	return "a " + v.Type().String()
}

// GGUFOptions adds what tokenizer.json and tokenizer_config.json do not say.
type GGUFOptions struct {
	// ConfigJSON is the checkpoint's config.json, if any. Its vocab_size pads
	// the token list with unused "[PAD<id>]" tokens up to the embedding's row
	// count, and its bos_token_id, eos_token_id, … fill in ids that
	// tokenizer_config.json does not name, as llama.cpp's converter does.
	ConfigJSON []byte
	// Pre names the pre-tokenizer (tokenizer.ggml.pre) of a byte-level
	// tokenizer whose tokenizer.json splitting has no llama.cpp name.
	Pre string
	// ChatTemplate is the template to store when tokenizer_config.json has
	// none (for example the contents of chat_template.jinja).
	ChatTemplate string
}

// GGUFMetadata returns the tokenizer.* keys llama.cpp's converter writes for
// a Hugging Face tokenizer, in its order and with its types: model, pre,
// tokens, scores (SentencePiece-style only), token_type, merges (byte-level
// only), special token ids, add_bos_token/add_eos_token and the chat
// template(s). FromGGUF on the result tokenizes as FromHuggingFace on the
// same files does.
//
// Where this differs from the converter: add_bos_token and add_eos_token are
// always written (so llama.cpp adds exactly what the checkpoint's tokenizer
// adds, where the converter leaves llama.cpp's per-pre-tokenizer default in
// force); SentencePiece-style scores are minus the rank of the merge that
// makes each token (the converter writes -1000 for every token of a
// tokenizer.json-only checkpoint, which leaves llama.cpp only tie-breaking);
// and the pre-tokenizer is named from tokenizer.json's own pre_tokenizer
// rather than from a hash of sample output.
func GGUFMetadata(tokenizerJSON, tokenizerConfigJSON []byte, opts GGUFOptions) (*tensor.Metadata, error) {
	t, err := FromHuggingFace(tokenizerJSON, tokenizerConfigJSON)
	if err != nil {
		return nil, err
	}
	var cfg hfConfig
	if len(tokenizerConfigJSON) > 0 {
		if err := json.Unmarshal(tokenizerConfigJSON, &cfg); err != nil {
			return nil, fmt.Errorf("tokenizer_config.json: parse: %w", err)
		}
	}
	var model struct {
		VocabSize  *int64 `json:"vocab_size"`
		BOS        *int64 `json:"bos_token_id"`
		EOS        *int64 `json:"eos_token_id"`
		Unk        *int64 `json:"unk_token_id"`
		Pad        *int64 `json:"pad_token_id"`
		TextConfig *struct {
			VocabSize *int64 `json:"vocab_size"`
		} `json:"text_config"`
	}
	if len(opts.ConfigJSON) > 0 {
		if err := json.Unmarshal(opts.ConfigJSON, &model); err != nil {
			return nil, fmt.Errorf("config.json: parse: %w", err)
		}
		if model.VocabSize == nil && model.TextConfig != nil {
			model.VocabSize = model.TextConfig.VocabSize
		}
	}

	n := len(t.tokens)
	if model.VocabSize != nil {
		vs := *model.VocabSize
		if vs < int64(n) {
			return nil, fmt.Errorf("config.json: vocab_size %d is smaller than the tokenizer's %d tokens", vs, n)
		}
		if vs > int64(n)+1<<20 {
			return nil, fmt.Errorf("config.json: vocab_size %d is far beyond the tokenizer's %d tokens", vs, n)
		}
		n = int(vs)
	}

	md := &tensor.Metadata{}
	md.Set(KeyModel, tensor.StringValue(string(t.model)))
	pre := t.preName
	if opts.Pre != "" {
		if _, err := lookupPreTokenizer(opts.Pre); err != nil {
			return nil, err
		}
		pre = opts.Pre
	}
	if pre == "" {
		return nil, errors.New("tokenizer.json: the pre_tokenizer splits text in a way llama.cpp has no name for; set GGUFOptions.Pre")
	}
	md.Set(KeyPre, tensor.StringValue(pre))

	tokens := make([]string, n)
	types := make([]int32, n)
	for i := range tokens {
		if i >= len(t.tokens) || t.types[i] == TokenUnused {
			tokens[i] = "[PAD" + strconv.Itoa(i) + "]"
			types[i] = int32(TokenUnused)
			continue
		}
		tokens[i] = t.tokens[i]
		types[i] = int32(t.types[i])
		if t.types[i] == TokenUserDefined {
			// llama.cpp matches added tokens in the raw text, so the
			// converter writes the spaces of user-defined tokens as spaces.
			tokens[i] = strings.ReplaceAll(tokens[i], "▁", " ")
		}
	}
	seen := make(map[string]int, n)
	for i, tok := range tokens {
		if j, dup := seen[tok]; dup && tok != "" {
			return nil, fmt.Errorf("token %q has ids %d and %d; llama.cpp refuses duplicate tokens", tok, j, i)
		}
		seen[tok] = i
	}
	md.Set(KeyTokens, tensor.StringArray(tokens))
	if t.model == ModelLlama {
		md.Set(KeyScores, tensor.Float32Array(t.spmScores(n)))
	}
	md.Set(KeyTokenType, tensor.Int32Array(types))
	if t.model == ModelGPT2 {
		merges := make([]string, len(t.mergeList))
		for i, p := range t.mergeList {
			merges[i] = mergePart(t.tokens[p[0]]) + " " + mergePart(t.tokens[p[1]])
		}
		md.Set(KeyMerges, tensor.StringArray(merges))
	}

	ids := []struct {
		key  string
		id   int32
		cfg  *int64
		name string
	}{
		{KeyBOSID, t.bos, model.BOS, "bos"},
		{KeyEOSID, t.eos, model.EOS, "eos"},
		{KeyUnknownID, t.unk, model.Unk, "unk"},
		{KeyPaddingID, t.pad, model.Pad, "pad"},
	}
	for _, e := range ids {
		id := int64(e.id)
		if id < 0 && e.cfg != nil {
			id = *e.cfg
		}
		if id < 0 {
			continue
		}
		if id >= int64(n) {
			return nil, fmt.Errorf("config.json: %s_token_id %d is outside the vocabulary", e.name, id)
		}
		md.Set(e.key, tensor.U32Value(uint32(id)))
	}
	md.Set(KeyAddBOS, tensor.BoolValue(t.AddsBOS()))
	md.Set(KeyAddEOS, tensor.BoolValue(t.AddsEOS()))

	if err := setChatTemplates(md, cfg.ChatTemplate, opts.ChatTemplate); err != nil {
		return nil, err
	}
	if t.model == ModelLlama && !t.addSpacePrefix {
		md.Set(KeyAddSpacePrefix, tensor.BoolValue(false))
	}
	return md, nil
}

// mergePart writes one side of a merge as llama.cpp's converter does: a
// space inside a piece (possible in the pair form of tokenizer.json merges)
// becomes U+0120.
func mergePart(s string) string { return strings.ReplaceAll(s, " ", "\u0120") }

// spmScores returns SentencePiece-style scores for n tokens: minus the rank
// of the first merge that produces a token, so that llama.cpp's merge by
// highest score follows the merge order; -(merges+1) for other normal
// tokens (single characters) and 0 for the rest.
func (t *Tokenizer) spmScores(n int) []float32 {
	scores := make([]float32, n)
	floor := -float32(len(t.mergeList) + 1)
	for i := range scores {
		if i < len(t.types) && t.types[i] == TokenNormal {
			scores[i] = floor
		}
	}
	seen := make([]bool, n)
	for rank, p := range t.mergeList {
		id := t.bpe.merges[pairKey(p[0], p[1])].id
		if id >= 0 && int(id) < n && !seen[id] {
			seen[id] = true
			scores[id] = -float32(rank)
		}
	}
	return scores
}

// setChatTemplates writes tokenizer_config.json's chat_template: a string
// becomes tokenizer.chat_template; a list of {name, template} becomes
// tokenizer.chat_template (the "default" entry), tokenizer.chat_template.<name>
// for the others and tokenizer.chat_templates listing their names.
func setChatTemplates(md *tensor.Metadata, raw json.RawMessage, fallback string) error {
	if isNull(raw) {
		if fallback != "" {
			md.Set(KeyChatTemplate, tensor.StringValue(fallback))
		}
		return nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		md.Set(KeyChatTemplate, tensor.StringValue(s))
		return nil
	}
	var list []struct {
		Name     string  `json:"name"`
		Template *string `json:"template"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		return errors.New("tokenizer_config.json: chat_template is neither a string nor a list of {name, template}")
	}
	var names []string
	def := ""
	hasDefault := false
	for _, e := range list {
		name := sanitizeTemplateName(e.Name)
		if name == "" || e.Template == nil {
			continue
		}
		if name == "default" {
			def, hasDefault = *e.Template, true
			continue
		}
		if _, exists := md.Get(KeyChatTemplate + "." + name); !exists {
			names = append(names, name)
		}
		md.Set(KeyChatTemplate+"."+name, tensor.StringValue(*e.Template))
	}
	if len(names) > 0 {
		md.Set(KeyChatTemplates, tensor.StringArray(names))
	}
	if hasDefault {
		md.Set(KeyChatTemplate, tensor.StringValue(def))
	}
	return nil
}

// sanitizeTemplateName keeps ASCII letters and digits, replacing anything
// else with "_", as llama.cpp's converter does for template names.
func sanitizeTemplateName(s string) string {
	var sb strings.Builder
	for _, r := range s {
		if (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			sb.WriteRune(r)
		} else {
			sb.WriteByte('_')
		}
	}
	return sb.String()
}
