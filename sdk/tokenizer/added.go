package tokenizer

import (
	"unicode"
	"unicode/utf8"
)

// addedToken is a token matched whole in the text before anything else, as
// Hugging Face's added tokens and GGUF's CONTROL, USER_DEFINED and UNKNOWN
// tokens are.
type addedToken struct {
	content    string
	id         int32
	special    bool // skipped by Decode with skipSpecial
	lstrip     bool // the match takes the whitespace on its left
	rstrip     bool // the match takes the whitespace on its right
	singleWord bool // only matched between non-word characters
	normalized bool // matched in normalized text rather than the raw text
}

// addedMatcher finds added tokens in text, leftmost first and longest at a
// position (as Hugging Face's Aho-Corasick matcher does), whether or not they
// are special.
type addedMatcher struct {
	nodes  []trieNode
	first  [256]bool
	tokens []addedToken
}

type trieNode struct {
	next  map[byte]int32
	token int32 // index into tokens, or -1
}

func newAddedMatcher(tokens []addedToken) *addedMatcher {
	m := &addedMatcher{nodes: []trieNode{{token: -1}}, tokens: tokens}
	for i, t := range tokens {
		if t.content == "" {
			continue
		}
		m.first[t.content[0]] = true
		n := int32(0)
		for j := 0; j < len(t.content); j++ {
			c := t.content[j]
			nx, ok := m.nodes[n].next[c]
			if !ok {
				if m.nodes[n].next == nil {
					m.nodes[n].next = make(map[byte]int32)
				}
				nx = int32(len(m.nodes))
				m.nodes = append(m.nodes, trieNode{token: -1})
				m.nodes[n].next[c] = nx
			}
			n = nx
		}
		if m.nodes[n].token < 0 {
			m.nodes[n].token = int32(i)
		}
	}
	return m
}

// longestAt returns the longest token starting at s[i], or -1.
func (m *addedMatcher) longestAt(s string, i int) (tok, end int) {
	tok, end = -1, i
	n := int32(0)
	for j := i; j < len(s); j++ {
		nx, ok := m.nodes[n].next[s[j]]
		if !ok {
			break
		}
		n = nx
		if t := m.nodes[n].token; t >= 0 {
			tok, end = int(t), j+1
		}
	}
	return tok, end
}

// split calls text for each stretch of s between tokens and token for each
// token found, in order. start is the stretch's offset in s.
func (m *addedMatcher) split(s string, text func(seg string, start int), token func(t *addedToken)) {
	if m == nil || len(m.tokens) == 0 {
		text(s, 0)
		return
	}
	prev := 0 // end of the previous match
	for i := 0; i < len(s); i++ {
		if !m.first[s[i]] {
			continue
		}
		k, end := m.longestAt(s, i)
		if k < 0 {
			continue
		}
		t := &m.tokens[k]
		start := i
		if t.singleWord && (endsWithWordChar(s[prev:start]) || startsWithWordChar(s[end:])) {
			continue
		}
		if t.lstrip {
			for start > prev {
				r, w := utf8.DecodeLastRuneInString(s[prev:start])
				if !unicode.IsSpace(r) {
					break
				}
				start -= w
			}
		}
		if t.rstrip {
			for end < len(s) {
				r, w := utf8.DecodeRuneInString(s[end:])
				if !unicode.IsSpace(r) {
					break
				}
				end += w
			}
		}
		if start > prev {
			text(s[prev:start], prev)
		}
		token(t)
		prev = end
		i = end - 1
	}
	if prev < len(s) {
		text(s[prev:], prev)
	}
}

func isWordChar(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r)
}

func endsWithWordChar(s string) bool {
	r, _ := utf8.DecodeLastRuneInString(s)
	return s != "" && isWordChar(r)
}

func startsWithWordChar(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return s != "" && isWordChar(r)
}
