package npz

import (
	"encoding/binary"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/sluice-ml/sluice/sdk/binio"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// The .npy format (numpy.lib.format): the magic "\x93NUMPY", a major and a
// minor version byte, the header length (uint16 little endian in version 1,
// uint32 in versions 2 and 3), then the header: the text of a Python dict
// literal with the keys 'descr' (a dtype string such as '<f4'),
// 'fortran_order' and 'shape' (a tuple of integers), padded with spaces and
// a final newline so that the data starts at a multiple of 64 bytes. The
// array's bytes follow, in C order unless fortran_order is True.

var npyMagic = []byte("\x93NUMPY")

// maxHeaderLen bounds an .npy header. NumPy writes headers of about a
// hundred bytes and, since 1.24, refuses to read ones over 10,000 by
// default.
const maxHeaderLen = 64 << 10

// maxDims bounds the rank of an array.
const maxDims = 64

// npyHeader is a parsed .npy header.
type npyHeader struct {
	dtype tensor.DType
	shape []uint64
	// dataOffset is where the array's bytes start, from the start of the
	// .npy data.
	dataOffset int64
	// size is the array's byte size.
	size uint64
}

// descrs maps NumPy's little-endian (or byte-order-free) dtype strings to
// Sluice dtypes.
var descrs = map[string]tensor.DType{
	"|b1": tensor.Bool,
	"|i1": tensor.I8, "<i2": tensor.I16, "<i4": tensor.I32, "<i8": tensor.I64,
	"|u1": tensor.U8, "<u2": tensor.U16, "<u4": tensor.U32, "<u8": tensor.U64,
	"<f2": tensor.F16, "<f4": tensor.F32, "<f8": tensor.F64,
}

// descrOf is the inverse of descrs.
func descrOf(d tensor.DType) (string, bool) {
	for k, v := range descrs {
		if v == d {
			return k, true
		}
	}
	return "", false
}

// readHeader parses the .npy header at the start of r, which holds an entry
// of size bytes. file and entry name the data in errors.
func readHeader(r io.ReaderAt, size int64, file, entry string) (*npyHeader, error) {
	br := binio.NewReader(r, size, file)
	fail := func(off int64, format string, args ...any) error {
		return &binio.FormatError{File: file, Offset: off, Tensor: entry, Msg: fmt.Sprintf(format, args...)}
	}
	magic, err := br.Bytes(6, "the .npy magic")
	if err != nil {
		return nil, err
	}
	if string(magic) != string(npyMagic) {
		return nil, fail(0, "not an .npy array: the magic is %q, want \\x93NUMPY", magic)
	}
	major, err := br.U8("the .npy major version")
	if err != nil {
		return nil, err
	}
	minor, err := br.U8("the .npy minor version")
	if err != nil {
		return nil, err
	}
	var hlen uint64
	switch major {
	case 1:
		n, err := br.U16("the .npy header length")
		if err != nil {
			return nil, err
		}
		hlen = uint64(n)
	case 2, 3:
		n, err := br.U32("the .npy header length")
		if err != nil {
			return nil, err
		}
		hlen = uint64(n)
	default:
		return nil, fail(6, ".npy version %d.%d is not supported (1.0, 2.0 and 3.0 are)", major, minor)
	}
	start := br.Offset()
	if hlen > maxHeaderLen {
		return nil, fail(8, "header of %d bytes is longer than %d", hlen, maxHeaderLen)
	}
	text, err := br.Bytes(hlen, "the .npy header")
	if err != nil {
		return nil, err
	}
	h, perr := parseHeaderText(string(text))
	if perr != nil {
		return nil, fail(start, "header %q: %v", abbreviate(string(text)), perr)
	}
	h.dataOffset = start + int64(hlen)
	if want := uint64(size - h.dataOffset); h.size != want {
		return nil, fail(h.dataOffset, "a %s array of shape %v holds %d bytes, but the entry has %d after its header", h.dtype, h.shape, h.size, want)
	}
	return h, nil
}

func abbreviate(s string) string {
	if len(s) > 120 {
		return s[:120] + "…"
	}
	return s
}

// parseHeaderText parses the dict literal of an .npy header.
func parseHeaderText(s string) (*npyHeader, error) {
	p := &literal{s: strings.TrimRight(s, " \n\x00")}
	vals, err := p.dict()
	if err != nil {
		return nil, err
	}
	h := &npyHeader{}
	descr, ok := vals["descr"].(string)
	if !ok {
		return nil, fmt.Errorf("'descr' is missing or not a string")
	}
	if len(descr) == 3 && descr[0] == '=' {
		descr = "<" + descr[1:] // native order; Sluice runs on little-endian machines
	}
	if len(descr) == 3 && descr[0] == '<' && descr[2] == '1' {
		descr = "|" + descr[1:]
	}
	if h.dtype, ok = descrs[descr]; !ok {
		if strings.HasPrefix(descr, ">") {
			return nil, fmt.Errorf("dtype %q is big-endian; save the array with .astype('<%s')", descr, descr[1:])
		}
		return nil, fmt.Errorf("dtype %q is not supported (bool, signed and unsigned integers and f2/f4/f8 are)", descr)
	}
	fortran, ok := vals["fortran_order"].(bool)
	if !ok {
		return nil, fmt.Errorf("'fortran_order' is missing or not True/False")
	}
	shape, ok := vals["shape"].([]uint64)
	if !ok {
		return nil, fmt.Errorf("'shape' is missing or not a tuple of integers")
	}
	if fortran && countAbove1(shape) > 1 {
		return nil, fmt.Errorf("the array is stored in Fortran (column-major) order; save it with numpy.ascontiguousarray")
	}
	h.shape = shape
	size, err := h.dtype.ShapeByteSize(shape)
	if err != nil {
		return nil, err
	}
	h.size = size
	return h, nil
}

func countAbove1(shape []uint64) int {
	n := 0
	for _, d := range shape {
		if d > 1 {
			n++
		}
	}
	return n
}

// literal parses the subset of Python literals .npy headers use: a dict of
// quoted string keys to quoted strings, True/False, and tuples of
// non-negative integers.
type literal struct {
	s   string
	pos int
}

func (p *literal) space() {
	for p.pos < len(p.s) && (p.s[p.pos] == ' ' || p.s[p.pos] == '\t') {
		p.pos++
	}
}

func (p *literal) expect(c byte) error {
	p.space()
	if p.pos >= len(p.s) || p.s[p.pos] != c {
		return fmt.Errorf("expected %q at column %d", c, p.pos+1)
	}
	p.pos++
	return nil
}

func (p *literal) peek() byte {
	p.space()
	if p.pos >= len(p.s) {
		return 0
	}
	return p.s[p.pos]
}

func (p *literal) dict() (map[string]any, error) {
	if err := p.expect('{'); err != nil {
		return nil, err
	}
	out := map[string]any{}
	for {
		if p.peek() == '}' {
			p.pos++
			break
		}
		key, err := p.str()
		if err != nil {
			return nil, err
		}
		if err := p.expect(':'); err != nil {
			return nil, err
		}
		val, err := p.value()
		if err != nil {
			return nil, err
		}
		if _, dup := out[key]; dup {
			return nil, fmt.Errorf("key %q appears twice", key)
		}
		out[key] = val
		if p.peek() == ',' {
			p.pos++
			continue
		}
		if err := p.expect('}'); err != nil {
			return nil, err
		}
		break
	}
	if p.space(); p.pos != len(p.s) {
		return nil, fmt.Errorf("text after the dict at column %d", p.pos+1)
	}
	return out, nil
}

func (p *literal) str() (string, error) {
	q := p.peek()
	if q != '\'' && q != '"' {
		return "", fmt.Errorf("expected a quoted string at column %d", p.pos+1)
	}
	end := strings.IndexByte(p.s[p.pos+1:], q)
	if end < 0 {
		return "", fmt.Errorf("unterminated string at column %d", p.pos+1)
	}
	v := p.s[p.pos+1 : p.pos+1+end]
	if strings.ContainsAny(v, "\\\n") {
		return "", fmt.Errorf("escapes in strings are not supported (column %d)", p.pos+1)
	}
	p.pos += end + 2
	return v, nil
}

func (p *literal) value() (any, error) {
	switch c := p.peek(); {
	case c == '\'' || c == '"':
		return p.str()
	case c == '(':
		return p.tuple()
	case strings.HasPrefix(p.s[p.pos:], "True"):
		p.pos += 4
		return true, nil
	case strings.HasPrefix(p.s[p.pos:], "False"):
		p.pos += 5
		return false, nil
	}
	return nil, fmt.Errorf("unsupported value at column %d", p.pos+1)
}

func (p *literal) tuple() ([]uint64, error) {
	if err := p.expect('('); err != nil {
		return nil, err
	}
	out := []uint64{}
	for {
		if p.peek() == ')' {
			p.pos++
			return out, nil
		}
		start := p.pos
		for p.pos < len(p.s) && p.s[p.pos] >= '0' && p.s[p.pos] <= '9' {
			p.pos++
		}
		if start == p.pos {
			return nil, fmt.Errorf("expected a dimension at column %d", start+1)
		}
		n, err := strconv.ParseUint(p.s[start:p.pos], 10, 63)
		if err != nil {
			return nil, fmt.Errorf("dimension %q: %v", p.s[start:p.pos], err)
		}
		if p.peek() == 'L' { // Python 2's long suffix
			p.pos++
		}
		if len(out) == maxDims {
			return nil, fmt.Errorf("more than %d dimensions", maxDims)
		}
		out = append(out, n)
		switch p.peek() {
		case ',':
			p.pos++
		case ')':
			p.pos++
			return out, nil
		default:
			return nil, fmt.Errorf("expected ',' or ')' at column %d", p.pos+1)
		}
	}
}

// formatHeader returns the .npy header (magic to padding) for an array, as
// NumPy writes it: version 1.0 unless the header needs more than 65535
// bytes, padded so the data starts at a multiple of 64.
func formatHeader(d tensor.DType, shape []uint64) ([]byte, error) {
	descr, ok := descrOf(d)
	if !ok {
		return nil, fmt.Errorf("NumPy has no %s", d)
	}
	var dims []string
	for _, n := range shape {
		dims = append(dims, strconv.FormatUint(n, 10))
	}
	tuple := "(" + strings.Join(dims, ", ") + ")"
	if len(shape) == 1 {
		tuple = "(" + dims[0] + ",)"
	}
	dict := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr, tuple)
	for _, v := range []struct {
		major   byte
		lenSize int
	}{{1, 2}, {2, 4}} {
		pre := len(npyMagic) + 2 + v.lenSize
		total := pre + len(dict) + 1
		total = (total + 63) / 64 * 64
		hlen := total - pre
		if v.lenSize == 2 && hlen > 0xffff {
			continue
		}
		b := make([]byte, 0, total)
		b = append(b, npyMagic...)
		b = append(b, v.major, 0)
		if v.lenSize == 2 {
			b = binary.LittleEndian.AppendUint16(b, uint16(hlen))
		} else {
			b = binary.LittleEndian.AppendUint32(b, uint32(hlen))
		}
		b = append(b, dict...)
		for len(b) < total-1 {
			b = append(b, ' ')
		}
		return append(b, '\n'), nil
	}
	return nil, fmt.Errorf("shape %v makes an .npy header that is too long", shape)
}
