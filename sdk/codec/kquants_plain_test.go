package codec

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/sluice-ml/sluice/sdk/tensor"
)

// Literal transliterations of ggml's make_qkx2_quants, make_qx_quants and
// make_q3_quants, statement by statement, with every product rounded to
// float32. The production versions in ggml_kquants.go are restructured for
// speed; TestKQuantHelpersMatchPlain checks that they agree bit for bit.

// makeQKX2Plain is ggml's make_qkx2_quants: it searches nstep+1 candidate scales
// for the (scale, min) pair with the smallest weighted error, writing the
// levels to L (Laux is scratch of the same length). It returns the scale and
// the negated min.
func makeQKX2Plain(nmax int32, x, weights []float32, L, Laux []uint8, rmin, rdelta float32, nstep int, useMad bool) (scale, theMin float32) {
	n := len(x)
	weights, L, Laux = weights[:n], L[:n], Laux[:n]
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
		return 0, -mn
	}
	fnmax := float32(nmax)
	iscale := fnmax / (mx - mn)
	scale = 1 / iscale
	var bestError float32
	for i, v := range x {
		l := clampI32(nearestInt(float32(iscale*(v-mn))), 0, nmax)
		L[i] = uint8(l)
		diff := float32(float32(scale*float32(l))+mn) - v
		if useMad {
			diff = fabs(diff)
		} else {
			diff = float32(diff * diff)
		}
		bestError += float32(weights[i] * diff)
	}
	for is := 0; is <= nstep; is++ {
		iscale = float32(rmin+float32(rdelta*float32(is))) + fnmax
		iscale /= mx - mn
		var sumL, sumL2, sumXL float32
		for i, v := range x {
			l := clampI32(nearestInt(float32(iscale*(v-mn))), 0, nmax)
			Laux[i] = uint8(l)
			fl := float32(l)
			wl := float32(weights[i] * fl)
			sumL += wl
			sumL2 += float32(wl * fl)
			sumXL += float32(wl * v)
		}
		D := float32(sumW*sumL2) - float32(sumL*sumL)
		if D > 0 {
			thisScale := (float32(sumW*sumXL) - float32(sumX*sumL)) / D
			thisMin := (float32(sumL2*sumX) - float32(sumL*sumXL)) / D
			if thisMin > 0 {
				thisMin = 0
				thisScale = sumXL / sumL2
			}
			var curError float32
			for i, v := range x {
				diff := float32(float32(thisScale*float32(Laux[i]))+thisMin) - v
				if useMad {
					diff = fabs(diff)
				} else {
					diff = float32(diff * diff)
				}
				curError += float32(weights[i] * diff)
			}
			if curError < bestError {
				copy(L, Laux)
				bestError = curError
				scale = thisScale
				mn = thisMin
			}
		}
	}
	return scale, -mn
}

// makeQXQuantsPlain is ggml's make_qx_quants with rmse_type 1 and no importance
// weights (w = x²): it tries 19 scales around -nmax/max and keeps the one
// with the best weighted fit. Levels go to L, offset by nmax.
func makeQXQuantsPlain(nmax int32, x []float32, L []int8) float32 {
	L = L[:len(x)]
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
	fnmax := float32(nmax)
	iscale := float32(-nmax) / mx
	var sumlx, suml2 float32
	for i, v := range x {
		l := clampI32(nearestInt(float32(iscale*v)), -nmax, nmax-1)
		L[i] = int8(l + nmax)
		fl := float32(l)
		w := float32(v * v)
		sumlx += float32(float32(w*v) * fl)
		suml2 += float32(float32(w*fl) * fl)
	}
	var scale float32
	if suml2 != 0 {
		scale = sumlx / suml2
	}
	best := float32(scale * sumlx)
	for is := int32(-9); is <= 9; is++ {
		if is == 0 {
			continue
		}
		iscale = -(fnmax + float32(0.1*float32(is))) / mx
		sumlx, suml2 = 0, 0
		for _, v := range x {
			l := clampI32(nearestInt(float32(iscale*v)), -nmax, nmax-1)
			fl := float32(l)
			w := float32(v * v)
			sumlx += float32(float32(w*v) * fl)
			suml2 += float32(float32(w*fl) * fl)
		}
		if suml2 > 0 && float32(sumlx*sumlx) > float32(best*suml2) {
			for i, v := range x {
				l := clampI32(nearestInt(float32(iscale*v)), -nmax, nmax-1)
				L[i] = int8(nmax + l)
			}
			scale = sumlx / suml2
			best = float32(scale * sumlx)
		}
	}
	return scale
}

// makeQ3QuantsPlain is ggml's make_q3_quants with do_rmse: a greedy per-element
// refinement of the levels, up to 5 rounds. Levels go to L, offset by nmax.
func makeQ3QuantsPlain(nmax int32, x []float32, L []int8) float32 {
	L = L[:len(x)]
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
	iscale := float32(-nmax) / mx
	var sumlx, suml2 float32
	for i, v := range x {
		l := clampI32(nearestInt(float32(iscale*v)), -nmax, nmax-1)
		L[i] = int8(l)
		fl := float32(l)
		w := float32(v * v)
		sumlx += float32(float32(w*v) * fl)
		suml2 += float32(float32(w*fl) * fl)
	}
	for itry := 0; itry < 5; itry++ {
		changed := false
		for i, v := range x {
			w := float32(v * v)
			li := float32(L[i])
			slx := sumlx - float32(float32(w*v)*li)
			if slx > 0 {
				sl2 := suml2 - float32(float32(w*li)*li)
				newL := clampI32(nearestInt(float32(v*sl2)/slx), -nmax, nmax-1)
				if newL != int32(L[i]) {
					fl := float32(newL)
					slx += float32(float32(w*v) * fl)
					sl2 += float32(float32(w*fl) * fl)
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

// adversarialBlock fills x with one of several kinds of hard input: plain
// normal data at a random scale, ties, constants, denormals, huge values,
// a few NaNs or infinities.
func adversarialBlock(r *rand.Rand, x []float32) {
	scale := float32(math.Pow(10, r.Float64()*76-38))
	for i := range x {
		x[i] = float32(r.NormFloat64()) * scale
	}
	switch r.IntN(12) {
	case 0:
		x[r.IntN(len(x))] = float32(math.NaN())
	case 1:
		x[r.IntN(len(x))] = float32(math.Inf(1 - 2*r.IntN(2)))
	case 2:
		for i := range x {
			x[i] = math.Float32frombits(uint32(r.IntN(1<<23)) | uint32(r.IntN(2))<<31)
		}
	case 3:
		clear(x)
		if r.IntN(2) == 0 {
			x[r.IntN(len(x))] = float32(math.Copysign(0, -1))
		}
	case 4:
		for i := range x {
			x[i] = float32(r.IntN(33)-16) / 2 * scale
		}
	case 5:
		c := float32(r.NormFloat64())
		for i := range x {
			x[i] = c
		}
	case 6:
		for i := range x {
			x[i] = float32(r.IntN(3)-1) * scale
		}
	case 7:
		for i := range x {
			x[i] = float32(r.NormFloat64() * 1e38)
		}
	case 8:
		for i := range x {
			x[i] = float32(r.Float64()) * scale
		}
	case 9:
		for i := range x {
			x[i] = -float32(r.Float64()) * scale
		}
	}
}

func sameFloat(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }

// TestKQuantHelpersMatchPlain checks the restructured K-quant helpers
// against the literal transliterations on random and adversarial groups.
func TestKQuantHelpersMatchPlain(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var x, w [32]float32
	var l1, l2, laux [32]uint8
	var i1, i2 [32]int8
	params := []struct {
		n            int
		nmax         int32
		rmin, rdelta float32
		nstep        int
		mad          bool
	}{{16, 3, -0.5, 0.1, 15, true}, {32, 15, -1, 0.1, 20, false}, {32, 31, -0.5, 0.1, 15, false}}
	for iter := 0; iter < 20000; iter++ {
		p := params[iter%len(params)]
		xs, ws := x[:p.n], w[:p.n]
		adversarialBlock(r, xs)
		for i, v := range xs {
			ws[i] = fabs(v) + float32(r.Float64())
		}
		s1, m1 := makeQKX2(p.nmax, xs, ws, l1[:p.n], p.rmin, p.rdelta, p.nstep, p.mad)
		s2, m2 := makeQKX2Plain(p.nmax, xs, ws, l2[:p.n], laux[:p.n], p.rmin, p.rdelta, p.nstep, p.mad)
		if !sameFloat(s1, s2) || !sameFloat(m1, m2) || l1 != l2 {
			t.Fatalf("makeQKX2(%v) on %v:\n got %v %v %v\nwant %v %v %v", p, xs, s1, m1, l1[:p.n], s2, m2, l2[:p.n])
		}
		adversarialBlock(r, x[:16])
		a, b := makeQXQuants(32, x[:16], i1[:16]), makeQXQuantsPlain(32, x[:16], i2[:16])
		if !sameFloat(a, b) || i1 != i2 {
			t.Fatalf("makeQXQuants on %v: got %v %v, want %v %v", x[:16], a, i1[:16], b, i2[:16])
		}
		a, b = makeQ3Quants(4, x[:16], i1[:16]), makeQ3QuantsPlain(4, x[:16], i2[:16])
		if !sameFloat(a, b) || i1 != i2 {
			t.Fatalf("makeQ3Quants on %v: got %v %v, want %v %v", x[:16], a, i1[:16], b, i2[:16])
		}
	}
}

// TestMXFP4CodesMatchPlain checks the shortcut search against ggml's
// 16-way best_index_mxfp4 on random values at every exponent.
func TestMXFP4CodesMatchPlain(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var x [32]float32
	var q [16]byte
	for iter := 0; iter < 20000; iter++ {
		adversarialBlock(r, x[:])
		e, scaled := e8m0Half(uint8(r.IntN(256))), false
		if iter%2 == 0 {
			amax, _ := argMaxAbs(x[:])
			if amax > 0 {
				e = e8m0Half(uint8(cvtt(log2Floor(amax) - 2 + 127)))
			} else {
				e = e8m0Half(0)
			}
			_, scaled = finiteAbsMax(x[:])
		}
		mxfp4Codes(q[:], x[:], e, scaled)
		for j := range 16 {
			want := bestIndexMXFP4(x[j], e) | bestIndexMXFP4(x[j+16], e)<<4
			if q[j] != want {
				t.Fatalf("e=%g x=%g,%g: got %#02x, want %#02x", e, x[j], x[j+16], q[j], want)
			}
		}
	}
}

// bestIndexInt8Plain is ggml's best_index_int8, binary search and all.
func bestIndexInt8Plain(val []int8, x float32) uint8 {
	n := len(val)
	if x <= float32(val[0]) {
		return 0
	}
	if x >= float32(val[n-1]) {
		return uint8(n - 1)
	}
	ml, mu := 0, n-1
	for mu-ml > 1 {
		mav := (ml + mu) / 2
		if x < float32(val[mav]) {
			mu = mav
		} else {
			ml = mav
		}
	}
	if x-float32(val[mu-1]) < float32(val[mu])-x {
		return uint8(mu - 1)
	}
	return uint8(mu)
}

// TestBestIndexIQ4MatchesPlain compares the table lookup with the binary
// search around every codebook value and midpoint, and on random values.
func TestBestIndexIQ4MatchesPlain(t *testing.T) {
	check := func(x float32) {
		if got, want := bestIndexIQ4(x), bestIndexInt8Plain(kvaluesIQ4NL[:], x); got != want {
			t.Fatalf("bestIndexIQ4(%g) = %d, want %d", x, got, want)
		}
	}
	for _, v := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 0, float32(math.Copysign(0, -1))} {
		check(v)
	}
	for k := -130; k <= 130; k++ {
		for _, c := range []float32{float32(k), float32(k) + 0.5} {
			check(c)
			for d, lo, hi := 0, c, c; d < 4; d++ {
				lo, hi = math.Nextafter32(lo, -1000), math.Nextafter32(hi, 1000)
				check(lo)
				check(hi)
			}
		}
	}
	r := rand.New(rand.NewPCG(5, 6))
	for range 200000 {
		check(float32(r.NormFloat64() * 80))
	}
}

// TestKernelsMatchGo compares the SSE2 kernels with their Go twins on
// random and adversarial input (on platforms without them it compares the
// Go code with itself).
func TestKernelsMatchGo(t *testing.T) {
	if !useSSE2 {
		t.Skip("no SSE2 kernels on this platform")
	}
	r := rand.New(rand.NewPCG(7, 8))
	var x [32]float32
	for iter := 0; iter < 20000; iter++ {
		adversarialBlock(r, x[:])
		scale := float32(r.NormFloat64() * math.Pow(10, float64(r.IntN(9)-4)))
		lo, hi := int32(r.IntN(64)-32), int32(r.IntN(64))
		if lo > hi {
			lo, hi = hi, lo
		}
		var a, b [32]float32
		for i := range a {
			a[i] = float32(r.IntN(4))
		}
		b = a
		sa := roundClampSSE2(&a[0], &x[0], 32, scale, lo, hi)
		sb := roundLevelsGo(b[:], x[:], scale, lo, hi)
		for i := range a {
			if math.Float32bits(a[i]) != math.Float32bits(b[i]) || sa != sb {
				t.Fatalf("roundClampSSE2(%g·%g, %d..%d) = %g (same %v), Go %g (same %v)", scale, x[i], lo, hi, a[i], sa, b[i], sb)
			}
		}
		if lo2, hi2, ok := minMaxFinite(&x); ok {
			lo1, hi1 := minMax(x[:])
			if math.Float32bits(lo1) != math.Float32bits(lo2) || math.Float32bits(hi1) != math.Float32bits(hi2) {
				t.Fatalf("minMaxFinite(%v) = %g, %g; want %g, %g", x, lo2, hi2, lo1, hi1)
			}
		} else if allFinite(&x) {
			t.Fatalf("minMaxFinite(%v) reports non-finite input", x)
		}
		// nibbles: only finite, in-range input is promised.
		for i := range x {
			x[i] = float32(r.Float64() * 31.99)
		}
		hiN := []int32{15, 31, math.MaxInt32}[r.IntN(3)]
		var qa, qb [16]byte
		ha := nibblesSSE2(&x[0], 0, 1, 0, hiN, &qa[0])
		hb := nibblesGo(&x, 0, 1, 0, hiN, &qb)
		if qa != qb || ha != hb {
			t.Fatalf("nibbles(%v, hi %d): SSE2 %x %08x, Go %x %08x", x, hiN, qa, ha, qb, hb)
		}
	}
}

// TestNibbles4GoMatchesNibblesGo checks that the four-bit loop of the Go
// builds writes the nibbles nibblesGo writes, whose fifth bits are zero, in
// every build.
func TestNibbles4GoMatchesNibblesGo(t *testing.T) {
	r := rand.New(rand.NewPCG(43, 44))
	var x [32]float32
	for range 20000 {
		sub := float32(r.NormFloat64())
		for i := range x {
			x[i] = sub + float32(r.Float64()*16.99)
		}
		hi := int32(r.IntN(16))
		var qa, qb [16]byte
		nibbles4Go(&x, sub, 1, 0, hi, &qa)
		if qh := nibblesGo(&x, sub, 1, 0, hi, &qb); qa != qb || qh != 0 {
			t.Fatalf("nibbles(%v, sub %g, hi %d): four-bit %x, Go %x (fifth bits %08x)", x, sub, hi, qa, qb, qh)
		}
	}
}

// TestFirstAbsMaxMatchesLoop checks firstAbsMax32, and its Go path in
// every build, against ggml's loop.
func TestFirstAbsMaxMatchesLoop(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	var x [32]float32
	for iter := 0; iter < 20000; iter++ {
		adversarialBlock(r, x[:])
		if iter%3 == 0 { // ties of opposite sign
			x[r.IntN(32)] = -x[r.IntN(32)]
		}
		m, v := firstAbsMax32(&x)
		if mg, vg := firstAbsMax32Go(&x); mg != m || vg != v {
			t.Fatalf("firstAbsMax32Go(%v) = %#x %#x, firstAbsMax32 %#x %#x", x, mg, vg, m, v)
		}
		if m >= 0x7f800000 {
			continue // not finite: callers take the slow path
		}
		amax, max := argMaxAbs(x[:])
		if math.Float32bits(amax) != m || math.Float32bits(max) != v {
			t.Fatalf("firstAbsMax32(%v) = %#x %#x, want %#x %#x", x, m, v, math.Float32bits(amax), math.Float32bits(max))
		}
	}
}

// bestIndexMXFP4 is ggml's best_index_mxfp4: the index of the E2M1 value
// closest to x at scale e, the first one on ties.
func bestIndexMXFP4(x, e float32) uint8 {
	best := 0
	bestErr := fabs(float32(float32(kvaluesMXFP4[0])*e) - x)
	for i := 1; i < 16; i++ {
		if err := fabs(float32(float32(kvaluesMXFP4[i])*e) - x); err < bestErr {
			best, bestErr = i, err
		}
	}
	return uint8(best)
}

// TestSearch4MatchesScalar checks the four-group q6_K and q3_K searches
// against the literal transliterations, group by group, on random and
// adversarial groups (some below groupMaxEps).
func TestSearch4MatchesScalar(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	var x [64]float32
	var l1, l2 [64]int8
	var s1, s2 [4]float32
	for iter := 0; iter < 20000; iter++ {
		for g := range 4 {
			adversarialBlock(r, x[16*g:16*g+16])
			switch r.IntN(16) {
			case 0:
				for i := 16 * g; i < 16*g+16; i++ {
					x[i] *= 1e-16
				}
			case 1:
				// A NaN with a payload, which nearestInt turns into a
				// level far outside the clamp.
				x[16*g+r.IntN(16)] = math.Float32frombits(0x7FC00000 | uint32(r.IntN(1<<22)) | uint32(r.IntN(2))<<31)
			}
		}
		for k, nmax := range []int32{32, 4} {
			if k == 0 {
				makeQXQuants32x4(x[:], l1[:], s1[:])
			} else {
				makeQ3Quants4x4(x[:], l1[:], s1[:])
			}
			for g := range 4 {
				xs, ls := x[16*g:16*g+16], l2[16*g:16*g+16]
				if k == 0 {
					s2[g] = makeQXQuantsPlain(nmax, xs, ls)
				} else {
					s2[g] = makeQ3QuantsPlain(nmax, xs, ls)
				}
			}
			for g := range 4 {
				if !sameFloat(s1[g], s2[g]) || [16]int8(l1[16*g:]) != [16]int8(l2[16*g:]) {
					t.Fatalf("nmax %d group %d of %v:\n got %v %v\nwant %v %v", nmax, g, x[16*g:16*g+16], s1[g], l1[16*g:16*g+16], s2[g], l2[16*g:16*g+16])
				}
			}
		}
	}
}

// TestQuadKernelsMatchGo compares quadsLoadSSE2 and divRoundSSE2 with their
// Go twins on random and adversarial input (divRound's AVX-512 kernel too,
// where the CPU has it).
func TestQuadKernelsMatchGo(t *testing.T) {
	if !useSSE2 {
		t.Skip("no SSE2 kernels on this platform")
	}
	r := rand.New(rand.NewPCG(13, 14))
	var x [64]float32
	for iter := 0; iter < 20000; iter++ {
		for g := range 4 {
			adversarialBlock(r, x[16*g:16*g+16])
		}
		if iter%3 == 0 { // ties of opposite sign
			x[r.IntN(64)] = -x[r.IntN(64)]
		}
		var a, b quads
		quadsLoadSSE2(&a, &x[0])
		quadsLoadGo(&b, x[:])
		for i := range a.x {
			if !sameFloat(a.x[i], b.x[i]) || !sameFloat(a.w[i], b.w[i]) || !sameFloat(a.wx[i], b.wx[i]) {
				t.Fatalf("quadsLoad(%v) element %d: SSE2 %v %v %v, Go %v %v %v", x, i, a.x[i], a.w[i], a.wx[i], b.x[i], b.w[i], b.wx[i])
			}
		}
		for g := range 4 {
			if !sameFloat(a.mx[g], b.mx[g]) || !sameFloat(a.amax[g], b.amax[g]) {
				t.Fatalf("quadsLoad(%v) group %d: SSE2 mx %v amax %v, Go %v %v", x, g, a.mx[g], a.amax[g], b.mx[g], b.amax[g])
			}
		}
		d := float32(r.NormFloat64() * math.Pow(10, float64(r.IntN(80)-40)))
		if r.IntN(20) == 0 {
			d = []float32{0, float32(math.Inf(1)), float32(math.NaN()), 1e-45}[r.IntN(4)]
		}
		// q3_K's, q6_K's, q4_K's, q5_K's and q2_K's ranges and offsets.
		k := iter % 5
		lo, hi, off := []int32{-4, -32, 0, 0, 0}[k], []int32{3, 31, 15, 31, 3}[k], []int32{4, 32, 0, 0, 0}[k]
		var add float32
		if iter%4 != 0 {
			add = float32(r.NormFloat64()) * fabs(d) * 8
		}
		var la, lb [16]int8
		divRoundSSE2(&la[0], &x[0], add, d, lo, hi, off)
		divRoundGo(lb[:], x[:16], add, d, lo, hi, off)
		if la != lb {
			t.Fatalf("divRound((%v + %g) / %g): SSE2 %v, Go %v", x[:16], add, d, la, lb)
		}
		if useAVX512 {
			var lz, lg [32]int8
			divRoundAVX512(&lz[0], &x[0], add, d, lo, hi, off, 32)
			divRoundGo(lg[:16], x[:16], add, d, lo, hi, off)
			divRoundGo(lg[16:], x[16:32], add, d, lo, hi, off)
			if lz != lg {
				t.Fatalf("divRound((%v + %g) / %g): AVX-512 %v, Go %v", x[:32], add, d, lz, lg)
			}
		}
	}
}

// TestDequantKernelMatchesGo compares dqSSE2 with dqGo for every field
// layout the decoders use, on random bytes and scales (NaN and infinite
// scales included).
func TestDequantKernelMatchesGo(t *testing.T) {
	if !useSSE2 {
		t.Skip("no SSE2 kernels on this platform")
	}
	ps := []*dqParams{dqQ8, dqQ4Lo, dqQ4Hi, dqQ41Lo, dqQ41Hi, dqK4Lo, dqK4Hi}
	ps = append(ps, dqK5Lo[:]...)
	ps = append(ps, dqK5Hi[:]...)
	ps = append(ps, dqK2[:]...)
	ps = append(ps, dqK3[:]...)
	ps = append(ps, dqT2[:]...)
	ps = append(ps, dqK6[:]...)
	r := rand.New(rand.NewPCG(15, 16))
	var b, h [32]byte
	var ya, yb [32]float32
	for iter := 0; iter < 20000; iter++ {
		for i := range b {
			b[i], h[i] = byte(r.Uint32()), byte(r.Uint32())
		}
		d := Float16ToFloat32(uint16(r.Uint32()))
		m := Float16ToFloat32(uint16(r.Uint32()))
		p := ps[iter%len(ps)]
		n := 16 * (1 + r.IntN(2))
		dqSSE2(&ya[0], &b[0], &h[0], n, p, d, m)
		dqGo(yb[:n], b[:n], h[:n], p, d, m)
		for i := range n {
			if !sameFloat(ya[i], yb[i]) {
				t.Fatalf("dq(%+v, d %g, m %g) element %d of %x/%x: SSE2 %#08x, Go %#08x", *p, d, m, i, b, h, math.Float32bits(ya[i]), math.Float32bits(yb[i]))
			}
		}
	}
}

// TestDecodeQ8_0MatchesPlain compares decodeQ8_0 (the block kernel where
// there is one) with ggml's loop on random bytes, NaN and infinite scales
// included, for block counts around the kernel's batch of 64.
func TestDecodeQ8_0MatchesPlain(t *testing.T) { eachKernelSet(t, testDecodeQ8_0) }

func testDecodeQ8_0(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 18))
	for _, nb := range []int{1, 2, 63, 64, 65, 129, 300} {
		src := make([]byte, 34*nb)
		for i := range src {
			src[i] = byte(r.Uint32())
		}
		got := make([]float32, 32*nb)
		decodeQ8_0(got, src)
		for b := range nb {
			d := getF16(src[34*b:])
			for j := range 32 {
				want := float32(int8(src[34*b+2+j])) * d
				if !sameFloat(got[32*b+j], want) {
					t.Fatalf("block %d of %d, element %d: %#08x, want %#08x", b, nb, j, math.Float32bits(got[32*b+j]), math.Float32bits(want))
				}
			}
		}
	}
}

// TestDecodeTQ1_0MatchesPlain compares decodeTQ1_0 (its SSE2 kernel where
// there is one) with the scalar trit extraction on random blocks.
func TestDecodeTQ1_0MatchesPlain(t *testing.T) {
	r := rand.New(rand.NewPCG(19, 20))
	const nb = 50
	src := make([]byte, 54*nb)
	got := make([]float32, 256*nb)
	for iter := 0; iter < 100; iter++ {
		for i := range src {
			src[i] = byte(r.Uint32())
		}
		decodeTQ1_0(got, src)
		for bi := range nb {
			b := src[54*bi:]
			d := getF16(b[52:])
			y := got[256*bi:]
			k := 0
			check := func(v float32) {
				if !sameFloat(y[k], v) {
					t.Fatalf("block %d element %d: %#08x, want %#08x", bi, k, math.Float32bits(y[k]), math.Float32bits(v))
				}
				k++
			}
			for n := range 5 {
				for m := range 32 {
					check(tritAt(b[m], n) * d)
				}
			}
			for n := range 5 {
				for m := range 16 {
					check(tritAt(b[32+m], n) * d)
				}
			}
			for n := range 4 {
				for j := range 4 {
					check(tritAt(b[48+j], n) * d)
				}
			}
		}
	}
}

// TestQ3Search8MatchesScalar checks the two-quad q3_K search (SSE2, or Go)
// against the literal transliteration, group by group.
func TestQ3Search8MatchesScalar(t *testing.T) {
	var s qxScratch // reused, as encodeQ3_K does
	checkQ3Quants(t, 8, 21, func(x []float32, L []int8, scales []float32) { makeQ3Quants4x8(x, L, scales, &s) })
}

// TestQ3Quants4x16MatchesScalar holds q3_K's sixteen-lane search to the
// literal make_q3_quants, as TestQ3Search8MatchesScalar the two-quad one.
func TestQ3Quants4x16MatchesScalar(t *testing.T) {
	if !useAVX512 {
		t.Skip("this CPU has no AVX-512 (F and BW)")
	}
	var s qxScratch // reused, as encodeQ3_K does
	checkQ3Quants(t, 16, 23, func(x []float32, L []int8, scales []float32) { makeQ3Quants4x16(x, L, scales, &s) })
}

// TestQ3Quants4x16AVX2MatchesScalar holds q3_K's two eight-lane searches of
// a super-block in one AVX2 kernel to the literal make_q3_quants.
func TestQ3Quants4x16AVX2MatchesScalar(t *testing.T) {
	if !useAVX2 {
		t.Skip("this CPU has no AVX2")
	}
	defer func(v bool) { useAVX512 = v }(useAVX512)
	useAVX512 = false
	var s qxScratch // reused, as encodeQ3_K does
	checkQ3Quants(t, 16, 27, func(x []float32, L []int8, scales []float32) { makeQ3Quants4x16(x, L, scales, &s) })
}

// TestQ3Quants4x16x4MatchesScalar holds q3_K's search of four super-blocks
// at once to the literal make_q3_quants.
func TestQ3Quants4x16x4MatchesScalar(t *testing.T) {
	if !useAVX512 {
		t.Skip("this CPU has no AVX-512 (F and BW)")
	}
	var s [4]qxScratch // reused, as encodeQ3_K does
	var L [4][256]int8
	var scales [4][16]float32
	checkQ3Quants(t, 64, 25, func(x []float32, l []int8, sc []float32) {
		makeQ3Quants4x16x4(x, &L, &scales, &s)
		for k := range 4 {
			copy(l[256*k:], L[k][:])
			copy(sc[16*k:], scales[k][:])
		}
	})
}

// TestQxScratchLayout checks the offsets q3Search4x16AVX512 finds a
// qxScratch's quads and hex at, its size, and the size of the octs
// q3Search16AVX2 steps over (QUADS, QXHEX, QXSCRATCH and QXOCT in
// kquants4_amd64.s).
func TestQxScratchLayout(t *testing.T) {
	var s qxScratch
	if got := unsafe.Sizeof(s.q[0]); got != 1328 {
		t.Errorf("quads are %d bytes, the kernel steps 1328", got)
	}
	if got := unsafe.Offsetof(s.o); got != 5312 {
		t.Errorf("qxScratch.o is at %d, the kernel reads it at 5312", got)
	}
	if got := unsafe.Sizeof(s); got != 13760 {
		t.Errorf("a qxScratch is %d bytes, the kernel steps 13760", got)
	}
	if got := unsafe.Sizeof(s.oct[0]); got != 2176 {
		t.Errorf("a qxOct is %d bytes, q3Search16AVX2 steps 2176", got)
	}
}

// checkQ3Quants runs search on 10,000 sets of groups of 16 (random and
// adversarial, some scaled down near groupMaxEps) against the literal
// make_q3_quants, group by group.
func checkQ3Quants(t *testing.T, groups int, seed uint64, search func(x []float32, L []int8, scales []float32)) {
	r := rand.New(rand.NewPCG(seed, seed+1))
	x := make([]float32, 16*groups)
	l1, l2 := make([]int8, 16*groups), make([]int8, 16*groups)
	s1, s2 := make([]float32, groups), make([]float32, groups)
	for iter := 0; iter < 10000; iter++ {
		for g := range groups {
			adversarialBlock(r, x[16*g:16*g+16])
			if r.IntN(16) == 0 {
				for i := 16 * g; i < 16*g+16; i++ {
					x[i] *= 1e-16
				}
			}
		}
		search(x, l1, s1)
		for g := range groups {
			s2[g] = makeQ3QuantsPlain(4, x[16*g:16*g+16], l2[16*g:16*g+16])
		}
		for g := range groups {
			if !sameFloat(s1[g], s2[g]) || [16]int8(l1[16*g:]) != [16]int8(l2[16*g:]) {
				t.Fatalf("group %d of %v:\n got %v %v\nwant %v %v", g, x[16*g:16*g+16], s1[g], l1[16*g:16*g+16], s2[g], l2[16*g:16*g+16])
			}
		}
	}
}

// decodeQ4_KPlain, decodeQ5_KPlain and decodeTQ2_0Plain are ggml's loops, for comparison
// with the block kernels.
func decodeQ4_KPlain(dst []float32, b []byte) {
	d, mn := getF16(b), getF16(b[2:])
	for j := range 4 {
		s1, m1 := getScaleMinK4(2*j, b[4:16])
		s2, m2 := getScaleMinK4(2*j+1, b[4:16])
		d1, mm1 := float32(d*float32(s1)), float32(mn*float32(m1))
		d2, mm2 := float32(d*float32(s2)), float32(mn*float32(m2))
		for l, v := range b[16+32*j : 16+32*j+32] {
			dst[64*j+l] = float32(d1*float32(v&0xf)) - mm1
			dst[64*j+l+32] = float32(d2*float32(v>>4)) - mm2
		}
	}
}

func decodeQ5_KPlain(dst []float32, b []byte) {
	d, mn := getF16(b), getF16(b[2:])
	qh := b[16:48]
	for j := range 4 {
		s1, m1 := getScaleMinK4(2*j, b[4:16])
		s2, m2 := getScaleMinK4(2*j+1, b[4:16])
		d1, mm1 := float32(d*float32(s1)), float32(mn*float32(m1))
		d2, mm2 := float32(d*float32(s2)), float32(mn*float32(m2))
		for l, v := range b[48+32*j : 48+32*j+32] {
			lo := v&0xf | (qh[l]>>(2*j)&1)<<4
			hi := v>>4 | (qh[l]>>(2*j+1)&1)<<4
			dst[64*j+l] = float32(d1*float32(lo)) - mm1
			dst[64*j+l+32] = float32(d2*float32(hi)) - mm2
		}
	}
}

func decodeTQ2_0Plain(dst []float32, b []byte) {
	d := getF16(b[64:])
	k := 0
	for j := 0; j < 64; j += 32 {
		for l := range 4 {
			for m := range 32 {
				dst[k] = float32(int32((b[j+m]>>(2*l))&3)-1) * d
				k++
			}
		}
	}
}

// TestBlockDecodersMatchPlain compares the q4_0, q4_1, q5_0, q5_1, q4_K, q5_K
// and tq2_0 decoders (block kernels where there are any) with ggml's loops on
// random bytes, NaN and infinite scales included, for block counts around the
// kernels' batches.
func TestBlockDecodersMatchPlain(t *testing.T) { eachKernelSet(t, testBlockDecoders) }

func testBlockDecoders(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	for _, c := range []struct {
		size, elems int
		decode      func([]float32, []byte)
		plain       func([]float32, []byte)
	}{
		{144, 256, decodeQ4_K, decodeQ4_KPlain}, {176, 256, decodeQ5_K, decodeQ5_KPlain}, {66, 256, decodeTQ2_0, decodeTQ2_0Plain},
		{18, 32, decodeQ4_0, decodeQ4_0Plain}, {20, 32, decodeQ4_1, decodeQ4_1Plain},
		{22, 32, decodeQ5_0, decodeQ5_0Plain}, {24, 32, decodeQ5_1, decodeQ5_1Plain},
	} {
		for _, nb := range []int{1, 15, 16, 17, 63, 64, 65, 100, 129} {
			src := make([]byte, c.size*nb)
			for i := range src {
				src[i] = byte(r.Uint32())
			}
			got := make([]float32, c.elems*nb)
			c.decode(got, src)
			want := make([]float32, c.elems)
			for b := range nb {
				c.plain(want, src[c.size*b:])
				for j, w := range want {
					if !sameFloat(got[c.elems*b+j], w) {
						t.Fatalf("%d-byte blocks: block %d of %d, element %d: %#08x, want %#08x", c.size, b, nb, j, math.Float32bits(got[c.elems*b+j]), math.Float32bits(w))
					}
				}
			}
		}
	}
}

// decodeQ4_0Plain is ggml's dequantize_row_q4_0 for one block.
func decodeQ4_0Plain(y []float32, b []byte) {
	d := getF16(b)
	for j := range 16 {
		x0 := int32(b[2+j]&0x0f) - 8
		x1 := int32(b[2+j]>>4) - 8
		y[j] = float32(x0) * d
		y[j+16] = float32(x1) * d
	}
}

// decodeQ4_1Plain is ggml's dequantize_row_q4_1 for one block.
func decodeQ4_1Plain(y []float32, b []byte) {
	d, m := getF16(b), getF16(b[2:])
	for j := range 16 {
		x0 := int32(b[4+j] & 0x0f)
		x1 := int32(b[4+j] >> 4)
		y[j] = float32(float32(x0)*d) + m
		y[j+16] = float32(float32(x1)*d) + m
	}
}

// decodeQ5_0Plain is ggml's dequantize_row_q5_0 for one block.
func decodeQ5_0Plain(y []float32, b []byte) {
	d := getF16(b)
	qh := uint32(b[2]) | uint32(b[3])<<8 | uint32(b[4])<<16 | uint32(b[5])<<24
	for j := range 16 {
		xh0 := ((qh >> j) << 4) & 0x10
		xh1 := (qh >> (j + 12)) & 0x10
		x0 := int32(uint32(b[6+j]&0x0f)|xh0) - 16
		x1 := int32(uint32(b[6+j]>>4)|xh1) - 16
		y[j] = float32(x0) * d
		y[j+16] = float32(x1) * d
	}
}

// decodeQ5_1Plain is ggml's dequantize_row_q5_1 for one block.
func decodeQ5_1Plain(y []float32, b []byte) {
	d, m := getF16(b), getF16(b[2:])
	qh := uint32(b[4]) | uint32(b[5])<<8 | uint32(b[6])<<16 | uint32(b[7])<<24
	for j := range 16 {
		xh0 := ((qh >> j) << 4) & 0x10
		xh1 := (qh >> (j + 12)) & 0x10
		x0 := int32(uint32(b[8+j]&0x0f) | xh0)
		x1 := int32(uint32(b[8+j]>>4) | xh1)
		y[j] = float32(float32(x0)*d) + m
		y[j+16] = float32(float32(x1)*d) + m
	}
}

// encodeTQ2_0Plain is ggml's quantize_row_tq2_0_ref for one block.
func encodeTQ2_0Plain(y []byte, x []float32) {
	d := maxAbsMacro(x[:256])
	var id float32
	if d != 0 {
		id = 1 / d
	}
	putF16(y[64:], d)
	for j := 0; j < 64; j += 32 {
		for m := range 32 {
			var q uint8
			for n := range 4 {
				xi := lroundf(float32(x[4*j+m+32*n]*id)) + 1
				q += uint8(xi&3) << (2 * n)
			}
			y[j+m] = q
		}
	}
}

// TestEncodeTQ2_0MatchesPlain checks the tq2_0 encoder (its SSE2 packing
// where there is one) against ggml's loop on adversarial blocks.
func TestEncodeTQ2_0MatchesPlain(t *testing.T) {
	r := rand.New(rand.NewPCG(25, 26))
	var x [256]float32
	var a, b [66]byte
	for iter := 0; iter < 5000; iter++ {
		for k := 0; k < 256; k += 32 {
			adversarialBlock(r, x[k:k+32])
		}
		if iter%5 == 0 { // one scale for the whole block
			adversarialBlock(r, x[:])
		}
		encodeTQ2_0(a[:], x[:])
		encodeTQ2_0Plain(b[:], x[:])
		if a != b {
			t.Fatalf("encodeTQ2_0(%v):\n got %x\nwant %x", x, a, b)
		}
	}
}

// encodeQ4_1Plain is ggml's quantize_row_q4_1_ref for one block.
func encodeQ4_1Plain(y []byte, x []float32) {
	lo, hi := minMax(x[:32])
	d := (hi - lo) / 15
	var id float32
	if d != 0 {
		id = 1 / d
	}
	putF16(y, d)
	putF16(y[2:], lo)
	for j := range 16 {
		a := int32(int8(cvtt(float32((x[j]-lo)*id) + 0.5)))
		b := int32(int8(cvtt(float32((x[j+16]-lo)*id) + 0.5)))
		y[4+j] = byte(min(15, a)) | byte(min(15, b))<<4
	}
}

// TestEncodeQ4_1MatchesPlain checks the q4_1 encoder (its one-call SSE2
// block where there is one) against ggml's loop on adversarial blocks.
func TestEncodeQ4_1MatchesPlain(t *testing.T) {
	r := rand.New(rand.NewPCG(27, 28))
	var x [32]float32
	var a, b [20]byte
	for iter := 0; iter < 20000; iter++ {
		adversarialBlock(r, x[:])
		if iter%4 == 0 { // zero extremes
			for i := range x {
				x[i] = fabs(x[i])
			}
			x[r.IntN(32)] = float32(math.Copysign(0, float64(r.IntN(2)*2-1)))
		}
		encodeQ4_1(a[:], x[:])
		encodeQ4_1Plain(b[:], x[:])
		if a != b {
			t.Fatalf("encodeQ4_1(%v):\n got %x\nwant %x", x, a, b)
		}
	}
}

// allFinite reports whether no element is ±Inf or NaN.
func allFinite(x *[32]float32) bool {
	m, _ := firstAbsMax32(x)
	return m < 0x7f800000
}

// TestMinMaxGoMatchesLoop checks minMaxGo, the Go path of minMaxFinite, in
// every build (the SSE2 builds use it nowhere else): on adversarial blocks,
// blocks of zeros of both signs and blocks at ±FLT_MAX, its minimum and
// maximum equal C's loop's for finite input (a zero's sign aside, which
// minMaxFinite looks up), and it tells finite blocks from the others.
func TestMinMaxGoMatchesLoop(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	var x [32]float32
	for iter := 0; iter < 20000; iter++ {
		adversarialBlock(r, x[:])
		switch iter % 5 {
		case 1: // zeros of both signs among positives or negatives
			sign := float32(1 - 2*r.IntN(2))
			for i := range x {
				x[i] = sign * fabs(x[i])
			}
			x[r.IntN(32)] = float32(math.Copysign(0, -1))
			x[r.IntN(32)] = 0
		case 2: // the extremes of the range
			x[r.IntN(32)] = math.MaxFloat32
			x[r.IntN(32)] = -math.MaxFloat32
		}
		lo, hi, finite := minMaxGo(&x)
		want := true
		for _, v := range x {
			want = want && !math.IsInf(float64(v), 0) && !math.IsNaN(float64(v))
		}
		if finite != want {
			t.Fatalf("minMaxGo(%v) finite %v, want %v", x, finite, want)
		}
		if !finite {
			continue
		}
		wlo, whi := minMax(x[:])
		if lo != wlo || hi != whi {
			t.Fatalf("minMaxGo(%v) = %g, %g; want %g, %g", x, lo, hi, wlo, whi)
		}
		if lo2, hi2, ok := minMaxFinite(&x); !ok || math.Float32bits(lo2) != math.Float32bits(wlo) || math.Float32bits(hi2) != math.Float32bits(whi) {
			t.Fatalf("minMaxFinite(%v) = %g, %g, %v; want %g, %g", x, lo2, hi2, ok, wlo, whi)
		}
	}
}

// encodeQ4_0Plain is ggml's quantize_row_q4_0_ref for one block.
func encodeQ4_0Plain(y []byte, x []float32) {
	amax, max := argMaxAbs(x[:32])
	_ = amax
	d := max / -8
	var id float32
	if d != 0 {
		id = 1 / d
	}
	putF16(y, d)
	for j := range 16 {
		a := int32(int8(cvtt(float32(x[j]*id) + 8.5)))
		b := int32(int8(cvtt(float32(x[j+16]*id) + 8.5)))
		y[2+j] = byte(min(15, a)) | byte(min(15, b))<<4
	}
}

// TestEncodeQ4_0MatchesPlain checks the q4_0 encoder (q40EncodeAVX2 where
// the CPU has AVX2, and the one-call SSE2 block) against ggml's loop on rows
// of 1 to 200 adversarial blocks: NaNs and infinities, which stop the AVX2
// kernel mid-row, blocks of zeros of either sign, ties of opposite sign
// (the first of the largest magnitude sets the sign of d) and scales whose
// 1/d overflows.
func TestEncodeQ4_0MatchesPlain(t *testing.T) {
	testBlockRows(t, 29, 18, encodeQ4_0, encodeQ4_0Plain, func(r *rand.Rand, xb []float32) {
		if r.IntN(4) == 0 { // ties of opposite sign
			xb[r.IntN(32)] = -xb[r.IntN(32)]
		}
	})
}

// TestK4Search8MatchesScalar checks the eight-group search of q4_K and q5_K
// (AVX2 and SSE2 kernels, where the CPU has them) against q4_K's weights and
// the literal make_qkx2_quants, group by group, on random and adversarial
// groups (some flat, some tiny, some with NaN or infinity).
func TestK4Search8MatchesScalar(t *testing.T) { eachKernelSet(t, testK4Search8) }

// eachKernelSet runs test without the AVX2 kernels (nor the AVX-512 ones,
// which the code selects only beside AVX2) and, where the CPU has AVX2, with
// them.
func eachKernelSet(t *testing.T, test func(*testing.T)) {
	sets := []bool{false}
	if useAVX2 {
		sets = append(sets, true)
	}
	defer func(avx2, avx512 bool) { useAVX2, useAVX512 = avx2, avx512 }(useAVX2, useAVX512)
	avx512 := useAVX512
	for _, avx2 := range sets {
		useAVX2, useAVX512 = avx2, avx2 && avx512
		t.Run(fmt.Sprintf("avx2=%v", avx2), test)
	}
}

// k4SearchParams are the searches the k4Search tests run: q4_K's, q5_K's,
// and a single candidate.
var k4SearchParams = []struct {
	nmax  int32
	rmin  float32
	nstep int
}{{15, -1, 20}, {31, -0.5, 15}, {15, -1, 0}}

func testK4Search8(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	var x [256]float32
	var w [32]float32
	var l1 [32]int8
	var l2 [256]uint8
	var laux [32]uint8
	var s1, m1 [8]float32
	var o qkx2Oct // reused, as encodeQ4_K does
	for iter := 0; iter < 10000; iter++ {
		p := k4SearchParams[iter%len(k4SearchParams)]
		for g := range 8 {
			xs := x[32*g : 32*g+32]
			adversarialGroup(r, xs)
		}
		k4Search8(p.nmax, x[:], &o, p.rmin, p.nstep, s1[:], m1[:])
		for g := range 8 {
			xs, ls := x[32*g:32*g+32], l2[32*g:32*g+32]
			k4Weights(xs, w[:])
			s2, m2 := makeQKX2Plain(p.nmax, xs, w[:], ls, laux[:], p.rmin, 0.1, p.nstep, false)
			o.levels(g, l1[:])
			same := true
			for i, l := range ls {
				same = same && l1[i] == int8(l)
			}
			if !sameFloat(s1[g], s2) || !sameFloat(m1[g], m2) || !same {
				t.Fatalf("%+v, group %d of %v:\n got %v %v %v\nwant %v %v %v", p, g, xs, s1[g], m1[g], l1, s2, m2, ls)
			}
		}
	}
}

// TestQXQuants32x16MatchesScalar checks q6_K's sixteen-group search of a
// super-block (AVX-512) against the literal make_qx_quants, group by group,
// on random and adversarial groups.
func TestQXQuants32x16MatchesScalar(t *testing.T) {
	if !useAVX512 {
		t.Skip("this CPU has no AVX-512 (F and BW)")
	}
	var s qxScratch // reused, as encodeQ6_K does
	checkQXQuants32(t, 16, 33, func(x []float32, L []int8, scales []float32) { makeQXQuants32x16(x, L, scales, &s) })
}

// TestK4Search16MatchesSearch8 checks the sixteen-lane search of two
// super-blocks (AVX-512) against k4Search8 on each, result by result and
// level by level, on random and adversarial groups, its octs reused as
// k4Encode reuses them.
func TestK4Search16MatchesSearch8(t *testing.T) {
	if !useAVX512 {
		t.Skip("this CPU has no AVX-512 (F and BW)")
	}
	r := rand.New(rand.NewPCG(41, 42))
	var x [2][256]float32
	var a, b, want qkx2Oct
	var h qkx2Hex
	var got, wantS, wantM [2][8]float32
	var gotM [2][8]float32
	var l1, l2 [32]int8
	for iter := 0; iter < 10000; iter++ {
		p := k4SearchParams[iter%len(k4SearchParams)]
		for k := range 2 {
			for g := range 8 {
				adversarialGroup(r, x[k][32*g:32*g+32])
			}
		}
		k4Search16(p.nmax, x[0][:], x[1][:], &a, &b, &h, p.rmin, p.nstep, &got, &gotM)
		for k, o := range []*qkx2Oct{&a, &b} {
			k4Search8(p.nmax, x[k][:], &want, p.rmin, p.nstep, wantS[k][:], wantM[k][:])
			for g := range 8 {
				o.levels(g, l1[:])
				want.levels(g, l2[:])
				if !sameFloat(got[k][g], wantS[k][g]) || !sameFloat(gotM[k][g], wantM[k][g]) || l1 != l2 {
					t.Fatalf("%+v, super-block %d, group %d of %v:\n got %v %v %v\nwant %v %v %v",
						p, k, g, x[k][32*g:32*g+32], got[k][g], gotM[k][g], l1, wantS[k][g], wantM[k][g], l2)
				}
			}
		}
	}
}

// TestQ2Search16MatchesSearch8 checks q2_K's sixteen-lane search of a
// super-block (AVX-512) against q2Search8 on each half, result by result
// and level by level, on random and adversarial groups of 16.
func TestQ2Search16MatchesSearch8(t *testing.T) {
	if !useAVX512 {
		t.Skip("this CPU has no AVX-512 (F and BW)")
	}
	r := rand.New(rand.NewPCG(45, 46))
	var x [256]float32
	var o [2]qkx2Oct
	var want qkx2Oct
	var h qkx2Hex
	var got, gotM, wantS, wantM [16]float32
	var l1, l2 [16]int8
	for iter := 0; iter < 10000; iter++ {
		for g := range 16 {
			adversarialGroup(r, x[16*g:16*g+16])
		}
		q2Search16(x[:], &o, &h, got[:], gotM[:])
		for k := range 2 {
			q2Search8(x[128*k:128*k+128], &want, wantS[8*k:8*k+8], wantM[8*k:8*k+8])
			for g := range 8 {
				o[k].levels(g, l1[:])
				want.levels(g, l2[:])
				j := 8*k + g
				if !sameFloat(got[j], wantS[j]) || !sameFloat(gotM[j], wantM[j]) || l1 != l2 {
					t.Fatalf("group %d of %v:\n got %v %v %v\nwant %v %v %v", j, x[16*j:16*j+16], got[j], gotM[j], l1, wantS[j], wantM[j], l2)
				}
			}
		}
	}
}

// TestK4EncodeSameWithAVX512 encodes rows of q2_K, q3_K, q4_K, q5_K and
// q6_K (odd and even numbers of super-blocks, q3_K's four at a time and
// those left over) with and without the AVX-512 searches and requires the
// same bytes.
func TestK4EncodeSameWithAVX512(t *testing.T) {
	if !useAVX512 {
		t.Skip("this CPU has no AVX-512 (F and BW)")
	}
	defer func(v bool) { useAVX512 = v }(useAVX512)
	r := rand.New(rand.NewPCG(43, 44))
	for _, dt := range []tensor.DType{tensor.Q2_K, tensor.Q3_K, tensor.Q4_K, tensor.Q5_K, tensor.Q6_K} {
		for _, blocks := range []int{1, 2, 3, 8, 33} {
			x := make([]float32, 256*blocks)
			for g := 0; g < len(x); g += 32 {
				adversarialGroup(r, x[g:g+32])
			}
			var out [2][]byte
			for i, avx512 := range []bool{false, true} {
				useAVX512 = avx512
				out[i] = mustBytes(t, dt, len(x))
				if err := EncodeFloat32(dt, out[i], x); err != nil {
					t.Fatal(err)
				}
			}
			if !bytes.Equal(out[0], out[1]) {
				t.Fatalf("%s, %d super-blocks: the AVX-512 search wrote other bytes", dt, blocks)
			}
		}
	}
}

// TestQXQuants32x8MatchesScalar checks q6_K's eight-group search (AVX2 where
// the CPU has it, and the SSE2 quads) against the literal make_qx_quants,
// group by group, on random and adversarial groups.
func TestQXQuants32x8MatchesScalar(t *testing.T) {
	var s qxScratch // reused, as encodeQ6_K does
	eachKernelSet(t, func(t *testing.T) {
		checkQXQuants32(t, 8, 31, func(x []float32, L []int8, scales []float32) { makeQXQuants32x8(x, L, scales, &s) })
	})
}

// checkQXQuants32 runs search, a makeQXQuants(32, ·) of groups consecutive
// groups of 16, on 10,000 sets of random and adversarial groups (the
// generator seeded with seed, seed+1), and compares each group's scale and
// levels with the literal make_qx_quants.
func checkQXQuants32(t *testing.T, groups int, seed uint64, search func(x []float32, L []int8, scales []float32)) {
	r := rand.New(rand.NewPCG(seed, seed+1))
	x := make([]float32, 16*groups)
	l1, l2 := make([]int8, 16*groups), make([]int8, 16*groups)
	s1 := make([]float32, groups)
	for iter := 0; iter < 10000; iter++ {
		for g := range groups {
			adversarialGroup(r, x[16*g:16*g+16])
		}
		search(x, l1, s1)
		for g := range groups {
			xs, ls := x[16*g:16*g+16], l2[16*g:16*g+16]
			s2 := makeQXQuantsPlain(32, xs, ls)
			if !sameFloat(s1[g], s2) || [16]int8(l1[16*g:]) != [16]int8(ls) {
				t.Fatalf("group %d of %v:\n got %v %v\nwant %v %v", g, xs, s1[g], l1[16*g:16*g+16], s2, ls)
			}
		}
	}
}

// adversarialGroup is adversarialBlock, and one time in three more: a tiny,
// flat or non-negative group, a NaN with a payload (which nearestInt turns
// into a level far outside any clamp), or magnitudes near MaxFloat32 (where
// scaled differences leave nearestInt's range).
func adversarialGroup(r *rand.Rand, xs []float32) {
	adversarialBlock(r, xs)
	switch r.IntN(15) {
	case 0:
		for i := range xs {
			xs[i] *= 1e-30
		}
	case 1:
		for i := range xs {
			xs[i] = xs[0]
		}
	case 2:
		for i := range xs {
			xs[i] = fabs(xs[i])
		}
	case 3:
		xs[r.IntN(len(xs))] = math.Float32frombits(0x7FC00000 | uint32(r.IntN(1<<22)) | uint32(r.IntN(2))<<31)
	case 4:
		for i := range xs {
			xs[i] = float32(r.NormFloat64()) * 3e38
		}
	}
}

// TestQ8RoundMatchesGo compares q8_0's SSE2 block maximum and rounding with
// plain loops and q8RoundGo on random and adversarial blocks, blocks of
// exact ties (k + 0.5 after scaling) and blocks at the ends of the range.
func TestQ8RoundMatchesGo(t *testing.T) {
	if !useSSE2 {
		t.Skip("no SSE2 kernels on this platform")
	}
	r := rand.New(rand.NewPCG(41, 42))
	var x [32]float32
	var a, b [32]byte
	for iter := 0; iter < 50000; iter++ {
		adversarialBlock(r, x[:])
		switch iter % 3 {
		case 1:
			for i := range x {
				x[i] = float32(r.IntN(254)-127) + 0.5*float32(r.IntN(2)*2-1)
			}
		case 2:
			x[r.IntN(32)] = float32(r.IntN(2)*2-1) * 127
		}
		m, finite := finiteAbsMax(x[:])
		var want uint32
		for _, v := range x {
			want = max(want, math.Float32bits(v)&0x7fffffff)
		}
		if m != want || finite != (want < 0x7f800000) {
			t.Fatalf("finiteAbsMax(%v) = %#x, %v; want %#x", x, m, finite, want)
		}
		amax := math.Float32frombits(m)
		d := amax / 127
		if !finite || d == 0 {
			continue
		}
		id := 1 / d
		if iter%3 == 1 {
			id = 1 // the ties stay ties
		}
		if id > 3.4e38 {
			continue
		}
		q8RoundSSE2(&x[0], id, &a[0])
		q8RoundGo(x[:], id, b[:])
		if a != b {
			t.Fatalf("q8_0 rounding of %v at %v: SSE2 %v, Go %v", x, id, a, b)
		}
	}
}

// plainQ8_0 is quantize_row_q8_0_ref, literally: per block of 32 the
// largest |x| by C's MAX, d = amax/127, id = 1/d (0 when d is 0), d as
// binary16 and each level roundf(x·id) as an int8.
func plainQ8_0(dst []byte, src []float32) {
	for len(src) >= 32 {
		x, y := src[:32], dst[:34]
		var amax float32
		for _, v := range x {
			if a := fabs(v); !(amax > a) { // MAX(amax, fabsf(v))
				amax = a
			}
		}
		d := amax / 127
		var id float32
		if d != 0 {
			id = 1 / d
		}
		putF16(y, d)
		for j, v := range x {
			y[2+j] = byte(int8(roundf(float32(v * id))))
		}
		src, dst = src[32:], dst[34:]
	}
}

// TestEncodeQ8_0MatchesPlain compares encodeQ8_0 (q8EncodeAVX2 where the CPU
// has AVX2, and the SSE2 block kernels) with plainQ8_0 on rows of 1 to 200
// blocks of random and adversarial data: NaNs and infinities, which stop the
// AVX2 kernel mid-row, scales whose 1/d overflows, ties and huge values.
func TestEncodeQ8_0MatchesPlain(t *testing.T) {
	testBlockRows(t, 61, 34, encodeQ8_0, plainQ8_0, nil)
}

// testBlockRows holds encode, a row encoder of blocks of 32 floats into
// blockBytes each, to plain, ggml's loop for one block, under each kernel
// set, on 3000 rows of 1 to 200 blocks: each block adversarial
// (adversarialGroup), one in four of them plain normal data between the hard
// ones, then shaped by vary when it is not nil.
func testBlockRows(t *testing.T, seed uint64, blockBytes int, encode, plain func([]byte, []float32), vary func(*rand.Rand, []float32)) {
	eachKernelSet(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(seed, seed+1))
		x := make([]float32, 32*200)
		got := make([]byte, blockBytes*200)
		want := make([]byte, blockBytes*200)
		for iter := 0; iter < 3000; iter++ {
			n := 1 + r.IntN(200)
			for b := range n {
				xb := x[32*b : 32*b+32]
				adversarialGroup(r, xb)
				if r.IntN(4) == 0 {
					for i := range xb {
						xb[i] = float32(r.NormFloat64())
					}
				}
				if vary != nil {
					vary(r, xb)
				}
			}
			encode(got[:blockBytes*n], x[:32*n])
			for b := range n {
				plain(want[blockBytes*b:blockBytes*(b+1)], x[32*b:32*b+32])
			}
			for b := range n {
				if g, w := got[blockBytes*b:blockBytes*(b+1)], want[blockBytes*b:blockBytes*(b+1)]; !bytes.Equal(g, w) {
					t.Fatalf("row of %d blocks, block %d %v:\n got %x\nwant %x", n, b, x[32*b:32*b+32], g, w)
				}
			}
		}
	})
}

// TestQ2Search8MatchesScalar checks q2_K's eight-group search (groups of 16,
// absolute error; AVX2 where the CPU has it, and SSE2) against the literal
// make_qkx2_quants, group by group, on random and adversarial groups.
func TestQ2Search8MatchesScalar(t *testing.T) {
	eachKernelSet(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(51, 52))
		var x [128]float32
		var w [16]float32
		var l1 [16]int8
		var l2, laux [16]uint8
		var s1, m1 [8]float32
		var o qkx2Oct
		for iter := 0; iter < 10000; iter++ {
			for g := range 8 {
				adversarialGroup(r, x[16*g:16*g+16])
			}
			q2Search8(x[:], &o, s1[:], m1[:])
			for g := range 8 {
				xs := x[16*g : 16*g+16]
				for i, v := range xs {
					w[i] = fabs(v)
				}
				s2, m2 := makeQKX2Plain(3, xs, w[:], l2[:], laux[:], -0.5, 0.1, 15, true)
				o.levels(g, l1[:])
				same := true
				for i, l := range l2 {
					same = same && l1[i] == int8(l)
				}
				if !sameFloat(s1[g], s2) || !sameFloat(m1[g], m2) || !same {
					t.Fatalf("group %d of %v:\n got %v %v %v\nwant %v %v %v", g, xs, s1[g], m1[g], l1, s2, m2, l2)
				}
			}
		}
	})
}

// packQ4KPlain, packQ5KPlain and packQ6KPlain are ggml's packing of the
// levels in quantize_row_q4_K_ref, quantize_row_q5_K_ref and
// quantize_row_q6_K_ref, element by element.
func packQ4KPlain(y []byte, L *[256]int8) {
	q := y[16:144]
	for j := 0; j < 256; j += 64 {
		for l := range 32 {
			q[j/2+l] = uint8(L[j+l]) | uint8(L[j+l+32])<<4
		}
	}
}

func packQ5KPlain(y []byte, L *[256]int8) {
	qh := y[16:48]
	clear(qh)
	ql := y[48:176]
	m1, m2 := uint8(1), uint8(2)
	for n := 0; n < 256; n += 64 {
		for j := range 32 {
			l1, l2 := uint8(L[n+j]), uint8(L[n+j+32])
			if l1 > 15 {
				l1 -= 16
				qh[j] |= m1
			}
			if l2 > 15 {
				l2 -= 16
				qh[j] |= m2
			}
			ql[n/2+j] = l1 | l2<<4
		}
		m1 <<= 2
		m2 <<= 2
	}
}

func packQ6KPlain(y []byte, L *[256]int8) {
	ql := y[:128]
	qh := y[128:192]
	for j := 0; j < 256; j += 128 {
		for l := range 32 {
			a, b, c, e := uint8(L[j+l]), uint8(L[j+l+32]), uint8(L[j+l+64]), uint8(L[j+l+96])
			ql[j/2+l] = a&0xf | (c&0xf)<<4
			ql[j/2+l+32] = b&0xf | (e&0xf)<<4
			qh[j/4+l] = a>>4 | (b>>4)<<2 | (c>>4)<<4 | (e>>4)<<6
		}
	}
}

// TestPackKMatchesPlain holds the word-at-a-time packing of q4_K's, q5_K's
// and q6_K's levels to ggml's, on random levels and on blocks of all the
// lowest and all the highest level; the bytes outside the packed fields
// stay as they were.
func TestPackKMatchesPlain(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 17))
	for _, c := range []struct {
		name        string
		levels      int
		pack, plain func([]byte, *[256]int8)
	}{
		{"q4_K", 16, packQ4K, packQ4KPlain},
		{"q5_K", 32, packQ5K, packQ5KPlain},
		{"q6_K", 64, packQ6K, packQ6KPlain},
	} {
		for trial := range 2000 {
			var L [256]int8
			for i := range L {
				switch trial {
				case 0:
				case 1:
					L[i] = int8(c.levels - 1)
				default:
					L[i] = int8(r.IntN(c.levels))
				}
			}
			got, want := make([]byte, 210), make([]byte, 210)
			for i := range got {
				got[i] = byte(r.Uint32())
			}
			copy(want, got)
			c.pack(got, &L)
			c.plain(want, &L)
			if !bytes.Equal(got, want) {
				t.Fatalf("%s, trial %d: packed\n%x\nggml packs\n%x", c.name, trial, got, want)
			}
		}
	}
}

// TestIQ4KernelsMatchGo holds the AVX-512 and AVX2 kernels of the iq4 search
// to the Go code, bit for bit: the sixteen trials (against
// iq4Trials.search) on the trial scales iq4Block makes and on arbitrary ones,
// and the indexes (against bestIndexIQ4) of products that fall on codebook
// values, on midpoints between them and beside both, beyond both ends, and of
// NaN and infinities.
func TestIQ4KernelsMatchGo(t *testing.T) {
	kernels := []struct {
		name   string
		ok     bool
		trials func(x *float32, ids *[16]float32, tr *iq4Trials)
		index  func(L *uint8, x *float32, id float32, n int)
	}{
		{"AVX-512", useAVX512, iq4Trials16AVX512, iq4IndexAVX512},
		{"AVX2", useAVX2, iq4Trials16AVX2, iq4IndexAVX2},
	}
	for _, k := range kernels {
		t.Run(k.name, func(t *testing.T) {
			if !k.ok {
				t.Skipf("this CPU has no %s", k.name)
			}
			testIQ4Kernels(t, k.trials, k.index)
		})
	}
}

func testIQ4Kernels(t *testing.T, trials func(x *float32, ids *[16]float32, tr *iq4Trials), index func(L *uint8, x *float32, id float32, n int)) {
	r := rand.New(rand.NewPCG(61, 62))
	var x [32]float32
	var ids [16]float32
	for iter := range 20000 {
		adversarialGroup(r, x[:])
		_, m := argMaxAbs(x[:])
		for i := range ids {
			switch {
			case iter%4 == 0:
				ids[i] = float32(r.NormFloat64() * 40)
			case m != 0:
				ids[i] = float32(i-8-127) / m
			}
		}
		var got, want iq4Trials
		trials(&x[0], &ids, &got)
		want.search(x[:], &ids)
		for i, g := range [][16]float32{got.sumQX, got.sumQ2, got.d, got.best, got.sq} {
			w := [][16]float32{want.sumQX, want.sumQ2, want.d, want.best, want.sq}[i]
			for k := range g {
				if !sameFloat(g[k], w[k]) {
					t.Fatalf("trials %v on %v:\n got %+v\nwant %+v", ids, x, got, want)
				}
			}
		}
		if got.better != want.better {
			t.Fatalf("trials %v on %v: better\n%016b, want\n%016b", ids, x, got.better, want.better)
		}
	}

	var special []float32
	for _, k := range kvaluesIQ4NL {
		v := float32(k)
		special = append(special, v, math.Nextafter32(v, -200), math.Nextafter32(v, 200))
	}
	for i := range 15 {
		mid := float32(int(kvaluesIQ4NL[i])+int(kvaluesIQ4NL[i+1])) / 2
		special = append(special, mid, math.Nextafter32(mid, -200), math.Nextafter32(mid, 200))
	}
	special = append(special, -1000, 1000, 0, float32(math.Copysign(0, -1)),
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), math.Float32frombits(0xFFC00001))
	var L [32]uint8
	for iter := range 20000 {
		id := float32(1)
		for j := range x {
			if iter%2 == 0 {
				x[j] = special[r.IntN(len(special))]
			} else {
				x[j] = float32(r.NormFloat64() * 60)
			}
		}
		if iter%2 == 1 {
			id = float32(r.NormFloat64() * 2)
		}
		index(&L[0], &x[0], id, 32)
		for j, v := range x {
			if want := bestIndexIQ4(float32(id * v)); L[j] != want {
				t.Fatalf("index of %g·%g = %d, want %d", id, v, L[j], want)
			}
		}
	}
}

// iq4BlockPlain is the scale search of ggml's quantize_row_iq4_nl_impl with
// no importance weights and ntry = 7, statement by statement: the first
// guess, then the trials in order, each compared with the best so far.
func iq4BlockPlain(xb []float32) float32 {
	var weight [32]float32
	for j, v := range xb {
		weight[j] = float32(v * v)
	}
	amax, max := argMaxAbs(xb)
	if amax < groupMaxEps {
		return 0
	}
	sums := func(id float32) (sumqx, sumq2 float32) {
		for j, v := range xb {
			q := float32(kvaluesIQ4NL[bestIndexInt8Plain(kvaluesIQ4NL[:], float32(id*v))])
			wq := float32(weight[j] * q)
			sumqx += float32(wq * v)
			sumq2 += float32(wq * q)
		}
		return sumqx, sumq2
	}
	d := -max / float32(kvaluesIQ4NL[0])
	sumqx, sumq2 := sums(1 / d)
	d = 0
	if sumq2 > 0 {
		d = sumqx / sumq2
	}
	best := float32(d * sumqx)
	for itry := -7; itry <= 7; itry++ {
		sumqx, sumq2 = sums(float32(itry+int(kvaluesIQ4NL[0])) / max)
		if sumq2 > 0 && float32(sumqx*sumqx) > float32(best*sumq2) {
			d = sumqx / sumq2
			best = float32(d * sumqx)
		}
	}
	return d
}

// TestIQ4BlockMatchesPlain holds iq4Block, whose trials run side by side, to
// ggml's search on random and adversarial blocks (NaNs, infinities,
// subnormals, flat blocks), with each set of kernels.
func TestIQ4BlockMatchesPlain(t *testing.T) {
	eachKernelSet(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(71, 72))
		var x [32]float32
		for range 20000 {
			adversarialGroup(r, x[:])
			if got, want := iq4Block(x[:]), iq4BlockPlain(x[:]); !sameFloat(got, want) {
				t.Fatalf("iq4Block(%v) = %g, want %g", x, got, want)
			}
		}
	})
}

// TestQ2Start8MatchesGo holds q2_K's first guesses in eight lanes
// (q2Start8AVX2) to qkx2Start's, group by group, bit for bit: every field
// the search reads, for adversarial groups (NaNs, infinities, flat groups,
// subnormals, magnitudes near MaxFloat32).
func TestQ2Start8MatchesGo(t *testing.T) {
	checkStarts(t, 16, 81, 20000, func(x []float32, o *qkx2Oct) { q2Start8AVX2(&x[0], o) }, q2Start8Go)
}

// checkStarts runs the first guesses got and want for eight groups of n on
// adversarial data with NaNs of different payloads (someNaNs), got's oct
// holding stale state, and compares their octs (checkStartOct).
func checkStarts(t *testing.T, n int, seed uint64, iters int, got, want func(x []float32, o *qkx2Oct)) {
	t.Helper()
	if !useAVX2 {
		t.Skip("this CPU has no AVX2")
	}
	r := rand.New(rand.NewPCG(seed, seed+1))
	x := make([]float32, 8*n)
	var g, w qkx2Oct
	for iter := range iters {
		for k := range 8 {
			adversarialGroup(r, x[n*k:n*k+n])
			someNaNs(r, x[n*k:n*k+n])
		}
		for i := range g.x {
			// Stale state from an earlier super-block.
			g.x[i], g.w[i], g.xm[i], g.L[i] = float32(iter), 1, 2, 3
		}
		got(x, &g)
		want(x, &w)
		checkStartOct(t, iter, x, n, &g, &w)
	}
}

// someNaNs puts, one time in eight, one to four NaNs of random payloads and
// signs into xs, whose products and sums keep one or the other.
func someNaNs(r *rand.Rand, xs []float32) {
	if r.IntN(8) == 0 {
		for range 1 + r.IntN(4) {
			xs[r.IntN(len(xs))] = math.Float32frombits(0x7F800001 | uint32(r.IntN(1<<23)) | uint32(r.IntN(2))<<31)
		}
	}
}

// checkStartOct compares the fields of two octs a first guess fills, for
// groups of n elements of x, bit for bit.
func checkStartOct(t *testing.T, iter int, x []float32, n int, got, want *qkx2Oct) {
	t.Helper()
	rows := [][256]float32{got.x, got.w, got.xm, got.L}
	for k, w := range [][256]float32{want.x, want.w, want.xm, want.L} {
		for i := range 8 * n {
			if !sameFloat(rows[k][i], w[i]) {
				g := i % 8
				t.Fatalf("iteration %d, field %d, element %d of group %d: %g, want %g (group %v)",
					iter, k, i/8, g, rows[k][i], w[i], x[n*g:n*g+n])
			}
		}
	}
	groups := [][8]float32{got.mn, got.mx, got.sumW, got.sumX, got.scale, got.best, got.mnStart}
	for k, w := range [][8]float32{want.mn, want.mx, want.sumW, want.sumX, want.scale, want.best, want.mnStart} {
		for g := range 8 {
			if !sameFloat(groups[k][g], w[g]) {
				t.Fatalf("iteration %d, group %d, result %d: %g, want %g (group %v)", iter, g, k, groups[k][g], w[g], x[n*g:n*g+n])
			}
		}
	}
}

// TestQkx2Start8MatchesSSE2 holds the eight-lane first guesses of q4_K and
// q5_K (qkx2Start8AVX2) to the four-lane kernel's, which the search tests
// hold to the literal make_qkx2_quants: every field, bit for bit, for
// adversarial super-blocks with NaNs of different payloads and signs.
func TestQkx2Start8MatchesSSE2(t *testing.T) {
	for _, nmax := range []int32{15, 31} {
		checkStarts(t, 32, 91+uint64(nmax), 5000, func(x []float32, o *qkx2Oct) { qkx2Start8AVX2(o, &x[0], nmax) },
			func(x []float32, o *qkx2Oct) {
				qkx2Start4SSE2(o, 0, &x[0], nmax)
				qkx2Start4SSE2(o, 1, &x[128], nmax)
			})
	}
}
