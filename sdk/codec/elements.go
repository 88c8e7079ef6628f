package codec

import (
	"encoding/binary"
	"math"

	"github.com/sluice-ml/sluice/sdk/tensor"
)

func init() {
	elem := func(dt tensor.DType, size int, dec func([]float32, []byte), enc func([]byte, []float32)) {
		register(dt, &format{blockSize: 1, blockBytes: size, decode: dec, encode: enc})
	}
	elem(tensor.F64, 8, decodeF64, encodeF64)
	elem(tensor.F32, 4, decodeF32, encodeF32)
	elem(tensor.F16, 2, decodeF16, encodeF16)
	elem(tensor.BF16, 2, decodeBF16, encodeBF16)
	elem(tensor.F8E4M3, 1, decodeE4M3, encodeE4M3)
	elem(tensor.F8E5M2, 1, decodeE5M2, encodeE5M2)
	elem(tensor.I8, 1, decodeI8, encodeI8)
	elem(tensor.I16, 2, decodeI16, encodeI16)
	elem(tensor.I32, 4, decodeI32, encodeI32)
	elem(tensor.I64, 8, decodeI64, encodeI64)
	elem(tensor.U8, 1, decodeU8, encodeU8)
	elem(tensor.U16, 2, decodeU16, encodeU16)
	elem(tensor.U32, 4, decodeU32, encodeU32)
	elem(tensor.U64, 8, decodeU64, encodeU64)
	elem(tensor.Bool, 1, decodeBool, encodeBool)
}

func decodeF32(dst []float32, src []byte) {
	src = src[:4*len(dst)]
	for i := range dst {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
	}
}

func encodeF32(dst []byte, src []float32) {
	dst = dst[:4*len(src)]
	for i, f := range src {
		binary.LittleEndian.PutUint32(dst[4*i:], math.Float32bits(f))
	}
}

// Float64ToFloat32 rounds f to the nearest float32, half to even (Go's
// conversion). A NaN keeps its sign and the top 22 bits of its payload and is
// quieted, on every platform.
func Float64ToFloat32(f float64) float32 {
	b := math.Float64bits(f)
	if b&0x7fffffffffffffff > 0x7ff0000000000000 {
		return math.Float32frombits(uint32(b>>32)&0x80000000 | 0x7fc00000 | uint32(b>>29)&0x3fffff)
	}
	return float32(f)
}

// Float32ToFloat64 widens f exactly. A NaN keeps its sign and payload and is
// quieted, on every platform.
func Float32ToFloat64(f float32) float64 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 {
		return math.Float64frombits(uint64(b&0x80000000)<<32 | 0x7ff8000000000000 | uint64(b&0x3fffff)<<29)
	}
	return float64(f)
}

func decodeF64(dst []float32, src []byte) {
	src = src[:8*len(dst)]
	for i := range dst {
		dst[i] = Float64ToFloat32(math.Float64frombits(binary.LittleEndian.Uint64(src[8*i:])))
	}
}

func encodeF64(dst []byte, src []float32) {
	dst = dst[:8*len(src)]
	for i, f := range src {
		binary.LittleEndian.PutUint64(dst[8*i:], math.Float64bits(Float32ToFloat64(f)))
	}
}

// Integers decode to the nearest float32 (half to even; exact up to 2^24) and
// encode from float32 by rounding half to even and saturating to the type's
// range; NaN encodes as 0. Bool decodes 0 to 0 and any other byte to 1, and
// encodes every nonzero float32, NaN included, as 1 (as C, NumPy and PyTorch
// cast to bool).

// roundSat rounds f half to even and clamps it to [lo, hi]; NaN gives 0. lo
// and hi must be exactly representable in float64 or be ±2^63-ish limits
// handled by the comparisons below.
func roundSat(f float32, lo, hi float64) float64 {
	if f != f {
		return 0
	}
	r := math.RoundToEven(float64(f))
	if r < lo {
		return lo
	}
	if r > hi {
		return hi
	}
	return r
}

func decodeI8(dst []float32, src []byte) {
	src = src[:len(dst)]
	for i, b := range src {
		dst[i] = float32(int8(b))
	}
}

func encodeI8(dst []byte, src []float32) {
	dst = dst[:len(src)]
	for i, f := range src {
		dst[i] = byte(int8(roundSat(f, math.MinInt8, math.MaxInt8)))
	}
}

func decodeU8(dst []float32, src []byte) {
	src = src[:len(dst)]
	for i, b := range src {
		dst[i] = float32(b)
	}
}

func encodeU8(dst []byte, src []float32) {
	dst = dst[:len(src)]
	for i, f := range src {
		dst[i] = byte(roundSat(f, 0, math.MaxUint8))
	}
}

func decodeI16(dst []float32, src []byte) {
	src = src[:2*len(dst)]
	for i := range dst {
		dst[i] = float32(int16(binary.LittleEndian.Uint16(src[2*i:])))
	}
}

func encodeI16(dst []byte, src []float32) {
	dst = dst[:2*len(src)]
	for i, f := range src {
		binary.LittleEndian.PutUint16(dst[2*i:], uint16(int16(roundSat(f, math.MinInt16, math.MaxInt16))))
	}
}

func decodeU16(dst []float32, src []byte) {
	src = src[:2*len(dst)]
	for i := range dst {
		dst[i] = float32(binary.LittleEndian.Uint16(src[2*i:]))
	}
}

func encodeU16(dst []byte, src []float32) {
	dst = dst[:2*len(src)]
	for i, f := range src {
		binary.LittleEndian.PutUint16(dst[2*i:], uint16(roundSat(f, 0, math.MaxUint16)))
	}
}

func decodeI32(dst []float32, src []byte) {
	src = src[:4*len(dst)]
	for i := range dst {
		dst[i] = float32(int32(binary.LittleEndian.Uint32(src[4*i:])))
	}
}

func encodeI32(dst []byte, src []float32) {
	dst = dst[:4*len(src)]
	for i, f := range src {
		binary.LittleEndian.PutUint32(dst[4*i:], uint32(int32(roundSat(f, math.MinInt32, math.MaxInt32))))
	}
}

func decodeU32(dst []float32, src []byte) {
	src = src[:4*len(dst)]
	for i := range dst {
		dst[i] = float32(binary.LittleEndian.Uint32(src[4*i:]))
	}
}

func encodeU32(dst []byte, src []float32) {
	dst = dst[:4*len(src)]
	for i, f := range src {
		binary.LittleEndian.PutUint32(dst[4*i:], uint32(roundSat(f, 0, math.MaxUint32)))
	}
}

func decodeI64(dst []float32, src []byte) {
	src = src[:8*len(dst)]
	for i := range dst {
		dst[i] = float32(int64(binary.LittleEndian.Uint64(src[8*i:])))
	}
}

// A float32 that rounds to an integer is itself an integer, so the int64 and
// uint64 limits can be compared as float64: anything ≥ 2^63 (or 2^64) is out
// of range.
func encodeI64(dst []byte, src []float32) {
	dst = dst[:8*len(src)]
	for i, f := range src {
		var v int64
		switch r := roundSat(f, math.MinInt64, 1<<63); {
		case r >= 1<<63:
			v = math.MaxInt64
		default:
			v = int64(r)
		}
		binary.LittleEndian.PutUint64(dst[8*i:], uint64(v))
	}
}

func decodeU64(dst []float32, src []byte) {
	src = src[:8*len(dst)]
	for i := range dst {
		dst[i] = float32(binary.LittleEndian.Uint64(src[8*i:]))
	}
}

func encodeU64(dst []byte, src []float32) {
	dst = dst[:8*len(src)]
	for i, f := range src {
		var v uint64
		switch r := roundSat(f, 0, 1<<64); {
		case r >= 1<<64:
			v = math.MaxUint64
		default:
			v = uint64(r)
		}
		binary.LittleEndian.PutUint64(dst[8*i:], v)
	}
}

func decodeBool(dst []float32, src []byte) {
	src = src[:len(dst)]
	for i, b := range src {
		if b != 0 {
			dst[i] = 1
		} else {
			dst[i] = 0
		}
	}
}

func encodeBool(dst []byte, src []float32) {
	dst = dst[:len(src)]
	for i, f := range src {
		if f != 0 {
			dst[i] = 1
		} else {
			dst[i] = 0
		}
	}
}
