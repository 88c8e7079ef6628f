package codec

// Four groups at a time for the q6_K and q3_K searches. Their 16-element
// searches are chains of dependent float32 additions (the sums must be
// accumulated in index order), so one group at a time leaves the CPU
// waiting on latency. The SSE2 kernels put four groups in the four lanes
// of each vector: lane g performs group g's scalar operations, in the same
// order, so the results are those of makeQXQuants and makeQ3Quants
// (TestSearch4MatchesScalar). Without the kernels, the groups go one at a
// time through the scalar code.

// quads is the transposed input and the output of the four-group kernels:
// x[4i+g] is element i of group g, w = x², wx = w·x; L receives the levels
// (as float32, not offset) and scale the scales. cur is the kernels'
// scratch. The field offsets are spelled out in kquants4_amd64.s.
type quads struct {
	x, w, wx, cur, L [64]float32
	mx, scale, amax  [4]float32
}

// load fills q from four groups of 16 and returns, per group, whether it
// is below groupMaxEps (the kernels then compute garbage for it).
func (q *quads) load(x []float32) (zero [4]bool) {
	x = x[:64]
	if useSSE2 {
		quadsLoadSSE2(q, &x[0])
	} else {
		quadsLoadGo(q, x)
	}
	for g, a := range q.amax {
		zero[g] = a < groupMaxEps
	}
	return zero
}

// quadsLoadGo is quadsLoadSSE2 in Go.
func quadsLoadGo(q *quads, x []float32) {
	x = x[:64]
	for g := range 4 {
		var mx, amax float32
		for _, v := range x[16*g : 16*g+16] {
			if ax := fabs(v); ax > amax {
				amax, mx = ax, v
			}
		}
		q.mx[g], q.amax[g] = mx, amax
	}
	for i := range 16 {
		for g := range 4 {
			v := x[16*g+i]
			w := float32(v * v)
			q.x[4*i+g] = v
			q.w[4*i+g] = w
			q.wx[4*i+g] = float32(w * v)
		}
	}
}

// store writes the levels (offset by nmax) and scales of the four groups.
func (q *quads) store(zero [4]bool, nmax int32, L []int8, scales []float32) {
	L, scales = L[:64], scales[:4]
	for g := range 4 {
		if zero[g] {
			clear(L[16*g : 16*g+16])
			scales[g] = 0
			continue
		}
		for i := range 16 {
			L[16*g+i] = int8(q.L[4*i+g]) + int8(nmax)
		}
		scales[g] = q.scale[g]
	}
}

// qxNum32 are the numerators of make_qx_quants's iscales for nmax 32: the
// start -nmax, then -(nmax + 0.1·is) for is = -9..9 without 0.
var qxNum32 = func() (t [19]float32) {
	const nmax = 32
	t[0] = float32(-nmax)
	k := 1
	for is := int32(-9); is <= 9; is++ {
		if is != 0 {
			t[k] = -(nmax + float32(0.1*float32(is)))
			k++
		}
	}
	return t
}()

// makeQXQuants32x4 is makeQXQuants(32, ·) for four consecutive groups of 16
// in x, writing levels to L[:64] and scales to scales[:4].
func makeQXQuants32x4(x []float32, L []int8, scales []float32) {
	if !useSSE2 {
		for g := range 4 {
			scales[g] = makeQXQuants(32, x[16*g:16*g+16], L[16*g:16*g+16])
		}
		return
	}
	var q quads
	zero := q.load(x)
	qxSearch4SSE2(&q, &qxNum32[0], len(qxNum32), -32, 31)
	q.store(zero, 32, L, scales)
}

// qxOct is the working copy of qxSearch8AVX2 and q3Search16AVX2: two quads'
// x, w, wx and levels, interleaved: x[8i+g] is element i of group g, groups
// 4-7 from the second quad, and the eight groups' mx and the search's best
// error, scale and iscale so far. The kernels write the levels out as int8,
// group by group (OCTOUT). Its field offsets are spelled out in
// kquants4_amd64.s.
type qxOct struct {
	x, w, wx, L                 [128]float32
	mx, best, scale, iscaleBest [8]float32
}

// makeQXQuants32x8 is makeQXQuants32x4 for eight consecutive groups of 16,
// writing levels to L[:128] and scales to scales[:8]: one AVX2 search in s
// where the CPU has AVX2.
func makeQXQuants32x8(x []float32, L []int8, scales []float32, s *qxScratch) {
	x, L, scales = x[:128], L[:128], scales[:8]
	if !useAVX2 {
		makeQXQuants32x4(x[:64], L[:64], scales[:4])
		makeQXQuants32x4(x[64:], L[64:], scales[4:])
		return
	}
	a, b := &s.q[0], &s.q[1]
	zero := [][4]bool{a.load(x[:64]), b.load(x[64:])}
	qxSearch8AVX2(a, b, &s.oct[0], &L[0], &scales[0], &qxNum32[0], len(qxNum32), -32, 31, 32)
	clearZeroGroups(zero, L, scales)
}

// qxHex is the working copy of qxSearch16AVX512 and q3Search16AVX512: four
// quads' x, w, wx and levels, interleaved: x[16i+g] is element i of group
// g, groups 4k to 4k+3 from the k-th quad. The kernels write the levels out
// as int8, group by group, not back into the quads. Its field offsets are
// spelled out in kquants4_amd64.s.
type qxHex struct {
	x, w, wx, L [256]float32
}

// qxScratch is the working memory of makeQXQuants32x16, makeQXQuants32x8
// and makeQ3Quants4x16, which an encoder keeps across super-blocks instead
// of clearing kilobytes of fresh stack for each.
type qxScratch struct {
	q   [4]quads
	o   qxHex
	oct [2]qxOct
}

// makeQXQuants32x16 is makeQXQuants32x8 for the sixteen groups of 16 of a
// super-block x, writing levels to L[:256] and scales to scales[:16]: where
// the CPU has AVX-512, one sixteen-lane search in s
// (TestQXQuants32x16MatchesScalar). Every field of s the search reads is
// written first.
func makeQXQuants32x16(x []float32, L []int8, scales []float32, s *qxScratch) {
	x, L, scales = x[:256], L[:256], scales[:16]
	if !useAVX512 {
		makeQXQuants32x8(x[:128], L[:128], scales[:8], s)
		makeQXQuants32x8(x[128:], L[128:], scales[8:], s)
		return
	}
	zero := s.load(x)
	q := &s.q
	qxSearch16AVX512(&q[0], &q[1], &q[2], &q[3], &s.o, &L[0], &scales[0], &qxNum32[0], len(qxNum32), -32, 31, 32)
	clearZeroGroups(zero[:], L, scales)
}

// load fills s's quads from the sixteen groups of 16 of the super-block x
// and returns, quad by quad, which groups are below groupMaxEps.
func (s *qxScratch) load(x []float32) (zero [4][4]bool) {
	for k := range s.q {
		zero[k] = s.q[k].load(x[64*k:])
	}
	return zero
}

// clearZeroGroups sets the levels and scales of the groups below
// groupMaxEps, for which the kernels that write levels and scales out
// (qxSearch8AVX2, qxSearch16AVX512, q3Search16AVX512) computed garbage, to
// 0; zero[k] are quad k's groups.
func clearZeroGroups(zero [][4]bool, L []int8, scales []float32) {
	for k := range zero {
		for g, z := range zero[k] {
			if z {
				j := 4*k + g
				clear(L[16*j : 16*j+16])
				scales[j] = 0
			}
		}
	}
}

// makeQ3Quants4x4 is makeQ3Quants(4, ·) for four consecutive groups of 16
// in x, writing levels to L[:64] and scales to scales[:4].
func makeQ3Quants4x4(x []float32, L []int8, scales []float32) {
	if !useSSE2 {
		for g := range 4 {
			scales[g] = makeQ3Quants(4, x[16*g:16*g+16], L[16*g:16*g+16])
		}
		return
	}
	var q quads
	zero := q.load(x)
	q3Search4SSE2(&q, -4, 5, -4, 3)
	q.store(zero, 4, L, scales)
}

// divRound sets L[i] = int8(clamp(nearestInt((x[i]+add)/d), lo, hi) + off)
// for the 16 elements of x: the re-quantization of q3_K, q6_K (add 0), q4_K
// and q5_K (add the group's min). An add of 0 changes no quotient's
// nearestInt: it only turns -0 into +0, and a signalling NaN into the quiet
// NaN the division makes of it anyway.
func divRound(L []int8, x []float32, add, d float32, lo, hi, off int32) {
	L, x = L[:16], x[:16]
	switch {
	case useAVX512:
		divRoundAVX512(&L[0], &x[0], add, d, lo, hi, off, 16)
	case useSSE2:
		divRoundSSE2(&L[0], &x[0], add, d, lo, hi, off)
	default:
		divRoundGo(L, x, add, d, lo, hi, off)
	}
}

// divRound32 is divRound for the 32 elements of x: one AVX-512 call where
// the CPU has it, two of 16 otherwise.
func divRound32(L []int8, x []float32, add, d float32, lo, hi, off int32) {
	L, x = L[:32], x[:32]
	if useAVX512 {
		divRoundAVX512(&L[0], &x[0], add, d, lo, hi, off, 32)
		return
	}
	divRound(L[:16], x[:16], add, d, lo, hi, off)
	divRound(L[16:], x[16:], add, d, lo, hi, off)
}

func divRoundGo(L []int8, x []float32, add, d float32, lo, hi, off int32) {
	L, x = L[:16], x[:16]
	for i, v := range x {
		L[i] = int8(clampI32(nearestInt(float32(v+add)/d), lo, hi) + off)
	}
}

// makeQ3Quants4x8 is makeQ3Quants4x4 for eight consecutive groups of 16 in
// x, writing levels to L[:128] and scales to scales[:8]: two quads' searches
// overlapped in one SSE2 call (makeQ3Quants4x16 has the AVX2 and AVX-512
// kernels).
func makeQ3Quants4x8(x []float32, L []int8, scales []float32, s *qxScratch) {
	x, L, scales = x[:128], L[:128], scales[:8]
	if !useSSE2 {
		makeQ3Quants4x4(x[:64], L[:64], scales[:4])
		makeQ3Quants4x4(x[64:128], L[64:128], scales[4:8])
		return
	}
	a, b := &s.q[0], &s.q[1]
	za, zb := a.load(x[:64]), b.load(x[64:128])
	q3Search8SSE2(a, b, -4, 5, -4, 3)
	a.store(za, 4, L[:64], scales[:4])
	b.store(zb, 4, L[64:128], scales[4:8])
}

// makeQ3Quants4x16 is makeQ3Quants4x8 for the sixteen groups of 16 of a
// super-block x, writing levels to L[:256] and scales to scales[:16]: where
// the CPU has AVX-512, one sixteen-lane search in s
// (TestQ3Quants4x16MatchesScalar); with AVX2, two eight-lane searches in one
// kernel, their chains of dependent steps overlapping
// (TestQ3Quants4x16AVX2MatchesScalar). Every field of s the search reads is
// written first.
func makeQ3Quants4x16(x []float32, L []int8, scales []float32, s *qxScratch) {
	x, L, scales = x[:256], L[:256], scales[:16]
	if !useAVX2 {
		makeQ3Quants4x8(x[:128], L[:128], scales[:8], s)
		makeQ3Quants4x8(x[128:], L[128:], scales[8:], s)
		return
	}
	zero := s.load(x)
	q := &s.q
	if !useAVX512 {
		q3Search16AVX2(&q[0], &q[1], &q[2], &q[3], &s.oct, &L[0], &scales[0], -4, 5, -4, 3, 4)
		clearZeroGroups(zero[:], L, scales)
		return
	}
	q3Search16AVX512(&q[0], &q[1], &q[2], &q[3], &s.o, &L[0], &scales[0], -4, 5, -4, 3, 4)
	clearZeroGroups(zero[:], L, scales)
}

// makeQ3Quants4x16x4 is makeQ3Quants4x16 for the four super-blocks of x,
// with s as their working memory: where the CPU has AVX-512, one kernel
// that runs the four searches at once, so that their chains of dependent
// operations overlap (TestQ3Quants4x16x4MatchesScalar).
func makeQ3Quants4x16x4(x []float32, L *[4][256]int8, scales *[4][16]float32, s *[4]qxScratch) {
	x = x[:1024]
	if !useAVX512 {
		for k := range 4 {
			makeQ3Quants4x16(x[256*k:], L[k][:], scales[k][:], &s[k])
		}
		return
	}
	var zero [4][4][4]bool
	for k := range 4 {
		zero[k] = s[k].load(x[256*k:])
	}
	q3Search4x16AVX512(s, L, scales, -4, 5, -4, 3, 4)
	for k := range 4 {
		clearZeroGroups(zero[k][:], L[k][:], scales[k][:])
	}
}

// qkx2Oct is the transposed input, state and output of the kernels of
// makeQKX2's search for eight groups: q4_K's and q5_K's eight groups of 32
// (a super-block), or eight of q2_K's groups of 16 (half of one, in the
// first 16 element slots). x[8i+g] is element i of group g, w its weight,
// xm = x - mn, cur the candidate's levels and L the best levels so far, as
// float32; the per-group fields are qkx2State's, and mnStart is mn as the
// search found it. iscaleBest, mnBest and took are qkx2Search8AVX2's: the
// iscale of a group's best candidate, the mn its levels were made from, and
// whether the group took one (all bits set), from which the kernel makes
// the best levels at its end. The field offsets are spelled out in
// kquants4_amd64.s.
type qkx2Oct struct {
	x, w, xm, cur, L                         [256]float32
	mn, mx, sumW, sumX, scale, best, mnStart [8]float32
	iscaleBest, mnBest, took                 [8]float32
}

// k4Search8 is the per-32 search of q4_K and q5_K for the eight groups of
// 32 in x: each group's weights (k4Weights), then makeQKX2(nmax, ·, ·, ·,
// rmin, 0.1, nstep, false), leaving the levels in o.L (read them with
// o.levels) and writing the results to scales[:8] and mins[:8]. The kernels
// evaluate every candidate in every lane: one that repeats the previous
// candidate's levels has the same sums and error and cannot be taken, so
// this is makeQKX2's result (TestK4Search8MatchesScalar). o may hold a
// previous super-block's state; every field is written before it is read.
func k4Search8(nmax int32, x []float32, o *qkx2Oct, rmin float32, nstep int, scales, mins []float32) {
	x, scales, mins = x[:256], scales[:8], mins[:8]
	if !useSSE2 || nstep < 0 || nstep >= len(qkx2Num{}) {
		var w [32]float32
		var l [32]uint8
		for g := range 8 {
			xs := x[32*g : 32*g+32]
			k4Weights(xs, w[:])
			scales[g], mins[g] = makeQKX2(nmax, xs, w[:], l[:], rmin, 0.1, nstep, false)
			for i, v := range l {
				o.L[8*i+g] = levelF[v]
			}
		}
		return
	}
	qkx2Start8(o, x, nmax)
	num := k4Num(nmax, rmin, nstep)
	o.search(&num, nstep, nmax, 0)
	o.results(32, scales, mins)
}

// qkx2Start8 fills o with the first guesses of q4_K's and q5_K's search
// (qkx2Start with k4Weights) for the eight groups of 32 in x: with AVX2 in
// one call of eight lanes, else in two of four (TestQkx2Start8MatchesSSE2).
func qkx2Start8(o *qkx2Oct, x []float32, nmax int32) {
	x = x[:256]
	if useAVX2 {
		qkx2Start8AVX2(o, &x[0], nmax)
		return
	}
	qkx2Start4SSE2(o, 0, &x[0], nmax)
	qkx2Start4SSE2(o, 1, &x[128], nmax)
}

// k4Num returns q4_K's and q5_K's candidate numerators, rmin + 0.1·is +
// nmax for is = 0..nstep.
func k4Num(nmax int32, rmin float32, nstep int) (num qkx2Num) {
	for is := 0; is <= nstep; is++ {
		num[is] = float32(rmin+float32(0.1*float32(is))) + float32(nmax)
	}
	return num
}

// qkx2Hex is qkx2Search16AVX512's working copy of the element fields of two
// qkx2Octs, side by side: element i of group g at 16·i + g, groups 8-15
// those of the second oct. The kernel fills it from the octs, keeps the
// per-group fields in registers, and writes back the levels, mins and
// scales. The field offsets are spelled out in kquants4_amd64.s.
type qkx2Hex struct {
	x, cur, w, L [512]float32
}

// k4Search16 is k4Search8 for the two super-blocks x0 and x1 at once, with
// a and b as their octs and h as the kernel's working copy: where the CPU
// has AVX-512, one sixteen-lane search instead of two of eight lanes, with
// the same results (TestK4Search16MatchesSearch8).
func k4Search16(nmax int32, x0, x1 []float32, a, b *qkx2Oct, h *qkx2Hex, rmin float32, nstep int, scales, mins *[2][8]float32) {
	if !useAVX512 || nstep < 0 || nstep >= len(qkx2Num{}) {
		k4Search8(nmax, x0, a, rmin, nstep, scales[0][:], mins[0][:])
		k4Search8(nmax, x1, b, rmin, nstep, scales[1][:], mins[1][:])
		return
	}
	x0, x1 = x0[:256], x1[:256]
	qkx2Start8(a, x0, nmax)
	qkx2Start8(b, x1, nmax)
	num := k4Num(nmax, rmin, nstep)
	qkx2Search16AVX512(a, b, h, &num[0], nstep+1, nmax, 0)
	a.results(32, scales[0][:], mins[0][:])
	b.results(32, scales[1][:], mins[1][:])
}

// results writes the search's results for the eight groups of n elements
// to scales[:8] and mins[:8]. A flat group (mx == mn, for which makeQKX2
// returns at once and the kernels computed nothing of use) gets levels 0,
// scale 0 and min -mn.
func (o *qkx2Oct) results(n int, scales, mins []float32) {
	for g := range 8 {
		if o.mx[g] == o.mnStart[g] {
			for i := range n {
				o.L[8*i+g] = 0
			}
			scales[g], mins[g] = 0, -o.mnStart[g]
			continue
		}
		scales[g], mins[g] = o.scale[g], -o.mn[g]
	}
}

// Flags of the search kernels (kquants4_amd64.s: KSHORT, KMAD).
const (
	qkx2Short = 1 // groups of 16, not 32
	qkx2MAD   = 2 // absolute error, not squared
)

// search runs makeQKX2's search over candidates 0..nstep of num on the
// eight groups of o: one AVX2 pass, or two SSE2 passes.
func (o *qkx2Oct) search(num *qkx2Num, nstep int, nmax, flags int32) {
	if useAVX2 {
		qkx2Search8AVX2(o, &num[0], nstep+1, nmax, flags)
		return
	}
	qkx2Search4SSE2(o, 0, &num[0], nstep+1, nmax, flags)
	qkx2Search4SSE2(o, 1, &num[0], nstep+1, nmax, flags)
}

// q2Search8 is q2_K's per-16 search for eight consecutive groups of 16 in
// x: makeQKX2(3, ·, |x|, ·, -0.5, 0.1, 15, true), leaving the levels in o.L
// (read them with o.levels; 16 of each group's 32 slots) and the results in
// scales[:8] and mins[:8]. The first guesses are qkx2Start's, the search
// the kernels' with qkx2Short|qkx2MAD (TestQ2Search8MatchesScalar).
func q2Search8(x []float32, o *qkx2Oct, scales, mins []float32) {
	x, scales, mins = x[:128], scales[:8], mins[:8]
	var w [16]float32
	var l [16]uint8
	if !useSSE2 {
		for g := range 8 {
			xs := x[16*g : 16*g+16]
			for i, v := range xs {
				w[i] = fabs(v)
			}
			scales[g], mins[g] = makeQKX2(3, xs, w[:], l[:], -0.5, 0.1, 15, true)
			for i, v := range l {
				o.L[8*i+g] = levelF[v]
			}
		}
		return
	}
	q2Start8(x, o)
	o.search(&q2Num, 15, 3, qkx2Short|qkx2MAD)
	o.results(16, scales, mins)
}

// q2Search16 is q2Search8 for the sixteen groups of 16 of a q2_K
// super-block x, the first eight in o[0] and the others in o[1], with
// scales[:16] and mins[:16]: where the CPU has AVX-512, one sixteen-lane
// search with h as its working copy (TestQ2Search16MatchesSearch8).
func q2Search16(x []float32, o *[2]qkx2Oct, h *qkx2Hex, scales, mins []float32) {
	x, scales, mins = x[:256], scales[:16], mins[:16]
	if !useAVX512 {
		q2Search8(x[:128], &o[0], scales[:8], mins[:8])
		q2Search8(x[128:], &o[1], scales[8:], mins[8:])
		return
	}
	q2Start8(x[:128], &o[0])
	q2Start8(x[128:], &o[1])
	qkx2Search16AVX512(&o[0], &o[1], h, &q2Num[0], 16, 3, qkx2Short|qkx2MAD)
	o[0].results(16, scales[:8], mins[:8])
	o[1].results(16, scales[8:], mins[8:])
}

// q2Start8 fills o with q2_K's first guesses (qkx2Start) for the eight
// groups of 16 in x, and their weights |x|: with AVX2, the eight groups in
// the lanes of a vector (TestQ2Start8MatchesGo).
func q2Start8(x []float32, o *qkx2Oct) {
	x = x[:128]
	if useAVX2 {
		q2Start8AVX2(&x[0], o)
		return
	}
	q2Start8Go(x, o)
}

// q2Start8Go is q2Start8 one group at a time.
func q2Start8Go(x []float32, o *qkx2Oct) {
	var w [16]float32
	var l [16]uint8
	for g := range 8 {
		xs := x[16*g : 16*g+16]
		for i, v := range xs {
			w[i] = fabs(v)
		}
		var xm [16]float32
		st, _ := qkx2Start(3, xs, w[:], l[:], xm[:], true) // a flat group has mx == mn: results sees it
		o.mn[g], o.mx[g], o.sumW[g], o.sumX[g], o.scale[g], o.best[g] = st.mn, st.mx, st.sumW, st.sumX, st.scale, st.best
		o.mnStart[g] = st.mn
		for i := range 16 {
			o.x[8*i+g], o.w[8*i+g], o.xm[8*i+g], o.L[8*i+g] = xs[i], w[i], xm[i], levelF[l[i]]
		}
	}
}

// q2Num holds q2_K's candidate numerators, -0.5 + 0.1·is + 3.
var q2Num = func() (t qkx2Num) {
	for is := 0; is <= 15; is++ {
		t[is] = float32(-0.5+float32(0.1*float32(is))) + 3
	}
	return t
}()

// levels writes the levels k4Search8 or q2Search8 left for group g to L
// (32 or 16 of them).
func (o *qkx2Oct) levels(g int, L []int8) {
	for i := range L {
		L[i] = int8(o.L[8*i+g])
	}
}

// k4Weights sets w to q4_K's and q5_K's weights for the group of 32 in x:
// av + |x[i]|, av the root mean square of x.
func k4Weights(x, w []float32) {
	x, w = x[:32], w[:32]
	var sumX2 float32
	for _, v := range x {
		sumX2 += float32(v * v)
	}
	avX := sqrtf(sumX2 / 32)
	for l, v := range x {
		w[l] = avX + fabs(v)
	}
}

// qkx2Num holds the numerators of makeQKX2's candidate iscales,
// rmin + rdelta·is + nmax, for is = 0..nstep.
type qkx2Num [32]float32
