package tokenizer

import (
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// A normalizer rewrites a segment of text (the text between two added
// tokens) before pre-tokenization.
type normalizer interface {
	normalize(s string) string
}

type normalizerSeq []normalizer

func (ns normalizerSeq) normalize(s string) string {
	for _, n := range ns {
		s = n.normalize(s)
	}
	return s
}

// prependNormalizer puts a string in front of non-empty text (Hugging Face's
// Prepend, used for SentencePiece's dummy prefix "▁").
type prependNormalizer string

func (p prependNormalizer) normalize(s string) string {
	if s == "" {
		return s
	}
	return string(p) + s
}

// replaceNormalizer replaces every match of a pattern.
type replaceNormalizer struct {
	pat     pattern
	literal string // when the pattern is a plain string
	content string
}

func (r replaceNormalizer) normalize(s string) string {
	if r.pat == nil {
		return strings.ReplaceAll(s, r.literal, r.content)
	}
	var sb strings.Builder
	for _, sp := range r.pat.spans(s) {
		if sp.match {
			sb.WriteString(r.content)
		} else {
			sb.WriteString(s[sp.start:sp.end])
		}
	}
	return sb.String()
}

type unicodeNormalizer struct{ form norm.Form }

func (u unicodeNormalizer) normalize(s string) string { return u.form.String(s) }

type lowercaseNormalizer struct{}

func (lowercaseNormalizer) normalize(s string) string { return strings.ToLower(s) }

// stripNormalizer trims whitespace from either end.
type stripNormalizer struct{ left, right bool }

func (st stripNormalizer) normalize(s string) string {
	if st.left {
		s = strings.TrimLeftFunc(s, unicode.IsSpace)
	}
	if st.right {
		s = strings.TrimRightFunc(s, unicode.IsSpace)
	}
	return s
}

// stripAccentsNormalizer removes combining marks (used after NFD).
type stripAccentsNormalizer struct{}

func (stripAccentsNormalizer) normalize(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.Is(unicode.Mn, r) {
			return -1
		}
		return r
	}, s)
}
