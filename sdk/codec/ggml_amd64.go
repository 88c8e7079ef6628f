//go:build amd64 && !purego

package codec

import "golang.org/x/sys/cpu"

// useSSE2 selects the SSE2 kernels of ggml_amd64.s. SSE2 is part of every
// amd64 CPU; the kernels do exactly what their Go twins do, four lanes at a
// time (packed IEEE float32 operations round like the scalar ones).
const useSSE2 = true

// useAVX2 selects the AVX2 kernels, which do what the SSE2 ones do, eight
// lanes at a time.
var useAVX2 = cpu.X86.HasAVX2

// useAVX512 selects the AVX-512 kernels (F and BW), which do what the AVX2
// ones do, sixteen lanes at a time.
var useAVX512 = useAVX2 && cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW

// hasF16C reports F16C's conversions between binary16 and float32, which
// f16ToF32F16C uses beside AVX.
var hasF16C = cpu.X86.HasF16C

// roundClampSSE2 is roundLevelsGo for n elements, n a multiple of 4.
//
//go:noescape
func roundClampSSE2(dst, x *float32, n int, scale float32, lo, hi int32) (same bool)

// nibblesSSE2 is nibblesGo for one 32-element block.
//
//go:noescape
func nibblesSSE2(x *float32, sub, mul, add float32, hi int32, q *byte) (qh uint32)

// minMaxSSE2 is the first half of minMaxFinite; see there.
//
//go:noescape
func minMaxSSE2(x *float32) (lo, hi float32, amax uint32)

// firstAbsMaxSSE2 returns firstAbsMax32's magnitude and the index of the
// element it came from.
//
//go:noescape
func firstAbsMaxSSE2(x *float32) (m uint32, idx int)

// q8RoundSSE2 is q8RoundGo for one block of 32.
//
//go:noescape
func q8RoundSSE2(x *float32, id float32, q *byte)

// qxSearch4SSE2 is makeQXQuants's search for the four groups in s; see
// quads.
//
//go:noescape
func qxSearch4SSE2(s *quads, num *float32, n int, lo, hi int32)

// qxSearch8AVX2 is qxSearch4SSE2 for the groups of a and b at once, with
// o as its working copy (see qxOct); it writes the levels plus nmax to
// L[:128], group by group, and the scales to scales[:8], not into a and b.
//
//go:noescape
func qxSearch8AVX2(a, b *quads, o *qxOct, L *int8, scales *float32, num *float32, n int, lo, hi, nmax int32)

// qxSearch16AVX512 is qxSearch8AVX2 for the groups of a, b, c and d at
// once, with o as its working copy (see qxHex), writing L[:256] and
// scales[:16].
//
//go:noescape
func qxSearch16AVX512(a, b, c, d *quads, o *qxHex, L *int8, scales *float32, num *float32, n int, lo, hi, nmax int32)

// q3Search4SSE2 is makeQ3Quants's search for the four groups in s; see
// quads.
//
//go:noescape
func q3Search4SSE2(s *quads, start float32, rounds int, lo, hi int32)

// qkx2Start4SSE2 is, for the four groups of 32 at x, going to half of s,
// the transposition, k4Weights, and qkx2Start (squared error); mnStart is
// set to mn.
//
//go:noescape
func qkx2Start4SSE2(s *qkx2Oct, half int, x *float32, nmax int32)

// qkx2Search4SSE2 is makeQKX2's search for the four groups in half of s,
// over the n candidate iscales num[is]/(mx - mn); see qkx2Oct. flags:
// qkx2Short (groups of 16), qkx2MAD (absolute error).
//
//go:noescape
func qkx2Search4SSE2(s *qkx2Oct, half int, num *float32, n int, hi, flags int32)

// qkx2Search8AVX2 is qkx2Search4SSE2 for the eight groups of s at once.
//
//go:noescape
func qkx2Search8AVX2(s *qkx2Oct, num *float32, n int, hi, flags int32)

// qkx2Search16AVX512 is qkx2Search8AVX2 for the groups of a and b at once,
// with s as its working copy; see qkx2Hex.
//
//go:noescape
func qkx2Search16AVX512(a, b *qkx2Oct, s *qkx2Hex, num *float32, n int, hi, flags int32)

// quadsLoadSSE2 is quadsLoadGo.
//
//go:noescape
func quadsLoadSSE2(s *quads, x *float32)

// divRoundSSE2 sets L[i] = int8(clamp(nearestInt((x[i]+add)/d), lo, hi) +
// off) for 16 elements, as divRoundGo.
//
//go:noescape
func divRoundSSE2(L *int8, x *float32, add, d float32, lo, hi, off int32)

// divRoundAVX512 is divRoundSSE2 for n elements, n a multiple of 16.
//
//go:noescape
func divRoundAVX512(L *int8, x *float32, add, d float32, lo, hi, off int32, n int)

// f16FromF32SSE2 is Float32ToFloat16 over n float32 at src (n a multiple
// of 16), writing little-endian binary16 to dst.
//
//go:noescape
func f16FromF32SSE2(dst, src *byte, n int)

// bf16FromF32SSE2 is bf16FromBits over n float32 at src (n a multiple of 16).
//
//go:noescape
func bf16FromF32SSE2(dst, src *byte, n int)

// f16ToF32SSE2 widens n binary16 at src (n a multiple of 16) to float32,
// as f16Bits.
//
//go:noescape
func f16ToF32SSE2(dst, src *byte, n int)

// bf16ToF32SSE2 widens n bfloat16 at src (n a multiple of 16) to float32.
//
//go:noescape
func bf16ToF32SSE2(dst, src *byte, n int)

// f16ToF32F16C is f16ToF32SSE2 with F16C's VCVTPH2PS, eight values per
// instruction.
//
//go:noescape
func f16ToF32F16C(dst, src *byte, n int)

// f16FromF32F16C is f16FromF32SSE2 with F16C's VCVTPS2PH, eight values per
// instruction.
//
//go:noescape
func f16FromF32F16C(dst, src *byte, n int)

// bf16ToF32AVX2 is bf16ToF32SSE2, eight values per instruction.
//
//go:noescape
func bf16ToF32AVX2(dst, src *byte, n int)

// dqSSE2 is dqGo for n elements, n a multiple of 16.
//
//go:noescape
func dqSSE2(dst *float32, b, h *byte, n int, p *dqParams, d, m float32)

// q8BlocksSSE2 decodes n q8_0 blocks whose scales are ds[:n].
//
//go:noescape
func q8BlocksSSE2(dst *float32, src *byte, ds *float32, n int)

// mxfp4CodesSSE2 is mxfp4Codes for 32 elements at a scale e from their
// finite amax (pre and inv as mxfp4Codes computes them).
//
//go:noescape
func mxfp4CodesSSE2(q *byte, x *float32, e, pre, inv float32)

// tq1BlockSSE2 decodes the tq1_0 block b (54 bytes, scale d) to dst[:256].
//
//go:noescape
func tq1BlockSSE2(dst *float32, b *byte, d float32)

// q3Search8SSE2 is q3Search4SSE2 for two quads at once.
//
//go:noescape
func q3Search8SSE2(a, b *quads, start float32, rounds int, lo, hi int32)

// tq2BlocksSSE2 decodes n tq2_0 blocks whose scales are ds[:n].
//
//go:noescape
func tq2BlocksSSE2(dst *float32, src *byte, ds *float32, n int)

// k4BlocksSSE2 decodes the nibbles of n q4_K blocks (qs of the first at qs,
// blocks stride bytes apart) with their sub-block scales and mins in dm.
//
//go:noescape
func k4BlocksSSE2(dst *float32, qs *byte, stride int, dm *float32, n int)

// tq2PackSSE2 writes the 64 code bytes of a tq2_0 block (see there).
//
//go:noescape
func tq2PackSSE2(q *byte, x *float32, id float32)

// k5BlocksSSE2 is k4BlocksSSE2 for q5_K, with the fifth bits in qh.
//
//go:noescape
func k5BlocksSSE2(dst *float32, qs, qh *byte, stride int, dm *float32, n int)

// legacyBlocksAVX2 decodes n q4_0, q4_1, q5_0 or q5_1 blocks (see
// legacyBlocks), eight elements per instruction.
//
//go:noescape
func legacyBlocksAVX2(dst *float32, qs, qh *byte, stride int, ds, ms *float32, n int, off int, flags int)

// q8EncodeAVX2 encodes up to n q8_0 blocks of the floats at x into the
// 34-byte blocks at q, all but their scales: block i's levels go to
// q[34i+2:34i+34] and its d (amax/127, for the caller to store as binary16)
// to d[i], as encodeQ8_0Block computes them. It stops before the first
// block encodeQ8_0Block's fast path would not take (an element that is Inf
// or NaN, or 1/d above 3.4e38) and returns how many blocks it encoded.
//
//go:noescape
func q8EncodeAVX2(x *float32, q *byte, d *float32, n int) (done int)

// q40EncodeAVX2 encodes up to n q4_0 blocks of the floats at x into the
// 18-byte blocks at q, all but their scales: block i's nibbles go to
// q[18i+2:18i+18] and its d (max/-8) to d[i], as encodeQ4_0Block computes
// them. It stops before the first block encodeQ4_0Block's fast path would
// not take (an element that is Inf or NaN, or a 1/d that overflows) and
// returns how many blocks it encoded.
//
//go:noescape
func q40EncodeAVX2(x *float32, q *byte, d *float32, n int) (done int)

// q8BlocksAVX2 is q8BlocksSSE2, eight elements per instruction.
//
//go:noescape
func q8BlocksAVX2(dst *float32, src *byte, ds *float32, n int)

// kBlocksAVX2 is k4BlocksSSE2 when qh is nil and k5BlocksSSE2 otherwise,
// eight elements per instruction.
//
//go:noescape
func kBlocksAVX2(dst *float32, qs, qh *byte, stride int, dm *float32, n int)

// q41BlockSSE2 quantizes one q4_1 block on the fast path (see there); ok
// false sends the block through the Go code.
//
//go:noescape
func q41BlockSSE2(x *float32, q *byte) (d, lo float32, ok bool)

// q40BlockSSE2 quantizes one q4_0 block on the fast path (see there); ok
// false sends the block through the Go code.
//
//go:noescape
func q40BlockSSE2(x *float32, q *byte) (d float32, ok bool)

// iq4Trials16AVX512 is iq4Trials.search for the 32 elements at x, the
// sixteen trials in the lanes of a vector.
//
//go:noescape
func iq4Trials16AVX512(x *float32, ids *[16]float32, tr *iq4Trials)

// iq4IndexAVX512 sets L[j] = bestIndexIQ4(id·x[j]) for j < n, n a multiple
// of 16.
//
//go:noescape
func iq4IndexAVX512(L *uint8, x *float32, id float32, n int)

// iq4Trials16AVX2 is iq4Trials16AVX512 with the trials in two vectors of
// eight.
//
//go:noescape
func iq4Trials16AVX2(x *float32, ids *[16]float32, tr *iq4Trials)

// iq4IndexAVX2 is iq4IndexAVX512 eight elements at a time, n a multiple of
// 8.
//
//go:noescape
func iq4IndexAVX2(L *uint8, x *float32, id float32, n int)

// q2Start8AVX2 is q2Start8 for the eight groups of 16 at x, group g in lane
// g.
//
//go:noescape
func q2Start8AVX2(x *float32, o *qkx2Oct)

// qkx2Start8AVX2 is qkx2Start4SSE2 for the eight groups of 32 at x at once.
//
//go:noescape
func qkx2Start8AVX2(s *qkx2Oct, x *float32, nmax int32)

// q3Search16AVX512 is q3Search8SSE2 for the groups of a, b, c and d (lanes
// 0-3, 4-7, 8-11, 12-15) at once, with o as the interleaved working copy.
//
//go:noescape
func q3Search16AVX512(a, b, c, d *quads, o *qxHex, L *int8, scales *float32, start float32, rounds int, lo, hi, nmax int32)

// q3Search4x16AVX512 is q3Search16AVX512 for four super-blocks at once,
// each with its quads and working copy in a qxScratch of s, writing the
// levels to L and the scales to scales.
//
//go:noescape
func q3Search4x16AVX512(s *[4]qxScratch, L *[4][256]int8, scales *[4][16]float32, start float32, rounds int, lo, hi, nmax int32)

// q3Search16AVX2 is q3Search8SSE2 for the groups of a and b (in o[0]) and
// of c and d (in o[1]) at once, in the eight lanes of AVX2 vectors, writing
// L[:256] and scales[:16].
//
//go:noescape
func q3Search16AVX2(a, b, c, d *quads, o *[2]qxOct, L *int8, scales *float32, start float32, rounds int, lo, hi, nmax int32)
