package tokenizer

import (
	"strings"
	"unicode/utf8"
)

// GPT-2's byte-level alphabet: every byte value is shown as one printable
// character, so that a byte-level vocabulary can be stored as text. Printable
// Latin-1 bytes stand for themselves; the other 68 bytes (controls, space,
// DEL, NBSP, soft hyphen) are moved to U+0100 onwards, in byte order.
var (
	byteToRune [256]rune
	// runeToByte maps the alphabet back; -1 marks runes outside it. The
	// alphabet ends below U+0144.
	runeToByte [0x144]int16
)

func init() {
	for i := range runeToByte {
		runeToByte[i] = -1
	}
	next := rune(256)
	for b := 0; b < 256; b++ {
		printable := (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF)
		r := rune(b)
		if !printable {
			r = next
			next++
		}
		byteToRune[b] = r
		runeToByte[r] = int16(b)
	}
}

// byteLevelDecode turns a byte-level token string ("Ġworld") into the bytes it
// stands for (" world"). ok is false when a character is outside the alphabet.
func byteLevelDecode(s string) (raw string, ok bool) {
	var sb strings.Builder
	sb.Grow(len(s))
	for _, r := range s {
		if r < 0 || int(r) >= len(runeToByte) || runeToByte[r] < 0 {
			return "", false
		}
		sb.WriteByte(byte(runeToByte[r]))
	}
	return sb.String(), true
}

// byteLevelEncode is the inverse of byteLevelDecode.
func byteLevelEncode(raw string) string {
	var sb strings.Builder
	sb.Grow(2 * len(raw))
	for i := 0; i < len(raw); i++ {
		sb.WriteRune(byteToRune[raw[i]])
	}
	return sb.String()
}

// lossyUTF8 converts bytes to a string, replacing each maximal invalid
// subpart with U+FFFD as the WHATWG decoder (and Rust's from_utf8_lossy) do.
func lossyUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var sb strings.Builder
	sb.Grow(len(b) + 8)
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r != utf8.RuneError || size > 1 {
			sb.WriteRune(r)
			i += size
			continue
		}
		sb.WriteRune(utf8.RuneError)
		i += invalidSubpart(b[i:])
	}
	return sb.String()
}

// invalidSubpart returns the length of the maximal subpart of an ill-formed
// sequence starting at b[0]: the lead byte plus the continuation bytes that
// could still have completed it.
func invalidSubpart(b []byte) int {
	lo, hi := byte(0x80), byte(0xBF)
	need := 0
	switch c := b[0]; {
	case c >= 0xC2 && c <= 0xDF:
		need = 1
	case c == 0xE0:
		need, lo = 2, 0xA0
	case c == 0xED:
		need, hi = 2, 0x9F
	case c >= 0xE1 && c <= 0xEF:
		need = 2
	case c == 0xF0:
		need, lo = 3, 0x90
	case c == 0xF4:
		need, hi = 3, 0x8F
	case c >= 0xF1 && c <= 0xF3:
		need = 3
	default:
		return 1
	}
	n := 1
	for k := 0; k < need && n < len(b); k++ {
		c := b[n]
		if c < lo || c > hi {
			break
		}
		n++
		lo, hi = 0x80, 0xBF
	}
	return n
}
