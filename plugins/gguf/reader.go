package gguf

import (
	"fmt"
	"io"
	"math/bits"
	"os"
	"unicode/utf8"

	"github.com/sluice-ml/sluice/sdk/binio"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// preallocCap bounds the capacity reserved from a count read from a file
// before the elements it claims have been parsed.
const preallocCap = 4096

// Magic is the first four bytes of every GGUF file.
const Magic = "GGUF"

// DefaultAlignment is the alignment ggml uses when a file has no
// general.alignment key (GGUF_DEFAULT_ALIGNMENT).
const DefaultAlignment = 32

// KeyAlignment is the metadata key that overrides the data alignment.
const KeyAlignment = "general.alignment"

// Limits the reader enforces beyond the file's own size.
const (
	// MaxStringLen is ggml's cap on one string: 1 GiB.
	MaxStringLen = 1 << 30
	// MaxArrayLen is ggml's cap on the elements of one array.
	MaxArrayLen = 1 << 30
	// MaxArrayDepth caps the nesting of arrays of arrays (gguf-py writes
	// them; ggml refuses them). A flat array has depth 1.
	MaxArrayDepth = 8
	// MaxNestedItems caps the arrays one array of arrays holds: each costs
	// far more memory than its 12 bytes on disk.
	MaxNestedItems = 1 << 16
	// MaxDims is the most dimensions a GGUF tensor has (GGML_MAX_DIMS).
	MaxDims = 4
	// MaxNameLen is the longest tensor name ggml accepts: GGML_MAX_NAME (64)
	// less its terminating NUL. The reader accepts longer names (some ggml
	// builds raise the limit); the writer refuses them.
	MaxNameLen = 63
)

// File is the parsed header of one GGUF file: its metadata and tensor
// descriptions. Tensor data is not read; Tensor.Section hands out a reader for
// it, as debug/elf does for sections.
type File struct {
	// Name names the file in errors.
	Name string
	// Size is the file size in bytes.
	Size int64
	// Version is 2 or 3.
	Version uint32
	// Alignment is the data alignment: general.alignment, or 32.
	Alignment uint64
	// DataOffset is the absolute offset of the tensor data section.
	DataOffset uint64
	// Metadata holds every key/value pair in file order.
	Metadata tensor.Metadata
	// Tensors lists the tensor infos in file order.
	Tensors []Tensor

	r io.ReaderAt
}

// Tensor is one tensor info of a GGUF file.
type Tensor struct {
	Name string
	// Type is the ggml type id as stored.
	Type uint32
	// DType is the registry dtype of Type.
	DType tensor.DType
	// Ne holds the dimensions as stored: ne[0] is the fastest-varying one.
	Ne []uint64
	// Offset is relative to the start of the data section.
	Offset uint64
	// Size is the number of bytes of the tensor's data (unpadded).
	Size uint64
	// InfoOffset is the absolute offset of the tensor info, for errors.
	InfoOffset int64
}

// Shape returns the tensor's shape row-major, outermost first: ne reversed,
// with trailing 1-dims of ne dropped as ggml's writer drops them (ggml_n_dims),
// and at least one dimension. So a [256] tensor written by ggml and a
// [256, 1] one written by gguf-py both read as [256].
func (t *Tensor) Shape() []uint64 { return ShapeFromNe(t.Ne) }

// ShapeFromNe converts GGUF dims (fastest first) to the canonical row-major
// shape: trailing 1s of ne dropped, at least one dim, then reversed.
func ShapeFromNe(ne []uint64) []uint64 {
	n := len(ne)
	for n > 1 && ne[n-1] == 1 {
		n--
	}
	if n == 0 {
		return []uint64{1}
	}
	shape := make([]uint64, n)
	for i := 0; i < n; i++ {
		shape[i] = ne[n-1-i]
	}
	return shape
}

// NeFromShape converts a row-major shape to the GGUF dims ggml's writer
// stores: reversed, trailing 1s dropped, at least one dim.
func NeFromShape(shape []uint64) []uint64 {
	ne := make([]uint64, len(shape))
	for i := range shape {
		ne[i] = shape[len(shape)-1-i]
	}
	n := len(ne)
	for n > 1 && ne[n-1] == 1 {
		n--
	}
	if n == 0 {
		return []uint64{1}
	}
	return ne[:n]
}

// AbsOffset returns the tensor's absolute offset in the file of f.
func (f *File) AbsOffset(t *Tensor) uint64 { return f.DataOffset + t.Offset }

// Section returns a reader over the tensor's data bytes.
func (f *File) Section(t *Tensor) *io.SectionReader {
	return io.NewSectionReader(f.r, int64(f.DataOffset+t.Offset), int64(t.Size))
}

// Tensor returns the tensor called name.
func (f *File) Tensor(name string) (*Tensor, bool) {
	for i := range f.Tensors {
		if f.Tensors[i].Name == name {
			return &f.Tensors[i], true
		}
	}
	return nil, false
}

// CheckPadding reports whether the file carries the zero padding ggml's
// writers put after the last tensor. ggml refuses to load data from a file
// without it, though every tensor's bytes may lie inside the file;
// llama.cpp's memory-mapping loader accepts it. NewFile does not call it.
func (f *File) CheckPadding() error {
	if len(f.Tensors) == 0 {
		return nil
	}
	last := &f.Tensors[len(f.Tensors)-1]
	padded, ok := binio.AlignUp(last.Size, f.Alignment)
	if !ok {
		return binio.Errorf(f.Name, -1, "tensor %q: padded size overflows", last.Name)
	}
	end := f.DataOffset + last.Offset + padded
	if end > uint64(f.Size) {
		return &binio.FormatError{File: f.Name, Offset: f.Size, Tensor: last.Name,
			Msg: fmt.Sprintf("the file ends %d bytes before the padding after the last tensor ends at %d (ggml refuses to load its data)", end-uint64(f.Size), end)}
	}
	return nil
}

// OpenFile opens and parses the header of the GGUF file at path. The caller
// closes the returned *os.File after it is done with the File's sections.
func OpenFile(path string) (*File, *os.File, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	st, err := fh.Stat()
	if err != nil {
		fh.Close()
		return nil, nil, err
	}
	f, err := NewFile(fh, st.Size(), path)
	if err != nil {
		fh.Close()
		return nil, nil, err
	}
	return f, fh, nil
}

// NewFile parses the header of a GGUF file of size bytes read through r.
// It reads the header only. It refuses what ggml's reader refuses, with two
// differences: arrays of arrays are read (as llama.cpp's Python reader reads
// them, up to MaxArrayDepth), and tensor data that runs past the end of the
// file is refused (ggml's header-only parse does not check it). Tensor names
// longer than ggml's 63 bytes are accepted.
func NewFile(r io.ReaderAt, size int64, name string) (*File, error) {
	br := binio.NewReader(r, size, name)
	br.MaxAlloc = MaxStringLen
	f := &File{Name: name, Size: size, r: r, Alignment: DefaultAlignment}
	p := &parser{r: br, f: f}
	if err := p.header(); err != nil {
		return nil, err
	}
	return f, nil
}

type parser struct {
	r *binio.Reader
	f *File
}

func (p *parser) header() error {
	r := p.r
	magic, err := r.U32("magic")
	if err != nil {
		return err
	}
	if magic != 0x46554747 {
		return r.ErrorAt(0, "not a GGUF file: magic is %q, want %q", le32(magic), Magic)
	}
	version, err := r.U32("version")
	if err != nil {
		return err
	}
	if err := checkVersion(version); err != nil {
		return r.ErrorAt(4, "%s", err)
	}
	p.f.Version = version
	nTensors, err := p.count("tensor count")
	if err != nil {
		return err
	}
	nKV, err := p.count("metadata key/value count")
	if err != nil {
		return err
	}
	// Each key/value needs at least a key length, a type and one byte.
	if err := r.CheckLength(nKV, 8+4+1, "metadata key/value count"); err != nil {
		return err
	}
	for i := uint64(0); i < nKV; i++ {
		if err := p.keyValue(i); err != nil {
			return err
		}
	}
	if err := p.alignment(); err != nil {
		return err
	}
	// Each tensor info needs a name length, n_dims, a type and an offset.
	if err := r.CheckLength(nTensors, 8+4+4+8, "tensor count"); err != nil {
		return err
	}
	// Capacity grows with what is parsed: a count is only a claim, and a
	// Tensor takes more memory than its minimum 24 bytes on disk.
	p.f.Tensors = make([]Tensor, 0, min(nTensors, preallocCap))
	seen := make(map[string]bool, min(nTensors, preallocCap))
	for i := uint64(0); i < nTensors; i++ {
		t, err := p.tensorInfo(i)
		if err != nil {
			return err
		}
		if seen[t.Name] {
			return &binio.FormatError{File: p.f.Name, Offset: t.InfoOffset, Tensor: t.Name, Msg: "tensor name appears twice"}
		}
		seen[t.Name] = true
		p.f.Tensors = append(p.f.Tensors, t)
	}
	return p.data()
}

// checkVersion applies ggml's version rules.
func checkVersion(v uint32) error {
	switch {
	case v == 2 || v == 3:
		return nil
	case v != 0 && v&0xFFFF == 0:
		return fmt.Errorf("byte-swapped (big-endian) GGUF: the version field reads 0x%08x, i.e. version %d big-endian; only little-endian files are supported", v, bits.ReverseBytes32(v))
	case v == 1:
		return fmt.Errorf("GGUF version 1 is not supported (it used 32-bit lengths); versions 2 and 3 are")
	default:
		return fmt.Errorf("GGUF version %d is not supported; versions 2 and 3 are", v)
	}
}

func le32(v uint32) string {
	return string([]byte{byte(v), byte(v >> 8), byte(v >> 16), byte(v >> 24)})
}

// count reads a u64 count that ggml reads as a non-negative int64.
func (p *parser) count(what string) (uint64, error) {
	off := p.r.Offset()
	n, err := p.r.U64(what)
	if err != nil {
		return 0, err
	}
	if int64(n) < 0 {
		return 0, p.r.ErrorAt(off, "%s %d is negative as ggml reads it (int64)", what, int64(n))
	}
	return n, nil
}

func (p *parser) str(what string) (string, error) {
	n, err := p.r.U64(what + " length")
	if err != nil {
		return "", err
	}
	return p.r.String(n, what)
}

func (p *parser) keyValue(i uint64) error {
	r := p.r
	off := r.Offset()
	key, err := p.str(fmt.Sprintf("key of metadata entry %d", i))
	if err != nil {
		return err
	}
	if key == "" {
		return r.ErrorAt(off, "metadata entry %d has an empty key", i)
	}
	if !utf8.ValidString(key) {
		return r.ErrorAt(off, "the key of metadata entry %d, %q, is not valid UTF-8 (GGUF strings are UTF-8)", i, key)
	}
	if _, dup := p.f.Metadata.Get(key); dup {
		return r.ErrorAt(off, "metadata key %q appears twice", key)
	}
	typOff := r.Offset()
	typ, err := r.U32(fmt.Sprintf("type of key %q", key))
	if err != nil {
		return err
	}
	vt := tensor.ValueType(typ)
	if !vt.Valid() {
		return r.ErrorAt(typOff, "key %q has invalid GGUF value type %d (valid: 0..12)", key, typ)
	}
	var v tensor.Value
	if vt == tensor.TypeArray {
		elemOff := r.Offset()
		elem, err := r.U32(fmt.Sprintf("element type of key %q", key))
		if err != nil {
			return err
		}
		v, err = p.array(key, tensor.ValueType(elem), elemOff, 1)
		if err != nil {
			return err
		}
	} else {
		v, err = p.scalar(key, vt)
		if err != nil {
			return err
		}
	}
	p.f.Metadata.Set(key, v)
	return nil
}

func (p *parser) scalar(key string, vt tensor.ValueType) (tensor.Value, error) {
	r := p.r
	what := fmt.Sprintf("value of key %q", key)
	if vt == tensor.TypeString {
		s, err := p.str(what)
		if err != nil {
			return tensor.Value{}, err
		}
		return tensor.StringValue(s), nil
	}
	var bits uint64
	var err error
	switch vt.Size() {
	case 1:
		var b uint8
		b, err = r.U8(what)
		bits = uint64(b)
	case 2:
		var b uint16
		b, err = r.U16(what)
		bits = uint64(b)
	case 4:
		var b uint32
		b, err = r.U32(what)
		bits = uint64(b)
	case 8:
		bits, err = r.U64(what)
	}
	if err != nil {
		return tensor.Value{}, err
	}
	return tensor.Scalar(vt, bits)
}

// array reads an array's count and elements; its element type has been read.
// Nested arrays follow gguf-py's layout: each inner array is an element type,
// a count and the elements, with no ARRAY tag of its own.
func (p *parser) array(key string, elem tensor.ValueType, elemOff int64, depth int) (tensor.Value, error) {
	r := p.r
	if !elem.Valid() {
		return tensor.Value{}, r.ErrorAt(elemOff, "key %q: array has invalid element type %d (valid: 0..12)", key, uint32(elem))
	}
	countOff := r.Offset()
	n, err := r.U64(fmt.Sprintf("element count of key %q", key))
	if err != nil {
		return tensor.Value{}, err
	}
	if n > MaxArrayLen {
		return tensor.Value{}, r.ErrorAt(countOff, "key %q: array of %d elements is over the limit of %d", key, n, MaxArrayLen)
	}
	what := fmt.Sprintf("array of key %q", key)
	switch elem {
	case tensor.TypeString:
		return p.stringArray(key, n)
	case tensor.TypeArray:
		if depth >= MaxArrayDepth {
			return tensor.Value{}, r.ErrorAt(elemOff, "key %q: arrays nested deeper than %d levels", key, MaxArrayDepth)
		}
		if n > MaxNestedItems {
			return tensor.Value{}, r.ErrorAt(countOff, "key %q: array of %d arrays is over the limit of %d", key, n, MaxNestedItems)
		}
		if err := r.CheckLength(n, 4+8, what); err != nil {
			return tensor.Value{}, err
		}
		items := make([]tensor.Value, 0, min(n, preallocCap))
		for i := uint64(0); i < n; i++ {
			innerOff := r.Offset()
			inner, err := r.U32(fmt.Sprintf("element type of item %d of key %q", i, key))
			if err != nil {
				return tensor.Value{}, err
			}
			item, err := p.array(key, tensor.ValueType(inner), innerOff, depth+1)
			if err != nil {
				return tensor.Value{}, err
			}
			items = append(items, item)
		}
		return tensor.NestedArray(items)
	}
	size := uint64(elem.Size())
	if err := r.CheckLength(n, size, what); err != nil {
		return tensor.Value{}, err
	}
	raw, err := r.View(n*size, what)
	if err != nil {
		return tensor.Value{}, err
	}
	return tensor.ArrayValue(elem, raw)
}

// stringArray reads n strings. A first pass walks the lengths without
// allocating; then the whole array is taken at once, as a view of the file
// where the reader maps it (binio.Reader.View), and kept in GGUF's own layout
// (tensor.PackedStringArray). A vocabulary of 150,000 tokens so costs no
// copy and no string headers until a consumer asks for them.
func (p *parser) stringArray(key string, n uint64) (tensor.Value, error) {
	r := p.r
	what := fmt.Sprintf("string array of key %q", key)
	if err := r.CheckLength(n, 8, what); err != nil {
		return tensor.Value{}, err
	}
	start := r.Offset()
	for i := uint64(0); i < n; i++ {
		l, err := r.U64(what)
		if err != nil {
			return tensor.Value{}, err
		}
		if l > MaxStringLen {
			return tensor.Value{}, r.Errorf("element %d of %s: length %d is over the limit of %d bytes", i, what, l, MaxStringLen)
		}
		if l > uint64(r.Remaining()) {
			return tensor.Value{}, r.Errorf("element %d of %s: length %d passes the end of the file (%d bytes left)", i, what, l, r.Remaining())
		}
		if err := r.Skip(l, what); err != nil {
			return tensor.Value{}, err
		}
	}
	end := r.Offset()
	if err := r.SeekTo(start); err != nil {
		return tensor.Value{}, err
	}
	layout, err := r.View(uint64(end-start), what)
	if err != nil {
		return tensor.Value{}, err
	}
	v, err := tensor.PackedStringArray(layout, int(n))
	if err != nil {
		// The lengths were checked above: the file changed under the reader.
		return tensor.Value{}, r.ErrorAt(start, "%s: %v (did the file change while it was read?)", what, err)
	}
	return v, nil
}

func (p *parser) alignment() error {
	v, ok := p.f.Metadata.Get(KeyAlignment)
	if !ok {
		return nil
	}
	if v.Type() != tensor.TypeU32 {
		return binio.Errorf(p.f.Name, -1, "%s must be a u32, not %s (ggml refuses the file)", KeyAlignment, v.Type())
	}
	a, _ := v.Uint()
	if a == 0 || a&(a-1) != 0 {
		return binio.Errorf(p.f.Name, -1, "%s is %d; it must be a non-zero power of two", KeyAlignment, a)
	}
	p.f.Alignment = a
	return nil
}

func (p *parser) tensorInfo(i uint64) (Tensor, error) {
	r := p.r
	t := Tensor{InfoOffset: r.Offset()}
	name, err := p.str(fmt.Sprintf("name of tensor %d", i))
	if err != nil {
		return t, err
	}
	if name == "" {
		return t, r.ErrorAt(t.InfoOffset, "tensor %d has an empty name", i)
	}
	if !utf8.ValidString(name) {
		return t, r.ErrorAt(t.InfoOffset, "the name of tensor %d, %q, is not valid UTF-8 (GGUF strings are UTF-8)", i, name)
	}
	t.Name = name
	fail := func(off int64, format string, args ...any) (Tensor, error) {
		return t, &binio.FormatError{File: p.f.Name, Offset: off, Tensor: name, Msg: fmt.Sprintf(format, args...)}
	}
	dimsOff := r.Offset()
	nDims, err := r.U32("dimension count of tensor " + name)
	if err != nil {
		return t, err
	}
	if nDims > MaxDims {
		return fail(dimsOff, "%d dimensions; GGUF allows at most %d", nDims, MaxDims)
	}
	t.Ne = make([]uint64, nDims)
	for d := range t.Ne {
		off := r.Offset()
		ne, err := r.U64("dimension of tensor " + name)
		if err != nil {
			return t, err
		}
		if int64(ne) < 0 {
			return fail(off, "dimension %d is negative (%d)", d, int64(ne))
		}
		t.Ne[d] = ne
	}
	// ggml's overflow rule: the element count must fit in int64.
	n := uint64(1)
	for _, ne := range t.Ne {
		hi, lo := bits.Mul64(n, ne)
		if hi != 0 || int64(lo) < 0 {
			return fail(dimsOff, "element count of dims %v overflows", t.Ne)
		}
		n = lo
	}
	typOff := r.Offset()
	typ, err := r.U32("type of tensor " + name)
	if err != nil {
		return t, err
	}
	dt, err := tensor.FromGGML(typ)
	if err != nil {
		return fail(typOff, "%s", err)
	}
	t.Type, t.DType = typ, dt
	info, _ := dt.Info()
	ne0 := uint64(1)
	if len(t.Ne) > 0 {
		ne0 = t.Ne[0]
	}
	if ne0%info.BlockSize != 0 {
		return fail(dimsOff, "row length ne[0]=%d is not a multiple of the %s block size %d", ne0, dt, info.BlockSize)
	}
	size, err := dt.ByteSize(n)
	if err != nil || int64(size) < 0 {
		return fail(dimsOff, "byte size of %s %v overflows", dt, t.Ne)
	}
	t.Size = size
	t.Offset, err = r.U64("data offset of tensor " + name)
	if err != nil {
		return t, err
	}
	return t, nil
}

// data checks the offsets as ggml does (contiguous, in info order, each
// tensor padded to the alignment) and that all tensor data lies in the file.
func (p *parser) data() error {
	r := p.r
	f := p.f
	start, ok := binio.AlignUp(uint64(r.Offset()), f.Alignment)
	if !ok {
		return r.Errorf("data section offset overflows")
	}
	f.DataOffset = start
	if len(f.Tensors) == 0 {
		return nil
	}
	if start > uint64(f.Size) {
		return r.Errorf("the data section would start at %d, past the end of the %d-byte file", start, f.Size)
	}
	want := uint64(0)
	for i := range f.Tensors {
		t := &f.Tensors[i]
		if t.Offset != want {
			return &binio.FormatError{File: f.Name, Offset: t.InfoOffset, Tensor: t.Name,
				Msg: fmt.Sprintf("data offset is %d, expected %d (tensors must be contiguous, in info order, each padded to %d bytes)", t.Offset, want, f.Alignment)}
		}
		end, ok := binio.AddOffsets(start+t.Offset, t.Size)
		if !ok || end > uint64(f.Size) {
			return &binio.FormatError{File: f.Name, Offset: int64(min(start+t.Offset, uint64(f.Size))), Tensor: t.Name,
				Msg: fmt.Sprintf("data [%d, %d) runs past the end of the %d-byte file (truncated?)", start+t.Offset, start+t.Offset+t.Size, f.Size)}
		}
		padded, ok := binio.AlignUp(t.Size, f.Alignment)
		if !ok {
			return &binio.FormatError{File: f.Name, Offset: t.InfoOffset, Tensor: t.Name, Msg: "padded size overflows"}
		}
		want, ok = binio.AddOffsets(want, padded)
		if !ok {
			return &binio.FormatError{File: f.Name, Offset: t.InfoOffset, Tensor: t.Name, Msg: "data offsets overflow"}
		}
	}
	return nil
}
