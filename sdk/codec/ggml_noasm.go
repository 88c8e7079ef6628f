//go:build !amd64 || purego

package codec

const useSSE2 = false

var useAVX2 = false

var useAVX512 = false

const hasF16C = false

func roundClampSSE2(dst, x *float32, n int, scale float32, lo, hi int32) bool {
	panic("codec: no SSE2 kernels on this platform")
}

func nibblesSSE2(x *float32, sub, mul, add float32, hi int32, q *byte) (qh uint32) {
	panic("codec: no SSE2 kernels on this platform")
}

func minMaxSSE2(x *float32) (lo, hi float32, amax uint32) {
	panic("codec: no SSE2 kernels on this platform")
}

func firstAbsMaxSSE2(x *float32) (m uint32, idx int) {
	panic("codec: no SSE2 kernels on this platform")
}

func q8RoundSSE2(x *float32, id float32, q *byte) {
	panic("codec: no SSE2 kernels on this platform")
}

func q8EncodeAVX2(x *float32, q *byte, d *float32, n int) (done int) {
	panic("codec: no AVX2 kernels on this platform")
}

func q40EncodeAVX2(x *float32, q *byte, d *float32, n int) (done int) {
	panic("codec: no AVX2 kernels on this platform")
}

func qxSearch4SSE2(s *quads, num *float32, n int, lo, hi int32) {
	panic("codec: no SSE2 kernels on this platform")
}

func qxSearch8AVX2(a, b *quads, o *qxOct, L *int8, scales *float32, num *float32, n int, lo, hi, nmax int32) {
	panic("codec: no AVX2 kernels on this platform")
}

func qxSearch16AVX512(a, b, c, d *quads, o *qxHex, L *int8, scales *float32, num *float32, n int, lo, hi, nmax int32) {
	panic("codec: no AVX-512 kernels on this platform")
}

func q3Search4SSE2(s *quads, start float32, rounds int, lo, hi int32) {
	panic("codec: no SSE2 kernels on this platform")
}

func qkx2Start4SSE2(s *qkx2Oct, half int, x *float32, nmax int32) {
	panic("codec: no SSE2 kernels on this platform")
}

func qkx2Search4SSE2(s *qkx2Oct, half int, num *float32, n int, hi, flags int32) {
	panic("codec: no SSE2 kernels on this platform")
}

func qkx2Search8AVX2(s *qkx2Oct, num *float32, n int, hi, flags int32) {
	panic("codec: no AVX2 kernels on this platform")
}

func qkx2Search16AVX512(a, b *qkx2Oct, s *qkx2Hex, num *float32, n int, hi, flags int32) {
	panic("codec: no AVX-512 kernels on this platform")
}

func quadsLoadSSE2(s *quads, x *float32) {
	panic("codec: no SSE2 kernels on this platform")
}

func divRoundSSE2(L *int8, x *float32, add, d float32, lo, hi, off int32) {
	panic("codec: no SSE2 kernels on this platform")
}

func divRoundAVX512(L *int8, x *float32, add, d float32, lo, hi, off int32, n int) {
	panic("codec: no AVX-512 kernels on this platform")
}

func f16FromF32SSE2(dst, src *byte, n int) {
	panic("codec: no SSE2 kernels on this platform")
}

func bf16FromF32SSE2(dst, src *byte, n int) {
	panic("codec: no SSE2 kernels on this platform")
}

func f16ToF32SSE2(dst, src *byte, n int) {
	panic("codec: no SSE2 kernels on this platform")
}

func bf16ToF32SSE2(dst, src *byte, n int) {
	panic("codec: no SSE2 kernels on this platform")
}

func f16ToF32F16C(dst, src *byte, n int) {
	panic("codec: no F16C kernels on this platform")
}

func f16FromF32F16C(dst, src *byte, n int) {
	panic("codec: no F16C kernels on this platform")
}

func bf16ToF32AVX2(dst, src *byte, n int) {
	panic("codec: no AVX2 kernels on this platform")
}

func dqSSE2(dst *float32, b, h *byte, n int, p *dqParams, d, m float32) {
	panic("codec: no SSE2 kernels on this platform")
}

func q8BlocksSSE2(dst *float32, src *byte, ds *float32, n int) {
	panic("codec: no SSE2 kernels on this platform")
}

func mxfp4CodesSSE2(q *byte, x *float32, e, pre, inv float32) {
	panic("codec: no SSE2 kernels on this platform")
}

func tq1BlockSSE2(dst *float32, b *byte, d float32) {
	panic("codec: no SSE2 kernels on this platform")
}

func q3Search8SSE2(a, b *quads, start float32, rounds int, lo, hi int32) {
	panic("codec: no SSE2 kernels on this platform")
}

func tq2BlocksSSE2(dst *float32, src *byte, ds *float32, n int) {
	panic("codec: no SSE2 kernels on this platform")
}

func k4BlocksSSE2(dst *float32, qs *byte, stride int, dm *float32, n int) {
	panic("codec: no SSE2 kernels on this platform")
}

func tq2PackSSE2(q *byte, x *float32, id float32) {
	panic("codec: no SSE2 kernels on this platform")
}

func k5BlocksSSE2(dst *float32, qs, qh *byte, stride int, dm *float32, n int) {
	panic("codec: no SSE2 kernels on this platform")
}

func legacyBlocksAVX2(dst *float32, qs, qh *byte, stride int, ds, ms *float32, n int, off int, flags int) {
	panic("codec: no AVX2 kernels on this platform")
}

func q8BlocksAVX2(dst *float32, src *byte, ds *float32, n int) {
	panic("codec: no AVX2 kernels on this platform")
}

func kBlocksAVX2(dst *float32, qs, qh *byte, stride int, dm *float32, n int) {
	panic("codec: no AVX2 kernels on this platform")
}

func q41BlockSSE2(x *float32, q *byte) (d, lo float32, ok bool) {
	panic("codec: no SSE2 kernels on this platform")
}

func q40BlockSSE2(x *float32, q *byte) (d float32, ok bool) {
	panic("codec: no SSE2 kernels on this platform")
}

func iq4Trials16AVX512(x *float32, ids *[16]float32, tr *iq4Trials) {
	panic("codec: no AVX-512 kernels on this platform")
}

func iq4IndexAVX512(L *uint8, x *float32, id float32, n int) {
	panic("codec: no AVX-512 kernels on this platform")
}

func iq4Trials16AVX2(x *float32, ids *[16]float32, tr *iq4Trials) {
	panic("codec: no AVX2 kernels on this platform")
}

func iq4IndexAVX2(L *uint8, x *float32, id float32, n int) {
	panic("codec: no AVX2 kernels on this platform")
}

func q2Start8AVX2(x *float32, o *qkx2Oct) {
	panic("codec: no AVX2 kernels on this platform")
}

func qkx2Start8AVX2(s *qkx2Oct, x *float32, nmax int32) {
	panic("codec: no AVX2 kernels on this platform")
}

func q3Search4x16AVX512(s *[4]qxScratch, L *[4][256]int8, scales *[4][16]float32, start float32, rounds int, lo, hi, nmax int32) {
	panic("codec: no AVX-512 kernels on this platform")
}

func q3Search16AVX2(a, b, c, d *quads, o *[2]qxOct, L *int8, scales *float32, start float32, rounds int, lo, hi, nmax int32) {
	panic("codec: no AVX2 kernels on this platform")
}

func q3Search16AVX512(a, b, c, d *quads, o *qxHex, L *int8, scales *float32, start float32, rounds int, lo, hi, nmax int32) {
	panic("codec: no AVX-512 kernels on this platform")
}
