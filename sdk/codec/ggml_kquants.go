package codec

import (
	"encoding/binary"
	"math"
	"sync"
	"unsafe"

	"github.com/sluice-ml/sluice/sdk/tensor"
)

// ggml's K-quants: super-blocks of 256 elements. Layouts (little-endian):
//
//	q2_K  84 B: scales[16] (low nibble scale, high nibble min) | qs[64] | d f16 | dmin f16
//	q3_K 110 B: hmask[32] | qs[64] | scales[12] (16 × 6 bits) | d f16
//	q4_K 144 B: d f16 | dmin f16 | scales[12] (8 scales + 8 mins, 6 bits) | qs[128]
//	q5_K 176 B: d f16 | dmin f16 | scales[12] | qh[32] | qs[128]
//	q6_K 210 B: ql[128] | qh[64] | scales[16] int8 | d f16
//	q8_K 292 B: d f32 | qs[256] int8 | bsums[16] int16   (decode only)

func init() {
	register(tensor.Q2_K, &format{blockSize: 256, blockBytes: 84, decode: decodeQ2_K, encode: encodeQ2_K})
	register(tensor.Q3_K, &format{blockSize: 256, blockBytes: 110, decode: decodeQ3_K, encode: encodeQ3_K})
	register(tensor.Q4_K, &format{blockSize: 256, blockBytes: 144, decode: decodeQ4_K, encode: encodeQ4_K})
	register(tensor.Q5_K, &format{blockSize: 256, blockBytes: 176, decode: decodeQ5_K, encode: encodeQ5_K})
	register(tensor.Q6_K, &format{blockSize: 256, blockBytes: 210, decode: decodeQ6_K, encode: encodeQ6_K})
	register(tensor.Q8_K, &format{blockSize: 256, blockBytes: 292, decode: decodeQ8_K})
}

// groupMaxEps is ggml's GROUP_MAX_EPS: groups below it are treated as zero.
const groupMaxEps = 1e-15

func clampI32(v, lo, hi int32) int32 {
	return max(lo, min(hi, v))
}

// levelF holds the float32 value of every level, to avoid int→float
// conversions in the inner loops.
var levelF = func() (t [64]float32) {
	for i := range t {
		t[i] = float32(i)
	}
	return t
}()

// setDiff sets d[i] = x[i] - m.
func setDiff(d, x []float32, m float32) {
	d = d[:len(x)]
	for i, v := range x {
		d[i] = v - m
	}
}

// roundLevels sets cur[i] to nearestInt(iscale·x[i]) clamped to [lo, hi],
// as float32, and reports whether cur already held exactly those values.
// len(cur) must be a multiple of 4 and len(x) ≥ len(cur).
func roundLevels(cur, x []float32, iscale float32, lo, hi int32) (same bool) {
	if len(cur) == 0 {
		return true
	}
	x = x[:len(cur)]
	if useSSE2 {
		return roundClampSSE2(&cur[0], &x[0], len(cur), iscale, lo, hi)
	}
	return roundLevelsGo(cur, x, iscale, lo, hi)
}

func roundLevelsGo(cur, x []float32, iscale float32, lo, hi int32) (same bool) {
	x = x[:len(cur)]
	var diff uint32
	for i, v := range x {
		fl := float32(clampI32(nearestInt(float32(iscale*v)), lo, hi))
		diff |= math.Float32bits(fl) ^ math.Float32bits(cur[i])
		cur[i] = fl
	}
	return diff == 0
}

// qkx2State is makeQKX2's state after its first guess: the group's
// minimum (at most 0) and maximum, the sums of the weights and of w·x, and
// the first guess's scale and weighted error.
type qkx2State struct {
	mn, mx, sumW, sumX, scale, best float32
}

// qkx2Start is makeQKX2 up to its search: it writes the first guess's
// levels to L and x - mn to xm. A group whose maximum equals its minimum
// (flat) gets levels 0, a state holding only mn and mx, and its result is
// (0, -mn).
func qkx2Start(nmax int32, x, weights []float32, L []uint8, xm []float32, useMad bool) (st qkx2State, flat bool) {
	n := len(x)
	weights, L, xm = weights[:n], L[:n], xm[:n]
	mn, mx := x[0], x[0]
	sumW := weights[0]
	sumX := float32(sumW * x[0])
	for i := 1; i < n; i++ {
		if x[i] < mn {
			mn = x[i]
		}
		if x[i] > mx {
			mx = x[i]
		}
		w := weights[i]
		sumW += w
		sumX += float32(w * x[i])
	}
	if mn > 0 {
		mn = 0
	}
	if mx == mn {
		clear(L)
		return qkx2State{mn: mn, mx: mx}, true
	}
	setDiff(xm, x, mn)
	iscale := float32(nmax) / (mx - mn)
	scale := 1 / iscale
	var bestError float32
	for i, v := range x {
		l := clampI32(nearestInt(float32(iscale*xm[i])), 0, nmax)
		L[i] = uint8(l)
		diff := float32(float32(scale*levelF[l])+mn) - v
		if useMad {
			diff = fabs(diff)
		} else {
			diff = float32(diff * diff)
		}
		bestError += float32(weights[i] * diff)
	}
	return qkx2State{mn: mn, mx: mx, sumW: sumW, sumX: sumX, scale: scale, best: bestError}, false
}

// makeQKX2 is ggml's make_qkx2_quants: it searches nstep+1 candidate scales
// for the (scale, min) pair with the smallest weighted error, writing the
// levels to L. It returns the scale and the negated min. len(x) is at most
// 32.
//
// It computes exactly what the C code computes, restructured for speed:
//   - x - min is kept per element and recomputed only when min changes;
//   - a candidate whose levels equal the previous candidate's has the same
//     sums, hence the same error, so it cannot be accepted (the previous one
//     either was, setting the best error to that value, or was not) and is
//     skipped.
func makeQKX2(nmax int32, x, weights []float32, L []uint8, rmin, rdelta float32, nstep int, useMad bool) (scale, theMin float32) {
	n := len(x)
	var xmA [32]float32
	xm := xmA[:n]
	st, flat := qkx2Start(nmax, x, weights, L, xm, useMad)
	if flat {
		return 0, -st.mn
	}
	weights, L = weights[:n], L[:n]
	mn, mx, sumW, sumX := st.mn, st.mx, st.sumW, st.sumX
	scale, bestError := st.scale, st.best
	fnmax := float32(nmax)
	// Candidate levels are kept as float32 values; cur holds the previous
	// candidate's until roundLevels replaces them.
	var curA [32]float32
	cur := curA[:n]
	for is := 0; is <= nstep; is++ {
		iscale := float32(rmin+float32(rdelta*float32(is))) + fnmax
		iscale /= mx - mn
		if roundLevels(cur, xm, iscale, 0, nmax) && is > 0 {
			continue
		}
		var sumL, sumL2, sumXL float32
		for i, v := range x {
			fl := cur[i]
			wl := float32(weights[i] * fl)
			sumL += wl
			sumL2 += float32(wl * fl)
			sumXL += float32(wl * v)
		}
		D := float32(sumW*sumL2) - float32(sumL*sumL)
		if !(D > 0) {
			continue
		}
		thisScale := (float32(sumW*sumXL) - float32(sumX*sumL)) / D
		thisMin := (float32(sumL2*sumX) - float32(sumL*sumXL)) / D
		if thisMin > 0 {
			thisMin = 0
			thisScale = sumXL / sumL2
		}
		var curError float32
		if useMad {
			for i, v := range x {
				diff := float32(float32(thisScale*cur[i])+thisMin) - v
				curError += float32(weights[i] * fabs(diff))
			}
		} else {
			for i, v := range x {
				diff := float32(float32(thisScale*cur[i])+thisMin) - v
				curError += float32(weights[i] * float32(diff*diff))
			}
		}
		if curError < bestError {
			for i, fl := range cur {
				L[i] = uint8(fl)
			}
			bestError = curError
			scale = thisScale
			if math.Float32bits(thisMin) != math.Float32bits(mn) {
				mn = thisMin
				setDiff(xm, x, mn)
			}
		}
	}
	return scale, -mn
}

// makeQXQuants is ggml's make_qx_quants with rmse_type 1 and no importance
// weights (w = x²): it tries 19 scales around -nmax/max and keeps the one
// with the best weighted fit. Levels go to L, offset by nmax. len(x) is at
// most 32.
//
// As in makeQKX2, w and w·x are computed once, and a candidate whose levels
// equal the previous candidate's (or the first guess's) is skipped: its sums
// are the same, so accepting it again would leave every variable unchanged.
func makeQXQuants(nmax int32, x []float32, L []int8) float32 {
	n := len(x)
	L = L[:n]
	var mx, amax float32
	for _, v := range x {
		if ax := fabs(v); ax > amax {
			amax, mx = ax, v
		}
	}
	if amax < groupMaxEps {
		clear(L)
		return 0
	}
	var wA, wxA [32]float32
	w, wx := wA[:n], wxA[:n]
	for i, v := range x {
		w[i] = float32(v * v)
		wx[i] = float32(w[i] * v)
	}
	fnmax := float32(nmax)
	iscale := float32(-nmax) / mx
	var sumlx, suml2 float32
	var prevA [32]int8
	prev := prevA[:n]
	for i, v := range x {
		l := clampI32(nearestInt(float32(iscale*v)), -nmax, nmax-1)
		prev[i] = int8(l)
		fl := float32(l)
		sumlx += float32(wx[i] * fl)
		suml2 += float32(float32(w[i]*fl) * fl)
	}
	for i, l := range prev {
		L[i] = l + int8(nmax)
	}
	var scale float32
	if suml2 != 0 {
		scale = sumlx / suml2
	}
	best := float32(scale * sumlx)
	// cur holds the previous candidate's levels (first the initial guess's)
	// until roundLevels replaces them.
	var curA [32]float32
	cur := curA[:n]
	for i, l := range prev {
		cur[i] = float32(l)
	}
	for is := int32(-9); is <= 9; is++ {
		if is == 0 {
			continue
		}
		iscale = -(fnmax + float32(0.1*float32(is))) / mx
		if roundLevels(cur, x, iscale, -nmax, nmax-1) {
			continue
		}
		sumlx, suml2 = 0, 0
		for i, fl := range cur {
			sumlx += float32(wx[i] * fl)
			suml2 += float32(float32(w[i]*fl) * fl)
		}
		if suml2 > 0 && float32(sumlx*sumlx) > float32(best*suml2) {
			for i, fl := range cur {
				L[i] = int8(fl) + int8(nmax)
			}
			scale = sumlx / suml2
			best = float32(scale * sumlx)
		}
	}
	return scale
}

// makeQ3Quants is ggml's make_q3_quants with do_rmse: a greedy per-element
// refinement of the levels, up to 5 rounds. Levels go to L, offset by nmax.
// len(x) is at most 32; w = x² and w·x are computed once.
func makeQ3Quants(nmax int32, x []float32, L []int8) float32 {
	n := len(x)
	L = L[:n]
	var mx, amax float32
	for _, v := range x {
		if ax := fabs(v); ax > amax {
			amax, mx = ax, v
		}
	}
	if amax < groupMaxEps {
		clear(L)
		return 0
	}
	var wA, wxA [32]float32
	w, wx := wA[:n], wxA[:n]
	for i, v := range x {
		w[i] = float32(v * v)
		wx[i] = float32(w[i] * v)
	}
	iscale := float32(-nmax) / mx
	var sumlx, suml2 float32
	for i, v := range x {
		l := clampI32(nearestInt(float32(iscale*v)), -nmax, nmax-1)
		L[i] = int8(l)
		fl := float32(l)
		sumlx += float32(wx[i] * fl)
		suml2 += float32(float32(w[i]*fl) * fl)
	}
	for itry := 0; itry < 5; itry++ {
		changed := false
		for i, v := range x {
			li := float32(L[i])
			slx := sumlx - float32(wx[i]*li)
			if slx > 0 {
				sl2 := suml2 - float32(float32(w[i]*li)*li)
				newL := clampI32(nearestInt(float32(v*sl2)/slx), -nmax, nmax-1)
				if newL != int32(L[i]) {
					fl := float32(newL)
					slx += float32(wx[i] * fl)
					sl2 += float32(float32(w[i]*fl) * fl)
					if sl2 > 0 && float32(float32(slx*slx)*suml2) > float32(float32(sumlx*sumlx)*sl2) {
						L[i] = int8(newL)
						sumlx, suml2 = slx, sl2
						changed = true
					}
				}
			}
		}
		if !changed {
			break
		}
	}
	for i := range L {
		L[i] += int8(nmax)
	}
	if suml2 > 0 {
		return sumlx / suml2
	}
	return 0
}

// getScaleMinK4 unpacks the 6-bit scale and min of sub-block j from the
// 12-byte scales field of q4_K and q5_K.
func getScaleMinK4(j int, q []byte) (d, m uint8) {
	q = q[:12]
	if j < 4 {
		return q[j] & 63, q[j+4] & 63
	}
	return q[j+4]&0xf | (q[j-4]>>6)<<4, q[j+4]>>4 | (q[j]>>6)<<4
}

// ---- q2_K ----

// qkx2Scratch is the working memory of the make_qkx2_quants searches of
// q2_K, q4_K and q5_K: two octs and the hex the sixteen-lane kernel
// interleaves them into.
type qkx2Scratch struct {
	o [2]qkx2Oct
	h qkx2Hex
}

// qkx2ScratchPool holds qkx2Scratches for the encoders, which run once per
// chunk of 4096 elements: clearing 19 KiB of fresh stack for each call
// (rep stos at the encoder's entry) took 1.4 % of a Q4_K_M conversion. The
// searches write every field they read first, as they do for the second
// super-block of a chunk.
var qkx2ScratchPool = sync.Pool{New: func() any { return new(qkx2Scratch) }}

func encodeQ2_K(dst []byte, src []float32) {
	var L [256]int8
	qs := qkx2ScratchPool.Get().(*qkx2Scratch)
	defer qkx2ScratchPool.Put(qs)
	o, h := &qs.o, &qs.h
	var mins, scales [16]float32
	const q4scale = 15
	for len(src) >= 256 && len(dst) >= 84 {
		x := src[:256]
		y := dst[:84]
		var maxScale, maxMin float32
		q2Search16(x, o, h, scales[:], mins[:])
		for j := range 16 {
			if scales[j] > maxScale {
				maxScale = scales[j]
			}
			if mins[j] > maxMin {
				maxMin = mins[j]
			}
		}
		sc := y[:16]
		if maxScale > 0 {
			iscale := q4scale / maxScale
			for j := range 16 {
				sc[j] = uint8(nearestInt(float32(iscale * scales[j])))
			}
			putF16(y[80:], maxScale/q4scale)
		} else {
			clear(sc)
			putF16(y[80:], 0)
		}
		if maxMin > 0 {
			iscale := q4scale / maxMin
			for j := range 16 {
				sc[j] |= uint8(nearestInt(float32(iscale*mins[j])) << 4)
			}
			putF16(y[82:], maxMin/q4scale)
		} else {
			putF16(y[82:], 0)
		}
		dAll, dMin := getF16(y[80:]), getF16(y[82:])
		for j := range 16 {
			d := float32(dAll * float32(sc[j]&0xf))
			if d == 0 {
				o[j/8].levels(j%8, L[16*j:16*j+16])
				continue
			}
			dm := float32(dMin * float32(sc[j]>>4))
			divRound(L[16*j:16*j+16], x[16*j:16*j+16], dm, d, 0, 3, 0)
		}
		qs := y[16:80]
		for j := 0; j < 256; j += 128 {
			for l := range 32 {
				qs[j/4+l] = uint8(L[j+l]) | uint8(L[j+l+32])<<2 | uint8(L[j+l+64])<<4 | uint8(L[j+l+96])<<6
			}
		}
		src, dst = src[256:], dst[84:]
	}
}

func decodeQ2_K(dst []float32, src []byte) {
	for len(dst) >= 256 && len(src) >= 84 {
		b := src[:84]
		y := dst[:256]
		d, mn := getF16(b[80:]), getF16(b[82:])
		sc := b[:16]
		qs := b[16:80]
		k := 0
		for n := 0; n < 2; n++ {
			q := qs[32*n : 32*n+32]
			for shift := uint(0); shift < 8; shift += 2 {
				for half := 0; half < 2; half++ {
					s := sc[k/16]
					dl := float32(d * float32(s&0xf))
					ml := float32(mn * float32(s>>4))
					qq := q[16*half : 16*half+16]
					dq(y[k:k+16], qq, qq, dqK2[shift/2], dl, ml)
					k += 16
				}
			}
		}
		dst, src = dst[256:], src[84:]
	}
}

// ---- q3_K ----

// qxScratchPool holds the working memory of q3_K's and q6_K's encoders
// (q6_K uses the first qxScratch), which run once per chunk of 4096
// elements: clearing 55 KiB of fresh stack for each call cost q3_K's
// encoder 3 % of its time. Every field a search reads is written first.
var qxScratchPool = sync.Pool{New: func() any { return new([4]qxScratch) }}

func encodeQ3_K(dst []byte, src []float32) {
	var L [4][256]int8
	var scales [4][16]float32
	qs := qxScratchPool.Get().(*[4]qxScratch)
	defer qxScratchPool.Put(qs)
	for len(src) >= 1024 && len(dst) >= 440 {
		makeQ3Quants4x16x4(src[:1024], &L, &scales, qs)
		for k := range 4 {
			packQ3Block(dst[110*k:110*k+110], src[256*k:256*k+256], &L[k], &scales[k])
		}
		src, dst = src[1024:], dst[440:]
	}
	for len(src) >= 256 && len(dst) >= 110 {
		makeQ3Quants4x16(src[:256], L[0][:], scales[0][:], &qs[0])
		packQ3Block(dst[:110], src[:256], &L[0], &scales[0])
		src, dst = src[256:], dst[110:]
	}
}

// packQ3Block writes the q3_K block y[:110] of the super-block x from its
// groups' levels L and scales, as the search left them: the scales
// quantized to six bits against the largest, then every group's levels
// made again against its quantized scale.
func packQ3Block(y []byte, x []float32, L *[256]int8, scales *[16]float32) {
	y, x = y[:110], x[:256]
	var maxScale, amax float32
	for _, s := range scales {
		if a := fabs(s); a > amax {
			amax, maxScale = a, s
		}
	}
	sc := y[96:108]
	clear(sc)
	if maxScale != 0 {
		iscale := -32 / maxScale
		for j := range 16 {
			l := int8(nearestInt(float32(iscale * scales[j])))
			l = int8(clampI32(int32(l), -32, 31) + 32)
			if j < 8 {
				sc[j] = uint8(l) & 0xf
			} else {
				sc[j-8] |= (uint8(l) & 0xf) << 4
			}
			l >>= 4
			sc[j%4+8] |= uint8(l) << (2 * (j / 4))
		}
		putF16(y[108:], 1/iscale)
	} else {
		putF16(y[108:], 0)
	}
	dAll := getF16(y[108:])
	for j := range 16 {
		d := float32(dAll * float32(q3Scale(sc, j)))
		if d == 0 {
			continue
		}
		divRound(L[16*j:16*j+16], x[16*j:16*j+16], 0, d, -4, 3, 4)
	}
	packQ3(y[:96], L)
}

// packQ3 writes hmask (y[:32]) and qs (y[32:96]) of q3_K from the levels
// 0..7 in L: bit 2 of element 32k+m is bit k of hmask[m], and qs[32h+m]
// holds the low two bits of elements 128h+m, +32, +64, +96 from bit 0 up.
// Eight elements at a time, as the bytes of a uint64.
func packQ3(y []byte, L *[256]int8) {
	y = y[:96]
	b := (*[256]byte)(unsafe.Pointer(L))
	const ones, threes = 0x0101010101010101, 0x0303030303030303
	for m := 0; m < 32; m += 8 {
		var u [8]uint64
		var h uint64
		for k := range u {
			u[k] = binary.LittleEndian.Uint64(b[32*k+m:])
			h |= (u[k] >> 2 & ones) << k
		}
		binary.LittleEndian.PutUint64(y[m:], h)
		for half := range 2 {
			var q uint64
			for t := range 4 {
				q |= (u[4*half+t] & threes) << (2 * t)
			}
			binary.LittleEndian.PutUint64(y[32+32*half+m:], q)
		}
	}
}

// q3Scale unpacks the signed 6-bit scale of sub-block j (0..15) from the
// 12-byte scales field of q3_K: low nibbles in bytes 0..7, high 2-bit pairs
// in bytes 8..11.
func q3Scale(sc []byte, j int) int8 {
	sc = sc[:12]
	var lo uint8
	if j < 8 {
		lo = sc[j] & 0xf
	} else {
		lo = sc[j-8] >> 4
	}
	hi := (sc[8+j%4] >> (2 * (j / 4))) & 3
	return int8(lo|hi<<4) - 32
}

func decodeQ3_K(dst []float32, src []byte) {
	for len(dst) >= 256 && len(src) >= 110 {
		b := src[:110]
		y := dst[:256]
		dAll := getF16(b[108:])
		hmask := b[:32]
		qs := b[32:96]
		sc := b[96:108]
		k, is, hb := 0, 0, 0
		for n := 0; n < 2; n++ {
			q := qs[32*n : 32*n+32]
			for shift := uint(0); shift < 8; shift += 2 {
				for half := 0; half < 2; half++ {
					dl := float32(dAll * float32(q3Scale(sc, is)))
					is++
					// Bit hb of hmask is bit 2 of the level, which is offset by 4.
					dq(y[k:k+16], q[16*half:16*half+16], hmask[16*half:16*half+16], dqK3[hb], dl, 0)
					k += 16
				}
				hb++
			}
		}
		dst, src = dst[256:], src[110:]
	}
}

// ---- q4_K and q5_K ----

// k4Encode is encodeQ4_K (q5 false) and encodeQ5_K (q5 true): for each
// super-block of src and its block in dst, the per-32 (scale, min) search
// (k4Search8, or k4Search16 for two super-blocks at once), the packed scales
// and mins (packK4Scales), the levels from them (requantK4), and the levels
// packed (packQ4K, packQ5K).
func k4Encode(dst []byte, src []float32, q5 bool) {
	size, nmax, rmin, nstep := 144, int32(15), float32(-1), 20
	if q5 {
		size, nmax, rmin, nstep = 176, 31, -0.5, 15
	}
	var L [256]int8
	qs := qkx2ScratchPool.Get().(*qkx2Scratch)
	defer qkx2ScratchPool.Put(qs)
	o, h := &qs.o, &qs.h
	var scales, mins [2][8]float32
	for len(src) >= 256 && len(dst) >= size {
		n := 1
		if useAVX512 && len(src) >= 512 && len(dst) >= 2*size {
			n = 2
			k4Search16(nmax, src[:256], src[256:512], &o[0], &o[1], h, rmin, nstep, &scales, &mins)
		} else {
			k4Search8(nmax, src[:256], &o[0], rmin, nstep, scales[0][:], mins[0][:])
		}
		for k := range n {
			x, y := src[256*k:256*k+256], dst[size*k:size*k+size]
			dAll, dMin := packK4Scales(&scales[k], &mins[k], y)
			requantK4(x, y, dAll, dMin, nmax, &o[k], &L)
			if q5 {
				packQ5K(y, &L)
			} else {
				packQ4K(y, &L)
			}
		}
		src, dst = src[256*n:], dst[size*n:]
	}
}

// packK4Scales is the common second step of q4_K and q5_K: the 6-bit
// packing of the search's scales and mins into y[4:16], and d and dmin
// into y[0:4]. It returns the fp16-rounded d and dmin.
func packK4Scales(scales, mins *[8]float32, y []byte) (dAll, dMin float32) {
	var maxScale, maxMin float32
	for j := range 8 {
		if scales[j] > maxScale {
			maxScale = scales[j]
		}
		if mins[j] > maxMin {
			maxMin = mins[j]
		}
	}
	var invScale, invMin float32
	if maxScale > 0 {
		invScale = 63 / maxScale
	}
	if maxMin > 0 {
		invMin = 63 / maxMin
	}
	sc := y[4:16]
	for j := range 8 {
		ls := min(63, uint8(nearestInt(float32(invScale*scales[j]))))
		lm := min(63, uint8(nearestInt(float32(invMin*mins[j]))))
		if j < 4 {
			sc[j] = ls
			sc[j+4] = lm
		} else {
			sc[j+4] = ls&0xf | (lm&0xf)<<4
			sc[j-4] |= (ls >> 4) << 6
			sc[j] |= (lm >> 4) << 6
		}
	}
	putF16(y, maxScale/63)
	putF16(y[2:], maxMin/63)
	return getF16(y), getF16(y[2:])
}

// requantK4 sets the levels of q4_K and q5_K (nmax 15, 31) from the packed
// scales in y: nearestInt((x + dmin·m)/(d·sc)) clamped to [0, nmax] for
// every group whose d·sc is not 0, the search's levels in o for the others.
func requantK4(x []float32, y []byte, dAll, dMin float32, nmax int32, o *qkx2Oct, L *[256]int8) {
	for j := range 8 {
		s, m := getScaleMinK4(j, y[4:16])
		d := float32(dAll * float32(s))
		lj, xj := L[32*j:32*j+32], x[32*j:32*j+32]
		if d == 0 {
			o.levels(j, lj)
			continue
		}
		dm := float32(dMin * float32(m))
		divRound32(lj, xj, dm, d, 0, nmax, 0)
	}
}

func encodeQ4_K(dst []byte, src []float32) { k4Encode(dst, src, false) }

// packQ4K packs q4_K's levels L (0..15) into the block y: elements j and
// j+32 of each 64 in one byte, low nibble first. Eight bytes at a time, as
// the bytes of a uint64.
func packQ4K(y []byte, L *[256]int8) {
	qs := y[16:144]
	b := (*[256]byte)(unsafe.Pointer(L))
	for j := 0; j < 256; j += 64 {
		for m := 0; m < 32; m += 8 {
			lo := binary.LittleEndian.Uint64(b[j+m:])
			hi := binary.LittleEndian.Uint64(b[j+32+m:])
			binary.LittleEndian.PutUint64(qs[j/2+m:], lo|hi<<4)
		}
	}
}

// k4ScalesMins fills dm[16i..16i+15] with d·sc and dmin·m of the eight
// sub-blocks of the n q4_K or q5_K blocks (size bytes each) at src.
func k4ScalesMins(dm *[16 * 16]float32, src []byte, size, n int) {
	for i := range n {
		b := src[size*i : size*i+16]
		d, mn := getF16(b), getF16(b[2:])
		for j := range 8 {
			s, m := getScaleMinK4(j, b[4:16])
			dm[16*i+2*j] = float32(d * float32(s))
			dm[16*i+2*j+1] = float32(mn * float32(m))
		}
	}
}

func decodeQ4_K(dst []float32, src []byte) {
	if useSSE2 {
		// Up to 16 blocks at a time: their sub-block scales and mins
		// first, then the kernel.
		var dm [16 * 16]float32
		for len(dst) >= 256 && len(src) >= 144 {
			n := min(16, len(dst)/256, len(src)/144)
			k4ScalesMins(&dm, src, 144, n)
			if useAVX2 {
				kBlocksAVX2(&dst[0], &src[16], nil, 144, &dm[0], n)
			} else {
				k4BlocksSSE2(&dst[0], &src[16], 144, &dm[0], n)
			}
			dst, src = dst[256*n:], src[144*n:]
		}
		return
	}
	for len(dst) >= 256 && len(src) >= 144 {
		b := src[:144]
		y := dst[:256]
		d, mn := getF16(b), getF16(b[2:])
		sc := b[4:16]
		qs := b[16:144]
		for j := range 4 {
			s1, m1 := getScaleMinK4(2*j, sc)
			s2, m2 := getScaleMinK4(2*j+1, sc)
			d1, mm1 := float32(d*float32(s1)), float32(mn*float32(m1))
			d2, mm2 := float32(d*float32(s2)), float32(mn*float32(m2))
			q := qs[32*j : 32*j+32]
			dq(y[64*j:64*j+32], q, q, dqK4Lo, d1, mm1)
			dq(y[64*j+32:64*j+64], q, q, dqK4Hi, d2, mm2)
		}
		dst, src = dst[256:], src[144:]
	}
}

func encodeQ5_K(dst []byte, src []float32) { k4Encode(dst, src, true) }

// packQ5K packs q5_K's levels L (0..31) into the block y: the fifth bits
// into qh, bit 2k of qh[m] for element 64k+m and bit 2k+1 for element
// 64k+32+m, and the low four as q4_K packs them. Eight elements at a time,
// as the bytes of a uint64: branches on each level's fifth bit, which
// random data sets half the time, cost more than the packing.
func packQ5K(y []byte, L *[256]int8) {
	qh := y[16:48]
	ql := y[48:176]
	b := (*[256]byte)(unsafe.Pointer(L))
	const ones, lows = 0x0101010101010101, 0x0f0f0f0f0f0f0f0f
	for m := 0; m < 32; m += 8 {
		var h uint64
		for k := range 4 {
			lo := binary.LittleEndian.Uint64(b[64*k+m:])
			hi := binary.LittleEndian.Uint64(b[64*k+32+m:])
			h |= (lo>>4&ones)<<(2*k) | (hi>>4&ones)<<(2*k+1)
			binary.LittleEndian.PutUint64(ql[32*k+m:], lo&lows|(hi&lows)<<4)
		}
		binary.LittleEndian.PutUint64(qh[m:], h)
	}
}

func decodeQ5_K(dst []float32, src []byte) {
	if useSSE2 {
		var dm [16 * 16]float32
		for len(dst) >= 256 && len(src) >= 176 {
			n := min(16, len(dst)/256, len(src)/176)
			k4ScalesMins(&dm, src, 176, n)
			if useAVX2 {
				kBlocksAVX2(&dst[0], &src[48], &src[16], 176, &dm[0], n)
			} else {
				k5BlocksSSE2(&dst[0], &src[48], &src[16], 176, &dm[0], n)
			}
			dst, src = dst[256*n:], src[176*n:]
		}
		return
	}
	for len(dst) >= 256 && len(src) >= 176 {
		b := src[:176]
		y := dst[:256]
		d, mn := getF16(b), getF16(b[2:])
		sc := b[4:16]
		qh := b[16:48]
		ql := b[48:176]
		for j := range 4 {
			s1, m1 := getScaleMinK4(2*j, sc)
			s2, m2 := getScaleMinK4(2*j+1, sc)
			d1, mm1 := float32(d*float32(s1)), float32(mn*float32(m1))
			d2, mm2 := float32(d*float32(s2)), float32(mn*float32(m2))
			// Bit 2j of qh[l] is bit 4 of the low level, bit 2j+1 of the high.
			q := ql[32*j : 32*j+32]
			dq(y[64*j:64*j+32], q, qh, dqK5Lo[j], d1, mm1)
			dq(y[64*j+32:64*j+64], q, qh, dqK5Hi[j], d2, mm2)
		}
		dst, src = dst[256:], src[176:]
	}
}

// ---- q6_K ----

func encodeQ6_K(dst []byte, src []float32) {
	var L [256]int8
	var scales [16]float32
	qs := qxScratchPool.Get().(*[4]qxScratch)
	defer qxScratchPool.Put(qs)
	for len(src) >= 256 && len(dst) >= 210 {
		x := src[:256]
		y := dst[:210]
		var maxScale, maxAbsScale float32
		makeQXQuants32x16(x, L[:], scales[:], &qs[0])
		for _, s := range scales {
			if a := fabs(s); a > maxAbsScale {
				maxAbsScale, maxScale = a, s
			}
		}
		if maxAbsScale < groupMaxEps {
			clear(y)
			src, dst = src[256:], dst[210:]
			continue
		}
		iscale := -128 / maxScale
		putF16(y[208:], 1/iscale)
		sc := y[192:208]
		for ib := range 16 {
			sc[ib] = uint8(min(127, nearestInt(float32(iscale*scales[ib]))))
		}
		dAll := getF16(y[208:])
		for j := range 16 {
			d := float32(dAll * float32(int8(sc[j])))
			if d == 0 {
				continue
			}
			divRound(L[16*j:16*j+16], x[16*j:16*j+16], 0, d, -32, 31, 32)
		}
		packQ6K(y, &L)
		src, dst = src[256:], dst[210:]
	}
}

// packQ6K packs q6_K's levels L (0..63) into the block y: in each half of
// 128 elements, elements l, l+32, l+64, l+96 have their low four bits in
// the nibbles of ql bytes l and l+32 and their high two in bits 0–7 of qh
// byte l. Eight elements at a time, as the bytes of a uint64.
func packQ6K(y []byte, L *[256]int8) {
	ql := y[:128]
	qh := y[128:192]
	b := (*[256]byte)(unsafe.Pointer(L))
	const lows, threes = 0x0f0f0f0f0f0f0f0f, 0x0303030303030303
	for j := 0; j < 256; j += 128 {
		for m := 0; m < 32; m += 8 {
			a := binary.LittleEndian.Uint64(b[j+m:])
			c := binary.LittleEndian.Uint64(b[j+32+m:])
			e := binary.LittleEndian.Uint64(b[j+64+m:])
			f := binary.LittleEndian.Uint64(b[j+96+m:])
			binary.LittleEndian.PutUint64(ql[j/2+m:], a&lows|(e&lows)<<4)
			binary.LittleEndian.PutUint64(ql[j/2+32+m:], c&lows|(f&lows)<<4)
			binary.LittleEndian.PutUint64(qh[j/4+m:], a>>4&threes|(c>>4&threes)<<2|(e>>4&threes)<<4|(f>>4&threes)<<6)
		}
	}
}

func decodeQ6_K(dst []float32, src []byte) {
	for len(dst) >= 256 && len(src) >= 210 {
		b := src[:210]
		y := dst[:256]
		d := getF16(b[208:])
		for n := 0; n < 2; n++ {
			ql := b[64*n : 64*n+64]
			qh := b[128+32*n : 128+32*n+32]
			sc := b[192+8*n : 192+8*n+8]
			out := y[128*n : 128*n+128]
			if useSSE2 {
				// Element 32t+l: nibble t/2 of ql[l+32(t%2)], bits 2t, 2t+1 of qh[l].
				for t := range 4 {
					q := ql[32*(t%2) : 32*(t%2)+32]
					for h := range 2 {
						dl := float32(d * float32(int8(sc[h+2*t])))
						dq(out[32*t+16*h:32*t+16*h+16], q[16*h:16*h+16], qh[16*h:16*h+16], dqK6[t], dl, 0)
					}
				}
				continue
			}
			for l := range 32 {
				is := l / 16
				q1 := int8(ql[l]&0xf|(qh[l]&3)<<4) - 32
				q2 := int8(ql[l+32]&0xf|((qh[l]>>2)&3)<<4) - 32
				q3 := int8(ql[l]>>4|((qh[l]>>4)&3)<<4) - 32
				q4 := int8(ql[l+32]>>4|((qh[l]>>6)&3)<<4) - 32
				out[l] = float32(d*float32(int8(sc[is]))) * float32(q1)
				out[l+32] = float32(d*float32(int8(sc[is+2]))) * float32(q2)
				out[l+64] = float32(d*float32(int8(sc[is+4]))) * float32(q3)
				out[l+96] = float32(d*float32(int8(sc[is+6]))) * float32(q4)
			}
		}
		dst, src = dst[256:], src[210:]
	}
}

// ---- q8_K (decode only) ----

func decodeQ8_K(dst []float32, src []byte) {
	for len(dst) >= 256 && len(src) >= 292 {
		d := math.Float32frombits(binary.LittleEndian.Uint32(src))
		q := src[4:260]
		y := dst[:256]
		for j := range y {
			y[j] = d * float32(int8(q[j]))
		}
		dst, src = dst[256:], src[292:]
	}
}
