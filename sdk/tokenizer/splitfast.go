package tokenizer

import "unicode/utf8"

// wordSplitter is a hand-written matcher for the GPT-2 family of
// pre-tokenizer regexes, which differ only in a few switches:
//
//	gpt2:   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//	llama3: (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//	qwen2:  as llama3 with \p{N} for \p{N}{1,3}
//	qwen35: as qwen2 with [\p{L}\p{M}]+ for \p{L}+ and [^\s\p{L}\p{M}\p{N}] for [^\s\p{L}\p{N}]
//
// It returns the same pieces as a backtracking engine (leftmost alternative
// first, greedy quantifiers) running the regex with Isolated splitting; the
// tests check it against regexp2 on generated text. One deliberate
// difference from regexp2: inside (?i:…) the long s "ſ" matches "s", as it
// does under Unicode case folding in Oniguruma and JavaScript.
type wordSplitter struct {
	foldContractions bool // (?i:'s|…) rather than 's|…
	wordPrefixAny    bool // [^\r\n\p{L}\p{N}]? before a word rather than " ?"
	marks            bool // words are [\p{L}\p{M}]+ and "other" excludes \p{M}
	numMax           int  // digits per number piece; 0 means unlimited
	numSpace         bool // " ?" before a number
	otherNewlines    bool // [\r\n]* after a run of other characters
	newlineRun       bool // the \s*[\r\n]+ alternative
}

// The splitters for the regexes above, keyed by the regex text as it appears
// in tokenizer.json files.
var (
	gpt2Splitter   = &wordSplitter{numSpace: true}
	llama3Splitter = &wordSplitter{foldContractions: true, wordPrefixAny: true, numMax: 3, otherNewlines: true, newlineRun: true}
	qwen2Splitter  = &wordSplitter{foldContractions: true, wordPrefixAny: true, numMax: 1, otherNewlines: true, newlineRun: true}
	qwen35Splitter = &wordSplitter{foldContractions: true, wordPrefixAny: true, marks: true, numMax: 1, otherNewlines: true, newlineRun: true}
)

const (
	regexGPT2   = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
	regexLlama3 = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	regexQwen2  = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	regexQwen35 = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
)

var fastSplitters = map[string]*wordSplitter{
	regexGPT2:   gpt2Splitter,
	regexLlama3: llama3Splitter,
	regexQwen2:  qwen2Splitter,
	regexQwen35: qwen35Splitter,
}

// split calls emit with every piece of s, in order. The pieces cover s.
func (w *wordSplitter) split(s string, emit func(string)) {
	for i := 0; i < len(s); {
		e := w.match(s, i)
		emit(s[i:e])
		i = e
	}
}

func (w *wordSplitter) isWord(r rune) bool {
	return isLetter(r) || (w.marks && isMark(r))
}

func (w *wordSplitter) isOther(r rune) bool {
	return !isSpace(r) && !isLetter(r) && !isNumber(r) && !(w.marks && isMark(r))
}

// match returns the end of the match that starts at i. Every position starts
// a match for these regexes, so there are no gaps.
func (w *wordSplitter) match(s string, i int) int {
	n := len(s)
	c, cw := decodeRune(s, i)

	// Contractions.
	if c == '\'' && i+1 < n {
		if e := w.contraction(s, i+1); e > 0 {
			return e
		}
	}

	// Words.
	if w.wordPrefixAny {
		if w.isWord(c) {
			return w.wordRun(s, i+cw)
		}
		if c != '\r' && c != '\n' && !isNumber(c) && i+cw < n {
			if c2, w2 := decodeRune(s, i+cw); w.isWord(c2) {
				return w.wordRun(s, i+cw+w2)
			}
		}
	} else {
		if c == ' ' && i+1 < n {
			if c2, w2 := decodeRune(s, i+1); w.isWord(c2) {
				return w.wordRun(s, i+1+w2)
			}
		}
		if w.isWord(c) {
			return w.wordRun(s, i+cw)
		}
	}

	// Numbers.
	if w.numSpace && c == ' ' && i+1 < n {
		if c2, w2 := decodeRune(s, i+1); isNumber(c2) {
			return w.numRun(s, i+1+w2)
		}
	}
	if isNumber(c) {
		return w.numRun(s, i+cw)
	}

	// Runs of other characters, optionally after one space.
	j := i
	if c == ' ' && i+1 < n {
		if c2, _ := decodeRune(s, i+1); w.isOther(c2) {
			j = i + 1
		}
	}
	if r, rw := decodeRune(s, j); w.isOther(r) {
		j += rw
		for j < n {
			r, rw = decodeRune(s, j)
			if !w.isOther(r) {
				break
			}
			j += rw
		}
		if w.otherNewlines {
			for j < n && (s[j] == '\r' || s[j] == '\n') {
				j++
			}
		}
		return j
	}

	// Whitespace: \s*[\r\n]+, then \s+(?!\S), then \s+.
	j = i
	lastNewline, lastStart, count := -1, i, 0
	for j < n {
		r, rw := decodeRune(s, j)
		if !isSpace(r) {
			break
		}
		if r == '\r' || r == '\n' {
			lastNewline = j
		}
		lastStart = j
		j += rw
		count++
	}
	switch {
	case count == 0:
		return i + cw // unreachable: every character is a letter, number, space or other
	case w.newlineRun && lastNewline >= 0:
		return lastNewline + 1
	case j == n || count == 1:
		return j
	default:
		return lastStart
	}
}

// contraction matches the letters after an apostrophe at j.
func (w *wordSplitter) contraction(s string, j int) int {
	r, rw := decodeRune(s, j)
	switch w.fold(r) {
	case 's', 't', 'm', 'd':
		return j + rw
	case 'r', 'v':
		if j+rw < len(s) {
			if r2, w2 := decodeRune(s, j+rw); w.fold(r2) == 'e' {
				return j + rw + w2
			}
		}
	case 'l':
		if j+rw < len(s) {
			if r2, w2 := decodeRune(s, j+rw); w.fold(r2) == 'l' {
				return j + rw + w2
			}
		}
	}
	return 0
}

func (w *wordSplitter) fold(r rune) rune {
	if !w.foldContractions {
		return r
	}
	switch {
	case r >= 'A' && r <= 'Z':
		return r + 'a' - 'A'
	case r == 'ſ':
		return 's'
	}
	return r
}

func (w *wordSplitter) wordRun(s string, j int) int {
	for j < len(s) {
		if c := s[j]; c < utf8.RuneSelf {
			if asciiClass[c]&clsLetter == 0 {
				break
			}
			j++
			continue
		}
		r, rw := utf8.DecodeRuneInString(s[j:])
		if !w.isWord(r) {
			break
		}
		j += rw
	}
	return j
}

func (w *wordSplitter) numRun(s string, j int) int {
	count := 1
	for j < len(s) && (w.numMax == 0 || count < w.numMax) {
		r, rw := decodeRune(s, j)
		if !isNumber(r) {
			break
		}
		j += rw
		count++
	}
	return j
}
