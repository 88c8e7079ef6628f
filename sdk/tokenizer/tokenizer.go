package tokenizer

import (
	"fmt"
	"strings"
)

// Model is the kind of vocabulary, named as GGUF's tokenizer.ggml.model
// names it.
type Model string

const (
	// ModelGPT2 is byte-level BPE with merges (GPT-2, Llama 3, Qwen, DeepSeek V3).
	ModelGPT2 Model = "gpt2"
	// ModelLlama is SentencePiece-style BPE over characters with "▁" for
	// spaces and <0xNN> byte fallback (Llama 1/2, Mistral v0.1, Gemma).
	ModelLlama Model = "llama"
)

// TokenType is a token's kind, numbered as GGUF's tokenizer.ggml.token_type.
type TokenType int32

// Token types.
const (
	TokenUndefined   TokenType = 0
	TokenNormal      TokenType = 1
	TokenUnknown     TokenType = 2
	TokenControl     TokenType = 3
	TokenUserDefined TokenType = 4
	TokenUnused      TokenType = 5
	TokenByte        TokenType = 6
)

var tokenTypeNames = [...]string{"undefined", "normal", "unknown", "control", "user-defined", "unused", "byte"}

// String returns the type's name ("normal", "control", …).
func (t TokenType) String() string {
	if t >= 0 && int(t) < len(tokenTypeNames) {
		return tokenTypeNames[t]
	}
	return fmt.Sprintf("TokenType(%d)", int32(t))
}

// A Tokenizer turns text into token ids and back. Build one with
// FromHuggingFace or FromGGUF. It is safe for concurrent use.
type Tokenizer struct {
	model   Model
	preName string // llama.cpp name of the pre-tokenizer, "" if it has none

	tokens  []string    // by id, as the vocabulary writes them ("Ġworld", "▁the", "<|eot_id|>")
	types   []TokenType // by id
	special []bool      // by id: dropped by Decode with skipSpecial
	ids     map[string]int32

	bpe       *bpeModel
	added     *addedMatcher // matched in the raw text
	addedNorm *addedMatcher // matched after normalization
	norm      normalizer
	pre       *preTokenizer
	decoder   []decodeStep

	prefix, suffix      []int32 // added around the text by Encode with addSpecial
	bos, eos, unk, pad  int32   // -1 when absent
	mergeList           [][2]int32
	addedTokens         []addedToken
	addSpacePrefix      bool // SentencePiece dummy prefix in effect (GGUF add_space_prefix)
	ignoreMergesDefault bool
}

// Model returns the kind of vocabulary.
func (t *Tokenizer) Model() Model { return t.model }

// PreTokenizer returns the llama.cpp name of the pre-tokenizer (GGUF's
// tokenizer.ggml.pre): for example "llama-bpe", "qwen2" or "gpt-2"; "default"
// for SentencePiece-style vocabularies; "" when a tokenizer.json splits text
// in a way llama.cpp has no name for.
func (t *Tokenizer) PreTokenizer() string { return t.preName }

// VocabSize returns the number of token ids, added tokens included.
func (t *Tokenizer) VocabSize() int { return len(t.tokens) }

// Token returns the text of a token as its vocabulary writes it: byte-level
// vocabularies show bytes as GPT-2's printable characters ("Ġworld"),
// SentencePiece ones write spaces as "▁".
func (t *Tokenizer) Token(id int32) (string, bool) {
	if id < 0 || int(id) >= len(t.tokens) {
		return "", false
	}
	return t.tokens[id], true
}

// Tokens returns the token texts of ids; an id outside the vocabulary gives "".
func (t *Tokenizer) Tokens(ids []int32) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i], _ = t.Token(id)
	}
	return out
}

// ID returns the id of a token text as the vocabulary writes it.
func (t *Tokenizer) ID(token string) (int32, bool) {
	id, ok := t.ids[token]
	return id, ok
}

// TokenType returns the kind of a token.
func (t *Tokenizer) TokenType(id int32) TokenType {
	if id < 0 || int(id) >= len(t.types) {
		return TokenUndefined
	}
	return t.types[id]
}

// IsSpecial reports whether Decode with skipSpecial drops the token.
func (t *Tokenizer) IsSpecial(id int32) bool {
	return id >= 0 && int(id) < len(t.special) && t.special[id]
}

// BOS returns the beginning-of-sequence token.
func (t *Tokenizer) BOS() (int32, bool) { return t.bos, t.bos >= 0 }

// EOS returns the end-of-sequence token.
func (t *Tokenizer) EOS() (int32, bool) { return t.eos, t.eos >= 0 }

// AddsBOS reports whether Encode with addSpecial starts with the BOS token.
func (t *Tokenizer) AddsBOS() bool { return len(t.prefix) > 0 && t.prefix[0] == t.bos && t.bos >= 0 }

// AddsEOS reports whether Encode with addSpecial ends with the EOS token.
func (t *Tokenizer) AddsEOS() bool {
	return len(t.suffix) > 0 && t.suffix[len(t.suffix)-1] == t.eos && t.eos >= 0
}

// Encode returns the token ids of text. Added tokens written in the text
// (special or not, such as "<|eot_id|>" or Qwen 3's "<think>") are always
// matched whole first. With addSpecial the tokens the checkpoint adds around
// every input (BOS, EOS) are added too.
func (t *Tokenizer) Encode(text string, addSpecial bool) []int32 {
	return t.AppendEncode(make([]int32, 0, len(text)/4+len(t.prefix)+len(t.suffix)+1), text, addSpecial)
}

// AppendEncode is Encode appending to dst.
func (t *Tokenizer) AppendEncode(dst []int32, text string, addSpecial bool) []int32 {
	if addSpecial {
		dst = append(dst, t.prefix...)
	}
	out := dst
	t.added.split(text,
		func(seg string, start int) { out = t.encodeSegment(seg, start == 0, out) },
		func(tok *addedToken) { out = append(out, tok.id) })
	if addSpecial {
		out = append(out, t.suffix...)
	}
	return out
}

func (t *Tokenizer) encodeSegment(seg string, atStart bool, out []int32) []int32 {
	if seg == "" {
		return out
	}
	if t.norm != nil {
		seg = t.norm.normalize(seg)
	}
	emit := func(piece string) { out = t.bpe.encode(piece, out) }
	if t.addedNorm == nil {
		t.pre.run(seg, atStart, emit)
		return out
	}
	t.addedNorm.split(seg,
		func(s string, start int) { t.pre.run(s, atStart && start == 0, emit) },
		func(tok *addedToken) { out = append(out, tok.id) })
	return out
}

// PreTokenize returns the pieces the pre-tokenizer cuts text into (after
// added tokens are cut out and normalization), as the model sees them; added
// tokens appear as their text.
func (t *Tokenizer) PreTokenize(text string) []string {
	var out []string
	emit := func(piece string) { out = append(out, piece) }
	t.added.split(text,
		func(seg string, start int) {
			if t.norm != nil {
				seg = t.norm.normalize(seg)
			}
			if t.addedNorm == nil {
				t.pre.run(seg, start == 0, emit)
				return
			}
			t.addedNorm.split(seg,
				func(s string, st int) { t.pre.run(s, start == 0 && st == 0, emit) },
				func(tok *addedToken) { out = append(out, tok.content) })
		},
		func(tok *addedToken) { out = append(out, tok.content) })
	return out
}

// Decode returns the text of ids. With skipSpecial, special tokens (BOS,
// EOS, control tokens) are left out. Ids outside the vocabulary are ignored.
// No clean-up of spaces is done.
func (t *Tokenizer) Decode(ids []int32, skipSpecial bool) string {
	toks := make([]string, 0, len(ids))
	for _, id := range ids {
		if id < 0 || int(id) >= len(t.tokens) || (skipSpecial && t.special[id]) {
			continue
		}
		toks = append(toks, t.tokens[id])
	}
	if len(t.decoder) == 0 {
		return strings.Join(toks, " ")
	}
	for _, st := range t.decoder {
		toks = st.decode(toks)
	}
	return strings.Join(toks, "")
}
