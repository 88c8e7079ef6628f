package tokenizer

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
)

// A stage is one step of pre-tokenization: it cuts a piece of text into
// smaller pieces. atStart tells whether the piece begins at offset 0 of the
// text being encoded (Metaspace's "first" prepend scheme needs it).
type stage interface {
	split(s string, atStart bool, emit func(piece string, atStart bool))
}

// preTokenizer runs its stages in sequence, each on every piece the previous
// one produced, and hands the model the final non-empty pieces.
type preTokenizer struct {
	stages []stage
	fast   *wordSplitter // set when the whole pipeline is one hand-written splitter
}

func newPreTokenizer(stages []stage) *preTokenizer {
	p := &preTokenizer{stages: stages}
	if len(stages) == 1 {
		if f, ok := stages[0].(fastStage); ok {
			p.fast = f.w
		}
	}
	return p
}

func (p *preTokenizer) run(s string, atStart bool, emit func(string)) {
	if s == "" {
		return
	}
	if p == nil || len(p.stages) == 0 {
		emit(s)
		return
	}
	if p.fast != nil {
		p.fast.split(s, emit)
		return
	}
	p.runFrom(0, s, atStart, emit)
}

func (p *preTokenizer) runFrom(k int, s string, atStart bool, emit func(string)) {
	if s == "" {
		return
	}
	if k == len(p.stages) {
		emit(s)
		return
	}
	p.stages[k].split(s, atStart, func(piece string, at bool) {
		p.runFrom(k+1, piece, at, emit)
	})
}

// splitBehavior says what a split keeps of the matched parts, as in
// Hugging Face tokenizers' SplitDelimiterBehavior.
type splitBehavior int

const (
	behaviorRemoved splitBehavior = iota
	behaviorIsolated
	behaviorMergedWithPrevious
	behaviorMergedWithNext
	behaviorContiguous
)

var behaviorNames = map[string]splitBehavior{
	"Removed":            behaviorRemoved,
	"Isolated":           behaviorIsolated,
	"MergedWithPrevious": behaviorMergedWithPrevious,
	"MergedWithNext":     behaviorMergedWithNext,
	"Contiguous":         behaviorContiguous,
}

// span is a part of a string, matched by a pattern or not.
type span struct {
	start, end int
	match      bool
}

// pattern finds the matched and unmatched spans of s, in order, covering s.
type pattern interface {
	spans(s string) []span
}

// splitStage is Hugging Face's Split: find the pattern, then keep, drop or
// merge the matches according to the behavior.
type splitStage struct {
	pat      pattern
	behavior splitBehavior
	invert   bool
}

func (st splitStage) split(s string, atStart bool, emit func(string, bool)) {
	spans := st.pat.spans(s)
	if st.invert {
		for i := range spans {
			spans[i].match = !spans[i].match
		}
	}
	var out []span
	switch st.behavior {
	case behaviorRemoved:
		for _, sp := range spans {
			if !sp.match {
				out = append(out, sp)
			}
		}
	case behaviorIsolated:
		out = spans
	case behaviorMergedWithPrevious:
		prevMatch := false
		for _, sp := range spans {
			if sp.match && !prevMatch && len(out) > 0 {
				out[len(out)-1].end = sp.end
			} else {
				out = append(out, sp)
			}
			prevMatch = sp.match
		}
	case behaviorMergedWithNext:
		prevMatch := false
		for i := len(spans) - 1; i >= 0; i-- {
			sp := spans[i]
			if sp.match && !prevMatch && len(out) > 0 {
				out[len(out)-1].start = sp.start
			} else {
				out = append(out, sp)
			}
			prevMatch = sp.match
		}
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
	case behaviorContiguous:
		prevMatch := false
		for i, sp := range spans {
			if i > 0 && sp.match == prevMatch {
				out[len(out)-1].end = sp.end
			} else {
				out = append(out, sp)
			}
			prevMatch = sp.match
		}
	}
	for _, sp := range out {
		if sp.end > sp.start {
			emit(s[sp.start:sp.end], atStart && sp.start == 0)
		}
	}
}

// regexPattern runs a regex with regexp2, whose default syntax and \s match
// Oniguruma's (the engine of Hugging Face tokenizers) for these patterns.
type regexPattern struct {
	re *regexp2.Regexp
}

func compileRegex(expr string) (*regexPattern, error) {
	re, err := regexp2.Compile(expr, regexp2.None)
	if err != nil {
		return nil, fmt.Errorf("pre-tokenizer regex %q: %w", expr, err)
	}
	return &regexPattern{re: re}, nil
}

func (p *regexPattern) spans(s string) []span {
	runes := []rune(s)
	// offs[i] is the byte offset of rune i; invalid bytes are one rune each,
	// exactly as the []rune conversion counts them.
	offs := make([]int, 0, len(runes)+1)
	for i := 0; i < len(s); {
		_, w := utf8.DecodeRuneInString(s[i:])
		offs = append(offs, i)
		i += w
	}
	offs = append(offs, len(s))
	var out []span
	prev := 0
	m, err := p.re.FindRunesMatch(runes)
	for err == nil && m != nil {
		start, end := offs[m.Index], offs[m.Index+m.Length]
		if start > prev {
			out = append(out, span{prev, start, false})
		}
		if end > start {
			out = append(out, span{start, end, true})
		}
		prev = end
		m, err = p.re.FindNextMatch(m)
	}
	if prev < len(s) {
		out = append(out, span{prev, len(s), false})
	}
	return out
}

// literalPattern matches a fixed string.
type literalPattern string

func (p literalPattern) spans(s string) []span {
	var out []span
	prev := 0
	if p != "" {
		for {
			k := strings.Index(s[prev:], string(p))
			if k < 0 {
				break
			}
			start := prev + k
			if start > prev {
				out = append(out, span{prev, start, false})
			}
			out = append(out, span{start, start + len(p), true})
			prev = start + len(p)
		}
	}
	if prev < len(s) {
		out = append(out, span{prev, len(s), false})
	}
	return out
}

// charPattern matches every single character for which the predicate holds,
// as Hugging Face's char-predicate patterns do.
type charPattern func(rune) bool

func (p charPattern) spans(s string) []span {
	var out []span
	prev := 0
	for i := 0; i < len(s); {
		r, w := decodeRune(s, i)
		if p(r) {
			if i > prev {
				out = append(out, span{prev, i, false})
			}
			out = append(out, span{i, i + w, true})
			prev = i + w
		}
		i += w
	}
	if prev < len(s) {
		out = append(out, span{prev, len(s), false})
	}
	return out
}

// fastStage is an Isolated split by a hand-written splitter.
type fastStage struct{ w *wordSplitter }

func (f fastStage) split(s string, atStart bool, emit func(string, bool)) {
	first := atStart
	f.w.split(s, func(piece string) {
		emit(piece, first)
		first = false
	})
}

// runStage isolates maximal runs (of at most max characters, 0 = unlimited)
// of characters in a class, keeping the text between them: the Isolated split
// by a regex such as \p{N}{1,3}.
type runStage struct {
	in  func(rune) bool
	max int
}

func (st runStage) split(s string, atStart bool, emit func(string, bool)) {
	prev := 0
	for i := 0; i < len(s); {
		r, w := decodeRune(s, i)
		if !st.in(r) {
			i += w
			continue
		}
		if i > prev {
			emit(s[prev:i], atStart && prev == 0)
		}
		start, n := i, 0
		for i < len(s) && (st.max == 0 || n < st.max) {
			r, w = decodeRune(s, i)
			if !st.in(r) {
				break
			}
			i += w
			n++
		}
		emit(s[start:i], atStart && start == 0)
		prev = i
	}
	if prev < len(s) {
		emit(s[prev:], atStart && prev == 0)
	}
}

// prefixSpaceStage is the add_prefix_space half of the ByteLevel
// pre-tokenizer: a piece that does not start with a space gets one.
type prefixSpaceStage struct{}

func (prefixSpaceStage) split(s string, atStart bool, emit func(string, bool)) {
	if !strings.HasPrefix(s, " ") {
		s = " " + s
	}
	emit(s, atStart)
}

// metaspaceStage is Hugging Face's Metaspace pre-tokenizer: spaces become the
// replacement character, which is prepended according to the scheme, and
// with split the text is cut before each replacement character.
type metaspaceStage struct {
	replacement string
	prepend     string // "always", "first" or "never"
	cut         bool
}

func (st metaspaceStage) split(s string, atStart bool, emit func(string, bool)) {
	s = strings.ReplaceAll(s, " ", st.replacement)
	if !strings.HasPrefix(s, st.replacement) && (st.prepend == "always" || (st.prepend == "first" && atStart)) {
		s = st.replacement + s
	}
	if !st.cut {
		emit(s, atStart)
		return
	}
	splitStage{pat: literalPattern(st.replacement), behavior: behaviorMergedWithNext}.split(s, atStart, emit)
}

// isASCIIDigit is Hugging Face's Digits pre-tokenizer class.
func isASCIIDigit(r rune) bool { return r >= '0' && r <= '9' }

// regexStage returns the stage for an Isolated split by expr, hand-written
// when the expression is one of the common ones.
func regexStage(expr string) (stage, error) {
	if w, ok := fastSplitters[expr]; ok {
		return fastStage{w}, nil
	}
	switch expr {
	case `\p{N}`:
		return runStage{in: isNumber, max: 1}, nil
	case `\p{N}{1,3}`:
		return runStage{in: isNumber, max: 3}, nil
	case `\p{N}+`:
		return runStage{in: isNumber}, nil
	}
	p, err := compileRegex(expr)
	if err != nil {
		return nil, err
	}
	return splitStage{pat: p, behavior: behaviorIsolated}, nil
}

// preTokenizerSpec describes one pre-tokenizer known by name, as llama.cpp
// names them in GGUF's tokenizer.ggml.pre.
type preTokenizerSpec struct {
	names        []string // canonical name first, then aliases
	regexes      []string // Isolated splits, in order
	ignoreMerges bool     // whole pieces found in the vocabulary are not merged
	addBOS       bool     // llama.cpp's default for tokenizer.ggml.add_bos_token
}

const (
	regexDeepSeekV3 = "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\\r\\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
	regexTekken     = `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	regexGPT4o      = `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	regexSeedCoder  = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1}| ?[^\s\p{L}\p{N}\r\n]+|\s*[\r\n]+|\s+(?!\S)|\s+`
	regexMiniCPM5   = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}+| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	regexUfakzeka   = `[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	regexExaoneMoE  = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?(?:\p{L}\p{M}*(?: \p{L}\p{M}*)*)+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]?|\s*[\r\n]|\s+(?!\S)|\s+`
	regexJais2      = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s{512}(?!\S)|\s{256}(?!\S)|\s{128}(?!\S)|\s{64}(?!\S)|\s{32}(?!\S)|\s{16}(?!\S)|\s{8}(?!\S)|\s{4}(?!\S)|\s{1,2}(?!\S)|\s{1}`
	regexBloom      = ` ?[^(\s|.,!?…。，、।۔،)]+`
	regexFalconPunc = "[\\p{P}\\$\\+<=>\\^~\\|`]+"
)

// preTokenizerSpecs lists the pre-tokenizers llama.cpp knows by name and this
// package implements. The regexes are those of the models' own tokenizer.json
// files (llama.cpp's comments quote them); where llama.cpp defines the split
// itself ("default", "falcon", "deepseek-coder", "bloom") its expressions are
// used. A regex that only lacks GPT-2's final |\s+ alternative is written with
// it: splitting keeps unmatched text as pieces, so the two cut alike.
var preTokenizerSpecs = []preTokenizerSpec{
	{names: []string{"default"}, regexes: []string{`[\p{P}\$\+<=>\^~\|]+`, regexGPT2, `\p{N}+`, `[0-9][0-9][0-9]`}},
	{names: []string{"gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de", "a.x-4.0", "mellum", "modern-bert", "exaone4", "mpt", "olmo", "jais", "trillion", "granite-docling", "jina-v1-en", "jina-v2-code", "roberta-bpe"}, regexes: []string{regexGPT2}},
	{names: []string{"llama-bpe", "llama3", "llama-v3", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2", "jina-v5-nano"}, regexes: []string{regexLlama3}, ignoreMerges: true, addBOS: true},
	{names: []string{"dbrx", "smaug-bpe", "chatglm-bpe", "glm4"}, regexes: []string{regexLlama3}},
	{names: []string{"qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "megrez", "stablelm2", "hunyuan", "solar-open", "grok-2"}, regexes: []string{regexQwen2}},
	{names: []string{"qwen35"}, regexes: []string{regexQwen35}},
	{names: []string{"smollm", "starcoder", "refact", "command-r", "codeshell", "exaone", "minerva-7b", "mellum2"}, regexes: []string{`\p{N}`, regexGPT2}},
	{names: []string{"deepseek-v3", "hunyuan-dense", "joyai-llm", "hy_v4"}, regexes: []string{`\p{N}{1,3}`, `[一-龥぀-ゟ゠-ヿ]+`, regexDeepSeekV3}},
	{names: []string{"deepseek-coder"}, regexes: []string{`[\r\n]`, `\s?\p{L}+`, `\s?\p{P}+`, `[一-龥ࠀ-一가-퟿]+`, `\p{N}`}},
	{names: []string{"falcon"}, regexes: []string{regexFalconPunc, regexGPT2, `[0-9][0-9][0-9]`}},
	{names: []string{"poro-chat", "bloom", "gpt3-finnish"}, regexes: []string{regexBloom}},
	{names: []string{"viking"}, regexes: []string{regexBloom, `\p{N}`}},
	{names: []string{"tekken"}, regexes: []string{regexTekken}, ignoreMerges: true, addBOS: true},
	{names: []string{"gpt-4o", "llama4", "kanana2", "talkie", "minimax-m2"}, regexes: []string{regexGPT4o}},
	{names: []string{"seed-coder"}, regexes: []string{regexSeedCoder}},
	{names: []string{"minicpm5"}, regexes: []string{`\p{N}{1,3}`, regexMiniCPM5}, ignoreMerges: true},
	{names: []string{"ufakzeka"}, regexes: []string{regexUfakzeka}},
	{names: []string{"exaone-moe"}, regexes: []string{regexExaoneMoE}},
	{names: []string{"jais-2"}, regexes: []string{regexJais2}},
}

// unsupportedPreTokenizers are names llama.cpp knows whose splitting needs
// code of its own (custom digit grouping, look-around the regex engines
// disagree on, or a non-byte-level model).
var unsupportedPreTokenizers = []string{
	"afmoe", "bailingmoe", "bailingmoe2", "chameleon", "cohere2moe", "deepseek-llm", "gemma4",
	"granite-embed-multi-311m", "granite-embed-multi-97m", "kimi-k2", "laguna", "llada-moe",
	"sarvam-moe", "spark2_5", "superbpe", "tiny_aya", "whitespace", "youtu",
}

// lookupPreTokenizer finds a pre-tokenizer by its llama.cpp name or alias.
func lookupPreTokenizer(name string) (*preTokenizerSpec, error) {
	for i := range preTokenizerSpecs {
		for _, n := range preTokenizerSpecs[i].names {
			if n == name {
				return &preTokenizerSpecs[i], nil
			}
		}
	}
	for _, n := range unsupportedPreTokenizers {
		if n == name {
			return nil, fmt.Errorf("pre-tokenizer %q is known to llama.cpp but not supported here", name)
		}
	}
	return nil, fmt.Errorf("unknown pre-tokenizer %q (supported: %s)", name, strings.Join(PreTokenizerNames(), ", "))
}

// PreTokenizerNames returns the llama.cpp pre-tokenizer names (the values of
// GGUF's tokenizer.ggml.pre) this package implements, aliases included,
// sorted.
func PreTokenizerNames() []string {
	var names []string
	for _, s := range preTokenizerSpecs {
		names = append(names, s.names...)
	}
	sort.Strings(names)
	return names
}

// stages builds the pre-tokenization stages of a named pre-tokenizer.
func (s *preTokenizerSpec) stages() ([]stage, error) {
	out := make([]stage, 0, len(s.regexes))
	for _, expr := range s.regexes {
		st, err := regexStage(expr)
		if err != nil {
			return nil, fmt.Errorf("pre-tokenizer %q: %w", s.names[0], err)
		}
		out = append(out, st)
	}
	return out, nil
}

// matchPreTokenizer finds the named pre-tokenizer that splits like the given
// Isolated regexes, preferring one whose ignore_merges agrees.
func matchPreTokenizer(regexes []string, ignoreMerges bool) *preTokenizerSpec {
	var found *preTokenizerSpec
	for i := range preTokenizerSpecs {
		s := &preTokenizerSpecs[i]
		if s.names[0] == "default" || !slices.Equal(s.regexes, regexes) {
			continue
		}
		if s.ignoreMerges == ignoreMerges {
			return s
		}
		if found == nil {
			found = s
		}
	}
	return found
}
