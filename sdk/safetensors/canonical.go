package safetensors

import (
	"math"

	"github.com/sluice-ml/sluice/sdk/tensor"
)

// parseCanonical parses a header of the form safetensors writers produce:
// an object of tensor entries, each exactly the members dtype (a string),
// shape (an array of integers) and data_offsets (two integers), in any
// order, and an optional __metadata__ object of strings; strings without
// escapes; whitespace wherever JSON allows it. That is every header of
// Hugging Face's serializer and of Sluice's, and encoding/json takes
// about 12 µs an entry over it: a mixture-of-experts checkpoint of tens of
// thousands of tensors spent a fifth of a second in one file's header.
//
// It returns ok = false for anything else, valid or not (an escape, an
// extra member, a duplicate, an unknown dtype, a size that does not match
// its shape), and ParseHeader then parses the header with encoding/json,
// whose errors say what is wrong. What it accepts, the encoding/json path
// accepts with the same result (FuzzCanonicalAgreesWithJSON).
func parseCanonical(raw []byte) (h *Header, ok bool) {
	p := canonicalParser{b: raw}
	h = &Header{}
	p.space()
	if !p.eat('{') {
		return nil, false
	}
	seen := map[string]bool{}
	p.space()
	if !p.eat('}') {
		for {
			name, ok := p.str()
			if !ok || seen[name] || !p.colon() {
				return nil, false
			}
			seen[name] = true
			if name == MetadataKey {
				if h.Metadata, ok = p.metadata(); !ok {
					return nil, false
				}
			} else {
				e, ok := p.entry(name)
				if !ok {
					return nil, false
				}
				h.Tensors = append(h.Tensors, e)
			}
			if !p.next('}') {
				if p.err {
					return nil, false
				}
				break
			}
		}
	}
	p.space()
	if p.err || p.i != len(p.b) {
		return nil, false
	}
	return h, true
}

// canonicalParser reads a header from b[i:]; err is set at the first byte
// it does not take.
type canonicalParser struct {
	b   []byte
	i   int
	err bool
}

func (p *canonicalParser) space() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\r', '\n':
			p.i++
		default:
			return
		}
	}
}

// eat takes c, if it is next.
func (p *canonicalParser) eat(c byte) bool {
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

// colon takes the ':' between a member's name and its value, with the
// whitespace around it.
func (p *canonicalParser) colon() bool {
	p.space()
	ok := p.eat(':')
	p.space()
	return ok
}

// next takes what follows a value in an object or array that ends with
// end: a ',' (true: another value follows) or end (false). Anything else
// sets err.
func (p *canonicalParser) next(end byte) bool {
	p.space()
	switch {
	case p.eat(','):
		p.space()
		return true
	case p.eat(end):
		return false
	}
	p.err = true
	return false
}

// str takes a string without escapes or control characters (the bytes are
// valid UTF-8: ParseHeader checked).
func (p *canonicalParser) str() (string, bool) {
	if !p.eat('"') {
		return "", false
	}
	start := p.i
	for p.i < len(p.b) {
		switch c := p.b[p.i]; {
		case c == '"':
			s := string(p.b[start:p.i])
			p.i++
			return s, true
		case c == '\\' || c < 0x20:
			return "", false
		}
		p.i++
	}
	return "", false
}

// uint takes a JSON integer without sign, fraction or exponent that fits
// in a uint64.
func (p *canonicalParser) uint() (uint64, bool) {
	start := p.i
	var v uint64
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		d := uint64(p.b[p.i] - '0')
		if v > (math.MaxUint64-d)/10 {
			return 0, false
		}
		v = v*10 + d
		p.i++
	}
	n := p.i - start
	if n == 0 || (n > 1 && p.b[start] == '0') {
		return 0, false // none, or a leading zero (not JSON)
	}
	if p.i < len(p.b) && (p.b[p.i] == '.' || p.b[p.i] == 'e' || p.b[p.i] == 'E') {
		return 0, false
	}
	return v, true
}

// uints takes an array of integers.
func (p *canonicalParser) uints() ([]uint64, bool) {
	if !p.eat('[') {
		return nil, false
	}
	out := make([]uint64, 0, 4)
	p.space()
	if p.eat(']') {
		return out, true
	}
	for {
		v, ok := p.uint()
		if !ok {
			return nil, false
		}
		out = append(out, v)
		if !p.next(']') {
			return out, !p.err
		}
	}
}

// entry takes a tensor entry and checks it as parseEntry does.
func (p *canonicalParser) entry(name string) (Entry, bool) {
	if !p.eat('{') {
		return Entry{}, false
	}
	e := Entry{Name: name}
	var dtype string
	var offsets []uint64
	var haveDType bool
	p.space()
	for {
		key, ok := p.str()
		if !ok || !p.colon() {
			return Entry{}, false
		}
		switch {
		case key == "dtype" && !haveDType:
			dtype, haveDType = p.str()
			if !haveDType {
				return Entry{}, false
			}
		case key == "shape" && e.Shape == nil:
			if e.Shape, ok = p.uints(); !ok {
				return Entry{}, false
			}
		case key == "data_offsets" && offsets == nil:
			if offsets, ok = p.uints(); !ok || len(offsets) != 2 {
				return Entry{}, false
			}
		default:
			return Entry{}, false
		}
		if !p.next('}') {
			if p.err {
				return Entry{}, false
			}
			break
		}
	}
	if !haveDType || e.Shape == nil || offsets == nil {
		return Entry{}, false
	}
	dt, ok := tensor.FromSafetensors(dtype)
	if !ok {
		return Entry{}, false
	}
	e.DType, e.Begin, e.End = dt, offsets[0], offsets[1]
	if e.End < e.Begin {
		return Entry{}, false
	}
	want, err := dt.ShapeByteSize(e.Shape)
	if err != nil || want != e.End-e.Begin {
		return Entry{}, false
	}
	return e, true
}

// metadata takes the __metadata__ object of strings.
func (p *canonicalParser) metadata() (map[string]string, bool) {
	if !p.eat('{') {
		return nil, false
	}
	md := map[string]string{}
	p.space()
	if p.eat('}') {
		return md, true
	}
	for {
		k, ok := p.str()
		if !ok || !p.colon() {
			return nil, false
		}
		if _, dup := md[k]; dup {
			return nil, false
		}
		if md[k], ok = p.str(); !ok {
			return nil, false
		}
		if !p.next('}') {
			return md, !p.err
		}
	}
}
