package codec

// QTensors are the compressed tensors of the apsim checkpoint format: low-bit
// codes plus float32 scales, one scale per tensor, per slice along a chosen
// axis, or per block of consecutive elements of a row. docs/formats/apsim.md
// is the byte-level specification this file implements.

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"

	"github.com/sluice-ml/sluice/sdk/tensor"
)

// QTensor dtypes, registered in the tensor registry as tensor.KindQTensor.
const (
	QTInt8    tensor.DType = "qt_int8"     // signed 8-bit integers, codes −127…127
	QTInt4    tensor.DType = "qt_int4"     // signed 4-bit integers, codes −7…7, two per byte
	QTFP8E4M3 tensor.DType = "qt_fp8_e4m3" // float8 e4m3fn, |code| ≤ 448
	QTFP8E5M2 tensor.DType = "qt_fp8_e5m2" // float8 e5m2, |code| ≤ 57344
	QTFP6     tensor.DType = "qt_fp6"      // float6 e3m2 (OCP MX), |code| ≤ 28, four per three bytes
	QTFP4     tensor.DType = "qt_fp4"      // float4 e2m1 (OCP MX), |code| ≤ 6, two per byte
	QTBF16    tensor.DType = "qt_bf16"     // bfloat16 codes, |code| ≤ 1
)

// Attribute keys of a QTensor's TensorInfo. The logical shape is the
// TensorInfo's Shape; at most one of the two keys is set. Without either the
// tensor has one scale.
const (
	// AttrQAxis holds the axis (decimal, 0-based, outermost first) along
	// which scales vary: one scale per index of that axis.
	AttrQAxis = "qtensor.axis"
	// AttrQBlock holds the block size (decimal, ≥ 1): one scale per run of
	// that many consecutive elements of a row (the innermost dimension); the
	// last block of a row may be shorter.
	AttrQBlock = "qtensor.block"
)

// QFormat describes one QTensor format.
type QFormat struct {
	// DType is the registry name ("qt_int8").
	DType tensor.DType
	// Name is the format's name in apsim files ("int8", "fp8_e4m3").
	Name string
	// Bits is the width of one code.
	Bits int
	// QMax is the largest code magnitude: the scale of a group is its
	// largest magnitude divided by QMax.
	QMax float32
	// CodeDType is the safetensors dtype the codes are stored as in an apsim
	// file: the element type itself when codes are whole bytes (i8, f8_e4m3,
	// f8_e5m2, bf16), u8 for packed codes.
	CodeDType tensor.DType
	// Packing names how codes are laid out: "none" (one element per code
	// unit, little-endian) or "lsb-rows" (codes packed least significant bit
	// first, each row starting on a fresh byte).
	Packing string

	encode func(v float32) uint32 // finite v to a code, rounding to nearest even, saturating
	decode func(c uint32) float32 // a code to its value (any code: never panics)
}

// Packing names.
const (
	PackingNone    = "none"
	PackingLSBRows = "lsb-rows"
)

var qformats = map[tensor.DType]*QFormat{}

func init() {
	fp6 := minifloat{ebits: 3, mbits: 2, bias: 3}
	fp4 := minifloat{ebits: 2, mbits: 1, bias: 1}
	fp6.init()
	fp4.init()
	for _, f := range []*QFormat{
		{DType: QTInt8, Name: "int8", Bits: 8, QMax: 127, CodeDType: tensor.I8, Packing: PackingNone,
			encode: intEncoder(127), decode: func(c uint32) float32 { return float32(int8(c)) }},
		{DType: QTInt4, Name: "int4", Bits: 4, QMax: 7, CodeDType: tensor.U8, Packing: PackingLSBRows,
			encode: intEncoder(7), decode: func(c uint32) float32 { return float32(int8(c<<4) >> 4) }},
		{DType: QTFP8E4M3, Name: "fp8_e4m3", Bits: 8, QMax: 448, CodeDType: tensor.F8E4M3, Packing: PackingNone,
			encode: func(v float32) uint32 { return uint32(Float32ToE4M3Sat(v)) },
			decode: func(c uint32) float32 { return E4M3ToFloat32(uint8(c)) }},
		{DType: QTFP8E5M2, Name: "fp8_e5m2", Bits: 8, QMax: 57344, CodeDType: tensor.F8E5M2, Packing: PackingNone,
			encode: func(v float32) uint32 { return uint32(Float32ToE5M2Sat(v)) },
			decode: func(c uint32) float32 { return E5M2ToFloat32(uint8(c)) }},
		{DType: QTFP6, Name: "fp6", Bits: 6, QMax: fp6.max, CodeDType: tensor.U8, Packing: PackingLSBRows,
			encode: fp6.encode, decode: fp6.decode},
		{DType: QTFP4, Name: "fp4", Bits: 4, QMax: fp4.max, CodeDType: tensor.U8, Packing: PackingLSBRows,
			encode: fp4.encode, decode: fp4.decode},
		{DType: QTBF16, Name: "bf16", Bits: 16, QMax: 1, CodeDType: tensor.BF16, Packing: PackingNone,
			encode: func(v float32) uint32 { return uint32(Float32ToBFloat16(v)) },
			decode: func(c uint32) float32 { return BFloat16ToFloat32(uint16(c)) }},
	} {
		tensor.RegisterQTensor(tensor.Info{Name: f.DType, Kind: tensor.KindQTensor})
		qformats[f.DType] = f
	}
}

// IsQTensor reports whether dt is a QTensor dtype.
func IsQTensor(dt tensor.DType) bool { return qformats[dt] != nil }

// QFormatOf returns the format of a QTensor dtype.
func QFormatOf(dt tensor.DType) (*QFormat, bool) {
	f, ok := qformats[dt]
	return f, ok
}

// QTensorDTypes lists the QTensor dtypes in a fixed order.
func QTensorDTypes() []tensor.DType {
	return []tensor.DType{QTInt8, QTInt4, QTFP8E4M3, QTFP8E5M2, QTFP6, QTFP4, QTBF16}
}

// ParseQFormat finds a QTensor format by its dtype name ("qt_int8"), its
// apsim name ("int8", "fp8_e4m3") or a short name: "fp8" is fp8_e4m3,
// "fp6_e3m2" and "fp4_e2m1" spell out fp6 and fp4. Case is ignored. Note that
// "bf16" here means the scaled QTensor format, not a plain cast.
func ParseQFormat(name string) (*QFormat, error) {
	n := strings.ToLower(name)
	switch n {
	case "fp8":
		n = "fp8_e4m3"
	case "fp6_e3m2":
		n = "fp6"
	case "fp4_e2m1":
		n = "fp4"
	}
	n = strings.TrimPrefix(n, "qt_")
	for _, f := range qformats {
		if f.Name == n {
			return f, nil
		}
	}
	return nil, fmt.Errorf("unknown QTensor format %q (known: int8, int4, fp8 = fp8_e4m3, fp8_e5m2, fp6 = fp6_e3m2, fp4 = fp4_e2m1, bf16)", name)
}

// QScaling chooses where a QTensor's scales vary.
type QScaling struct {
	// PerAxis gives one scale per index of Axis (negative counts from the
	// end, as in NumPy).
	PerAxis bool
	Axis    int
	// Block, when non-zero, gives one scale per Block consecutive elements
	// of each row (the innermost dimension). It excludes PerAxis.
	Block uint64
}

// QTensor is the validated geometry of one QTensor: its format, logical
// shape and scale layout, and from them the sizes of its parts. It is
// immutable; build it with NewQTensor or QTensorOf.
//
// The bytes of a QTensor as they flow between stages are its scales (float32
// little-endian, row-major over ScaleShape) followed by its codes (CodesSize
// bytes, row-major over the logical shape; see QFormat.Packing).
type QTensor struct {
	format *QFormat
	shape  []uint64
	axis   int    // -1 when not per-axis
	block  uint64 // 0 when not per-block

	rows, rowLen, rowBytes uint64
	codesSize              uint64
	scaleShape             []uint64
	scaleCount             uint64
	size                   uint64
}

// NewQTensor validates the geometry of a QTensor of format dt with the given
// logical shape and scaling, checking every size for overflow.
func NewQTensor(dt tensor.DType, shape []uint64, s QScaling) (*QTensor, error) {
	f, ok := qformats[dt]
	if !ok {
		return nil, fmt.Errorf("codec: %q is not a QTensor dtype", dt)
	}
	q := &QTensor{format: f, shape: append([]uint64{}, shape...), axis: -1}
	rank := len(shape)
	switch {
	case s.PerAxis && s.Block != 0:
		return nil, fmt.Errorf("codec: %s: scales per axis and per block exclude each other", dt)
	case s.PerAxis:
		a := s.Axis
		if a < 0 {
			a += rank
		}
		if a < 0 || a >= rank {
			return nil, fmt.Errorf("codec: %s %v: scale axis %d is out of range for %d dimensions", dt, shape, s.Axis, rank)
		}
		q.axis = a
	case s.Block != 0:
		if rank == 0 {
			return nil, fmt.Errorf("codec: %s: a scalar has no rows to split into blocks", dt)
		}
		q.block = s.Block
	}
	if _, err := tensor.ElementCount(shape); err != nil {
		return nil, fmt.Errorf("codec: %s: %w", dt, err)
	}
	q.rows, q.rowLen = 1, 1
	if rank > 0 {
		q.rowLen = shape[rank-1]
		q.rows, _ = tensor.ElementCount(shape[:rank-1])
	}
	hi, rowBits := bits.Mul64(q.rowLen, uint64(f.Bits))
	if hi != 0 {
		return nil, fmt.Errorf("codec: %s %v: row size overflows 64 bits", dt, shape)
	}
	q.rowBytes = rowBits/8 + boolU64(rowBits%8 != 0)
	hi, q.codesSize = bits.Mul64(q.rows, q.rowBytes)
	if hi != 0 {
		return nil, fmt.Errorf("codec: %s %v: byte size overflows 64 bits", dt, shape)
	}
	switch {
	case q.axis >= 0:
		q.scaleShape = make([]uint64, rank)
		for i := range q.scaleShape {
			q.scaleShape[i] = 1
		}
		q.scaleShape[q.axis] = shape[q.axis]
	case q.block != 0:
		q.scaleShape = append([]uint64{}, shape...)
		q.scaleShape[rank-1] = q.rowLen/q.block + boolU64(q.rowLen%q.block != 0)
	default:
		q.scaleShape = []uint64{}
	}
	q.scaleCount, _ = tensor.ElementCount(q.scaleShape) // never more than the elements (or 1)
	hi, scaleBytes := bits.Mul64(q.scaleCount, 4)
	var carry uint64
	q.size, carry = bits.Add64(scaleBytes, q.codesSize, 0)
	if hi != 0 || carry != 0 {
		return nil, fmt.Errorf("codec: %s %v: byte size overflows 64 bits", dt, shape)
	}
	return q, nil
}

func boolU64(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// QTensorOf reads the geometry of a QTensor from its TensorInfo: the dtype,
// the logical shape (Shape) and the scaling attributes (AttrQAxis,
// AttrQBlock). It does not check Size; see QTensorSize.
func QTensorOf(info *tensor.TensorInfo) (*QTensor, error) {
	s, err := scalingOf(info)
	if err != nil {
		return nil, err
	}
	q, err := NewQTensor(info.DType, info.Shape, s)
	if err != nil {
		return nil, fmt.Errorf("tensor %q: %w", info.Name, err)
	}
	return q, nil
}

func scalingOf(info *tensor.TensorInfo) (QScaling, error) {
	var s QScaling
	axis, hasAxis := info.Attrs[AttrQAxis]
	block, hasBlock := info.Attrs[AttrQBlock]
	if hasAxis && hasBlock {
		return s, fmt.Errorf("tensor %q: attributes %s and %s exclude each other", info.Name, AttrQAxis, AttrQBlock)
	}
	if hasAxis {
		a, err := parseCanonicalUint(axis)
		if err != nil || a > math.MaxInt32 {
			return s, fmt.Errorf("tensor %q: attribute %s = %q is not an axis number", info.Name, AttrQAxis, axis)
		}
		s.PerAxis, s.Axis = true, int(a)
	}
	if hasBlock {
		b, err := parseCanonicalUint(block)
		if err != nil || b == 0 {
			return s, fmt.Errorf("tensor %q: attribute %s = %q is not a positive block size", info.Name, AttrQBlock, block)
		}
		s.Block = b
	}
	return s, nil
}

// parseCanonicalUint parses a decimal number written without sign, spaces or
// leading zeros.
func parseCanonicalUint(s string) (uint64, error) {
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, err
	}
	if strconv.FormatUint(v, 10) != s {
		return 0, fmt.Errorf("%q is not written canonically", s)
	}
	return v, nil
}

// QTensorSize returns the number of bytes a QTensor described by info
// occupies as it flows (scales then codes), computed from its dtype, shape
// and attributes.
func QTensorSize(info *tensor.TensorInfo) (uint64, error) {
	q, err := QTensorOf(info)
	if err != nil {
		return 0, err
	}
	return q.Size(), nil
}

// CheckQTensor verifies that info describes a valid QTensor whose Size
// agrees with its geometry.
func CheckQTensor(info *tensor.TensorInfo) error {
	q, err := QTensorOf(info)
	if err != nil {
		return err
	}
	if q.Size() != info.Size {
		return fmt.Errorf("tensor %q: %s %v needs %d bytes, size says %d", info.Name, info.DType, info.Shape, q.Size(), info.Size)
	}
	return nil
}

// Format returns the QTensor's format.
func (q *QTensor) Format() *QFormat { return q.format }

// DType returns the QTensor's dtype.
func (q *QTensor) DType() tensor.DType { return q.format.DType }

// Shape returns the logical shape (do not modify it).
func (q *QTensor) Shape() []uint64 { return q.shape }

// Elements returns the number of logical elements.
func (q *QTensor) Elements() uint64 { return q.rows * q.rowLen }

// Scaling returns how the scales vary.
func (q *QTensor) Scaling() QScaling {
	return QScaling{PerAxis: q.axis >= 0, Axis: max(q.axis, 0), Block: q.block}
}

// Axis returns the scale axis, or -1 when scales are not per axis.
func (q *QTensor) Axis() int { return q.axis }

// Block returns the block size, or 0 when scales are not per block.
func (q *QTensor) Block() uint64 { return q.block }

// ScaleShape returns the shape of the scales (do not modify it): [] for one
// scale; the logical shape with every dimension but the axis set to 1 for
// scales per axis; the logical shape with the row length replaced by the
// number of blocks per row for scales per block.
func (q *QTensor) ScaleShape() []uint64 { return q.scaleShape }

// ScaleCount returns the number of scales.
func (q *QTensor) ScaleCount() uint64 { return q.scaleCount }

// ScaleSize returns the bytes of the scales (4 per scale).
func (q *QTensor) ScaleSize() uint64 { return 4 * q.scaleCount }

// CodesShape returns the shape of the codes as stored in an apsim file: the
// logical shape for unpacked formats; for packed formats the logical shape
// with the row length replaced by the bytes per row ([1] for a scalar).
func (q *QTensor) CodesShape() []uint64 {
	if q.format.Packing == PackingNone {
		return append([]uint64{}, q.shape...)
	}
	if len(q.shape) == 0 {
		return []uint64{q.rowBytes}
	}
	s := append([]uint64{}, q.shape...)
	s[len(s)-1] = q.rowBytes
	return s
}

// CodesSize returns the bytes of the codes.
func (q *QTensor) CodesSize() uint64 { return q.codesSize }

// Size returns the bytes of the whole QTensor: ScaleSize + CodesSize.
func (q *QTensor) Size() uint64 { return q.size }

// SetAttrs records the scaling in info's attributes (and removes a stale
// scaling attribute), and sets its dtype, shape and size.
func (q *QTensor) SetAttrs(info *tensor.TensorInfo) {
	info.DType = q.format.DType
	info.Shape = append([]uint64{}, q.shape...)
	info.Size = q.size
	delete(info.Attrs, AttrQAxis)
	delete(info.Attrs, AttrQBlock)
	switch {
	case q.axis >= 0:
		info.SetAttr(AttrQAxis, strconv.Itoa(q.axis))
	case q.block != 0:
		info.SetAttr(AttrQBlock, strconv.FormatUint(q.block, 10))
	}
}

// Encode quantizes src (the logical elements, row-major) into a new buffer
// of Size bytes.
func (q *QTensor) Encode(src []float32) ([]byte, error) {
	dst := make([]byte, q.size)
	if err := q.EncodeInto(dst, src); err != nil {
		return nil, err
	}
	return dst, nil
}

// segments calls fn for each run of row r's columns [c0, c1) that share
// scale g.
func (q *QTensor) segments(r uint64, fn func(c0, c1, g uint64)) {
	switch {
	case q.axis >= 0 && q.axis == len(q.shape)-1:
		for c := uint64(0); c < q.rowLen; c++ {
			fn(c, c+1, c)
		}
	case q.axis >= 0:
		// The axis lies outside the row: the whole row shares one scale.
		rowsPerIndex := uint64(1)
		for _, d := range q.shape[q.axis+1 : len(q.shape)-1] {
			rowsPerIndex *= d
		}
		fn(0, q.rowLen, r/rowsPerIndex%q.shape[q.axis])
	case q.block != 0:
		nb := q.scaleShape[len(q.scaleShape)-1]
		for b := uint64(0); b < nb; b++ {
			fn(b*q.block, min((b+1)*q.block, q.rowLen), r*nb+b)
		}
	default:
		fn(0, q.rowLen, 0)
	}
}

// EncodeInto quantizes src into dst, which must hold exactly Size bytes.
//
// Each group of elements sharing a scale gets scale s = fl32(amax / QMax),
// where amax is the group's largest magnitude (s becomes 2⁻¹⁴⁹, the smallest
// float32, when that division underflows to zero for a non-zero amax). Each
// element x becomes the code nearest to fl32(x / s), ties to even, clamped
// to ±QMax (x itself when s is 0). Every element must be finite. The result
// is the same on every platform.
func (q *QTensor) EncodeInto(dst []byte, src []float32) error {
	if uint64(len(src)) != q.Elements() {
		return fmt.Errorf("codec: encode %s %v: %d elements, got %d", q.format.DType, q.shape, q.Elements(), len(src))
	}
	if uint64(len(dst)) != q.size {
		return fmt.Errorf("codec: encode %s %v: needs %d bytes, got %d", q.format.DType, q.shape, q.size, len(dst))
	}
	for i, x := range src {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return fmt.Errorf("codec: encode %s: element %d is %v; a QTensor holds finite values only", q.format.DType, i, x)
		}
	}
	scales := make([]float32, q.scaleCount) // the groups' amax, then their scales
	for r := uint64(0); r < q.rows; r++ {
		row := src[r*q.rowLen : (r+1)*q.rowLen]
		q.segments(r, func(c0, c1, g uint64) {
			m := scales[g]
			for _, x := range row[c0:c1] {
				if a := float32(math.Abs(float64(x))); a > m {
					m = a
				}
			}
			scales[g] = m
		})
	}
	for g, a := range scales {
		s := float32(a / q.format.QMax)
		if s == 0 && a != 0 {
			s = math.Float32frombits(1)
		}
		scales[g] = s
		binary.LittleEndian.PutUint32(dst[4*g:], math.Float32bits(s))
	}
	codes := dst[4*q.scaleCount:]
	f := q.format
	tmp := make([]uint32, q.rowLen)
	for r := uint64(0); r < q.rows; r++ {
		row := src[r*q.rowLen : (r+1)*q.rowLen]
		q.segments(r, func(c0, c1, g uint64) {
			s := scales[g]
			out := tmp[c0:c1]
			if s == 0 {
				for i, x := range row[c0:c1] {
					out[i] = f.encode(x)
				}
				return
			}
			if f.DType == QTInt8 || f.DType == QTInt4 {
				// The integer rule, inlined: round half to even, clamp.
				qm := float64(f.QMax)
				for i, x := range row[c0:c1] {
					v := math.RoundToEven(float64(float32(x / s)))
					if v > qm {
						v = qm
					} else if v < -qm {
						v = -qm
					}
					out[i] = uint32(int32(v))
				}
				return
			}
			for i, x := range row[c0:c1] {
				out[i] = f.encode(float32(x / s))
			}
		})
		packRow(codes[r*q.rowBytes:(r+1)*q.rowBytes], f.Bits, tmp)
	}
	return nil
}

// Decode dequantizes a QTensor's bytes (scales then codes, Size bytes) into
// dst, which must hold exactly its logical elements: each element is
// fl32(value(code) × scale). Any bytes decode without error; NaN codes and
// scales give NaN.
func (q *QTensor) Decode(dst []float32, src []byte) error {
	if uint64(len(dst)) != q.Elements() {
		return fmt.Errorf("codec: decode %s %v: %d elements, got %d", q.format.DType, q.shape, q.Elements(), len(dst))
	}
	if uint64(len(src)) != q.size {
		return fmt.Errorf("codec: decode %s %v: needs %d bytes, got %d", q.format.DType, q.shape, q.size, len(src))
	}
	scales := make([]float32, q.scaleCount)
	for g := range scales {
		scales[g] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*g:]))
		if math.IsNaN(float64(scales[g])) || math.IsInf(float64(scales[g]), 0) {
			return &ScaleError{DType: q.format.DType, Block: g, Value: scales[g]}
		}
	}
	codes := src[4*q.scaleCount:]
	f := q.format
	var table []float32
	if f.Bits <= 8 {
		table = make([]float32, 1<<f.Bits)
		for c := range table {
			table[c] = f.decode(uint32(c))
		}
	}
	tmp := make([]uint32, q.rowLen)
	for r := uint64(0); r < q.rows; r++ {
		unpackRow(tmp, f.Bits, codes[r*q.rowBytes:(r+1)*q.rowBytes])
		out := dst[r*q.rowLen : (r+1)*q.rowLen]
		q.segments(r, func(c0, c1, g uint64) {
			s := scales[g]
			if table != nil {
				for c := c0; c < c1; c++ {
					out[c] = float32(table[tmp[c]] * s)
				}
				return
			}
			for c := c0; c < c1; c++ {
				out[c] = float32(f.decode(tmp[c]) * s)
			}
		})
	}
	return nil
}

// packRow stores a row of codes of the given width.
func packRow(row []byte, width int, codes []uint32) {
	switch width {
	case 8:
		for i, c := range codes {
			row[i] = byte(c)
		}
	case 16:
		for i, c := range codes {
			binary.LittleEndian.PutUint16(row[2*i:], uint16(c))
		}
	case 4:
		clear(row)
		for i, c := range codes {
			row[i>>1] |= byte(c&0xf) << (4 * (i & 1))
		}
	default:
		clear(row)
		for i, c := range codes {
			putCode(row, width, uint64(i), c)
		}
	}
}

// unpackRow loads a row of codes of the given width.
func unpackRow(codes []uint32, width int, row []byte) {
	switch width {
	case 8:
		for i := range codes {
			codes[i] = uint32(row[i])
		}
	case 16:
		for i := range codes {
			codes[i] = uint32(binary.LittleEndian.Uint16(row[2*i:]))
		}
	case 4:
		for i := range codes {
			codes[i] = uint32(row[i>>1]>>(4*(i&1))) & 0xf
		}
	default:
		for i := range codes {
			codes[i] = getCode(row, width, uint64(i))
		}
	}
}

// putCode ORs code c (width < 8 bits) into a row, least significant bit
// first.
func putCode(row []byte, width int, c uint64, code uint32) {
	p := c * uint64(width)
	b, sh := p>>3, p&7
	code &= 1<<width - 1
	row[b] |= byte(code << sh)
	if sh+uint64(width) > 8 {
		row[b+1] |= byte(code >> (8 - sh))
	}
}

// getCode loads code c (width < 8 bits) of a row.
func getCode(row []byte, width int, c uint64) uint32 {
	p := c * uint64(width)
	b, sh := p>>3, p&7
	v := uint32(row[b]) >> sh
	if sh+uint64(width) > 8 {
		v |= uint32(row[b+1]) << (8 - sh)
	}
	return v & (1<<width - 1)
}

// EncodeQTensor quantizes src (the logical elements, row-major) into dst as
// the QTensor info describes (dtype, Shape, AttrQAxis/AttrQBlock). dst must
// hold exactly QTensorSize(info) bytes.
func EncodeQTensor(info *tensor.TensorInfo, dst []byte, src []float32) error {
	q, err := QTensorOf(info)
	if err != nil {
		return err
	}
	if err := q.EncodeInto(dst, src); err != nil {
		return fmt.Errorf("tensor %q: %w", info.Name, err)
	}
	return nil
}

// DecodeQTensor dequantizes the bytes of the QTensor info describes into dst,
// which must hold exactly its logical element count (the product of Shape).
// This is the QTensor counterpart of DecodeFloat32, which cannot decode
// QTensor dtypes since their layout depends on the shape and attributes.
func DecodeQTensor(info *tensor.TensorInfo, dst []float32, src []byte) error {
	q, err := QTensorOf(info)
	if err != nil {
		return err
	}
	if err := q.Decode(dst, src); err != nil {
		return fmt.Errorf("tensor %q: %w", info.Name, err)
	}
	return nil
}

// intEncoder rounds v to the nearest integer, ties to even, clamped to ±qmax,
// as a two's-complement code.
func intEncoder(qmax float32) func(v float32) uint32 {
	return func(v float32) uint32 {
		r := math.RoundToEven(float64(v))
		r = math.Max(-float64(qmax), math.Min(float64(qmax), r))
		return uint32(int32(r))
	}
}

// minifloat is a small float format without infinities or NaN (OCP MX FP6
// e3m2 and FP4 e2m1): a sign bit, ebits exponent bits with the given bias,
// mbits mantissa bits; exponent field 0 holds subnormals.
type minifloat struct {
	ebits, mbits, bias int
	max                float32
	values             []float32 // value of every code
}

func (m *minifloat) init() {
	n := 1 << (1 + m.ebits + m.mbits)
	m.values = make([]float32, n)
	for c := range n {
		sign := c >> (m.ebits + m.mbits)
		e := (c >> m.mbits) & (1<<m.ebits - 1)
		man := c & (1<<m.mbits - 1)
		var v float64
		if e == 0 {
			v = math.Ldexp(float64(man), 1-m.bias-m.mbits)
		} else {
			v = math.Ldexp(float64(man|1<<m.mbits), e-m.bias-m.mbits)
		}
		if sign != 0 {
			v = -v
		}
		m.values[c] = float32(v)
	}
	m.max = m.values[n/2-1]
}

func (m *minifloat) decode(c uint32) float32 { return m.values[c&uint32(len(m.values)-1)] }

// encode returns the code nearest to the finite value v, ties to even,
// saturating at ±max; the sign of zero is kept.
func (m *minifloat) encode(v float32) uint32 {
	var sign uint32
	if math.Signbit(float64(v)) {
		sign = 1 << (m.ebits + m.mbits)
	}
	a := math.Abs(float64(v))
	if a >= float64(m.max) {
		return sign | uint32(len(m.values)/2-1)
	}
	if a == 0 {
		return sign
	}
	_, e := math.Frexp(a) // a = f × 2^e, f in [0.5, 1)
	exp := max(e-1, 1-m.bias)
	quantum := math.Ldexp(1, exp-m.mbits) // spacing of codes in a's binade
	k := uint32(math.RoundToEven(a / quantum))
	// k·quantum is the rounded magnitude; k < 2^mbits only for subnormals,
	// and k = 2^(mbits+1) when rounding carried into the next binade.
	if k == 1<<(m.mbits+1) {
		exp++
		k >>= 1
	}
	if k < 1<<m.mbits {
		return sign | k
	}
	return sign | uint32(exp+m.bias)<<m.mbits | (k - 1<<m.mbits)
}
