package codec

import (
	"encoding/binary"
	"math"
	"unsafe"

	"github.com/sluice-ml/sluice/sdk/tensor"
)

// kernel converts n elements from src to dst directly, byte to byte, with the
// same result as decoding to float32 and encoding again.
type kernel func(dst, src []byte, n int)

var directKernels = map[[2]tensor.DType]kernel{
	{tensor.F32, tensor.F32}:     func(dst, src []byte, n int) { copy(dst[:4*n], src[:4*n]) },
	{tensor.F16, tensor.F32}:     f16ToF32Bytes,
	{tensor.BF16, tensor.F32}:    bf16ToF32Bytes,
	{tensor.F32, tensor.F16}:     f32ToF16Bytes,
	{tensor.F32, tensor.BF16}:    f32ToBF16Bytes,
	{tensor.BF16, tensor.F16}:    bf16ToF16Bytes,
	{tensor.F16, tensor.BF16}:    f16ToBF16Bytes,
	{tensor.F8E4M3, tensor.F32}:  f8ToF32Bytes(e4m3Table),
	{tensor.F8E5M2, tensor.F32}:  f8ToF32Bytes(e5m2Table),
	{tensor.F8E4M3, tensor.F16}:  f8ToF16Bytes(e4m3Table),
	{tensor.F8E5M2, tensor.F16}:  f8ToF16Bytes(e5m2Table),
	{tensor.F8E4M3, tensor.BF16}: f8ToBF16Bytes(e4m3Table),
	{tensor.F8E5M2, tensor.BF16}: f8ToBF16Bytes(e5m2Table),
	{tensor.F32, tensor.F8E4M3}:  f32ToE4M3Bytes,
	{tensor.F32, tensor.F8E5M2}:  f32ToE5M2Bytes,
	{tensor.BF16, tensor.F8E4M3}: bf16ToE4M3Bytes,
	{tensor.BF16, tensor.F8E5M2}: bf16ToE5M2Bytes,
	{tensor.F64, tensor.F32}:     f64ToF32Bytes,
	{tensor.F32, tensor.F64}:     f32ToF64Bytes,
}

func directKernel(from, to tensor.DType) kernel {
	return directKernels[[2]tensor.DType{from, to}]
}

func f16ToF32Bytes(dst, src []byte, n int) {
	src, dst = src[:2*n], dst[:4*n]
	k := castSSE2(widenF16, dst, 4, src, 2, n)
	dst, src, n = dst[4*k:], src[2*k:], n-k
	if n == 0 {
		return // no tail: the table is not needed
	}
	t := f16Tab()
	for i := 0; i < n; i++ {
		binary.LittleEndian.PutUint32(dst[4*i:], t[binary.LittleEndian.Uint16(src[2*i:])])
	}
}

func bf16ToF32Bytes(dst, src []byte, n int) {
	src, dst = src[:2*n], dst[:4*n]
	k := castSSE2(widenBF16, dst, 4, src, 2, n)
	dst, src, n = dst[4*k:], src[2*k:], n-k
	for i := 0; i < n; i++ {
		binary.LittleEndian.PutUint32(dst[4*i:], uint32(binary.LittleEndian.Uint16(src[2*i:]))<<16)
	}
}

func f32ToF16Bytes(dst, src []byte, n int) {
	src, dst = src[:4*n], dst[:2*n]
	k := castSSE2(narrowF16, dst, 2, src, 4, n)
	dst, src, n = dst[2*k:], src[4*k:], n-k
	for i := 0; i < n; i++ {
		f := math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
		binary.LittleEndian.PutUint16(dst[2*i:], Float32ToFloat16(f))
	}
}

func f32ToBF16Bytes(dst, src []byte, n int) {
	src, dst = src[:4*n], dst[:2*n]
	k := castSSE2(bf16FromF32SSE2, dst, 2, src, 4, n)
	dst, src, n = dst[2*k:], src[4*k:], n-k
	for i := 0; i < n; i++ {
		binary.LittleEndian.PutUint16(dst[2*i:], bf16FromBits(binary.LittleEndian.Uint32(src[4*i:])))
	}
}

// halfChunk is how many elements bf16ToF16Bytes and f16ToBF16Bytes widen to
// float32 at a time: 16 KiB of stack, which stays in the L1 cache between
// the two passes.
const halfChunk = 4096

// bf16ToF16Bytes widens each chunk of bf16 to float32 (exact) and narrows it
// to f16, both with the cast kernels: Float32ToFloat16 of each value.
func bf16ToF16Bytes(dst, src []byte, n int) { halfToHalf(dst, src, n, true) }

// f16ToBF16Bytes widens each chunk of f16 to float32 (exact) and narrows it
// to bf16, both with the cast kernels.
func f16ToBF16Bytes(dst, src []byte, n int) { halfToHalf(dst, src, n, false) }

// halfToHalf converts n 16-bit floats from src to dst through float32,
// halfChunk at a time: bf16 to f16, or f16 to bf16. The kernels are called
// by name, not passed as values, so that the buffer stays on the stack.
func halfToHalf(dst, src []byte, n int, toF16 bool) {
	src, dst = src[:2*n], dst[:2*n]
	var buf [4 * halfChunk]byte
	for n > 0 {
		m := min(n, halfChunk)
		if toF16 {
			bf16ToF32Bytes(buf[:4*m], src[:2*m], m)
			f32ToF16Bytes(dst[:2*m], buf[:4*m], m)
		} else {
			f16ToF32Bytes(buf[:4*m], src[:2*m], m)
			f32ToBF16Bytes(dst[:2*m], buf[:4*m], m)
		}
		src, dst, n = src[2*m:], dst[2*m:], n-m
	}
}

func f8ToF32Bytes(t *[256]uint32) kernel {
	return func(dst, src []byte, n int) {
		src, dst = src[:n], dst[:4*n]
		for i, b := range src {
			binary.LittleEndian.PutUint32(dst[4*i:], t[b])
		}
	}
}

func f8ToF16Bytes(t *[256]uint32) kernel {
	var h [256]uint16
	for i := range h {
		h[i] = Float32ToFloat16(math.Float32frombits(t[i]))
	}
	return func(dst, src []byte, n int) {
		src, dst = src[:n], dst[:2*n]
		for i, b := range src {
			binary.LittleEndian.PutUint16(dst[2*i:], h[b])
		}
	}
}

func f8ToBF16Bytes(t *[256]uint32) kernel {
	var h [256]uint16
	for i := range h {
		h[i] = bf16FromBits(t[i])
	}
	return func(dst, src []byte, n int) {
		src, dst = src[:n], dst[:2*n]
		for i, b := range src {
			binary.LittleEndian.PutUint16(dst[2*i:], h[b])
		}
	}
}

func f32ToE4M3Bytes(dst, src []byte, n int) {
	src, dst = src[:4*n], dst[:n]
	for i := range dst {
		dst[i] = e4m3FromBits(binary.LittleEndian.Uint32(src[4*i:]), 0x7f)
	}
}

func f32ToE5M2Bytes(dst, src []byte, n int) {
	src, dst = src[:4*n], dst[:n]
	for i := range dst {
		dst[i] = e5m2FromBits(binary.LittleEndian.Uint32(src[4*i:]), 0x7c)
	}
}

func bf16ToE4M3Bytes(dst, src []byte, n int) {
	src, dst = src[:2*n], dst[:n]
	for i := range dst {
		dst[i] = e4m3FromBits(uint32(binary.LittleEndian.Uint16(src[2*i:]))<<16, 0x7f)
	}
}

func bf16ToE5M2Bytes(dst, src []byte, n int) {
	src, dst = src[:2*n], dst[:n]
	for i := range dst {
		dst[i] = e5m2FromBits(uint32(binary.LittleEndian.Uint16(src[2*i:]))<<16, 0x7c)
	}
}

func f64ToF32Bytes(dst, src []byte, n int) {
	src, dst = src[:8*n], dst[:4*n]
	for i := 0; i < n; i++ {
		f := Float64ToFloat32(math.Float64frombits(binary.LittleEndian.Uint64(src[8*i:])))
		binary.LittleEndian.PutUint32(dst[4*i:], math.Float32bits(f))
	}
}

func f32ToF64Bytes(dst, src []byte, n int) {
	src, dst = src[:4*n], dst[:8*n]
	for i := 0; i < n; i++ {
		f := Float32ToFloat64(math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:])))
		binary.LittleEndian.PutUint64(dst[8*i:], math.Float64bits(f))
	}
}

// nativeLittleEndian reports whether float32 values sit in memory in the
// little-endian byte order that every format here uses.
var nativeLittleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// f32View returns b as a []float32 sharing its memory, when that is possible:
// on little-endian platforms with b 4-byte aligned. Otherwise ok is false and
// the caller copies through a scratch buffer.
func f32View(b []byte) (v []float32, ok bool) {
	if !nativeLittleEndian || len(b) == 0 || len(b)%4 != 0 || uintptr(unsafe.Pointer(&b[0]))%4 != 0 {
		return nil, false
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), len(b)/4), true
}
