// Package safetensors reads and writes the safetensors container: an 8-byte
// little-endian header length, a JSON header (tensor table and an optional
// "__metadata__" object of strings), then the tensor data back to back.
//
// Reading follows the reference implementation's rules (a 100 MB header cap,
// UTF-8, offsets contiguous from zero with no holes, the last tensor ending at
// the end of the file) and reports every violation as a *binio.FormatError.
// Writing produces the bytes Hugging Face's own serializer produces for the
// same tensors and metadata: tensors ordered by descending dtype alignment,
// then name; compact JSON; the header padded with spaces to a multiple of 8.
//
// The package handles one file. Sharded checkpoints (index.json) and
// directories belong to the plugins that use it; IndexWeightMap only reads
// an index's weight map fast, with the header's scanner.
package safetensors

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/sluice-ml/sluice/sdk/binio"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// MaxHeaderSize is the largest JSON header accepted, as in the reference
// implementation.
const MaxHeaderSize = 100_000_000

// MetadataKey is the header member that holds string metadata.
const MetadataKey = "__metadata__"

// Entry is one tensor of a safetensors file.
type Entry struct {
	Name  string
	DType tensor.DType
	Shape []uint64
	// Begin and End are byte offsets relative to the start of the data.
	Begin, End uint64
}

// Size returns the entry's byte length.
func (e *Entry) Size() uint64 { return e.End - e.Begin }

// Header is a parsed safetensors header.
type Header struct {
	// Metadata is the "__metadata__" object; nil when the file has none.
	Metadata map[string]string
	// Tensors are sorted by their data offsets.
	Tensors []Entry
	// DataOffset is the file offset where tensor data starts (8 + header length).
	DataOffset int64
	// HeaderLen is the length of the JSON header, padding included.
	HeaderLen uint64
}

// Tensor returns the entry called name.
func (h *Header) Tensor(name string) (*Entry, bool) {
	for i := range h.Tensors {
		if h.Tensors[i].Name == name {
			return &h.Tensors[i], true
		}
	}
	return nil, false
}

// ReadHeader parses the header of a safetensors file of the given size and
// checks the tensor table against it. It reads only the header.
func ReadHeader(r io.ReaderAt, size int64, file string) (*Header, error) {
	br := binio.NewReader(r, size, file)
	br.MaxAlloc = MaxHeaderSize
	n, err := br.U64("header length")
	if err != nil {
		return nil, err
	}
	if n > MaxHeaderSize {
		return nil, binio.Errorf(file, 0, "header length %d is over the %d-byte limit", n, MaxHeaderSize)
	}
	if n > uint64(br.Remaining()) {
		return nil, binio.Errorf(file, 0, "header length %d is longer than the %d bytes left in the file (truncated?)", n, br.Remaining())
	}
	raw, err := br.View(n, "JSON header")
	if err != nil {
		return nil, err
	}
	// raw is ours (a fresh copy or a view of the mapped file) and never
	// modified, so the names can share it.
	h, err := parseHeader(raw, file, true)
	if err != nil {
		return nil, err
	}
	h.HeaderLen = n
	h.DataOffset = 8 + int64(n)
	dataSize := uint64(size - h.DataOffset)
	var end uint64
	if len(h.Tensors) > 0 {
		end = h.Tensors[len(h.Tensors)-1].End
	}
	if end != dataSize {
		if end > dataSize {
			last := h.Tensors[len(h.Tensors)-1]
			return nil, &binio.FormatError{File: file, Offset: h.DataOffset + int64(min(last.Begin, dataSize)), Tensor: last.Name,
				Msg: fmt.Sprintf("data runs to byte %d of the data section, past the end of the file (%d bytes of data; truncated?)", end, dataSize)}
		}
		return nil, binio.Errorf(file, h.DataOffset+int64(end), "the tensors cover %d bytes of data but the file holds %d: %d unaccounted bytes at the end", end, dataSize, dataSize-end)
	}
	return h, nil
}

// ParseHeader parses the JSON header bytes (without the length prefix) and
// checks the table's internal consistency: known dtypes, sizes that match
// shapes, offsets contiguous from zero. Offsets in errors are relative to
// the start of the file, assuming the standard 8-byte prefix.
func ParseHeader(raw []byte, file string) (*Header, error) {
	return parseHeader(raw, file, false)
}

// parseHeader is ParseHeader; with share, the names it takes from raw
// share raw's bytes, which must then never be modified.
func parseHeader(raw []byte, file string, share bool) (*Header, error) {
	const base = 8
	if !validUTF8(raw) {
		i := firstInvalidUTF8(raw)
		return nil, binio.Errorf(file, base+int64(i), "header is not valid UTF-8")
	}
	h, ok := parseCanonical(raw, share)
	if !ok {
		var err error
		if h, err = parseJSON(raw, file); err != nil {
			return nil, err
		}
	}
	byOffsets := func(a, b Entry) int {
		if c := cmp.Compare(a.Begin, b.Begin); c != 0 {
			return c
		}
		return cmp.Compare(a.End, b.End)
	}
	if !slices.IsSortedFunc(h.Tensors, byOffsets) { // writers list tensors in data order
		slices.SortStableFunc(h.Tensors, byOffsets)
	}
	var next uint64
	for i := range h.Tensors {
		e := &h.Tensors[i]
		if e.Begin != next {
			what := "leaves a hole after"
			if e.Begin < next {
				what = "overlaps"
			}
			return nil, &binio.FormatError{File: file, Offset: -1, Tensor: e.Name,
				Msg: fmt.Sprintf("data_offsets [%d, %d] %s the previous tensor, which ends at %d; offsets must be contiguous from 0", e.Begin, e.End, what, next)}
		}
		next = e.End
	}
	return h, nil
}

// parseJSON parses a header with encoding/json, the path for headers
// parseCanonical does not take: slower, and its errors name what is wrong
// and where.
func parseJSON(raw []byte, file string) (*Header, error) {
	const base = 8
	trimmed := bytes.TrimLeft(raw, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, binio.Errorf(file, base, "header does not start with a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if _, err := dec.Token(); err != nil {
		return nil, jsonError(file, base, dec, err)
	}
	h := &Header{}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, jsonError(file, base, dec, err)
		}
		name, _ := tok.(string)
		at := base + dec.InputOffset()
		if seen[name] {
			return nil, &binio.FormatError{File: file, Offset: at, Tensor: name, Msg: "tensor name appears twice in the header"}
		}
		seen[name] = true
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return nil, jsonError(file, base, dec, err)
		}
		if name == MetadataKey {
			md, err := parseMetadata(val)
			if err != nil {
				return nil, binio.Errorf(file, at, "%s: %v", MetadataKey, err)
			}
			h.Metadata = md
			continue
		}
		e, err := parseEntry(name, val)
		if err != nil {
			return nil, &binio.FormatError{File: file, Offset: at, Tensor: name, Msg: err.Error()}
		}
		h.Tensors = append(h.Tensors, e)
	}
	if _, err := dec.Token(); err != nil {
		return nil, jsonError(file, base, dec, err)
	}
	if rest := bytes.TrimRight(raw[dec.InputOffset():], " \t\r\n"); len(rest) != 0 {
		return nil, binio.Errorf(file, base+dec.InputOffset(), "unexpected bytes after the JSON header")
	}
	return h, nil
}

func firstInvalidUTF8(b []byte) int {
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size <= 1 {
			return i
		}
		i += size
	}
	return len(b)
}

func jsonError(file string, base int64, dec *json.Decoder, err error) error {
	off := base + dec.InputOffset()
	if se, ok := err.(*json.SyntaxError); ok {
		off = base + se.Offset
	}
	return &binio.FormatError{File: file, Offset: off, Msg: "header is not valid JSON", Err: err}
}

func parseMetadata(raw json.RawMessage) (map[string]string, error) {
	if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return nil, nil
	}
	var md map[string]string
	if err := json.Unmarshal(raw, &md); err != nil {
		return nil, fmt.Errorf("must be an object of strings: %v", err)
	}
	return md, nil
}

type jsonEntry struct {
	DType       *string         `json:"dtype"`
	Shape       []json.Number   `json:"shape"`
	DataOffsets *[2]json.Number `json:"data_offsets"`
	Extra       map[string]any  `json:"-"`
}

// entryKeys are the members of a tensor entry, spelled exactly (Go's JSON
// decoder would otherwise match them without regard to case).
var entryKeys = map[string]bool{"dtype": true, "shape": true, "data_offsets": true}

func parseEntry(name string, raw json.RawMessage) (Entry, error) {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(raw, &members); err != nil {
		return Entry{}, fmt.Errorf("malformed tensor entry: %v", err)
	}
	for k := range members {
		for want := range entryKeys {
			if k != want && strings.EqualFold(k, want) {
				return Entry{}, fmt.Errorf("tensor entry member %q must be spelled %q", k, want)
			}
		}
	}
	var je jsonEntry
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(&je); err != nil {
		return Entry{}, fmt.Errorf("malformed tensor entry: %v", err)
	}
	if je.DType == nil || je.Shape == nil || je.DataOffsets == nil {
		return Entry{}, fmt.Errorf("tensor entry needs dtype, shape and data_offsets")
	}
	dt, ok := tensor.FromSafetensors(*je.DType)
	if !ok {
		return Entry{}, fmt.Errorf("unknown dtype %q (safetensors dtypes: F64 F32 F16 BF16 F8_E4M3 F8_E5M2 I64 I32 I16 I8 U64 U32 U16 U8 BOOL)", *je.DType)
	}
	e := Entry{Name: name, DType: dt, Shape: make([]uint64, len(je.Shape))}
	for i, s := range je.Shape {
		v, err := strconv.ParseUint(string(s), 10, 64)
		if err != nil {
			return Entry{}, fmt.Errorf("shape %v: dimension %d is not a non-negative integer", je.Shape, i)
		}
		e.Shape[i] = v
	}
	var err error
	if e.Begin, err = strconv.ParseUint(string(je.DataOffsets[0]), 10, 64); err != nil {
		return Entry{}, fmt.Errorf("data_offsets: begin %q is not a non-negative integer", je.DataOffsets[0])
	}
	if e.End, err = strconv.ParseUint(string(je.DataOffsets[1]), 10, 64); err != nil {
		return Entry{}, fmt.Errorf("data_offsets: end %q is not a non-negative integer", je.DataOffsets[1])
	}
	if e.End < e.Begin {
		return Entry{}, fmt.Errorf("data_offsets [%d, %d] end before they begin", e.Begin, e.End)
	}
	want, err := dt.ShapeByteSize(e.Shape)
	if err != nil {
		return Entry{}, err
	}
	if want != e.End-e.Begin {
		return Entry{}, fmt.Errorf("%s %v needs %d bytes but data_offsets [%d, %d] hold %d", *je.DType, e.Shape, want, e.Begin, e.End, e.End-e.Begin)
	}
	return e, nil
}

// Tensor is one tensor to write: its name, dtype, row-major shape and size.
type Tensor struct {
	Name  string
	DType tensor.DType
	Shape []uint64
	Size  uint64
}

// Layout is the planned layout of a file: the bytes of its prefix (length and
// padded JSON header) and every tensor's place.
type Layout struct {
	// Prefix is the 8-byte length followed by the padded JSON header.
	Prefix []byte
	// Tensors are in data order, with offsets relative to the data start.
	// Their data is contiguous (no padding between tensors), so a writer
	// that has written a tensor's bytes has written every byte up to the
	// next tensor's.
	Tensors []Entry
	// DataSize is the total size of the tensor data.
	DataSize uint64

	byName map[string]int // Tensors by name, from PlanLayout
}

// FileSize returns the size of the file the layout describes.
func (l *Layout) FileSize() uint64 { return uint64(len(l.Prefix)) + l.DataSize }

// Offset returns the absolute file offset of the named tensor's data.
func (l *Layout) Offset(name string) (int64, bool) {
	if i, ok := l.byName[name]; ok && i < len(l.Tensors) && l.Tensors[i].Name == name {
		return l.EntryOffset(l.Tensors[i]), true
	}
	// A layout not made by PlanLayout, or changed since.
	for i := range l.Tensors {
		if l.Tensors[i].Name == name {
			return l.EntryOffset(l.Tensors[i]), true
		}
	}
	return 0, false
}

// EntryOffset returns the absolute file offset of the data of e, one of
// l.Tensors.
func (l *Layout) EntryOffset(e Entry) int64 { return int64(len(l.Prefix)) + int64(e.Begin) }

// alignRank orders safetensors dtypes by alignment, as the reference
// implementation's Dtype enum does.
var alignRank = map[tensor.DType]int{
	tensor.Bool: 0, tensor.U8: 1, tensor.I8: 2, tensor.F8E5M2: 3, tensor.F8E4M3: 4,
	tensor.I16: 5, tensor.U16: 6, tensor.F16: 7, tensor.BF16: 8, tensor.I32: 9,
	tensor.U32: 10, tensor.F32: 11, tensor.F64: 12, tensor.I64: 13, tensor.U64: 14,
}

// PlanLayout lays out tensors and metadata the way Hugging Face's serializer
// does. Every dtype must be a safetensors dtype and every size must match its
// shape; names must be unique.
func PlanLayout(tensors []Tensor, metadata map[string]string) (*Layout, error) {
	type ranked struct {
		Tensor
		rank int
	}
	sorted := make([]ranked, len(tensors))
	headerSize := 2 + 64 // the braces, and the metadata's member
	for i, t := range tensors {
		info, ok := t.DType.Info()
		if !ok || info.Safetensors == "" {
			return nil, fmt.Errorf("tensor %q: dtype %s has no safetensors equivalent", t.Name, t.DType)
		}
		if t.Name == MetadataKey {
			return nil, fmt.Errorf("tensor name %q is reserved for metadata", t.Name)
		}
		want, err := t.DType.ShapeByteSize(t.Shape)
		if err != nil {
			return nil, fmt.Errorf("tensor %q: %w", t.Name, err)
		}
		if want != t.Size {
			return nil, fmt.Errorf("tensor %q: %s %v needs %d bytes, not %d", t.Name, t.DType, t.Shape, want, t.Size)
		}
		sorted[i] = ranked{t, alignRank[t.DType]}
		headerSize += len(t.Name) + 72 + 8*len(t.Shape) // quoted name, members, offsets of up to 12 digits
	}
	for k, v := range metadata {
		headerSize += len(k) + len(v) + 6
	}
	byRankThenName := func(a, b ranked) int {
		if a.rank != b.rank {
			return cmp.Compare(b.rank, a.rank)
		}
		return strings.Compare(a.Name, b.Name)
	}
	if !slices.IsSortedFunc(sorted, byRankThenName) { // a safetensors source lists them so already
		slices.SortStableFunc(sorted, byRankThenName)
	}
	l := &Layout{Tensors: make([]Entry, len(sorted)), byName: make(map[string]int, len(sorted))}
	var off uint64
	for i, t := range sorted {
		if _, dup := l.byName[t.Name]; dup {
			return nil, fmt.Errorf("tensor %q appears twice", t.Name)
		}
		end, carry := bits.Add64(off, t.Size, 0)
		if carry != 0 {
			return nil, fmt.Errorf("total data size overflows 64 bits")
		}
		l.Tensors[i] = Entry{Name: t.Name, DType: t.DType, Shape: t.Shape, Begin: off, End: end}
		l.byName[t.Name] = i
		off = end
	}
	l.DataSize = off

	// The prefix: the header's length, then the header, built in place.
	js := make([]byte, 8, 8+headerSize+8)
	js = append(js, '{')
	first := true
	if metadata != nil {
		keys := slices.Sorted(maps.Keys(metadata))
		js = appendJSONString(js, MetadataKey)
		js = append(js, ":{"...)
		for i, k := range keys {
			if i > 0 {
				js = append(js, ',')
			}
			js = appendJSONString(js, k)
			js = append(js, ':')
			js = appendJSONString(js, metadata[k])
		}
		js = append(js, '}')
		first = false
	}
	for _, e := range l.Tensors {
		if !first {
			js = append(js, ',')
		}
		first = false
		info, _ := e.DType.Info()
		js = appendJSONString(js, e.Name)
		js = append(js, `:{"dtype":`...)
		js = appendJSONString(js, info.Safetensors)
		js = append(js, `,"shape":[`...)
		for i, d := range e.Shape {
			if i > 0 {
				js = append(js, ',')
			}
			js = strconv.AppendUint(js, d, 10)
		}
		js = append(js, `],"data_offsets":[`...)
		js = strconv.AppendUint(js, e.Begin, 10)
		js = append(js, ',')
		js = strconv.AppendUint(js, e.End, 10)
		js = append(js, "]}"...)
	}
	js = append(js, '}')
	for (len(js)-8)%8 != 0 {
		js = append(js, ' ')
	}
	if n := len(js) - 8; n > MaxHeaderSize {
		return nil, fmt.Errorf("header of %d bytes is over the %d-byte limit readers accept", n, MaxHeaderSize)
	}
	binary.LittleEndian.PutUint64(js, uint64(len(js)-8))
	l.Prefix = js
	return l, nil
}

// appendJSONString appends s quoted and escaped as serde_json escapes it:
// quote, backslash and control characters only; everything else, non-ASCII
// included, stays as it is.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	plain := 0 // s[:plain] needs no escape, found eight bytes at a time
	for plain+8 <= len(s) && !mayEndString(binary.LittleEndian.Uint64([]byte(s[plain:plain+8]))) {
		plain += 8
	}
	b = append(b, s[:plain]...)
	for i := plain; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"':
			b = append(b, `\"`...)
		case '\\':
			b = append(b, `\\`...)
		case '\b':
			b = append(b, `\b`...)
		case '\f':
			b = append(b, `\f`...)
		case '\n':
			b = append(b, `\n`...)
		case '\r':
			b = append(b, `\r`...)
		case '\t':
			b = append(b, `\t`...)
		default:
			if c < 0x20 {
				b = append(b, `\u00`...)
				b = append(b, hex[c>>4], hex[c&0xf])
			} else {
				b = append(b, c)
			}
		}
	}
	return append(b, '"')
}
