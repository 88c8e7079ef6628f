package codec

import (
	"encoding/binary"
	"math"
	"math/bits"

	"github.com/sluice-ml/sluice/sdk/tensor"
)

// ggml's ternary types (tq1_0, tq2_0), MXFP4 and the non-linear 4-bit types
// (iq4_nl, iq4_xs). Layouts (little-endian):
//
//	tq1_0   54 B: qs[48] (5 trits per byte) | qh[4] (4 trits per byte) | d f16
//	tq2_0   66 B: qs[64] (4 × 2 bits per byte) | d f16
//	mxfp4   17 B: e (E8M0 exponent) | qs[16] E2M1 codes, j low nibble, j+16 high
//	iq4_nl  18 B: d f16 | qs[16] indexes into kvaluesIQ4NL, j low, j+16 high
//	iq4_xs 136 B: d f16 | scales_h u16 | scales_l[4] | qs[128]

func init() {
	register(tensor.TQ1_0, &format{blockSize: 256, blockBytes: 54, decode: decodeTQ1_0, encode: encodeTQ1_0})
	register(tensor.TQ2_0, &format{blockSize: 256, blockBytes: 66, decode: decodeTQ2_0, encode: encodeTQ2_0})
	register(tensor.MXFP4, &format{blockSize: 32, blockBytes: 17, decode: decodeMXFP4, encode: encodeMXFP4})
	register(tensor.IQ4NL, &format{blockSize: 32, blockBytes: 18, decode: decodeIQ4NL, encode: encodeIQ4NL})
	register(tensor.IQ4XS, &format{blockSize: 256, blockBytes: 136, decode: decodeIQ4XS, encode: encodeIQ4XS})
}

// ---- tq1_0 ----

// packTrits packs n trits (each x·id rounded to -1, 0, 1 and offset by 1)
// most significant first, then scales the base-3 number to a byte by
// ceiling(q·256/243) so that the decoder can extract trits by multiplying.
func packTrits(q uint8) uint8 {
	return uint8((uint16(q)*256 + 242) / 243)
}

func encodeTQ1_0(dst []byte, src []float32) {
	for len(src) >= 256 && len(dst) >= 54 {
		x := src[:256]
		y := dst[:54]
		d := maxAbsMacro(x)
		var id float32
		if d != 0 {
			id = 1 / d
		}
		putF16(y[52:], d)
		trit := func(v float32) uint8 { return uint8(lroundf(float32(v*id)) + 1) }
		// 32 bytes of 5 trits: element m + 32n for n = 0..4.
		for m := range 32 {
			var q uint8
			for n := range 5 {
				q = q*3 + trit(x[m+32*n])
			}
			y[m] = packTrits(q)
		}
		// 16 bytes of 5 trits over elements 160..239: m + 16n.
		for m := range 16 {
			var q uint8
			for n := range 5 {
				q = q*3 + trit(x[160+m+16*n])
			}
			y[32+m] = packTrits(q)
		}
		// 4 bytes of 4 trits over elements 240..255: j + 4m, then one more
		// ×3 so the first trit is the most significant of five.
		for j := range 4 {
			var q uint8
			for m := range 4 {
				q = q*3 + trit(x[240+j+4*m])
			}
			y[48+j] = packTrits(q * 3)
		}
		src, dst = src[256:], dst[54:]
	}
}

var pow3 = [6]uint8{1, 3, 9, 27, 81, 243}

// trit extracts the next trit (0..2) from a byte scaled by packTrits, after
// multiplying it by 3^n.
func tritAt(b uint8, n int) float32 {
	q := b * pow3[n]
	return float32(int16((uint16(q)*3)>>8) - 1)
}

func decodeTQ1_0(dst []float32, src []byte) {
	for len(dst) >= 256 && len(src) >= 54 {
		b := src[:54]
		y := dst[:256]
		d := getF16(b[52:])
		if useSSE2 {
			tq1BlockSSE2(&y[0], &b[0], d)
			dst, src = dst[256:], src[54:]
			continue
		}
		k := 0
		for n := range 5 {
			for m := range 32 {
				y[k] = tritAt(b[m], n) * d
				k++
			}
		}
		for n := range 5 {
			for m := range 16 {
				y[k] = tritAt(b[32+m], n) * d
				k++
			}
		}
		for n := range 4 {
			for j := range 4 {
				y[k] = tritAt(b[48+j], n) * d
				k++
			}
		}
		dst, src = dst[256:], src[54:]
	}
}

// ---- tq2_0 ----

func encodeTQ2_0(dst []byte, src []float32) {
	for len(src) >= 256 && len(dst) >= 66 {
		x := src[:256]
		y := dst[:66]
		var d float32
		m, finite := finiteAbsMax(x)
		if finite {
			d = math.Float32frombits(m) // maxAbsMacro of finite values
		} else {
			d = maxAbsMacro(x)
		}
		var id float32
		if d != 0 {
			id = 1 / d
		}
		putF16(y[64:], d)
		if useSSE2 && finite && fabs(id) <= math.MaxFloat32 {
			// |x·id| ≤ 1 (rounded): the kernel's lroundf is exact.
			tq2PackSSE2(&y[0], &x[0], id)
			src, dst = src[256:], dst[66:]
			continue
		}
		for j := 0; j < 64; j += 32 {
			xs := x[4*j:]
			for m := range 32 {
				var q uint8
				for n := range 4 {
					xi := lroundf(float32(xs[m+32*n]*id)) + 1
					q += uint8(xi&3) << (2 * n)
				}
				y[j+m] = q
			}
		}
		src, dst = src[256:], dst[66:]
	}
}

func decodeTQ2_0(dst []float32, src []byte) {
	if useSSE2 {
		// Up to 64 blocks at a time: their scales first, then the kernel.
		var ds [64]float32
		t := f16Tab()
		for len(dst) >= 256 && len(src) >= 66 {
			n := min(len(ds), len(dst)/256, len(src)/66)
			for i := range ds[:n] {
				ds[i] = math.Float32frombits(t[binary.LittleEndian.Uint16(src[66*i+64:])])
			}
			tq2BlocksSSE2(&dst[0], &src[0], &ds[0], n)
			dst, src = dst[256*n:], src[66*n:]
		}
		return
	}
	for len(dst) >= 256 && len(src) >= 66 {
		b := src[:66]
		y := dst[:256]
		d := getF16(b[64:])
		k := 0
		for j := 0; j < 64; j += 32 {
			for l := range 4 {
				dq(y[k:k+32], b[j:j+32], b[j:j+32], dqT2[l], d, 0)
				k += 32
			}
		}
		dst, src = dst[256:], src[66:]
	}
}

// ---- mxfp4 ----

// kvaluesMXFP4 are the E2M1 values, doubled (ggml's kvalues_mxfp4).
var kvaluesMXFP4 = [16]int8{0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12}

// e8m0Half is ggml's GGML_E8M0_TO_FP32_HALF: 2^(e-128) as float32 bits,
// with the two smallest exponents as subnormals.
func e8m0Half(e uint8) float32 {
	if e < 2 {
		return math.Float32frombits(0x00200000 << e)
	}
	return math.Float32frombits(uint32(e-1) << 23)
}

// log2Floor is floorf(log2f(x)) for a finite x > 0, with glibc's
// correctly-rounded log2f: just below a power of two the float32 logarithm
// rounds up to the integer.
func log2Floor(x float32) float32 {
	return float32(math.Floor(float64(float32(math.Log2(float64(x))))))
}

// log2Thresh[e], for a biased float32 exponent e in 1..254, is the smallest
// mantissa (the low 23 bits) of a float32 x with that exponent for which
// float32(log2 x) rounds up to the next integer, or 1<<23 if none does.
// float32(log2 x) is non-decreasing in x, so a binary search finds it.
var log2Thresh = func() (t [256]uint32) {
	for e := uint32(1); e <= 254; e++ {
		next := float32(int32(e) - 126)
		lo, hi := uint32(0), uint32(1<<23) // answer in [lo, hi]
		for lo < hi {
			m := (lo + hi) / 2
			if float32(math.Log2(float64(math.Float32frombits(e<<23|m)))) >= next {
				hi = m
			} else {
				lo = m + 1
			}
		}
		t[e] = lo
	}
	return t
}()

// log2FloorInt is log2Floor for x > 0, by table for normal x: the exponent,
// plus one when float32(log2 x) rounds up to the next integer.
// TestLog2FloorInt compares it with log2Floor.
func log2FloorInt(x float32) int32 {
	b := math.Float32bits(x)
	e := b >> 23
	if e-1 >= 254 { // subnormal, or not finite
		return int32(log2Floor(x))
	}
	k := int32(e) - 127
	if b&0x7fffff >= log2Thresh[e] {
		k++
	}
	return k
}

// mxfp4CodesAll writes the E2M1 codes of x at scale e, as bestIndexMXFP4 would
// choose them. For x ≥ +0 no negative value can be strictly closer than
// index 0 (its error |v·e - x| ≥ |x|), and index 8 (also zero) only ties it,
// so only indexes 0..7 need checking; for x ≤ -0 only 0 and 9..15. The eight
// errors are compared as bits (equal order for non-negative floats, and a NaN
// x makes every error the same NaN), the first minimum winning.
func mxfp4CodesAll(q []byte, x []float32, e float32) {
	var p [16]float32
	for i, k := range kvaluesMXFP4 {
		p[i] = float32(float32(k) * e)
	}
	half := len(x) / 2
	q = q[:half]
	for j := range 2 * half {
		v := x[j]
		off := (math.Float32bits(v) >> 31) * 8
		c := (*[8]float32)(p[off : off+8])
		// p[0] - v is -v, exactly.
		best, idx := math.Float32bits(v)&0x7fffffff, uint32(0)
		if b := math.Float32bits(c[1]-v) & 0x7fffffff; b < best {
			best, idx = b, 1
		}
		if b := math.Float32bits(c[2]-v) & 0x7fffffff; b < best {
			best, idx = b, 2
		}
		if b := math.Float32bits(c[3]-v) & 0x7fffffff; b < best {
			best, idx = b, 3
		}
		if b := math.Float32bits(c[4]-v) & 0x7fffffff; b < best {
			best, idx = b, 4
		}
		if b := math.Float32bits(c[5]-v) & 0x7fffffff; b < best {
			best, idx = b, 5
		}
		if b := math.Float32bits(c[6]-v) & 0x7fffffff; b < best {
			best, idx = b, 6
		}
		if b := math.Float32bits(c[7]-v) & 0x7fffffff; b < best {
			idx = 7
		}
		if idx > 0 {
			idx += off
		}
		if j < half {
			q[j] = uint8(idx)
		} else {
			q[j-half] |= uint8(idx) << 4
		}
	}
}

// mxfp4Below maps floor(2t) to the largest index k ≤ 7 whose E2M1 value
// (in units of the scale: 0, 1, 2, 3, 4, 6, 8, 12) is ≤ t, for 0 ≤ t < 16.
var mxfp4Below = func() (tab [32]uint8) {
	for f := range tab {
		k := 0
		for k < 7 && 2*int(kvaluesMXFP4[k+1]) <= f {
			k++
		}
		tab[f] = uint8(k)
	}
	return tab
}()

// mxfp4Signed maps (sign, index of the magnitude) to the E2M1 code; zero is
// always code 0 (ggml's first index on ties).
var mxfp4Signed = [2][8]uint8{{0, 1, 2, 3, 4, 5, 6, 7}, {0, 9, 10, 11, 12, 13, 14, 15}}

// mxfp4Codes writes the E2M1 codes of x at scale e like mxfp4CodesAll. When
// e comes from the block's finite amax (e ≥ amax/16; the caller says so with
// scaled), |x|/e is below 16 and exact (e is a power of two), so a table finds
// the two values around |x|; every other value is strictly farther (they are
// at least e apart, while float32 rounding of errors below 16e moves them by
// far less), so comparing the two errors decides, the lower index on ties.
func mxfp4Codes(q []byte, x []float32, e float32, scaled bool) {
	if !scaled {
		mxfp4CodesAll(q, x, e)
		return
	}
	// a·(1/e) is a/e exactly, unless 1/e overflows (e = 2^-128): then
	// scale by 2 in two steps.
	inv, pre := 1/e, float32(1)
	if e < 0x1p-126 {
		inv, pre = 1/(e*0x1p24), 0x1p24
	}
	if useSSE2 && len(x) == 32 {
		q = q[:16]
		mxfp4CodesSSE2(&q[0], &x[0], e, pre, inv)
		return
	}
	// p[8] = +Inf stops the search at index 7.
	var p [9]float32
	for i := range 8 {
		p[i] = float32(float32(kvaluesMXFP4[i]) * e)
	}
	p[8] = float32(math.Inf(1))
	x = x[:len(x)/2*2]
	var codes [32]uint8
	for j, v := range x {
		a := fabs(v)
		k := uint32(mxfp4Below[int(float32(float32(a*pre)*inv)*2)&31]) & 7
		// Step to k+1 when its error is strictly smaller (errors are
		// non-negative, so their bits order like their values).
		d := int32(math.Float32bits(a-p[k])) - int32(math.Float32bits(p[k+1]-a))
		k += uint32(-d) >> 31
		codes[j&31] = mxfp4Signed[math.Float32bits(v)>>31][k&7]
	}
	half := len(x) / 2
	for j := range q[:half] {
		q[j] = codes[j&31] | codes[(j+half)&31]<<4
	}
}

func encodeMXFP4(dst []byte, src []float32) {
	for len(src) >= 32 && len(dst) >= 17 {
		x := src[:32]
		y := dst[:17]
		m, finite := finiteAbsMax(x)
		amax := math.Float32frombits(m)
		if !finite {
			amax, _ = argMaxAbs(x)
		}
		var e uint8
		if amax > 0 {
			if finite {
				// log2FloorInt(amax) is at least -149, so the sum fits
				// any float32 and cvtt is an exact conversion.
				e = uint8(log2FloorInt(amax) - 2 + 127)
			} else {
				e = uint8(cvtt(log2Floor(amax) - 2 + 127))
			}
		}
		y[0] = e
		mxfp4Codes(y[1:17], x, e8m0Half(e), finite)
		src, dst = src[32:], dst[17:]
	}
}

func decodeMXFP4(dst []float32, src []byte) {
	for len(dst) >= 32 && len(src) >= 17 {
		d := e8m0Half(src[0])
		q := src[1:17]
		y := dst[:32]
		for j := range 16 {
			y[j] = float32(kvaluesMXFP4[q[j]&0xf]) * d
			y[j+16] = float32(kvaluesMXFP4[q[j]>>4]) * d
		}
		dst, src = dst[32:], src[17:]
	}
}

// ---- iq4_nl and iq4_xs ----

// kvaluesIQ4NL is ggml's non-linear 4-bit codebook (kvalues_iq4nl).
var kvaluesIQ4NL = [16]int8{-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113}

// iq4Below maps floor(x)+128 to the largest index j ≤ 14 with
// kvaluesIQ4NL[j] ≤ floor(x), for -127 < x < 113. The codebook holds
// integers, so v ≤ x exactly when v ≤ floor(x).
var iq4Below = func() (t [241]uint8) {
	for k := range t {
		j := 0
		for j < 14 && int(kvaluesIQ4NL[j+1]) <= k-128 {
			j++
		}
		t[k] = uint8(j)
	}
	return t
}()

// bestIndexIQ4 is ggml's best_index_int8 over kvaluesIQ4NL: the index of the
// value nearest to x, the upper one on ties (and for NaN). The binary search
// of the C code ends at the last value ≤ x, found here by table.
func bestIndexIQ4(x float32) uint8 {
	if x > -127 && x < 113 {
		// float64(x)+128 is exact and positive, so the conversion floors.
		ml := iq4Below[int(float64(x)+128)]
		r := ml + 1
		if x-float32(kvaluesIQ4NL[ml&15]) < float32(kvaluesIQ4NL[r&15])-x {
			r = ml
		}
		return r
	}
	if x <= -127 {
		return 0
	}
	return 15 // x ≥ 113, or NaN
}

// iq4Levels is the codebook as float32 for the AVX-512 kernels: the sixteen
// values (the middle one, index 8, at byte 32), then the values from the
// second on with the last repeated (the value above each index).
var iq4Levels = func() (t [32]float32) {
	for i, v := range kvaluesIQ4NL {
		t[i] = float32(v)
		t[16+i] = float32(kvaluesIQ4NL[min(i+1, 15)])
	}
	return t
}()

// iq4Trials holds the sixteen trials of an iq4 block's scale search: for
// trial t, with q the codebook value nearest ids[t]·x and w = x², the sums
// over the block, in element order, of (w·q)·x and of (w·q)·q; the scale
// they give, sumQX/sumQ2 where sumQ2 > 0 and 0 elsewhere; best, that scale
// times sumQX; and sumQX². Bit t of better[i] is set when trial t beats
// trial i as ggml compares a trial with the best so far: sumQ2[t] > 0 and
// sq[t] > best[i]·sumQ2[t].
type iq4Trials struct {
	sumQX, sumQ2, d, best, sq [16]float32
	better                    [16]uint16
}

// winner returns the trial ggml's search ends with: it keeps the best so
// far, starting with trial 0, and takes each later trial that beats it. The
// comparisons of every pair are in better, so the search jumps from the
// trial it holds to the first later one that beats it.
func (tr *iq4Trials) winner() int {
	cur := 0
	for {
		m := uint32(tr.better[cur]) >> (cur + 1)
		if m == 0 {
			return cur
		}
		cur += 1 + bits.TrailingZeros32(m)
	}
}

// iq4Steps is the codebook arranged for the AVX2 kernels' binary search, a
// row of 16 lanes each (the kernels read the first eight): the first value;
// the middle value (index 8); the values the second, third and fourth steps
// look up from an index ml, at ml+4, ml+2 and ml+1 (rows indexed by ml/8,
// ml/4 and ml/2); then the steps 8, 4, 2 and 1 and the fourth step's last
// row index, 7, as int32.
var iq4Steps = func() (t [10][16]uint32) {
	v := func(i int) uint32 { return math.Float32bits(float32(kvaluesIQ4NL[min(i, 15)])) }
	for l := range 16 {
		t[0][l], t[1][l] = v(0), v(8)
		t[2][l], t[3][l], t[4][l] = v(8*(l%2)+4), v(4*(l%4)+2), v(2*(l%8)+1)
		t[5][l], t[6][l], t[7][l], t[8][l], t[9][l] = 8, 4, 2, 1, 7
	}
	return t
}()

// iq4Block is the per-32 scale search of ggml's quantize_row_iq4_nl_impl with
// no importance weights (w = x²) and ntry = 7: the first guess d = max/127
// and the 15 scales (itry-127)/max for itry in -7..7. It returns the block
// scale (0 for a block below groupMaxEps). The trials are independent, so
// they are computed side by side (iq4Trials16AVX512, iq4Trials16AVX2), with
// every pair's comparison, and the winner found from those in ggml's order.
func iq4Block(xb []float32) float32 {
	xb = xb[:32]
	// firstAbsMax32 is ggml's loop for blocks without NaNs; it takes a NaN
	// for the largest magnitude where ggml skips it, but a NaN anywhere in
	// the block makes every trial's sums NaN (its weight is NaN), and the
	// scale 0, whichever max the trials start from.
	m, v := firstAbsMax32((*[32]float32)(xb))
	amax, max := math.Float32frombits(m), math.Float32frombits(v)
	if amax < groupMaxEps {
		return 0
	}
	v0 := int(kvaluesIQ4NL[0])
	var ids [16]float32
	ids[0] = 1 / (-max / float32(v0))
	for t := 1; t < 16; t++ {
		ids[t] = float32(t-8+v0) / max
	}
	var tr iq4Trials
	switch {
	case useAVX512:
		iq4Trials16AVX512(&xb[0], &ids, &tr)
	case useAVX2:
		iq4Trials16AVX2(&xb[0], &ids, &tr)
	default:
		tr.search(xb, &ids)
	}
	return tr.d[tr.winner()]
}

// search runs the trials of the inverse scales ids on the 32 elements of xb.
func (tr *iq4Trials) search(xb []float32, ids *[16]float32) {
	xb = xb[:32]
	for t, id := range ids {
		var sumqx, sumq2 float32
		for _, v := range xb {
			q := float32(kvaluesIQ4NL[bestIndexIQ4(float32(id*v))])
			wq := float32(float32(v*v) * q)
			sumqx += float32(wq * v)
			sumq2 += float32(wq * q)
		}
		var d float32
		if sumq2 > 0 {
			d = sumqx / sumq2
		}
		tr.sumQX[t], tr.sumQ2[t] = sumqx, sumq2
		tr.d[t], tr.best[t], tr.sq[t] = d, float32(d*sumqx), float32(sumqx*sumqx)
	}
	for i, best := range tr.best {
		tr.better[i] = 0
		for t, sumq2 := range tr.sumQ2 {
			if sumq2 > 0 && tr.sq[t] > float32(best*sumq2) {
				tr.better[i] |= 1 << t
			}
		}
	}
}

// iq4Indexes sets L[j] to the index of the codebook value nearest id·x[j],
// for the 32 elements of x.
func iq4Indexes(L []uint8, x []float32, id float32) {
	L, x = L[:32], x[:32]
	switch {
	case useAVX512:
		iq4IndexAVX512(&L[0], &x[0], id, 32)
		return
	case useAVX2:
		iq4IndexAVX2(&L[0], &x[0], id, 32)
		return
	}
	for j, v := range x {
		L[j] = bestIndexIQ4(float32(id * v))
	}
}

func packIQ4(q []byte, L []uint8) {
	q, L = q[:16], L[:32]
	for j := range 16 {
		q[j] = L[j] | L[16+j]<<4
	}
}

func encodeIQ4NL(dst []byte, src []float32) {
	var L [32]uint8
	for len(src) >= 32 && len(dst) >= 18 {
		x := src[:32]
		y := dst[:18]
		s := iq4Block(x)
		putF16(y, s)
		var id float32
		if s != 0 {
			id = 1 / s
		}
		iq4Indexes(L[:], x, id)
		packIQ4(y[2:18], L[:])
		src, dst = src[32:], dst[18:]
	}
}

func decodeIQ4NL(dst []float32, src []byte) {
	for len(dst) >= 32 && len(src) >= 18 {
		d := getF16(src)
		q := src[2:18]
		y := dst[:32]
		for j := range 16 {
			y[j] = d * float32(kvaluesIQ4NL[q[j]&0xf])
			y[j+16] = d * float32(kvaluesIQ4NL[q[j]>>4])
		}
		dst, src = dst[32:], src[18:]
	}
}

func encodeIQ4XS(dst []byte, src []float32) {
	var L [256]uint8
	var scales [8]float32
	for len(src) >= 256 && len(dst) >= 136 {
		x := src[:256]
		y := dst[:136]
		var maxScale, amaxScale float32
		for ib := range 8 {
			s := iq4Block(x[32*ib : 32*ib+32])
			scales[ib] = s
			if a := fabs(s); a > amaxScale {
				amaxScale, maxScale = a, s
			}
		}
		d := -maxScale / 32
		putF16(y, d)
		var id float32
		if d != 0 {
			id = 1 / d
		}
		var scalesH uint16
		scalesL := y[4:8]
		for ib := range 8 {
			l := clampI32(nearestInt(float32(id*scales[ib])), -32, 31)
			dl := float32(d * float32(l))
			var idl float32
			if dl != 0 {
				idl = 1 / dl
			}
			iq4Indexes(L[32*ib:32*ib+32], x[32*ib:32*ib+32], idl)
			l += 32
			lo, hi := uint8(l&0xf), uint16(l>>4)
			if ib%2 == 0 {
				scalesL[ib/2] = lo
			} else {
				scalesL[ib/2] |= lo << 4
			}
			scalesH |= hi << (2 * ib)
		}
		y[2], y[3] = byte(scalesH), byte(scalesH>>8)
		for i := range 8 {
			packIQ4(y[8+16*i:8+16*i+16], L[32*i:32*i+32])
		}
		src, dst = src[256:], dst[136:]
	}
}

func decodeIQ4XS(dst []float32, src []byte) {
	for len(dst) >= 256 && len(src) >= 136 {
		b := src[:136]
		y := dst[:256]
		d := getF16(b)
		scalesH := uint16(b[2]) | uint16(b[3])<<8
		for ib := range 8 {
			ls := int32((b[4+ib/2]>>(4*(ib%2)))&0xf) | int32((scalesH>>(2*ib))&3)<<4
			dl := float32(d * float32(ls-32))
			q := b[8+16*ib : 8+16*ib+16]
			out := y[32*ib : 32*ib+32]
			for j := range 16 {
				out[j] = dl * float32(kvaluesIQ4NL[q[j]&0xf])
				out[j+16] = dl * float32(kvaluesIQ4NL[q[j]>>4])
			}
		}
		dst, src = dst[256:], src[136:]
	}
}
