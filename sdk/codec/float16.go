package codec

import (
	"encoding/binary"
	"math"
	"sync"
	"unsafe"
)

// Float16ToFloat32 returns the value of the IEEE 754 binary16 number with
// bits h. The conversion is exact. A NaN keeps its sign and payload and is
// quieted, as IEEE 754, F16C hardware, ggml and PyTorch do.
func Float16ToFloat32(h uint16) float32 {
	return math.Float32frombits(f16Bits(h))
}

// f16Bits returns the float32 bits of the binary16 number h.
func f16Bits(h uint16) uint32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	man := uint32(h & 0x3ff)
	switch {
	case exp == 0x1f && man == 0:
		return sign | 0x7f800000
	case exp == 0x1f: // NaN: keep the payload, set the quiet bit
		return sign | 0x7fc00000 | man<<13
	case exp != 0: // normal: rebias 15 → 127
		return sign | (exp+112)<<23 | man<<13
	case man == 0:
		return sign
	}
	// Subnormal: man × 2^-24, exact in float32.
	return sign | math.Float32bits(float32(man)*(1.0/(1<<24)))
}

// Float32ToFloat16 returns the IEEE 754 binary16 bits nearest to f, rounding
// half to even. Values from 65520 up become infinity, subnormal results are
// kept, and every NaN becomes sign|0x7E00 (its payload is dropped). This is
// ggml's GGML_FP32_TO_FP16.
func Float32ToFloat16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	a := b & 0x7fffffff
	switch {
	case a >= 0x477ff000: // ≥ 65520: rounds to infinity; or infinity, NaN
		if a > 0x7f800000 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	case a >= 0x38800000: // ≥ 2^-14: a normal binary16
		// Rebias the exponent (127 → 15) and round the 13 dropped bits to
		// nearest even; a carry out of the mantissa bumps the exponent,
		// which is the right answer.
		a -= 0x38000000
		return sign | uint16((a+0x0fff+(a>>13)&1)>>13)
	}
	// Subnormal or zero: adding 0.5 makes the FPU round |f| to a multiple of
	// 2^-24 (the ulp of 0.5), to nearest even. The low bits of the sum are the
	// binary16 bits; 2^-14 itself comes out as 0x0400, the smallest normal.
	s := math.Float32frombits(a) + 0.5
	return sign | uint16(math.Float32bits(s)-0x3f000000)
}

// f16Table maps every binary16 bit pattern to its float32 bits. It is built on
// first use.
var (
	f16Table     *[1 << 16]uint32
	f16TableOnce sync.Once
)

func f16Tab() *[1 << 16]uint32 {
	f16TableOnce.Do(func() {
		t := new([1 << 16]uint32)
		for i := range t {
			t[i] = f16Bits(uint16(i))
		}
		f16Table = t
	})
	return f16Table
}

func decodeF16(dst []float32, src []byte) {
	src = src[:2*len(dst)]
	k := castSSE2(widenF16, f32Bytes(dst), 4, src, 2, len(dst))
	dst, src = dst[k:], src[2*k:]
	if len(dst) == 0 {
		return // no tail: the table is not needed
	}
	t := f16Tab()
	for i := range dst {
		dst[i] = math.Float32frombits(t[binary.LittleEndian.Uint16(src[2*i:])])
	}
}

// f32Bytes returns the memory of x as bytes.
func f32Bytes(x []float32) []byte {
	if len(x) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&x[0])), 4*len(x))
}

// widenF16 widens n binary16 at src (n a multiple of 16) to float32 at dst,
// as f16Bits, with F16C where the CPU has it beside AVX2.
func widenF16(dst, src *byte, n int) {
	if useAVX2 && hasF16C {
		f16ToF32F16C(dst, src, n)
		return
	}
	f16ToF32SSE2(dst, src, n)
}

// narrowF16 rounds n float32 at src (n a multiple of 16) to binary16 at dst,
// as Float32ToFloat16, with F16C where the CPU has it beside AVX2.
func narrowF16(dst, src *byte, n int) {
	if useAVX2 && hasF16C {
		f16FromF32F16C(dst, src, n)
		return
	}
	f16FromF32SSE2(dst, src, n)
}

// widenBF16 widens n bfloat16 at src (n a multiple of 16) to float32 at dst.
func widenBF16(dst, src *byte, n int) {
	if useAVX2 {
		bf16ToF32AVX2(dst, src, n)
		return
	}
	bf16ToF32SSE2(dst, src, n)
}

// castSSE2 runs a cast kernel (SSE2, or a wider one beside it) on the first
// n &^ 15 elements of src (elements of sb bytes) into dst (elements of db
// bytes) and returns how many it converted; the caller converts the rest.
func castSSE2(k func(dst, src *byte, n int), dst []byte, db int, src []byte, sb int, n int) int {
	m := n &^ 15
	if !useSSE2 || m == 0 {
		return 0
	}
	_, _ = dst[db*m-1], src[sb*m-1]
	k(&dst[0], &src[0], m)
	return m
}

func encodeF16(dst []byte, src []float32) {
	dst = dst[:2*len(src)]
	k := castSSE2(narrowF16, dst, 2, f32Bytes(src), 4, len(src))
	dst, src = dst[2*k:], src[k:]
	for i, f := range src {
		binary.LittleEndian.PutUint16(dst[2*i:], Float32ToFloat16(f))
	}
}

// BFloat16ToFloat32 returns the value of the bfloat16 number with bits h:
// the upper half of a float32. It is exact.
func BFloat16ToFloat32(h uint16) float32 {
	return math.Float32frombits(uint32(h) << 16)
}

// Float32ToBFloat16 returns the bfloat16 bits nearest to f, rounding half to
// even; subnormals are kept, and a NaN is quieted to (bits>>16)|0x40. This is
// ggml's ggml_compute_fp32_to_bf16 (and gguf-py's BF16 quantizer).
func Float32ToBFloat16(f float32) uint16 {
	return bf16FromBits(math.Float32bits(f))
}

func bf16FromBits(b uint32) uint16 {
	if b&0x7fffffff > 0x7f800000 {
		return uint16(b>>16) | 0x40
	}
	return uint16((b + 0x7fff + (b>>16)&1) >> 16)
}

func decodeBF16(dst []float32, src []byte) {
	src = src[:2*len(dst)]
	k := castSSE2(widenBF16, f32Bytes(dst), 4, src, 2, len(dst))
	dst, src = dst[k:], src[2*k:]
	for i := range dst {
		dst[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(src[2*i:])) << 16)
	}
}

func encodeBF16(dst []byte, src []float32) {
	dst = dst[:2*len(src)]
	k := castSSE2(bf16FromF32SSE2, dst, 2, f32Bytes(src), 4, len(src))
	dst, src = dst[2*k:], src[k:]
	for i, f := range src {
		binary.LittleEndian.PutUint16(dst[2*i:], bf16FromBits(math.Float32bits(f)))
	}
}
