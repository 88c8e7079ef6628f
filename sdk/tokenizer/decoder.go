package tokenizer

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// A decodeStep rewrites the list of token strings, as the steps of a Hugging
// Face decoder do; Decode joins what is left.
type decodeStep interface {
	decode(tokens []string) []string
}

// byteLevelStep maps byte-level characters back to bytes. Added tokens are
// kept as they are written, and so is a token with a character outside the
// byte-level alphabet. Bytes that are not valid UTF-8 become U+FFFD.
type byteLevelStep struct {
	added map[string]bool
}

func (st byteLevelStep) decode(tokens []string) []string {
	var out []string
	var buf []byte
	flush := func() {
		if len(buf) > 0 {
			out = append(out, lossyUTF8(buf))
			buf = buf[:0]
		}
	}
	for _, t := range tokens {
		if st.added[t] {
			flush()
			out = append(out, t)
			continue
		}
		if raw, ok := byteLevelDecode(t); ok {
			buf = append(buf, raw...)
		} else {
			buf = append(buf, t...)
		}
	}
	flush()
	return out
}

// replaceStep replaces a string in every token.
type replaceStep struct{ old, new string }

func (st replaceStep) decode(tokens []string) []string {
	out := make([]string, len(tokens))
	for i, t := range tokens {
		out[i] = strings.ReplaceAll(t, st.old, st.new)
	}
	return out
}

// byteFallbackStep turns runs of <0xNN> tokens into the text they encode.
type byteFallbackStep struct{}

func byteToken(t string) (byte, bool) {
	if len(t) != 6 || !strings.HasPrefix(t, "<0x") || t[5] != '>' {
		return 0, false
	}
	v, err := strconv.ParseUint(t[3:5], 16, 8)
	return byte(v), err == nil
}

func (byteFallbackStep) decode(tokens []string) []string {
	var out []string
	var buf []byte
	for _, t := range tokens {
		if b, ok := byteToken(t); ok {
			buf = append(buf, b)
			continue
		}
		if len(buf) > 0 {
			out = append(out, lossyUTF8(buf))
			buf = buf[:0]
		}
		out = append(out, t)
	}
	if len(buf) > 0 {
		out = append(out, lossyUTF8(buf))
	}
	return out
}

// fuseStep joins all tokens into one.
type fuseStep struct{}

func (fuseStep) decode(tokens []string) []string { return []string{strings.Join(tokens, "")} }

// stripStep removes up to start leading and stop trailing copies of a
// character from every token.
type stripStep struct {
	char        rune
	start, stop int
}

func (st stripStep) decode(tokens []string) []string {
	out := make([]string, len(tokens))
	for i, t := range tokens {
		for k := 0; k < st.start; k++ {
			r, w := utf8.DecodeRuneInString(t)
			if t == "" || r != st.char {
				break
			}
			t = t[w:]
		}
		for k := 0; k < st.stop; k++ {
			r, w := utf8.DecodeLastRuneInString(t)
			if t == "" || r != st.char {
				break
			}
			t = t[:len(t)-w]
		}
		out[i] = t
	}
	return out
}

// metaspaceStep turns the replacement character back into spaces and drops
// the space it put in front of the first token.
type metaspaceStep struct {
	replacement string
	stripFirst  bool
}

func (st metaspaceStep) decode(tokens []string) []string {
	out := make([]string, len(tokens))
	for i, t := range tokens {
		t = strings.ReplaceAll(t, st.replacement, " ")
		if i == 0 && st.stripFirst {
			t = strings.TrimPrefix(t, " ")
		}
		out[i] = t
	}
	return out
}
