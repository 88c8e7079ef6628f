package tokenizer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	"golang.org/x/text/unicode/norm"
)

// FromHuggingFace builds a tokenizer from the bytes of a Hugging Face
// tokenizer.json and, when the checkpoint has one, its tokenizer_config.json
// (nil otherwise). Only BPE models are supported: byte-level (GPT-2 style) and
// SentencePiece-style with byte fallback.
//
// Special tokens are added by Encode as tokenizer.json's post_processor adds
// them (as Hugging Face's Rust and JavaScript tokenizers do), except that a
// boolean add_bos_token or add_eos_token in tokenizer_config.json wins (as
// Python's LlamaTokenizerFast and llama.cpp's converter do).
func FromHuggingFace(tokenizerJSON, tokenizerConfigJSON []byte) (*Tokenizer, error) {
	var cfg hfConfig
	if len(bytes.TrimSpace(tokenizerConfigJSON)) > 0 {
		if err := json.Unmarshal(tokenizerConfigJSON, &cfg); err != nil {
			return nil, fmt.Errorf("tokenizer_config.json: parse: %w", err)
		}
	}
	t, err := fromHuggingFace(tokenizerJSON, &cfg)
	if err != nil {
		return nil, fmt.Errorf("tokenizer.json: %w", err)
	}
	return t, nil
}

type hfFile struct {
	AddedTokens   []hfAddedToken  `json:"added_tokens"`
	Normalizer    json.RawMessage `json:"normalizer"`
	PreTokenizer  json.RawMessage `json:"pre_tokenizer"`
	PostProcessor json.RawMessage `json:"post_processor"`
	Decoder       json.RawMessage `json:"decoder"`
	Model         hfModel         `json:"model"`
}

type hfAddedToken struct {
	ID         *int64 `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized *bool  `json:"normalized"`
	Special    bool   `json:"special"`
}

type hfModel struct {
	Type                    string          `json:"type"`
	Vocab                   json.RawMessage `json:"vocab"`
	Merges                  json.RawMessage `json:"merges"`
	UnkToken                *string         `json:"unk_token"`
	FuseUnk                 bool            `json:"fuse_unk"`
	ByteFallback            bool            `json:"byte_fallback"`
	IgnoreMerges            bool            `json:"ignore_merges"`
	ContinuingSubwordPrefix *string         `json:"continuing_subword_prefix"`
	EndOfWordSuffix         *string         `json:"end_of_word_suffix"`
}

// hfComponent holds the fields of every normalizer, pre-tokenizer,
// post-processor and decoder this package supports; Type says which apply.
type hfComponent struct {
	Type string `json:"type"`

	Normalizers   []json.RawMessage `json:"normalizers"`
	Pretokenizers []json.RawMessage `json:"pretokenizers"`
	Decoders      []json.RawMessage `json:"decoders"`
	Processors    []json.RawMessage `json:"processors"`

	Prepend  *string    `json:"prepend"`
	Pattern  *hfPattern `json:"pattern"`
	Content  *string    `json:"content"`
	Behavior string     `json:"behavior"`
	Invert   bool       `json:"invert"`

	AddPrefixSpace   *bool   `json:"add_prefix_space"`
	UseRegex         *bool   `json:"use_regex"`
	IndividualDigits bool    `json:"individual_digits"`
	Replacement      *string `json:"replacement"`
	PrependScheme    *string `json:"prepend_scheme"`
	Split            *bool   `json:"split"`
	StripLeft        bool    `json:"strip_left"`
	StripRight       bool    `json:"strip_right"`
	Start            int     `json:"start"`
	Stop             int     `json:"stop"`

	Single        []map[string]hfTemplateItem  `json:"single"`
	SpecialTokens map[string]hfTemplateSpecial `json:"special_tokens"`
	Cls           []json.RawMessage            `json:"cls"`
	Sep           []json.RawMessage            `json:"sep"`
}

type hfPattern struct {
	String *string `json:"String"`
	Regex  *string `json:"Regex"`
}

type hfTemplateItem struct {
	ID string `json:"id"`
}

type hfTemplateSpecial struct {
	IDs []int64 `json:"ids"`
}

type hfConfig struct {
	BOSToken                json.RawMessage   `json:"bos_token"`
	EOSToken                json.RawMessage   `json:"eos_token"`
	UnkToken                json.RawMessage   `json:"unk_token"`
	PadToken                json.RawMessage   `json:"pad_token"`
	AddBOSToken             json.RawMessage   `json:"add_bos_token"`
	AddEOSToken             json.RawMessage   `json:"add_eos_token"`
	AdditionalSpecialTokens []json.RawMessage `json:"additional_special_tokens"`
	ChatTemplate            json.RawMessage   `json:"chat_template"`
}

// tokenContent reads a special-token field of tokenizer_config.json: a
// string, an object with "content", or null.
func tokenContent(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, true
	}
	var obj struct {
		Content *string `json:"content"`
	}
	if json.Unmarshal(raw, &obj) == nil && obj.Content != nil {
		return *obj.Content, true
	}
	return "", false
}

// optionalBool reads a field that may be a bool, null or absent.
func optionalBool(raw json.RawMessage) (value, set bool) {
	var b bool
	if len(raw) > 0 && json.Unmarshal(raw, &b) == nil && !bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return b, true
	}
	return false, false
}

func isNull(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || bytes.Equal(raw, []byte("null"))
}

func fromHuggingFace(tokenizerJSON []byte, cfg *hfConfig) (*Tokenizer, error) {
	var f hfFile
	if err := json.Unmarshal(tokenizerJSON, &f); err != nil {
		return nil, fmt.Errorf("parse: %w", err)
	}
	m := &f.Model
	if m.Type == "" && len(m.Merges) > 0 {
		m.Type = "BPE"
	}
	if m.Type != "BPE" {
		return nil, fmt.Errorf("model type %q is not supported (only BPE)", m.Type)
	}
	if m.ContinuingSubwordPrefix != nil && *m.ContinuingSubwordPrefix != "" {
		return nil, errors.New("model.continuing_subword_prefix is not supported")
	}
	if m.EndOfWordSuffix != nil && *m.EndOfWordSuffix != "" {
		return nil, errors.New("model.end_of_word_suffix is not supported")
	}
	var vocab map[string]int64
	if err := json.Unmarshal(m.Vocab, &vocab); err != nil {
		return nil, errors.New("model.vocab is not an object of token ids")
	}

	// Token texts by id. Ids must be dense enough that the table is no
	// bigger than the number of entries the file defines.
	limit := int64(len(vocab) + len(f.AddedTokens))
	size := int64(0)
	for tok, id := range vocab {
		if id < 0 || id >= limit {
			return nil, fmt.Errorf("model.vocab: token %q has id %d, outside 0..%d (the file defines %d tokens)", tok, id, limit-1, limit)
		}
		size = max(size, id+1)
	}
	for i, a := range f.AddedTokens {
		if a.ID == nil {
			return nil, fmt.Errorf("added_tokens[%d] (%q) has no id", i, a.Content)
		}
		if *a.ID < 0 || *a.ID >= limit {
			return nil, fmt.Errorf("added_tokens[%d] (%q) has id %d, outside 0..%d", i, a.Content, *a.ID, limit-1)
		}
		if a.Content == "" {
			return nil, fmt.Errorf("added_tokens[%d] (id %d) is empty", i, *a.ID)
		}
		size = max(size, *a.ID+1)
	}
	t := &Tokenizer{
		tokens:  make([]string, size),
		types:   make([]TokenType, size),
		special: make([]bool, size),
		ids:     make(map[string]int32, size),
		bos:     -1, eos: -1, unk: -1, pad: -1,
	}
	present := make([]bool, size)
	for tok, id := range vocab {
		t.tokens[id] = tok
		present[id] = true
	}
	addedIDs := make(map[int32]bool, len(f.AddedTokens))
	for _, a := range f.AddedTokens {
		id := int32(*a.ID)
		t.tokens[id] = a.Content
		present[id] = true
		addedIDs[id] = true
		normalized := !a.Special // Hugging Face's default
		if a.Normalized != nil {
			normalized = *a.Normalized
		}
		t.addedTokens = append(t.addedTokens, addedToken{
			content: a.Content, id: id, special: a.Special,
			lstrip: a.LStrip, rstrip: a.RStrip, singleWord: a.SingleWord, normalized: normalized,
		})
	}
	for id := len(t.tokens) - 1; id >= 0; id-- {
		if present[id] {
			t.ids[t.tokens[id]] = int32(id)
		}
	}

	// Text pipeline.
	var err error
	if !isNull(f.Normalizer) {
		if t.norm, err = parseNormalizer(f.Normalizer); err != nil {
			return nil, fmt.Errorf("normalizer: %w", err)
		}
	}
	pre := &preParse{}
	if !isNull(f.PreTokenizer) {
		if err := pre.parse(f.PreTokenizer); err != nil {
			return nil, fmt.Errorf("pre_tokenizer: %w", err)
		}
	}
	t.pre = newPreTokenizer(pre.stages)
	if pre.byteLevel {
		t.model = ModelGPT2
	} else {
		t.model = ModelLlama
	}

	// The model.
	b := &bpeModel{
		vocab:        make(map[string]int32, len(vocab)),
		merges:       make(map[uint64]merge),
		byteLevel:    pre.byteLevel,
		byteFallback: m.ByteFallback,
		unk:          -1,
		fuseUnk:      m.FuseUnk,
		ignoreMerges: m.IgnoreMerges,
	}
	for tok, id := range vocab {
		key := tok
		if b.byteLevel {
			raw, ok := byteLevelDecode(tok)
			if !ok {
				continue // not reachable from bytes; only matched as an added token
			}
			key = raw
		}
		b.vocab[key] = int32(id)
	}
	for i := range b.byteID {
		key := fmt.Sprintf("<0x%02X>", i)
		if b.byteLevel {
			key = string([]byte{byte(i)})
		}
		b.byteID[i] = -1
		if id, ok := b.vocab[key]; ok {
			b.byteID[i] = id
		}
	}
	if m.UnkToken != nil {
		if id, ok := vocab[*m.UnkToken]; ok {
			b.unk = int32(id)
		}
	}
	pairs, err := parseMerges(m.Merges)
	if err != nil {
		return nil, fmt.Errorf("model.merges: %w", err)
	}
	t.mergeList = make([][2]int32, 0, len(pairs))
	for rank, p := range pairs {
		left, lok := vocab[p[0]]
		right, rok := vocab[p[1]]
		merged, mok := vocab[p[0]+p[1]]
		if !lok || !rok || !mok {
			return nil, fmt.Errorf("model.merges[%d] (%q %q) uses a token missing from model.vocab", rank, p[0], p[1])
		}
		b.merges[pairKey(int32(left), int32(right))] = merge{rank: int32(rank), id: int32(merged)}
		t.mergeList = append(t.mergeList, [2]int32{int32(left), int32(right)})
	}
	t.bpe = b
	t.ignoreMergesDefault = m.IgnoreMerges

	// Added tokens, special flags and types.
	var raw, normed []addedToken
	specialText := map[string]bool{}
	for _, a := range t.addedTokens {
		if a.special {
			specialText[a.content] = true
		}
		if a.normalized && t.norm != nil {
			a.content = t.norm.normalize(a.content)
			if a.content == "" {
				continue
			}
			normed = append(normed, a)
		} else {
			raw = append(raw, a)
		}
	}
	for _, s := range cfg.AdditionalSpecialTokens {
		if c, ok := tokenContent(s); ok {
			specialText[c] = true
		}
	}
	t.added = newAddedMatcher(raw)
	if len(normed) > 0 {
		t.addedNorm = newAddedMatcher(normed)
	}
	addedSpecial := map[int32]bool{}
	for _, a := range t.addedTokens {
		addedSpecial[a.id] = addedSpecial[a.id] || a.special
	}
	for id := range t.tokens {
		tok := t.tokens[id]
		t.special[id] = present[id] && specialText[tok]
		switch {
		case !present[id]:
			t.types[id] = TokenUnused
		case addedIDs[int32(id)]:
			if addedSpecial[int32(id)] || (t.model == ModelGPT2 && looksSpecial(tok)) {
				t.types[id] = TokenControl
			} else {
				t.types[id] = TokenUserDefined
			}
		case t.model == ModelLlama && isByteTokenText(tok):
			t.types[id] = TokenByte
		default:
			t.types[id] = TokenNormal
		}
	}

	// Special tokens and what Encode adds.
	lookup := func(raw json.RawMessage) int32 {
		c, ok := tokenContent(raw)
		if !ok {
			return -1
		}
		for _, a := range t.addedTokens {
			if a.content == c {
				return a.id
			}
		}
		if id, ok := t.ids[c]; ok {
			return id
		}
		return -1
	}
	t.bos, t.eos, t.unk, t.pad = lookup(cfg.BOSToken), lookup(cfg.EOSToken), lookup(cfg.UnkToken), lookup(cfg.PadToken)
	if t.unk < 0 && b.unk >= 0 {
		t.unk = b.unk
	}
	if !isNull(f.PostProcessor) {
		if err := t.parsePostProcessor(f.PostProcessor); err != nil {
			return nil, fmt.Errorf("post_processor: %w", err)
		}
	}
	if v, ok := optionalBool(cfg.AddBOSToken); ok {
		t.prefix = setEdge(t.prefix, t.bos, v, true)
	}
	if v, ok := optionalBool(cfg.AddEOSToken); ok {
		t.suffix = setEdge(t.suffix, t.eos, v, false)
	}

	// Decoding.
	if !isNull(f.Decoder) {
		added := map[string]bool{}
		for _, a := range t.addedTokens {
			added[t.tokens[a.id]] = true
		}
		if t.decoder, err = parseDecoder(f.Decoder, added); err != nil {
			return nil, fmt.Errorf("decoder: %w", err)
		}
	}

	// What a GGUF would call it.
	if t.model == ModelGPT2 {
		if pre.named && !pre.prefixSpace {
			if s := matchPreTokenizer(pre.regexes, m.IgnoreMerges); s != nil {
				t.preName = s.names[0]
			}
		}
	} else {
		t.preName = "default"
		t.addSpacePrefix = pre.metaspacePrepend || hasDummyPrefix(f.Normalizer)
	}
	return t, nil
}

// setEdge makes sure id is (add) or is not (!add) at the front (front) or
// back of ids.
func setEdge(ids []int32, id int32, add, front bool) []int32 {
	if id < 0 {
		return ids
	}
	has := len(ids) > 0 && ((front && ids[0] == id) || (!front && ids[len(ids)-1] == id))
	switch {
	case add && !has && front:
		return append([]int32{id}, ids...)
	case add && !has:
		return append(append([]int32(nil), ids...), id)
	case !add && has && front:
		return ids[1:]
	case !add && has:
		return ids[:len(ids)-1]
	}
	return ids
}

// looksSpecial is llama.cpp's converter rule for added tokens that are not
// flagged special but are written like control tokens.
func looksSpecial(s string) bool {
	switch s {
	case "<pad>", "<mask>", "<2mass>", "[@BOS@]":
		return true
	}
	return (strings.HasPrefix(s, "<|") && strings.HasSuffix(s, "|>")) ||
		(strings.HasPrefix(s, "<｜") && strings.HasSuffix(s, "｜>")) ||
		(strings.HasPrefix(s, "<unused") && strings.HasSuffix(s, ">"))
}

func isByteTokenText(s string) bool {
	_, ok := byteToken(s)
	return ok
}

// parseMerges reads model.merges in either form: "a b" strings, or
// ["a", "b"] pairs (transformers ≥ 4.45, which allows spaces in pieces).
func parseMerges(raw json.RawMessage) ([][2]string, error) {
	if isNull(raw) {
		return nil, nil
	}
	var strs []string
	if err := json.Unmarshal(raw, &strs); err == nil {
		out := make([][2]string, len(strs))
		for i, s := range strs {
			k := strings.IndexByte(s, ' ')
			if k < 0 || strings.IndexByte(s[k+1:], ' ') >= 0 {
				return nil, fmt.Errorf("entry %d (%q) is not two tokens separated by one space", i, s)
			}
			out[i] = [2]string{s[:k], s[k+1:]}
		}
		return out, nil
	}
	var pairs [][]string
	if err := json.Unmarshal(raw, &pairs); err != nil {
		return nil, errors.New("neither a list of \"a b\" strings nor a list of [a, b] pairs")
	}
	out := make([][2]string, len(pairs))
	for i, p := range pairs {
		if len(p) != 2 {
			return nil, fmt.Errorf("entry %d has %d parts, want 2", i, len(p))
		}
		out[i] = [2]string{p[0], p[1]}
	}
	return out, nil
}

func parseComponent(raw json.RawMessage) (*hfComponent, error) {
	var c hfComponent
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, err
	}
	return &c, nil
}

func parseNormalizer(raw json.RawMessage) (normalizer, error) {
	c, err := parseComponent(raw)
	if err != nil {
		return nil, err
	}
	switch c.Type {
	case "Sequence":
		var seq normalizerSeq
		for i, r := range c.Normalizers {
			if isNull(r) {
				continue
			}
			n, err := parseNormalizer(r)
			if err != nil {
				return nil, fmt.Errorf("normalizers[%d]: %w", i, err)
			}
			seq = append(seq, n)
		}
		return seq, nil
	case "Prepend":
		if c.Prepend == nil {
			return nil, errors.New("Prepend without prepend")
		}
		return prependNormalizer(*c.Prepend), nil
	case "Replace":
		if c.Pattern == nil {
			return nil, errors.New("Replace without pattern")
		}
		content := ""
		if c.Content != nil {
			content = *c.Content
		}
		switch {
		case c.Pattern.String != nil:
			if *c.Pattern.String == "" {
				return normalizerSeq(nil), nil
			}
			return replaceNormalizer{literal: *c.Pattern.String, content: content}, nil
		case c.Pattern.Regex != nil:
			p, err := compileRegex(*c.Pattern.Regex)
			if err != nil {
				return nil, err
			}
			return replaceNormalizer{pat: p, content: content}, nil
		}
		return nil, errors.New("Replace pattern is neither String nor Regex")
	case "NFC":
		return unicodeNormalizer{norm.NFC}, nil
	case "NFD":
		return unicodeNormalizer{norm.NFD}, nil
	case "NFKC":
		return unicodeNormalizer{norm.NFKC}, nil
	case "NFKD":
		return unicodeNormalizer{norm.NFKD}, nil
	case "Lowercase":
		return lowercaseNormalizer{}, nil
	case "Strip":
		return stripNormalizer{left: c.StripLeft, right: c.StripRight}, nil
	case "StripAccents":
		return stripAccentsNormalizer{}, nil
	}
	return nil, fmt.Errorf("normalizer type %q is not supported", c.Type)
}

// hasDummyPrefix reports whether a normalizer prepends "▁".
func hasDummyPrefix(raw json.RawMessage) bool {
	if isNull(raw) {
		return false
	}
	c, err := parseComponent(raw)
	if err != nil {
		return false
	}
	if c.Type == "Prepend" && c.Prepend != nil && *c.Prepend == "▁" {
		return true
	}
	for _, r := range c.Normalizers {
		if !isNull(r) && hasDummyPrefix(r) {
			return true
		}
	}
	return false
}

// preParse collects the stages of a pre_tokenizer, and whether they amount
// to Isolated regex splits (then regexes lists them) on byte-level text.
type preParse struct {
	stages           []stage
	byteLevel        bool
	prefixSpace      bool
	metaspacePrepend bool
	named            bool // every stage so far is a plain Isolated regex split
	regexes          []string
	started          bool
}

func (p *preParse) parse(raw json.RawMessage) error {
	if !p.started {
		p.started, p.named = true, true
	}
	c, err := parseComponent(raw)
	if err != nil {
		return err
	}
	switch c.Type {
	case "Sequence":
		for i, r := range c.Pretokenizers {
			if isNull(r) {
				continue
			}
			if err := p.parse(r); err != nil {
				return fmt.Errorf("pretokenizers[%d]: %w", i, err)
			}
		}
		return nil
	case "Split":
		if c.Pattern == nil {
			return errors.New("Split without pattern")
		}
		behavior, ok := behaviorNames[c.Behavior]
		if !ok {
			return fmt.Errorf("Split behavior %q is not supported", c.Behavior)
		}
		switch {
		case c.Pattern.Regex != nil:
			if behavior == behaviorIsolated && !c.Invert {
				st, err := regexStage(*c.Pattern.Regex)
				if err != nil {
					return err
				}
				p.stages = append(p.stages, st)
				p.regexes = append(p.regexes, *c.Pattern.Regex)
				return nil
			}
			pat, err := compileRegex(*c.Pattern.Regex)
			if err != nil {
				return err
			}
			p.stages = append(p.stages, splitStage{pat: pat, behavior: behavior, invert: c.Invert})
		case c.Pattern.String != nil:
			p.stages = append(p.stages, splitStage{pat: literalPattern(*c.Pattern.String), behavior: behavior, invert: c.Invert})
		default:
			return errors.New("Split pattern is neither String nor Regex")
		}
		p.named = false
		return nil
	case "ByteLevel":
		p.byteLevel = true
		if c.AddPrefixSpace != nil && *c.AddPrefixSpace {
			p.prefixSpace = true
			p.stages = append(p.stages, prefixSpaceStage{})
		}
		if c.UseRegex == nil || *c.UseRegex {
			p.stages = append(p.stages, fastStage{gpt2Splitter})
			p.regexes = append(p.regexes, regexGPT2)
		}
		return nil
	case "Digits":
		if c.IndividualDigits {
			p.stages = append(p.stages, splitStage{pat: charPattern(isASCIIDigit), behavior: behaviorIsolated})
			// llama.cpp's "smollm" isolates every \p{N}; Hugging Face's
			// Digits only ASCII digits. They differ on other numerals.
			p.regexes = append(p.regexes, `\p{N}`)
			return nil
		}
		p.stages = append(p.stages, splitStage{pat: charPattern(isASCIIDigit), behavior: behaviorContiguous})
		p.named = false
		return nil
	case "Metaspace":
		rep := "▁"
		if c.Replacement != nil {
			rep = *c.Replacement
		}
		scheme := "always"
		if c.PrependScheme != nil {
			scheme = *c.PrependScheme
		} else if c.AddPrefixSpace != nil && !*c.AddPrefixSpace {
			scheme = "never"
		}
		if scheme != "always" && scheme != "first" && scheme != "never" {
			return fmt.Errorf("Metaspace prepend_scheme %q is not supported", scheme)
		}
		p.metaspacePrepend = scheme != "never"
		p.stages = append(p.stages, metaspaceStage{replacement: rep, prepend: scheme, cut: c.Split == nil || *c.Split})
		p.named = false
		return nil
	case "WhitespaceSplit":
		p.stages = append(p.stages, splitStage{pat: charPattern(isUnicodeSpace), behavior: behaviorRemoved})
		p.named = false
		return nil
	case "Whitespace":
		pat, err := compileRegex(`\w+|[^\w\s]+`)
		if err != nil {
			return err
		}
		p.stages = append(p.stages, splitStage{pat: pat, behavior: behaviorRemoved, invert: true})
		p.named = false
		return nil
	}
	return fmt.Errorf("pre-tokenizer type %q is not supported", c.Type)
}

func isUnicodeSpace(r rune) bool { return isSpace(r) }

func (t *Tokenizer) parsePostProcessor(raw json.RawMessage) error {
	c, err := parseComponent(raw)
	if err != nil {
		return err
	}
	switch c.Type {
	case "Sequence":
		for i, r := range c.Processors {
			if isNull(r) {
				continue
			}
			if err := t.parsePostProcessor(r); err != nil {
				return fmt.Errorf("processors[%d]: %w", i, err)
			}
		}
	case "ByteLevel":
	case "TemplateProcessing":
		var prefix, suffix []int32
		seenA := false
		for i, item := range c.Single {
			if s, ok := item["SpecialToken"]; ok {
				ids, err := t.templateIDs(c, s.ID)
				if err != nil {
					return fmt.Errorf("single[%d]: %w", i, err)
				}
				if seenA {
					suffix = append(suffix, ids...)
				} else {
					prefix = append(prefix, ids...)
				}
			} else if _, ok := item["Sequence"]; ok {
				seenA = true
			}
		}
		t.prefix, t.suffix = prefix, suffix
	case "BertProcessing", "RobertaProcessing":
		cls, err := t.pairID(c.Cls)
		if err != nil {
			return fmt.Errorf("cls: %w", err)
		}
		sep, err := t.pairID(c.Sep)
		if err != nil {
			return fmt.Errorf("sep: %w", err)
		}
		t.prefix, t.suffix = []int32{cls}, []int32{sep}
	default:
		return fmt.Errorf("post-processor type %q is not supported", c.Type)
	}
	return nil
}

func (t *Tokenizer) templateIDs(c *hfComponent, name string) ([]int32, error) {
	if s, ok := c.SpecialTokens[name]; ok && len(s.IDs) > 0 {
		out := make([]int32, len(s.IDs))
		for i, id := range s.IDs {
			if id < 0 || id >= int64(len(t.tokens)) {
				return nil, fmt.Errorf("special token %q has id %d, outside the vocabulary", name, id)
			}
			out[i] = int32(id)
		}
		return out, nil
	}
	if id, ok := t.ids[name]; ok {
		return []int32{id}, nil
	}
	return nil, fmt.Errorf("special token %q is not in the vocabulary", name)
}

// pairID reads a ["token", id] pair.
func (t *Tokenizer) pairID(pair []json.RawMessage) (int32, error) {
	if len(pair) != 2 {
		return 0, errors.New("want [token, id]")
	}
	var id int64
	if err := json.Unmarshal(pair[1], &id); err != nil || id < 0 || id >= int64(len(t.tokens)) || id > math.MaxInt32 {
		return 0, fmt.Errorf("id %s is not a token id", pair[1])
	}
	return int32(id), nil
}

func parseDecoder(raw json.RawMessage, added map[string]bool) ([]decodeStep, error) {
	c, err := parseComponent(raw)
	if err != nil {
		return nil, err
	}
	switch c.Type {
	case "Sequence":
		var out []decodeStep
		for i, r := range c.Decoders {
			if isNull(r) {
				continue
			}
			steps, err := parseDecoder(r, added)
			if err != nil {
				return nil, fmt.Errorf("decoders[%d]: %w", i, err)
			}
			out = append(out, steps...)
		}
		return out, nil
	case "ByteLevel":
		return []decodeStep{byteLevelStep{added: added}}, nil
	case "Replace":
		if c.Pattern == nil || c.Pattern.String == nil {
			return nil, errors.New("Replace decoder needs a String pattern")
		}
		content := ""
		if c.Content != nil {
			content = *c.Content
		}
		return []decodeStep{replaceStep{old: *c.Pattern.String, new: content}}, nil
	case "ByteFallback":
		return []decodeStep{byteFallbackStep{}}, nil
	case "Fuse":
		return []decodeStep{fuseStep{}}, nil
	case "Strip":
		ch := ' '
		if c.Content != nil {
			r := []rune(*c.Content)
			if len(r) != 1 {
				return nil, fmt.Errorf("Strip content %q is not one character", *c.Content)
			}
			ch = r[0]
		}
		if c.Start < 0 || c.Stop < 0 {
			return nil, errors.New("Strip start and stop must not be negative")
		}
		return []decodeStep{stripStep{char: ch, start: c.Start, stop: c.Stop}}, nil
	case "Metaspace":
		rep := "▁"
		if c.Replacement != nil {
			rep = *c.Replacement
		}
		strip := true
		if c.PrependScheme != nil {
			strip = *c.PrependScheme != "never"
		} else if c.AddPrefixSpace != nil {
			strip = *c.AddPrefixSpace
		}
		return []decodeStep{metaspaceStep{replacement: rep, stripFirst: strip}}, nil
	}
	return nil, fmt.Errorf("decoder type %q is not supported", c.Type)
}
