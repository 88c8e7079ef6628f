package safetensors

import (
	"bytes"
	"encoding/binary"
	"hash/maphash"
	"math"
	"math/bits"
	"runtime"
	"slices"
	"unicode/utf8"
	"unsafe"

	"github.com/sluice-ml/sluice/sdk/resident"
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
func parseCanonical(raw []byte, share bool) (h *Header, ok bool) {
	p := canonicalParser{b: raw}
	p.space()
	if !p.eat('{') {
		return nil, false
	}
	p.space()
	if p.eat('}') {
		p.space()
		return &Header{}, p.i == len(raw)
	}
	first := p.i
	if len(raw) >= parallelFrom && runtime.GOMAXPROCS(0) > 1 {
		if split := memberNear(raw, first+len(raw[first:])/2); split > 0 {
			if h, ok, sure := parseHalves(raw, first, split, share); sure {
				return h, ok
			}
		}
	}
	return parseWhole(raw, first, share)
}

// parseWhole takes the header's members from raw[first:] in one run.
func parseWhole(raw []byte, first int, share bool) (h *Header, ok bool) {
	run, ok := parseMembers(raw, first, len(raw), nil, share)
	if !ok || !distinctNames(run.tensors) {
		return nil, false
	}
	return run.header(), true
}

// distinctNames reports whether no two entries share a name. It indexes the
// entries by position in an open-addressed table at most half full, hashed
// with a seed of its own so that no header can choose its collisions. For
// tens of thousands of entries that is a fifth of the memory a map of the
// names takes, memory a short command like info pays to touch.
func distinctNames(entries []Entry) bool {
	if len(entries) < 2 {
		return true
	}
	slots := make([]int32, 1<<bits.Len(uint(2*len(entries)-1))) // entry index + 1; 0 is free
	resident.Slice(slots)
	mask := uint64(len(slots) - 1)
	seed := maphash.MakeSeed()
	for i := range entries {
		name := entries[i].Name
		for j := maphash.String(seed, name) & mask; ; j = (j + 1) & mask {
			k := slots[j]
			if k == 0 {
				slots[j] = int32(i + 1)
				break
			}
			if entries[k-1].Name == name {
				return false
			}
		}
	}
	return true
}

// validUTF8 is utf8.Valid, run on the two halves of a header of
// parallelFrom bytes or more at once: the first pass over a mapped header
// is the first touch of its pages, which is most of its cost. The halves
// meet at a byte that starts a character, where the whole is valid if and
// only if both halves are.
func validUTF8(raw []byte) bool {
	if len(raw) < parallelFrom || runtime.GOMAXPROCS(0) < 2 {
		return utf8.Valid(raw)
	}
	split := len(raw) / 2
	for end := split + utf8.UTFMax; split < end && !utf8.RuneStart(raw[split]); split++ {
	}
	if !utf8.RuneStart(raw[split]) { // four continuation bytes in a row
		return false
	}
	second := make(chan bool, 1)
	go func() { second <- utf8.Valid(raw[split:]) }()
	first := utf8.Valid(raw[:split])
	return <-second && first
}

// parallelFrom is the header size from which parseCanonical parses the two
// halves of the header at once: about 2,000 entries.
const parallelFrom = 256 << 10

// shortestEntry is the length of the shortest entry there is,
// `"":{"dtype":"U8","shape":[],"data_offsets":[0,0]}`, with its comma.
const shortestEntry = 50

// memberRun is what parseMembers took from a run of the header's members.
type memberRun struct {
	tensors     []Entry
	metadata    map[string]string
	hasMetadata bool // a __metadata__ member came
}

func (r *memberRun) header() *Header {
	h := &Header{Metadata: r.metadata, Tensors: r.tensors}
	if len(h.Tensors) == 0 {
		h.Tensors = nil // as encoding/json leaves it
	}
	return h
}

// maxEntries bounds the number of entries in b: every entry is an object,
// so counting the braces (a vectorized count of one byte) bounds it, and
// braces inside names count too, so the bound is also capped by the
// shortest entry.
func maxEntries(b []byte) int {
	return min(bytes.Count(b, []byte{'{'}), len(b)/shortestEntry+1)
}

// parseMembers takes the members of the header's object from raw[from:],
// into tensors if it has room (the bound of maxEntries sizes the list and
// the shapes' backing array once). With stop = len(raw) it takes them to
// the object's end and the end of raw. With stop < len(raw) it takes them
// until the member that starts exactly at stop, and fails if none does. It
// leaves a tensor name given twice to distinctNames.
func parseMembers(raw []byte, from, stop int, tensors []Entry, share bool) (*memberRun, bool) {
	n := maxEntries(raw[from:stop])
	if tensors == nil {
		tensors = make([]Entry, 0, n)
		resident.Slice(tensors)
	}
	p := canonicalParser{b: raw, i: from, dims: make([]uint64, 0, 2*n+1), share: share}
	resident.Slice(p.dims)
	r := &memberRun{tensors: tensors}
	for {
		name, ok := p.str()
		if !ok || !p.colon() {
			return nil, false
		}
		if name == MetadataKey {
			if r.hasMetadata {
				return nil, false
			}
			r.hasMetadata = true
			if r.metadata, ok = p.stringObject(0); !ok {
				return nil, false
			}
		} else {
			e, ok := p.entry(name)
			if !ok {
				return nil, false
			}
			r.tensors = append(r.tensors, e)
		}
		if !p.next('}') {
			if p.err || stop < len(raw) {
				return nil, false
			}
			p.space()
			return r, p.i == len(raw)
		}
		if stop < len(raw) && p.i >= stop {
			return r, p.i == stop
		}
	}
}

// memberNear returns where the first member of the header's object that
// starts at or after raw[i] starts, or -1. It assumes the header has no
// escapes, as canonical headers don't, to tell strings from the rest by
// counting quotes; parseHalves checks that a member does start there.
func memberNear(raw []byte, i int) int {
	inString := bytes.Count(raw[:i], []byte{'"'})%2 == 1
	for ; i < len(raw); i++ {
		switch c := raw[i]; {
		case c == '"':
			inString = !inString
		case c == '}' && !inString: // the end of an entry or of __metadata__
			j := i + 1
			for j < len(raw) && isSpace(raw[j]) {
				j++
			}
			if j < len(raw) && raw[j] == ',' {
				for j++; j < len(raw) && isSpace(raw[j]); j++ {
				}
				if j < len(raw) && raw[j] == '"' {
					return j
				}
			}
		}
	}
	return -1
}

// parseHalves parses the members before split and the members from split
// on at once, and joins them. The first half's parse ends exactly at split
// only if a member starts there, so the halves parse as the whole would.
// sure is false when it does not, and the header must be parsed whole.
func parseHalves(raw []byte, first, split int, share bool) (h *Header, ok, sure bool) {
	n1, n2 := maxEntries(raw[first:split]), maxEntries(raw[split:])
	all := make([]Entry, 0, n1+n2)
	resident.Slice(all)
	var second *memberRun
	var secondOK bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		second, secondOK = parseMembers(raw, split, len(raw), all[n1:n1:n1+n2], share)
	}()
	firstRun, firstOK := parseMembers(raw, first, split, all[:0:n1], share)
	<-done
	if !firstOK {
		return nil, false, false
	}
	if !secondOK {
		return nil, false, true // the whole parse fails there too
	}
	if firstRun.hasMetadata && second.hasMetadata {
		return nil, false, true
	}
	if second.hasMetadata {
		firstRun.metadata = second.metadata
	}
	if cap(firstRun.tensors) == n1 && cap(second.tensors) == n2 { // neither outgrew its part of all: close the gap
		k1 := len(firstRun.tensors)
		firstRun.tensors = all[:k1+copy(all[k1:n1+n2], second.tensors)]
	} else {
		firstRun.tensors = append(slices.Clip(firstRun.tensors), second.tensors...)
	}
	if !distinctNames(firstRun.tensors) {
		return nil, false, true
	}
	return firstRun.header(), true, true
}

// canonicalParser reads a header from b[i:]; err is set at the first byte
// it does not take.
type canonicalParser struct {
	b   []byte
	i   int
	err bool
	// lastDType describes the dtype of the last entry, named lastDTypeText
	// (nil before the first).
	lastDType     tensor.Info
	lastDTypeText []byte
	// dims backs every entry's shape, each a slice of it capped at its own
	// length, so that an append to one shape cannot reach the next.
	dims []uint64
	// share says b is never modified, so the strings taken from it may
	// share its bytes instead of copying them.
	share bool
}

func (p *canonicalParser) space() {
	for p.i < len(p.b) && isSpace(p.b[p.i]) {
		p.i++
	}
}

// isSpace reports whether c is JSON whitespace.
func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

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
	b, ok := p.strBytes()
	if p.share && len(b) > 0 {
		return unsafe.String(&b[0], len(b)), ok
	}
	return string(b), ok
}

// strBytes is str for a string that is only compared: it returns the
// header's own bytes, without a copy.
func (p *canonicalParser) strBytes() ([]byte, bool) {
	if !p.eat('"') {
		return nil, false
	}
	start := p.i
	for p.i+8 <= len(p.b) && !mayEndString(binary.LittleEndian.Uint64(p.b[p.i:])) {
		p.i += 8
	}
	for p.i < len(p.b) {
		switch c := p.b[p.i]; {
		case c == '"':
			b := p.b[start:p.i]
			p.i++
			return b, true
		case c == '\\' || c < 0x20:
			return nil, false
		}
		p.i++
	}
	return nil, false
}

// mayEndString reports whether any of the eight bytes of x, read from a
// string's body, is one that strBytes must look at: a quote, a backslash or
// a control character. It tests the eight at once, with the bit tricks of
// "Determine if a word has a zero byte" (Bit Twiddling Hacks): for each
// byte b, (b - 1) &^ b has its high bit set only when b is zero, and
// (b - 0x20) &^ b only when b < 0x20. A borrow may carry into a higher
// byte only from a byte that does match, so a word without one never
// reports one.
func mayEndString(x uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	zero := func(v uint64) uint64 { return (v - ones) &^ v & highs }
	control := (x - 0x20*ones) &^ x & highs
	return control|zero(x^'"'*ones)|zero(x^'\\'*ones) != 0
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

// shape takes an array of integers into dims and returns it, never nil.
func (p *canonicalParser) shape() ([]uint64, bool) {
	if !p.eat('[') {
		return nil, false
	}
	start := len(p.dims)
	p.space()
	if !p.eat(']') {
		for {
			v, ok := p.uint()
			if !ok {
				return nil, false
			}
			p.dims = append(p.dims, v)
			if !p.next(']') {
				if p.err {
					return nil, false
				}
				break
			}
		}
	}
	end := len(p.dims)
	return p.dims[start:end:end], true
}

// offsets takes the data_offsets pair.
func (p *canonicalParser) offsets() (begin, end uint64, ok bool) {
	if !p.eat('[') {
		return 0, 0, false
	}
	p.space()
	if begin, ok = p.uint(); !ok || !p.next(']') {
		return 0, 0, false
	}
	if end, ok = p.uint(); !ok || p.next(']') || p.err {
		return 0, 0, false
	}
	return begin, end, true
}

// entry takes a tensor entry and checks it as parseEntry does.
func (p *canonicalParser) entry(name string) (Entry, bool) {
	if !p.eat('{') {
		return Entry{}, false
	}
	e := Entry{Name: name}
	var dtype []byte
	var haveDType, haveOffsets bool
	p.space()
	for {
		key, ok := p.strBytes()
		if !ok || !p.colon() {
			return Entry{}, false
		}
		switch {
		case string(key) == "dtype" && !haveDType:
			dtype, haveDType = p.strBytes()
			if !haveDType {
				return Entry{}, false
			}
		case string(key) == "shape" && e.Shape == nil:
			if e.Shape, ok = p.shape(); !ok {
				return Entry{}, false
			}
		case string(key) == "data_offsets" && !haveOffsets:
			if e.Begin, e.End, haveOffsets = p.offsets(); !haveOffsets {
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
	if !haveDType || e.Shape == nil || !haveOffsets {
		return Entry{}, false
	}
	if p.lastDTypeText == nil || !bytes.Equal(dtype, p.lastDTypeText) { // a checkpoint has few dtypes, mostly in runs
		dt, known := tensor.FromSafetensors(string(dtype))
		if !known {
			return Entry{}, false
		}
		if p.lastDType, known = dt.Info(); !known {
			return Entry{}, false
		}
		p.lastDTypeText = dtype
	}
	e.DType = p.lastDType.Name
	if e.End < e.Begin {
		return Entry{}, false
	}
	want, err := p.lastDType.ShapeByteSize(e.Shape)
	if err != nil || want != e.End-e.Begin {
		return Entry{}, false
	}
	return e, true
}
