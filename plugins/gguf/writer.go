package gguf

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/sluice-ml/sluice/sdk/binio"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// TensorSpec is one tensor to be written: its name, dtype and row-major shape.
type TensorSpec struct {
	Name  string
	DType tensor.DType
	Shape []uint64
}

// Layout is the planned byte layout of one GGUF file: the encoded header
// (zero-padded up to the data section) and where each tensor goes.
type Layout struct {
	// Header holds the encoded header. The zero padding up to DataOffset
	// is not included: a writer leaves those bytes zero.
	Header []byte
	// Alignment is the data alignment the file uses.
	Alignment uint64
	// DataOffset is len(Header) rounded up to Alignment.
	DataOffset uint64
	// Offsets are absolute file offsets of each tensor, in spec order.
	Offsets []uint64
	// Sizes are the unpadded byte sizes of each tensor.
	Sizes []uint64
	// FileSize is DataOffset plus every tensor's size padded to Alignment,
	// the last one included.
	FileSize uint64
}

// ValidAlignment reports whether a is an alignment ggml accepts: a non-zero
// power of two that fits in a u32.
func ValidAlignment(a uint64) bool { return a != 0 && a&(a-1) == 0 && a <= math.MaxUint32 }

// PlanFile lays out a GGUF v3 file as ggml's writer does: the metadata in
// order, the tensor infos in order with contiguous offsets, zero padding to
// alignment after the header and after every tensor, the last one included.
//
// It refuses what ggml's reader would refuse: tensor names longer than 63
// bytes, duplicate or empty names, more than 4 dimensions, rows that are not
// a whole number of blocks, dtypes without a ggml type, nested arrays,
// general.alignment that is not a u32 equal to alignment. The error names the
// tensor or key.
func PlanFile(md *tensor.Metadata, tensors []TensorSpec, alignment uint64) (*Layout, error) {
	if !ValidAlignment(alignment) {
		return nil, fmt.Errorf("alignment %d is not a power of two between 1 and 2^31", alignment)
	}
	if v, ok := md.Get(KeyAlignment); ok {
		if a, _ := v.Uint(); v.Type() != tensor.TypeU32 || a != alignment {
			return nil, fmt.Errorf("metadata %s is %s %v but the file is aligned to %d; ggml needs a u32 equal to the alignment", KeyAlignment, v.Type(), v, alignment)
		}
	} else if alignment != DefaultAlignment {
		return nil, fmt.Errorf("alignment %d needs metadata %s = u32 %d, or ggml reads the file with alignment 32", alignment, KeyAlignment, alignment)
	}
	var b bytes.Buffer
	// Sized once: a vocabulary makes a header of megabytes, and growing a
	// buffer to it by doubling cost a conversion of a small model more than
	// half its time (allocations, copies and the collections they start).
	b.Grow(headerBound(md, tensors))
	w := encoder{&b}
	w.raw([]byte(Magic))
	w.u32(3)
	w.u64(uint64(len(tensors)))
	w.u64(uint64(md.Len()))
	var err error
	md.All(func(key string, v tensor.Value) bool {
		err = w.keyValue(key, v)
		return err == nil
	})
	if err != nil {
		return nil, err
	}
	l := &Layout{Alignment: alignment, Offsets: make([]uint64, len(tensors)), Sizes: make([]uint64, len(tensors))}
	seen := make(map[string]bool, len(tensors))
	rel := uint64(0)
	for i, t := range tensors {
		if t.Name == "" {
			return nil, fmt.Errorf("tensor %d has an empty name", i)
		}
		if len(t.Name) > MaxNameLen {
			return nil, fmt.Errorf("tensor %q: name is %d bytes; ggml accepts at most %d (GGML_MAX_NAME 64 with its NUL)", t.Name, len(t.Name), MaxNameLen)
		}
		if seen[t.Name] {
			return nil, fmt.Errorf("tensor %q appears twice", t.Name)
		}
		seen[t.Name] = true
		info, ok := t.DType.Info()
		if !ok || info.GGML == tensor.NoGGML {
			return nil, fmt.Errorf("tensor %q: dtype %s has no GGUF type", t.Name, t.DType)
		}
		ne := NeFromShape(t.Shape)
		if len(ne) > MaxDims {
			return nil, fmt.Errorf("tensor %q: shape %v has %d dimensions (after dropping leading 1s); GGUF allows at most %d", t.Name, t.Shape, len(ne), MaxDims)
		}
		size, err := t.DType.ShapeByteSize(t.Shape)
		if err != nil {
			return nil, fmt.Errorf("tensor %q: %w", t.Name, err)
		}
		if size > math.MaxInt64 {
			return nil, fmt.Errorf("tensor %q: %d bytes is too large", t.Name, size)
		}
		w.str(t.Name)
		w.u32(uint32(len(ne)))
		for _, d := range ne {
			w.u64(d)
		}
		w.u32(uint32(info.GGML))
		w.u64(rel)
		l.Offsets[i], l.Sizes[i] = rel, size
		padded, ok := binio.AlignUp(size, alignment)
		if !ok {
			return nil, fmt.Errorf("tensor %q: padded size overflows", t.Name)
		}
		if rel, ok = binio.AddOffsets(rel, padded); !ok {
			return nil, fmt.Errorf("tensor %q: file size overflows", t.Name)
		}
	}
	start, _ := binio.AlignUp(uint64(b.Len()), alignment)
	l.Header = b.Bytes()
	l.DataOffset = start
	for i := range l.Offsets {
		l.Offsets[i] += start
	}
	var ok bool
	if l.FileSize, ok = binio.AddOffsets(start, rel); !ok {
		return nil, fmt.Errorf("file size overflows")
	}
	return l, nil
}

type encoder struct{ b *bytes.Buffer }

func (e encoder) raw(p []byte) { e.b.Write(p) }
func (e encoder) u8(v uint8)   { e.b.WriteByte(v) }

// The integers are appended to the buffer's free space, not to a slice of
// their own: a header holds one for every tensor dimension and vocabulary
// token.
func (e encoder) u16(v uint16) { e.b.Write(binary.LittleEndian.AppendUint16(e.b.AvailableBuffer(), v)) }
func (e encoder) u32(v uint32) { e.b.Write(binary.LittleEndian.AppendUint32(e.b.AvailableBuffer(), v)) }
func (e encoder) u64(v uint64) { e.b.Write(binary.LittleEndian.AppendUint64(e.b.AvailableBuffer(), v)) }
func (e encoder) str(s string) { e.u64(uint64(len(s))); e.b.WriteString(s) }

func (e encoder) keyValue(key string, v tensor.Value) error {
	if key == "" {
		return fmt.Errorf("metadata has an empty key")
	}
	if !v.IsValid() || !v.Type().Valid() {
		return fmt.Errorf("metadata key %q has no valid value", key)
	}
	e.str(key)
	e.u32(uint32(v.Type()))
	if v.Type() != tensor.TypeArray {
		e.scalar(v)
		return nil
	}
	if v.Elem() == tensor.TypeArray {
		return fmt.Errorf("metadata key %q is an array of arrays; ggml's reader refuses nested arrays, so GGUF files Sluice writes cannot hold it", key)
	}
	e.u32(uint32(v.Elem()))
	e.u64(uint64(v.Len()))
	if layout, ok := v.PackedStrings(); ok {
		e.raw(layout)
		return nil
	}
	raw, _ := v.Raw()
	if v.Elem() == tensor.TypeBool {
		for _, c := range raw {
			e.u8(boolByte(c != 0))
		}
		return nil
	}
	e.raw(raw)
	return nil
}

// headerBound bounds the bytes PlanFile encodes: exact for the metadata,
// and counting every dimension of a tensor's shape, some of which the
// encoding drops (and one for a shape of none, which it writes as [1]).
func headerBound(md *tensor.Metadata, tensors []TensorSpec) int {
	n := len(Magic) + 4 + 8 + 8
	md.All(func(key string, v tensor.Value) bool {
		n += 8 + len(key) + 4 + valueLen(v)
		return true
	})
	for _, t := range tensors {
		n += 8 + len(t.Name) + 4 + 8*max(len(t.Shape), 1) + 4 + 8
	}
	return n
}

// valueLen is the length of v as keyValue encodes it after its type, for
// the values GGUF can hold.
func valueLen(v tensor.Value) int {
	if s, ok := v.Str(); ok {
		return 8 + len(s)
	}
	if v.Type() != tensor.TypeArray {
		return v.Type().Size()
	}
	if n, ok := v.PackedLen(); ok {
		return 4 + 8 + n
	}
	if raw, ok := v.Raw(); ok {
		return 4 + 8 + len(raw)
	}
	return 0 // an array of arrays, which keyValue refuses
}

func boolByte(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}

func (e encoder) scalar(v tensor.Value) {
	switch v.Type() {
	case tensor.TypeString:
		s, _ := v.Str()
		e.str(s)
	case tensor.TypeBool:
		b, _ := v.Bool()
		e.u8(boolByte(b))
	default:
		switch v.Type().Size() {
		case 1:
			e.u8(uint8(v.Bits()))
		case 2:
			e.u16(uint16(v.Bits()))
		case 4:
			e.u32(uint32(v.Bits()))
		case 8:
			e.u64(v.Bits())
		}
	}
}
