package apr

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/x448/float16"
)

// EncodeQ8 quantizes values to Q8 exactly as aprender's writer does: one
// f32 scale max|x|/127 (1 when every value is zero; NaN is ignored), then
// q = round(x/scale) (halves away from zero) clamped to ±127, NaN as 0.
func EncodeQ8(values []float32) []byte {
	if len(values) == 0 {
		return nil
	}
	var maxAbs float32
	for _, v := range values {
		if a := float32(math.Abs(float64(v))); a > maxAbs {
			maxAbs = a
		}
	}
	scale := float32(1)
	if maxAbs != 0 {
		scale = maxAbs / 127
	}
	out := make([]byte, 4+len(values))
	binary.LittleEndian.PutUint32(out, math.Float32bits(scale))
	for i, v := range values {
		out[4+i] = uint8(int8(quantize(v/scale, -127, 127)))
	}
	return out
}

// DecodeQ8 dequantizes Q8 bytes holding n elements: q·scale.
func DecodeQ8(b []byte, n int) ([]float32, error) {
	if uint64(len(b)) != Q8Size(uint64(n)) {
		return nil, fmt.Errorf("apr_q8: %d elements need %d bytes, got %d", n, Q8Size(uint64(n)), len(b))
	}
	out := make([]float32, n)
	if n == 0 {
		return out, nil
	}
	scale := math.Float32frombits(binary.LittleEndian.Uint32(b))
	for i := range out {
		out[i] = float32(int8(b[4+i])) * scale
	}
	return out, nil
}

// EncodeQ4 quantizes values to Q4 exactly as aprender's writer does: for
// each block of 32 (the last one zero-padded), scale = max|x|/7 (1 for an
// all-zero block) stored as f16 (round to nearest even), q =
// round(x/scale) clamped to [-8, 7] using the f32 scale, stored as the
// nibble q+8; element 2i is the low nibble of byte i, 2i+1 the high one.
func EncodeQ4(values []float32) []byte {
	out := make([]byte, 0, Q4Size(uint64(len(values))))
	for start := 0; start < len(values); start += 32 {
		block := values[start:min(start+32, len(values))]
		var maxAbs float32
		for _, v := range block {
			if a := float32(math.Abs(float64(v))); a > maxAbs {
				maxAbs = a
			}
		}
		scale := float32(1)
		if maxAbs != 0 {
			scale = maxAbs / 7
		}
		out = binary.LittleEndian.AppendUint16(out, float16.Fromfloat32(scale).Bits())
		var packed [16]byte
		for i, v := range block {
			nibble := uint8(quantize(v/scale, -8, 7)+8) & 0x0f
			if i%2 == 0 {
				packed[i/2] = nibble
			} else {
				packed[i/2] |= nibble << 4
			}
		}
		out = append(out, packed[:]...)
	}
	return out
}

// DecodeQ4 dequantizes Q4 bytes holding n elements: (nibble-8)·scale, where
// a NaN, infinite or subnormal scale counts as zero, as aprender reads it.
func DecodeQ4(b []byte, n int) ([]float32, error) {
	if uint64(len(b)) != Q4Size(uint64(n)) {
		return nil, fmt.Errorf("apr_q4: %d elements need %d bytes, got %d", n, Q4Size(uint64(n)), len(b))
	}
	out := make([]float32, n)
	for i := range out {
		block := b[i/32*18:]
		h := float16.Frombits(binary.LittleEndian.Uint16(block))
		scale := h.Float32()
		if h.IsNaN() || h.IsInf(0) || (h.Bits()&0x7c00 == 0 && h.Bits()&0x03ff != 0) {
			scale = 0
		}
		j := i % 32
		nibble := block[2+j/2]
		if j%2 == 0 {
			nibble &= 0x0f
		} else {
			nibble >>= 4
		}
		out[i] = float32(int(nibble)-8) * scale
	}
	return out, nil
}

// quantize rounds x half away from zero and clamps it to [lo, hi]; NaN
// gives 0, as Rust's saturating float-to-int cast does.
func quantize(x float32, lo, hi float64) int {
	if x != x {
		return 0
	}
	r := math.Round(float64(x))
	return int(math.Max(lo, math.Min(hi, r)))
}
