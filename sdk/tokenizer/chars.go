package tokenizer

import (
	"unicode"
	"unicode/utf8"
)

// Character classes as the Oniguruma and regexp2 engines define them. \s is
// [\t\n\v\f\r] plus U+0085 and the Unicode White_Space separators; U+FEFF is
// not a space.

const (
	clsLetter = 1 << iota
	clsNumber
	clsSpace
)

var asciiClass [128]uint8

func init() {
	for c := 0; c < 128; c++ {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
			asciiClass[c] = clsLetter
		case c >= '0' && c <= '9':
			asciiClass[c] = clsNumber
		case c == ' ', c >= '\t' && c <= '\r':
			asciiClass[c] = clsSpace
		}
	}
}

func isLetter(r rune) bool {
	if r < 128 {
		return asciiClass[r]&clsLetter != 0
	}
	return unicode.IsLetter(r)
}

func isNumber(r rune) bool {
	if r < 128 {
		return asciiClass[r]&clsNumber != 0
	}
	return unicode.IsNumber(r)
}

func isSpace(r rune) bool {
	if r < 128 {
		return asciiClass[r]&clsSpace != 0
	}
	return unicode.IsSpace(r)
}

func isMark(r rune) bool {
	return r >= 0x300 && unicode.IsMark(r)
}

// decodeRune is utf8.DecodeRuneInString with an ASCII fast path. Invalid
// bytes decode as U+FFFD of width 1, so every byte of the input stays covered.
func decodeRune(s string, i int) (rune, int) {
	if c := s[i]; c < utf8.RuneSelf {
		return rune(c), 1
	}
	return utf8.DecodeRuneInString(s[i:])
}
