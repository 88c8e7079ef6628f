package codec

import "math"

// The two 8-bit float formats of safetensors (F8_E4M3, F8_E5M2), with the
// semantics of torch.float8_e4m3fn / torch.float8_e5m2 and ml_dtypes:
//
//   - e4m3fn: sign, 4 exponent bits (bias 7), 3 mantissa bits; no infinities;
//     S.1111.111 is NaN; the largest finite value is ±448 (S.1111.110).
//   - e5m2: sign, 5 exponent bits (bias 15), 2 mantissa bits; IEEE-style
//     infinities (S.11111.00) and NaNs; the largest finite value is ±57344.
//     It is the upper byte of a binary16.
//
// Encoding rounds to nearest even. A value whose rounded magnitude exceeds
// the largest finite value (and ±Inf) becomes NaN (e4m3fn) or ±Inf (e5m2);
// NaN becomes sign|0x7F in both. This is what torch's .to(dtype) and
// ml_dtypes' astype do. The Sat variants clamp to ±max instead.

// E4M3ToFloat32 returns the value of the float8 e4m3fn number b. NaN
// (S.1111.111) decodes to a quiet float32 NaN with b's sign.
func E4M3ToFloat32(b uint8) float32 {
	return math.Float32frombits(e4m3Bits(b))
}

func e4m3Bits(b uint8) uint32 {
	sign := uint32(b&0x80) << 24
	exp := uint32(b>>3) & 0xf
	man := uint32(b & 7)
	switch {
	case exp == 0xf && man == 7:
		return sign | 0x7fc00000
	case exp != 0: // normal: rebias 7 → 127
		return sign | (exp+120)<<23 | man<<20
	case man == 0:
		return sign
	}
	// Subnormal: man × 2^-9.
	return sign | math.Float32bits(float32(man)*(1.0/(1<<9)))
}

// Float32ToE4M3 returns the float8 e4m3fn number nearest to f, rounding half
// to even. Magnitudes that round above 448 (that is, above 464), ±Inf and
// NaN become NaN (sign|0x7F), as torch and ml_dtypes do.
func Float32ToE4M3(f float32) uint8 {
	return e4m3FromBits(math.Float32bits(f), 0x7f)
}

// Float32ToE4M3Sat is Float32ToE4M3 but clamps out-of-range values and ±Inf
// to ±448; NaN still becomes sign|0x7F.
func Float32ToE4M3Sat(f float32) uint8 {
	return e4m3FromBits(math.Float32bits(f), 0x7e)
}

// e4m3FromBits encodes float32 bits b; overflow is the code for magnitudes
// that round past 448 and for infinities.
func e4m3FromBits(b uint32, overflow uint8) uint8 {
	sign := uint8(b>>24) & 0x80
	a := b & 0x7fffffff
	switch {
	case a > 0x7f800000:
		return sign | 0x7f
	case a >= 0x3c800000: // ≥ 2^-6: normal range
		a -= 0x3c000000 // rebias 127 → 7
		c := (a + 0x7ffff + (a>>20)&1) >> 20
		if c > 0x7e {
			return sign | overflow
		}
		return sign | uint8(c)
	}
	// Subnormal or zero: 2^14 has an ulp of 2^-9, the e4m3 subnormal step,
	// so the FPU rounds to nearest even for us. 8 means 2^-6 (code 0x08).
	s := math.Float32frombits(a) + 16384
	return sign | uint8(math.Float32bits(s)-0x46800000)
}

// E5M2ToFloat32 returns the value of the float8 e5m2 number b. It is exact;
// a NaN keeps its payload and is quieted.
func E5M2ToFloat32(b uint8) float32 {
	return math.Float32frombits(f16Bits(uint16(b) << 8))
}

// Float32ToE5M2 returns the float8 e5m2 number nearest to f, rounding half to
// even. Magnitudes that round above 57344 (that is, from 61440 up) become
// ±Inf; NaN becomes sign|0x7F.
func Float32ToE5M2(f float32) uint8 {
	return e5m2FromBits(math.Float32bits(f), 0x7c)
}

// Float32ToE5M2Sat is Float32ToE5M2 but clamps out-of-range values and ±Inf
// to ±57344; NaN still becomes sign|0x7F.
func Float32ToE5M2Sat(f float32) uint8 {
	return e5m2FromBits(math.Float32bits(f), 0x7b)
}

func e5m2FromBits(b uint32, overflow uint8) uint8 {
	sign := uint8(b>>24) & 0x80
	a := b & 0x7fffffff
	switch {
	case a > 0x7f800000:
		return sign | 0x7f
	case a >= 0x38800000: // ≥ 2^-14: normal range
		a -= 0x38000000 // rebias 127 → 15
		c := (a + 0xfffff + (a>>21)&1) >> 21
		if c > 0x7b {
			return sign | overflow
		}
		return sign | uint8(c)
	}
	// Subnormal or zero: the ulp of 128 is 2^-16, the e5m2 subnormal step.
	s := math.Float32frombits(a) + 128
	return sign | uint8(math.Float32bits(s)-0x43000000)
}

// e4m3Table and e5m2Table map every float8 byte to its float32 bits. They are
// package variables with initializers (not init functions) because the direct
// kernel table is built from them during variable initialization.
var (
	e4m3Table = f8Table(e4m3Bits)
	e5m2Table = f8Table(func(b uint8) uint32 { return f16Bits(uint16(b) << 8) })
)

func f8Table(bits func(uint8) uint32) *[256]uint32 {
	t := new([256]uint32)
	for i := range t {
		t[i] = bits(uint8(i))
	}
	return t
}

func decodeE4M3(dst []float32, src []byte) {
	src = src[:len(dst)]
	for i, b := range src {
		dst[i] = math.Float32frombits(e4m3Table[b])
	}
}

func encodeE4M3(dst []byte, src []float32) {
	dst = dst[:len(src)]
	for i, f := range src {
		dst[i] = e4m3FromBits(math.Float32bits(f), 0x7f)
	}
}

func decodeE5M2(dst []float32, src []byte) {
	src = src[:len(dst)]
	for i, b := range src {
		dst[i] = math.Float32frombits(e5m2Table[b])
	}
}

func encodeE5M2(dst []byte, src []float32) {
	dst = dst[:len(src)]
	for i, f := range src {
		dst[i] = e5m2FromBits(math.Float32bits(f), 0x7c)
	}
}
