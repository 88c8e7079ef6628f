package codec

import (
	"encoding/binary"
	"math"
)

// Helpers shared by the ggml block codecs.
//
// Bit-exactness rules (see docs/codecs.md): ggml's reference output comes from
// a baseline x86-64 build, so every float operation is a single IEEE float32
// operation with no fused multiply-add. Go may fuse x*y+z on some platforms,
// but not across an explicit conversion, so every product whose result is
// added or subtracted is written float32(x*y). Sums run in float32 in the
// order the C code uses.

// putF16 stores f as a little-endian binary16 (ggml's GGML_FP32_TO_FP16).
func putF16(b []byte, f float32) {
	binary.LittleEndian.PutUint16(b, Float32ToFloat16(f))
}

// getF16 loads a little-endian binary16 as float32 (GGML_FP16_TO_FP32).
func getF16(b []byte) float32 {
	return math.Float32frombits(f16Bits(binary.LittleEndian.Uint16(b)))
}

// nearestInt is ggml's nearest_int: it rounds half to even by adding
// 1.5·2^23 and reading the low mantissa bits. It is exact for |f| < 2^22;
// beyond that (and for NaN) it returns the same garbage the C code does.
func nearestInt(f float32) int32 {
	v := float32(f) + 12582912
	return int32(math.Float32bits(v)&0x7fffff) - 0x400000
}

// cvtt converts like x86-64's CVTTSS2SI with a 32-bit destination, which is
// what the reference build does for C float→int casts: truncate toward zero,
// and NaN or anything outside the int32 range gives math.MinInt32. Go leaves
// those cases to the platform, so they are spelled out here.
func cvtt(f float32) int32 {
	if f >= -2147483648 && f < 2147483648 {
		return int32(f)
	}
	return math.MinInt32
}

// roundf is C's roundf (half away from zero) followed by a cast to int as the
// reference build does it (see cvtt).
func roundf(f float32) int32 {
	if !(f > -4194304 && f < 4194304) {
		// |f| ≥ 2^22 is already an integer (or NaN/Inf).
		return cvtt(f)
	}
	t := int32(f)         // truncated toward zero
	r := f - float32(t)   // exact: the fractional part, in (-1, 1)
	return t + int32(r+r) // ±1 when |r| ≥ 0.5
}

// lroundf is glibc's lroundf followed by the C cast to int: half away from
// zero; NaN and magnitudes of 2^63 and more give LONG_MIN, whose low 32 bits
// are 0.
func lroundf(f float32) int32 {
	if f >= -4194304 && f < 4194304 {
		return roundf(f)
	}
	if f >= -9223372036854775808 && f < 9223372036854775808 {
		return int32(int64(f))
	}
	return 0
}

// fabs clears the sign bit.
func fabs(f float32) float32 {
	return math.Float32frombits(math.Float32bits(f) &^ 0x80000000)
}

// sqrtf is C's sqrtf: the double square root rounded to float32 is the
// correctly rounded float32 square root.
func sqrtf(f float32) float32 {
	return float32(math.Sqrt(float64(f)))
}

// maxAbsNaN reproduces the reduction `amax = MAX(amax, fabsf(v))` with ggml's
// MAX(a, b) = ((a) > (b) ? (a) : (b)): a NaN element replaces amax (the
// comparison is false) and is itself replaced by the next element.
func maxAbsMacro(x []float32) float32 {
	var amax float32
	for _, v := range x {
		a := fabs(v)
		if !(amax > a) {
			amax = a
		}
	}
	return amax
}

// argMaxAbs finds the element with the largest magnitude the way ggml's
// `if (amax < fabsf(v)) { amax = fabsf(v); max = v; }` loops do: the first one
// wins ties and NaNs are never chosen. It returns amax and the signed max.
func argMaxAbs(x []float32) (amax, max float32) {
	for _, v := range x {
		if a := fabs(v); amax < a {
			amax, max = a, v
		}
	}
	return amax, max
}

// finiteAbsMax returns the largest |x| as float32 bits, and whether every
// element is finite. For finite input it equals the C reductions above.
func finiteAbsMax(x []float32) (uint32, bool) {
	if useSSE2 && len(x) == 32 {
		m, _ := firstAbsMaxSSE2(&x[0])
		return m, m < 0x7f800000
	}
	var m uint32
	for _, v := range x {
		a := math.Float32bits(v) & 0x7fffffff
		if a > m {
			m = a
		}
	}
	return m, m < 0x7f800000
}
