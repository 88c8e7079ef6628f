package codec

import (
	"encoding/binary"
	"math"
	"unsafe"

	"github.com/sluice-ml/sluice/sdk/tensor"
)

// ggml's original 32-element block types: q8_0, q4_0, q4_1, q5_0, q5_1 (and
// q8_1, decode only). Layouts (little-endian):
//
//	q8_0  34 B: d f16 | qs[32] int8
//	q4_0  18 B: d f16 | qs[16]           element j low nibble, j+16 high nibble
//	q4_1  20 B: d f16 | m f16 | qs[16]
//	q5_0  22 B: d f16 | qh u32 | qs[16]  bit j of qh is bit 4 of element j
//	q5_1  24 B: d f16 | m f16 | qh u32 | qs[16]
//	q8_1  36 B: d f16 | s f16 | qs[32] int8   (s = d·Σq, not needed to decode)

func init() {
	register(tensor.Q8_0, &format{blockSize: 32, blockBytes: 34, decode: decodeQ8_0, encode: encodeQ8_0})
	register(tensor.Q4_0, &format{blockSize: 32, blockBytes: 18, decode: decodeQ4_0, encode: encodeQ4_0})
	register(tensor.Q4_1, &format{blockSize: 32, blockBytes: 20, decode: decodeQ4_1, encode: encodeQ4_1})
	register(tensor.Q5_0, &format{blockSize: 32, blockBytes: 22, decode: decodeQ5_0, encode: encodeQ5_0})
	register(tensor.Q5_1, &format{blockSize: 32, blockBytes: 24, decode: decodeQ5_1, encode: encodeQ5_1})
	register(tensor.Q8_1, &format{blockSize: 32, blockBytes: 36, decode: decodeQ8_1})
}

// ---- q8_0 ----

func encodeQ8_0(dst []byte, src []float32) {
	encodeBlocks(dst, src, 34, q8EncodeAVX2, encodeQ8_0Block)
}

// encodeBlocks encodes the blocks of 32 floats of src into dst, blocks of
// blockBytes that begin with a binary16 scale. With AVX2 it runs kernel, an
// encoder that leaves the scales to its caller (q8EncodeAVX2,
// q40EncodeAVX2): up to 64 blocks per call, their scales stored after it,
// and a block the kernel stops before encoded by block, the scalar way;
// without, block encodes every block.
func encodeBlocks(dst []byte, src []float32, blockBytes int, kernel func(x *float32, q *byte, d *float32, n int) int, block func(y []byte, x []float32)) {
	if !useAVX2 {
		for len(src) >= 32 && len(dst) >= blockBytes {
			block(dst[:blockBytes], src[:32])
			src, dst = src[32:], dst[blockBytes:]
		}
		return
	}
	var ds [64]float32
	var hs [2 * len(ds)]byte
	for len(src) >= 32 && len(dst) >= blockBytes {
		n := min(len(ds), len(src)/32, len(dst)/blockBytes)
		done := kernel(&src[0], &dst[0], &ds[0], n)
		// The scales as binary16 in bulk (F16C's conversion where the CPU
		// has it), then into their blocks.
		f32ToF16Bytes(hs[:], f32Bytes(ds[:done]), done)
		for i := range done {
			dst[blockBytes*i], dst[blockBytes*i+1] = hs[2*i], hs[2*i+1]
		}
		src, dst = src[32*done:], dst[blockBytes*done:]
		if done < n {
			block(dst[:blockBytes], src[:32])
			src, dst = src[32:], dst[blockBytes:]
		}
	}
}

// encodeQ8_0Block encodes the 32 floats of x into the 34-byte block y, as
// quantize_row_q8_0_ref does.
func encodeQ8_0Block(y []byte, x []float32) {
	m, finite := finiteAbsMax(x)
	amax := math.Float32frombits(m)
	if !finite {
		amax = maxAbsMacro(x)
	}
	d := amax / 127
	var id float32
	if d != 0 {
		id = 1 / d
	}
	putF16(y, d)
	q := y[2:34]
	switch {
	case finite && id <= 3.4e38 && useSSE2:
		q8RoundSSE2(&x[0], id, &q[0])
	case finite && id <= 3.4e38:
		q8RoundGo(x, id, q)
	default:
		for j, v := range x {
			q[j] = byte(int8(roundf(float32(v * id))))
		}
	}
}

// q8RoundGo sets q[j] to roundf(x[j]·id) as an int8 for the 32 elements of
// a block whose products are finite: |x·id| ≤ 127(1+ε), so no conversion
// can go out of range, and t + trunc(2(f - t)) with t = trunc(f) is
// roundf(f) (ties away from zero).
func q8RoundGo(x []float32, id float32, q []byte) {
	x, q = x[:32], q[:32]
	for j, v := range x {
		f := float32(v * id)
		t := int32(f)
		r := f - float32(t)
		q[j] = byte(int8(t + int32(r+r)))
	}
}

func decodeQ8_0(dst []float32, src []byte) {
	if useSSE2 {
		// Up to 64 blocks at a time: their scales first, then the kernel.
		var ds [64]float32
		t := f16Tab()
		for len(dst) >= 32 && len(src) >= 34 {
			n := min(len(ds), len(dst)/32, len(src)/34)
			for i := range ds[:n] {
				ds[i] = math.Float32frombits(t[binary.LittleEndian.Uint16(src[34*i:])])
			}
			if useAVX2 {
				q8BlocksAVX2(&dst[0], &src[0], &ds[0], n)
			} else {
				q8BlocksSSE2(&dst[0], &src[0], &ds[0], n)
			}
			dst, src = dst[32*n:], src[34*n:]
		}
		return
	}
	for len(dst) >= 32 && len(src) >= 34 {
		d := getF16(src)
		q := src[2:34]
		dq(dst[:32], q, q, dqQ8, d, 0)
		dst, src = dst[32:], src[34:]
	}
}

func decodeQ8_1(dst []float32, src []byte) {
	for len(dst) >= 32 && len(src) >= 36 {
		d := getF16(src)
		q := src[4:36]
		y := dst[:32]
		for j := range y {
			y[j] = float32(int8(q[j])) * d
		}
		dst, src = dst[32:], src[36:]
	}
}

// ---- q4_0 ----

// firstAbsMax32 returns the largest magnitude of a 32-element block as
// float32 bits, and the bits of the first element with that magnitude (+0 when
// all are ±0). It runs four independent chains over the four quarters and
// merges them in index order, so the first element still wins ties. For
// finite input (m < 0x7f800000) it equals ggml's
// `if (amax < fabsf(v)) { amax = fabsf(v); max = v; }`.
func firstAbsMax32(x *[32]float32) (m, v uint32) {
	if useSSE2 {
		m, i := firstAbsMaxSSE2(&x[0])
		if m == 0 {
			return 0, 0
		}
		return m, math.Float32bits(x[i&31])
	}
	return firstAbsMax32Go(x)
}

func firstAbsMax32Go(x *[32]float32) (m, v uint32) {
	u := (*[32]uint32)(unsafe.Pointer(x))
	var m0, m1, m2, m3, v0, v1, v2, v3 uint32
	for j := range 8 {
		b0, b1, b2, b3 := u[j], u[8+j], u[16+j], u[24+j]
		a0, a1, a2, a3 := b0&0x7fffffff, b1&0x7fffffff, b2&0x7fffffff, b3&0x7fffffff
		if a0 > m0 {
			m0, v0 = a0, b0
		}
		if a1 > m1 {
			m1, v1 = a1, b1
		}
		if a2 > m2 {
			m2, v2 = a2, b2
		}
		if a3 > m3 {
			m3, v3 = a3, b3
		}
	}
	m, v = m0, v0
	if m1 > m {
		m, v = m1, v1
	}
	if m2 > m {
		m, v = m2, v2
	}
	if m3 > m {
		m, v = m3, v3
	}
	return m, v
}

// nibbles is the quantization loop of q4_0, q4_1, q5_0 and q5_1 for one
// block of 32 when the input and scale are finite: c = min(int((x-sub)·mul +
// add), hi) for every element (truncating, and in range: 0 ≤ c ≤ 31 before
// the clamp). It writes the low nibbles to q (element j low, j+16 high) and
// returns bit 4 of every code in qh (bit j for element j).
func nibbles(x *[32]float32, sub, mul, add float32, hi int32, q *[16]byte) (qh uint32) {
	if useSSE2 {
		return nibblesSSE2(&x[0], sub, mul, add, hi, &q[0])
	}
	if hi <= 15 {
		nibbles4Go(x, sub, mul, add, hi, q)
		return 0
	}
	return nibblesGo(x, sub, mul, add, hi, q)
}

// nibbles4Go is nibblesGo for codes of four bits (hi ≤ 15), whose fifth
// bits are all zero.
func nibbles4Go(x *[32]float32, sub, mul, add float32, hi int32, q *[16]byte) {
	for j := range 16 {
		a := min(hi, int32(float32(float32(x[j]-sub)*mul)+add))
		b := min(hi, int32(float32(float32(x[j+16]-sub)*mul)+add))
		q[j] = byte(a&15 | (b&15)<<4)
	}
}

// nibblesGo is nibbles in Go. It goes from the last pair to the first so
// that the fifth bits shift into place by one each step (a shift by a
// variable count costs three operations on amd64).
func nibblesGo(x *[32]float32, sub, mul, add float32, hi int32, q *[16]byte) (qh uint32) {
	var lo, up uint32
	for j := 15; j >= 0; j-- {
		a := min(hi, int32(float32(float32(x[j]-sub)*mul)+add))
		b := min(hi, int32(float32(float32(x[j+16]-sub)*mul)+add))
		q[j] = byte(a&15 | (b&15)<<4)
		lo = lo<<1 | uint32(a>>4&1)
		up = up<<1 | uint32(b>>4&1)
	}
	return lo | up<<16
}

func encodeQ4_0(dst []byte, src []float32) {
	encodeBlocks(dst, src, 18, q40EncodeAVX2, encodeQ4_0Block)
}

// encodeQ4_0Block encodes the 32 floats of src into the 18-byte block dst,
// as quantize_row_q4_0_ref does.
func encodeQ4_0Block(dst []byte, src []float32) {
	x := (*[32]float32)(src[:32])
	y := (*[18]byte)(dst[:18])
	if useSSE2 {
		if d, ok := q40BlockSSE2(&x[0], &y[2]); ok {
			putF16(y[:], d)
			return
		}
	}
	m, mv := firstAbsMax32(x)
	max := math.Float32frombits(mv)
	finite := m < 0x7f800000
	if !finite {
		_, max = argMaxAbs(x[:])
	}
	d := max / -8
	var id float32
	if d != 0 {
		id = 1 / d
	}
	putF16(y[:], d)
	q := (*[16]byte)(y[2:])
	if finite && fabs(id) <= math.MaxFloat32 {
		// x·id + 8.5 lies in [0.5, 16.5]: the truncation is in range and
		// only 16 (from the element equal to -max) needs the clamp to 15.
		// x - 0 is x, so the subtraction changes nothing.
		nibbles(x, 0, id, 8.5, 15, q)
	} else {
		for j := 0; j < 16; j++ {
			a := int32(int8(cvtt(float32(x[j]*id) + 8.5)))
			b := int32(int8(cvtt(float32(x[j+16]*id) + 8.5)))
			q[j] = byte(min(15, a)) | byte(min(15, b))<<4
		}
	}
}

// legacyLayout is where a q4_0, q4_1, q5_0 or q5_1 block keeps its fields
// (after its scale d, a binary16 at offset 0): the 16 bytes of nibbles at
// qs, the 32 fifth bits at qh and the binary16 minimum at m (-1: none), and
// the offset its levels are stored with.
type legacyLayout struct {
	size, qs, qh, m int
	off             int
}

var (
	q40Layout = legacyLayout{size: 18, qs: 2, qh: -1, m: -1, off: 8}
	q41Layout = legacyLayout{size: 20, qs: 4, qh: -1, m: 2}
	q50Layout = legacyLayout{size: 22, qs: 6, qh: 2, m: -1, off: 16}
	q51Layout = legacyLayout{size: 24, qs: 8, qh: 4, m: 2}
)

// legacyBlocks decodes the whole blocks of src with legacyBlocksAVX2, up to
// 64 at a time, their scales and minimums widened first, and returns what
// is left of dst and src.
func legacyBlocks(dst []float32, src []byte, l *legacyLayout) ([]float32, []byte) {
	var ds, ms [64]float32
	t := f16Tab()
	flags, qh := 0, l.qs
	if l.qh >= 0 {
		flags, qh = flags|1, l.qh
	}
	if l.m >= 0 {
		flags |= 2
	}
	for len(dst) >= 32 && len(src) >= l.size {
		n := min(len(ds), len(dst)/32, len(src)/l.size)
		for i := range ds[:n] {
			b := src[l.size*i:]
			ds[i] = math.Float32frombits(t[binary.LittleEndian.Uint16(b)])
			if l.m >= 0 {
				ms[i] = math.Float32frombits(t[binary.LittleEndian.Uint16(b[l.m:])])
			}
		}
		legacyBlocksAVX2(&dst[0], &src[l.qs], &src[qh], l.size, &ds[0], &ms[0], n, l.off, flags)
		dst, src = dst[32*n:], src[l.size*n:]
	}
	return dst, src
}

func decodeQ4_0(dst []float32, src []byte) {
	if useAVX2 {
		dst, src = legacyBlocks(dst, src, &q40Layout)
	}
	for len(dst) >= 32 && len(src) >= 18 {
		d := getF16(src)
		q := src[2:18]
		dq(dst[:16], q, q, dqQ4Lo, d, 0)
		dq(dst[16:32], q, q, dqQ4Hi, d, 0)
		dst, src = dst[32:], src[18:]
	}
}

// ---- q4_1 ----

// minMaxFinite returns what minMax returns, and whether every element is
// finite; when one is not, lo and hi are not computed and the caller takes
// the slow path. For finite input the minimum and maximum values are unique
// except for the sign of zero, which the C loop takes from the first zero
// (strict comparisons keep the first of equal values); that is looked up.
func minMaxFinite(x *[32]float32) (lo, hi float32, finite bool) {
	if useSSE2 {
		var m uint32
		lo, hi, m = minMaxSSE2(&x[0])
		finite = m < 0x7f800000
	} else {
		lo, hi, finite = minMaxGo(x)
	}
	if !finite {
		return 0, 0, false
	}
	if lo == 0 || hi == 0 {
		for _, v := range x {
			if v == 0 {
				if lo == 0 {
					lo = v
				}
				if hi == 0 {
					hi = v
				}
				break
			}
		}
	}
	return lo, hi, true
}

// minMaxGo is minMaxSSE2 in Go: the smallest and largest elements, and
// whether all are finite, in one pass without branches. Each element's
// bits become an integer of the same order (the magnitude bits flipped for
// negative numbers: -0 just below +0), whose minimum and maximum are taken
// in two chains, one per half; an exponent of all ones carries into the
// top bit of nonFinite. For finite input lo and hi are those of minMax but
// for the sign of a zero, which the caller looks up.
func minMaxGo(x *[32]float32) (lo, hi float32, finite bool) {
	lo0, hi0 := int32(math.MaxInt32), int32(math.MinInt32)
	lo1, hi1 := lo0, hi0
	var nonFinite uint32
	for j := range 16 {
		a, b := int32(math.Float32bits(x[j])), int32(math.Float32bits(x[16+j]))
		nonFinite |= (uint32(a)&0x7f800000 + 0x800000) | (uint32(b)&0x7f800000 + 0x800000)
		a, b = floatOrder(a), floatOrder(b)
		lo0, hi0 = min(lo0, a), max(hi0, a)
		lo1, hi1 = min(lo1, b), max(hi1, b)
	}
	lo = math.Float32frombits(uint32(floatOrder(min(lo0, lo1))))
	hi = math.Float32frombits(uint32(floatOrder(max(hi0, hi1))))
	return lo, hi, nonFinite < 0x80000000
}

// floatOrder maps a float32's bits to an integer that orders as the float
// does (a negative number's magnitude bits flipped), and back: it is its
// own inverse.
func floatOrder(b int32) int32 { return b ^ b>>31&0x7fffffff }

// minMax is `if (v < min) min = v; if (v > max) max = v;` from ±FLT_MAX.
func minMax(x []float32) (lo, hi float32) {
	lo, hi = math.MaxFloat32, -math.MaxFloat32
	for _, v := range x {
		if v < lo {
			lo = v
		}
		if v > hi {
			hi = v
		}
	}
	return lo, hi
}

func encodeQ4_1(dst []byte, src []float32) {
	for len(src) >= 32 && len(dst) >= 20 {
		x := src[:32]
		y := dst[:20]
		if useSSE2 {
			if d, lo, ok := q41BlockSSE2(&x[0], &y[4]); ok {
				putF16(y, d)
				putF16(y[2:], lo)
				src, dst = src[32:], dst[20:]
				continue
			}
		}
		xs := (*[32]float32)(x)
		lo, hi, finite := minMaxFinite(xs)
		if !finite {
			lo, hi = minMax(x)
		}
		d := (hi - lo) / 15
		var id float32
		if d != 0 {
			id = 1 / d
		}
		putF16(y, d)
		putF16(y[2:], lo)
		if finite && fabs(d) <= math.MaxFloat32 && fabs(id) <= math.MaxFloat32 {
			nibbles(xs, lo, id, 0.5, 15, (*[16]byte)(y[4:20]))
			src, dst = src[32:], dst[20:]
			continue
		}
		q := y[4:20]
		for j := range 16 {
			a := int32(int8(cvtt(float32((x[j]-lo)*id) + 0.5)))
			b := int32(int8(cvtt(float32((x[j+16]-lo)*id) + 0.5)))
			q[j] = byte(min(15, a)) | byte(min(15, b))<<4
		}
		src, dst = src[32:], dst[20:]
	}
}

func decodeQ4_1(dst []float32, src []byte) {
	if useAVX2 {
		dst, src = legacyBlocks(dst, src, &q41Layout)
	}
	for len(dst) >= 32 && len(src) >= 20 {
		d := getF16(src)
		m := getF16(src[2:])
		q := src[4:20]
		dq(dst[:16], q, q, dqQ41Lo, d, m)
		dq(dst[16:32], q, q, dqQ41Hi, d, m)
		dst, src = dst[32:], src[20:]
	}
}

// ---- q5_0 ----

func encodeQ5_0(dst []byte, src []float32) {
	for len(src) >= 32 && len(dst) >= 22 {
		x := src[:32]
		y := dst[:22]
		xs := (*[32]float32)(x)
		m, mv := firstAbsMax32(xs)
		max := math.Float32frombits(mv)
		finite := m < 0x7f800000
		if !finite {
			_, max = argMaxAbs(x)
		}
		d := max / -16
		var id float32
		if d != 0 {
			id = 1 / d
		}
		putF16(y, d)
		if finite && fabs(id) <= math.MaxFloat32 {
			binary.LittleEndian.PutUint32(y[2:], nibbles(xs, 0, id, 16.5, 31, (*[16]byte)(y[6:22])))
			src, dst = src[32:], dst[22:]
			continue
		}
		var qh uint32
		q := y[6:22]
		for j := range 16 {
			a := int32(int8(cvtt(float32(x[j]*id) + 16.5)))
			b := int32(int8(cvtt(float32(x[j+16]*id) + 16.5)))
			a0, b0 := uint32(byte(min(31, a))), uint32(byte(min(31, b)))
			q[j] = byte(a0&0xf | (b0&0xf)<<4)
			qh |= (a0 & 0x10) >> 4 << j
			qh |= (b0 & 0x10) >> 4 << (j + 16)
		}
		binary.LittleEndian.PutUint32(y[2:], qh)
		src, dst = src[32:], dst[22:]
	}
}

func decodeQ5_0(dst []float32, src []byte) {
	if useAVX2 {
		dst, src = legacyBlocks(dst, src, &q50Layout)
	}
	for len(dst) >= 32 && len(src) >= 22 {
		d := getF16(src)
		qh := binary.LittleEndian.Uint32(src[2:])
		q := src[6:22]
		y := dst[:32]
		for j := range 16 {
			h0 := (qh >> j << 4) & 0x10
			h1 := (qh >> (j + 12)) & 0x10
			y[j] = float32(int32(uint32(q[j]&0xf)|h0)-16) * d
			y[j+16] = float32(int32(uint32(q[j]>>4)|h1)-16) * d
		}
		dst, src = dst[32:], src[22:]
	}
}

// ---- q5_1 ----

func encodeQ5_1(dst []byte, src []float32) {
	for len(src) >= 32 && len(dst) >= 24 {
		x := src[:32]
		y := dst[:24]
		xs := (*[32]float32)(x)
		lo, hi, finite := minMaxFinite(xs)
		if !finite {
			lo, hi = minMax(x)
		}
		d := (hi - lo) / 31
		var id float32
		if d != 0 {
			id = 1 / d
		}
		putF16(y, d)
		putF16(y[2:], lo)
		if finite && fabs(d) <= math.MaxFloat32 && fabs(id) <= math.MaxFloat32 {
			// No clamp in q5_1: the codes stay within 0..31 here anyway.
			binary.LittleEndian.PutUint32(y[4:], nibbles(xs, lo, id, 0.5, math.MaxInt32, (*[16]byte)(y[8:24])))
			src, dst = src[32:], dst[24:]
			continue
		}
		var qh uint32
		q := y[8:24]
		for j := range 16 {
			// (uint8_t) cast of the float: no clamp in q5_1.
			a := uint32(byte(cvtt(float32((x[j]-lo)*id) + 0.5)))
			b := uint32(byte(cvtt(float32((x[j+16]-lo)*id) + 0.5)))
			q[j] = byte(a&0xf | (b&0xf)<<4)
			qh |= (a & 0x10) >> 4 << j
			qh |= (b & 0x10) >> 4 << (j + 16)
		}
		binary.LittleEndian.PutUint32(y[4:], qh)
		src, dst = src[32:], dst[24:]
	}
}

func decodeQ5_1(dst []float32, src []byte) {
	if useAVX2 {
		dst, src = legacyBlocks(dst, src, &q51Layout)
	}
	for len(dst) >= 32 && len(src) >= 24 {
		d := getF16(src)
		m := getF16(src[2:])
		qh := binary.LittleEndian.Uint32(src[4:])
		q := src[8:24]
		y := dst[:32]
		for j := range 16 {
			h0 := (qh >> j << 4) & 0x10
			h1 := (qh >> (j + 12)) & 0x10
			y[j] = float32(float32(uint32(q[j]&0xf)|h0)*d) + m
			y[j+16] = float32(float32(uint32(q[j]>>4)|h1)*d) + m
		}
		dst, src = dst[32:], src[24:]
	}
}
