package tensor

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"iter"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unsafe"
)

// ValueType is the type of a metadata value. The numbering is GGUF's, so a
// GGUF reader or writer can use it unchanged.
type ValueType uint32

// Metadata value types, numbered as in GGUF.
const (
	TypeU8     ValueType = 0
	TypeI8     ValueType = 1
	TypeU16    ValueType = 2
	TypeI16    ValueType = 3
	TypeU32    ValueType = 4
	TypeI32    ValueType = 5
	TypeF32    ValueType = 6
	TypeBool   ValueType = 7
	TypeString ValueType = 8
	TypeArray  ValueType = 9
	TypeU64    ValueType = 10
	TypeI64    ValueType = 11
	TypeF64    ValueType = 12
)

var valueTypeNames = [...]string{"u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64", "f64"}

// Valid reports whether t is one of the 13 value types.
func (t ValueType) Valid() bool { return t <= TypeF64 }

func (t ValueType) String() string {
	if t.Valid() {
		return valueTypeNames[t]
	}
	return fmt.Sprintf("type(%d)", uint32(t))
}

// ParseValueType finds a value type by its name ("u32", "string", "array").
func ParseValueType(s string) (ValueType, error) {
	for i, n := range valueTypeNames {
		if n == s {
			return ValueType(i), nil
		}
	}
	return 0, fmt.Errorf("unknown metadata type %q (known: %s)", s, strings.Join(valueTypeNames[:], ", "))
}

// Size returns the bytes one element of a fixed-size type occupies, or 0 for
// string and array.
func (t ValueType) Size() int {
	switch t {
	case TypeU8, TypeI8, TypeBool:
		return 1
	case TypeU16, TypeI16:
		return 2
	case TypeU32, TypeI32, TypeF32:
		return 4
	case TypeU64, TypeI64, TypeF64:
		return 8
	}
	return 0
}

// Value is one typed metadata value: a scalar, a string, or an array. Numeric
// and bool arrays keep their elements packed little-endian, so a vocabulary of
// 150,000 scores costs one allocation. The zero Value is an invalid value.
type Value struct {
	typ   ValueType
	elem  ValueType // element type of an array
	valid bool
	bits  uint64   // scalar number or bool, as stored (floats by their IEEE bits)
	str   string   // string scalar
	strs  []string // array of strings
	// packed is an array of strings kept as GGUF stores them; strs is nil
	// when it is set.
	packed *packedStrings
	raw    []byte  // array of fixed-size elements, little-endian
	items  []Value // array of arrays
}

func scalar(t ValueType, bits uint64) Value { return Value{typ: t, valid: true, bits: bits} }

// U8Value returns a u8 value.
func U8Value(v uint8) Value { return scalar(TypeU8, uint64(v)) }

// I8Value returns an i8 value.
func I8Value(v int8) Value { return scalar(TypeI8, uint64(int64(v))) }

// U16Value returns a u16 value.
func U16Value(v uint16) Value { return scalar(TypeU16, uint64(v)) }

// I16Value returns an i16 value.
func I16Value(v int16) Value { return scalar(TypeI16, uint64(int64(v))) }

// U32Value returns a u32 value.
func U32Value(v uint32) Value { return scalar(TypeU32, uint64(v)) }

// I32Value returns an i32 value.
func I32Value(v int32) Value { return scalar(TypeI32, uint64(int64(v))) }

// U64Value returns a u64 value.
func U64Value(v uint64) Value { return scalar(TypeU64, v) }

// I64Value returns an i64 value.
func I64Value(v int64) Value { return scalar(TypeI64, uint64(v)) }

// F32Value returns an f32 value. The bits are kept exactly, NaN payloads included.
func F32Value(v float32) Value { return scalar(TypeF32, uint64(math.Float32bits(v))) }

// F64Value returns an f64 value. The bits are kept exactly.
func F64Value(v float64) Value { return scalar(TypeF64, math.Float64bits(v)) }

// BoolValue returns a bool value.
func BoolValue(v bool) Value {
	if v {
		return scalar(TypeBool, 1)
	}
	return scalar(TypeBool, 0)
}

// StringValue returns a string value.
func StringValue(s string) Value { return Value{typ: TypeString, valid: true, str: s} }

// Scalar builds a scalar of type t from its raw little-endian bits, as a file
// stores them. Bools keep the stored byte (any non-zero byte reads as true).
func Scalar(t ValueType, bits uint64) (Value, error) {
	if t.Size() == 0 {
		return Value{}, fmt.Errorf("metadata type %s is not a fixed-size scalar", t)
	}
	if t.Size() < 8 {
		bits &= 1<<(8*uint(t.Size())) - 1
	}
	switch t {
	case TypeI8:
		bits = uint64(int64(int8(bits)))
	case TypeI16:
		bits = uint64(int64(int16(bits)))
	case TypeI32:
		bits = uint64(int64(int32(bits)))
	}
	return scalar(t, bits), nil
}

// StringArray returns an array of strings. The slice is kept, not copied.
func StringArray(s []string) Value {
	return Value{typ: TypeArray, elem: TypeString, valid: true, strs: s}
}

// PackedStringArray returns an array of the n strings that layout holds as
// GGUF stores a string array: each string a little-endian u64 byte length
// followed by its bytes, back to back. It checks that layout holds exactly n
// strings. The slice is kept, not copied, and must never be modified: a
// reader can hand out a view of a mapped file, and a vocabulary of 150,000
// tokens then costs no copy and no 150,000 string headers until someone asks
// for them (StringSlice).
func PackedStringArray(layout []byte, n int) (Value, error) {
	if n < 0 {
		return Value{}, fmt.Errorf("packed string array: a count of %d strings", n)
	}
	pos := uint64(0)
	for i := range n {
		if uint64(len(layout))-pos < 8 {
			return Value{}, fmt.Errorf("packed string array: the layout ends in the length of element %d of %d", i, n)
		}
		l := binary.LittleEndian.Uint64(layout[pos:])
		pos += 8
		if l > uint64(len(layout))-pos {
			return Value{}, fmt.Errorf("packed string array: element %d of %d claims %d bytes, only %d are left", i, n, l, uint64(len(layout))-pos)
		}
		pos += l
	}
	if pos != uint64(len(layout)) {
		return Value{}, fmt.Errorf("packed string array: %d bytes are left after its %d elements", uint64(len(layout))-pos, n)
	}
	return Value{typ: TypeArray, elem: TypeString, valid: true, packed: &packedStrings{layout: layout, n: n}}, nil
}

// packedStrings is a string array in GGUF's layout. Its []string is built
// once, on the first call that needs one.
type packedStrings struct {
	layout []byte
	n      int
	once   sync.Once
	strs   []string
}

// all walks the lengths from the start, yielding each string; the strings
// share the layout, which is never modified.
func (p *packedStrings) all(yield func(int, string) bool) {
	pos := uint64(0)
	for i := range p.n {
		l := binary.LittleEndian.Uint64(p.layout[pos:])
		s := ""
		if l > 0 {
			s = unsafe.String(&p.layout[pos+8], int(l))
		}
		if !yield(i, s) {
			return
		}
		pos += 8 + l
	}
}

// at returns element i by walking the lengths from the start, for the first
// few elements, which is all a summary shows.
func (p *packedStrings) at(i int) (s string) {
	for j, e := range p.all {
		if j == i {
			s = e
			break
		}
	}
	return s
}

func (p *packedStrings) slice() []string {
	p.once.Do(func() {
		p.strs = make([]string, p.n)
		for i, s := range p.all {
			p.strs[i] = s
		}
	})
	return p.strs
}

// walkLimit is the last index that Index finds by walking a packed array's
// lengths; past it, Index builds the array's []string once.
const walkLimit = 64

// ArrayValue returns an array of fixed-size elements of type elem, packed
// little-endian in raw. The slice is kept, not copied.
func ArrayValue(elem ValueType, raw []byte) (Value, error) {
	size := elem.Size()
	if size == 0 {
		return Value{}, fmt.Errorf("metadata array of %s needs StringArray or NestedArray", elem)
	}
	if len(raw)%size != 0 {
		return Value{}, fmt.Errorf("metadata array of %s: %d bytes is not a whole number of elements", elem, len(raw))
	}
	return Value{typ: TypeArray, elem: elem, valid: true, raw: raw}, nil
}

// NestedArray returns an array of arrays (GGUF nested arrays, which gguf-py writes
// and ggml refuses). Every item must be an array.
func NestedArray(items []Value) (Value, error) {
	for i, it := range items {
		if it.typ != TypeArray {
			return Value{}, fmt.Errorf("nested metadata array: item %d is %s, not an array", i, it.typ)
		}
	}
	return Value{typ: TypeArray, elem: TypeArray, valid: true, items: items}, nil
}

// Int32Array returns an i32 array.
func Int32Array(v []int32) Value {
	raw := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(raw[4*i:], uint32(x))
	}
	return Value{typ: TypeArray, elem: TypeI32, valid: true, raw: raw}
}

// Float32Array returns an f32 array.
func Float32Array(v []float32) Value {
	raw := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(x))
	}
	return Value{typ: TypeArray, elem: TypeF32, valid: true, raw: raw}
}

// Type returns the value's type.
func (v Value) Type() ValueType { return v.typ }

// IsValid reports whether v holds a value (the zero Value does not).
func (v Value) IsValid() bool { return v.valid }

// Elem returns the element type of an array.
func (v Value) Elem() ValueType { return v.elem }

// Len returns the number of elements of an array, or 0 for a scalar.
func (v Value) Len() int {
	if v.typ != TypeArray {
		return 0
	}
	switch v.elem {
	case TypeString:
		if v.packed != nil {
			return v.packed.n
		}
		return len(v.strs)
	case TypeArray:
		return len(v.items)
	}
	return len(v.raw) / v.elem.Size()
}

// Bits returns the raw bits of a numeric or bool scalar: integers sign-extended
// to 64 bits, floats as their IEEE bits.
func (v Value) Bits() uint64 { return v.bits }

// Uint returns an unsigned or non-negative signed integer scalar.
func (v Value) Uint() (uint64, bool) {
	switch v.typ {
	case TypeU8, TypeU16, TypeU32, TypeU64:
		return v.bits, true
	case TypeI8, TypeI16, TypeI32, TypeI64:
		if int64(v.bits) >= 0 {
			return v.bits, true
		}
	}
	return 0, false
}

// Int returns an integer scalar that fits in int64.
func (v Value) Int() (int64, bool) {
	switch v.typ {
	case TypeI8, TypeI16, TypeI32, TypeI64:
		return int64(v.bits), true
	case TypeU8, TypeU16, TypeU32, TypeU64:
		if v.bits <= math.MaxInt64 {
			return int64(v.bits), true
		}
	}
	return 0, false
}

// Float returns a float scalar, or an integer scalar converted to float64.
func (v Value) Float() (float64, bool) {
	switch v.typ {
	case TypeF32:
		return float64(math.Float32frombits(uint32(v.bits))), true
	case TypeF64:
		return math.Float64frombits(v.bits), true
	}
	if i, ok := v.Int(); ok {
		return float64(i), true
	}
	if u, ok := v.Uint(); ok {
		return float64(u), true
	}
	return 0, false
}

// Bool returns a bool scalar (any non-zero stored byte is true).
func (v Value) Bool() (bool, bool) {
	if v.typ != TypeBool {
		return false, false
	}
	return v.bits != 0, true
}

// Str returns a string scalar.
func (v Value) Str() (string, bool) {
	if v.typ != TypeString {
		return "", false
	}
	return v.str, true
}

// StringSlice returns the elements of a string array. The slice is shared
// and must not be modified. An array made by PackedStringArray builds it on
// the first call.
func (v Value) StringSlice() ([]string, bool) {
	if v.typ != TypeArray || v.elem != TypeString {
		return nil, false
	}
	if v.packed != nil {
		return v.packed.slice(), true
	}
	return v.strs, true
}

// Strings iterates over the elements of a string array without building a
// []string: an array made by PackedStringArray is walked in place.
func (v Value) Strings() iter.Seq2[int, string] {
	return func(yield func(int, string) bool) {
		if v.typ != TypeArray || v.elem != TypeString {
			return
		}
		if v.packed != nil {
			v.packed.all(yield)
			return
		}
		for i, s := range v.strs {
			if !yield(i, s) {
				return
			}
		}
	}
}

// PackedStrings returns a string array in GGUF's layout (see
// PackedStringArray), ready to be written as one block. For an array made by
// PackedStringArray the slice is shared and must not be modified; otherwise
// it is built.
func (v Value) PackedStrings() ([]byte, bool) {
	if v.typ != TypeArray || v.elem != TypeString {
		return nil, false
	}
	if v.packed != nil {
		return v.packed.layout, true
	}
	size, _ := v.PackedLen()
	out := make([]byte, 0, size)
	for _, s := range v.strs {
		out = binary.LittleEndian.AppendUint64(out, uint64(len(s)))
		out = append(out, s...)
	}
	return out, true
}

// PackedLen returns the length of a string array in GGUF's layout (see
// PackedStringArray) without building it: 8 bytes and the bytes of each
// string.
func (v Value) PackedLen() (int, bool) {
	if v.typ != TypeArray || v.elem != TypeString {
		return 0, false
	}
	if v.packed != nil {
		return len(v.packed.layout), true
	}
	n := 8 * len(v.strs)
	for _, s := range v.strs {
		n += len(s)
	}
	return n, true
}

// Raw returns the packed little-endian elements of a fixed-size array. The
// slice is shared.
func (v Value) Raw() ([]byte, bool) {
	if v.typ != TypeArray || v.elem.Size() == 0 {
		return nil, false
	}
	return v.raw, true
}

// Items returns the arrays of an array of arrays. The slice is shared.
func (v Value) Items() ([]Value, bool) {
	if v.typ != TypeArray || v.elem != TypeArray {
		return nil, false
	}
	return v.items, true
}

// Index returns element i of an array as a Value.
func (v Value) Index(i int) Value {
	switch {
	case v.typ != TypeArray || i < 0 || i >= v.Len():
		return Value{}
	case v.elem == TypeString && v.packed != nil && i <= walkLimit:
		return StringValue(v.packed.at(i))
	case v.elem == TypeString:
		ss, _ := v.StringSlice()
		return StringValue(ss[i])
	case v.elem == TypeArray:
		return v.items[i]
	}
	size := v.elem.Size()
	var b [8]byte
	copy(b[:], v.raw[i*size:(i+1)*size])
	s, _ := Scalar(v.elem, binary.LittleEndian.Uint64(b[:]))
	return s
}

// Depth returns the nesting depth of arrays: 0 for a scalar, 1 for a flat array.
func (v Value) Depth() int {
	if v.typ != TypeArray {
		return 0
	}
	d := 0
	for _, it := range v.items {
		d = max(d, it.Depth())
	}
	return d + 1
}

// Equal reports whether v and w have the same type and bits (floats compare by
// their bits, so NaN equals the same NaN).
func (v Value) Equal(w Value) bool {
	if v.typ != w.typ || v.elem != w.elem || v.valid != w.valid {
		return false
	}
	switch {
	case v.typ == TypeString:
		return v.str == w.str
	case v.typ != TypeArray:
		return v.bits == w.bits
	case v.elem == TypeString:
		if v.packed != nil && w.packed != nil {
			// The layout is one-to-one with the strings.
			return v.packed.n == w.packed.n && bytes.Equal(v.packed.layout, w.packed.layout)
		}
		vs, _ := v.StringSlice()
		ws, _ := w.StringSlice()
		return slices.Equal(vs, ws)
	case v.elem == TypeArray:
		if len(v.items) != len(w.items) {
			return false
		}
		for i := range v.items {
			if !v.items[i].Equal(w.items[i]) {
				return false
			}
		}
		return true
	}
	return bytes.Equal(v.raw, w.raw)
}

// String renders the value for people: scalars as Go literals, arrays
// abbreviated after 8 elements.
func (v Value) String() string {
	if !v.valid {
		return "<invalid>"
	}
	switch v.typ {
	case TypeString:
		return strconv.Quote(v.str)
	case TypeBool:
		b, _ := v.Bool()
		return strconv.FormatBool(b)
	case TypeF32:
		f, _ := v.Float()
		return strconv.FormatFloat(f, 'g', -1, 32)
	case TypeF64:
		f, _ := v.Float()
		return strconv.FormatFloat(f, 'g', -1, 64)
	case TypeArray:
		var sb strings.Builder
		n := v.Len()
		fmt.Fprintf(&sb, "[%s × %d]{", v.elem, n)
		for i := 0; i < n && i < 8; i++ {
			if i > 0 {
				sb.WriteString(", ")
			}
			sb.WriteString(v.Index(i).String())
		}
		if n > 8 {
			sb.WriteString(", …")
		}
		sb.WriteString("}")
		return sb.String()
	}
	if i, ok := v.Int(); ok {
		return strconv.FormatInt(i, 10)
	}
	u, _ := v.Uint()
	return strconv.FormatUint(u, 10)
}
