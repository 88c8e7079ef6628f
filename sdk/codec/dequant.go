package codec

// Bulk dequantization of bit fields. Most ggml decoders compute, for runs
// of 16 or 32 elements that share a scale,
//
//	v = ((b >> shift) & mask | ((h >> hshift) & hmask) << hpos) ^ xor - off
//	y = float32(d·float32(v))    then - m or + m
//
// from a byte of low bits b and a byte of high bits h. dq does that with
// the SSE2 kernel where there is one (the same float32 operations, four
// lanes at a time) and with dqGo elsewhere; TestDequantKernelMatchesGo
// compares the two, and TestGGMLReference the decoders with ggml.

// dqParams describes one field layout; the kernel reads it by offset (see
// dequant_amd64.s), so the field order and sizes are fixed.
type dqParams struct {
	shift, hshift, hpos uint64
	mask, hmask, xor    uint32 // a byte, repeated in all four bytes
	off                 int32
	mode                int64 // 0: y = d·v; 1: y = d·v - m; 2: y = d·v + m
}

// dqp builds a dqParams; the byte masks are repeated to fill a uint32.
func dqp(shift, mask, hshift, hmask, hpos uint8, xor uint8, off int32, mode int64) *dqParams {
	rep := func(b uint8) uint32 { return uint32(b) * 0x01010101 }
	return &dqParams{
		shift: uint64(shift), hshift: uint64(hshift), hpos: uint64(hpos),
		mask: rep(mask), hmask: rep(hmask), xor: rep(xor), off: off, mode: mode,
	}
}

// dq sets dst[i] for the len(dst) elements (a multiple of 16) from b[i] and
// h[i] (h may be b when hmask is 0).
func dq(dst []float32, b, h []byte, p *dqParams, d, m float32) {
	n := len(dst)
	if n == 0 {
		return
	}
	b, h = b[:n], h[:n]
	if useSSE2 {
		dqSSE2(&dst[0], &b[0], &h[0], n, p, d, m)
		return
	}
	dqGo(dst, b, h, p, d, m)
}

func dqGo(dst []float32, b, h []byte, p *dqParams, d, m float32) {
	b, h = b[:len(dst)], h[:len(dst)]
	for i := range dst {
		v := (b[i]>>p.shift)&uint8(p.mask) | ((h[i]>>p.hshift)&uint8(p.hmask))<<p.hpos
		y := float32(d * float32(int32(v^uint8(p.xor))-p.off))
		switch p.mode {
		case 1:
			y -= m
		case 2:
			y += m
		}
		dst[i] = y
	}
}

// Field layouts of the decoders.
var (
	dqQ8 = dqp(0, 0xff, 0, 0, 0, 0x80, 128, 0) // int8
	// low and high nibble, minus 8 (q4_0)
	dqQ4Lo = dqp(0, 0xf, 0, 0, 0, 0, 8, 0)
	dqQ4Hi = dqp(4, 0xf, 0, 0, 0, 0, 8, 0)
	// nibbles with + m (q4_1) and - m (q4_K)
	dqQ41Lo = dqp(0, 0xf, 0, 0, 0, 0, 0, 2)
	dqQ41Hi = dqp(4, 0xf, 0, 0, 0, 0, 0, 2)
	dqK4Lo  = dqp(0, 0xf, 0, 0, 0, 0, 0, 1)
	dqK4Hi  = dqp(4, 0xf, 0, 0, 0, 0, 0, 1)
	// q5_K: nibble plus bit 2j (low) or 2j+1 (high) of qh as bit 4
	dqK5Lo, dqK5Hi [4]*dqParams
	// q2_K: 2-bit field at shift 0, 2, 4, 6, minus m
	dqK2 [4]*dqParams
	// q3_K: 2-bit field at shift 2k plus hmask bit k as bit 2, minus 4
	dqK3 [8]*dqParams
	// tq2_0: 2-bit field at shift 2l, minus 1
	dqT2 [4]*dqParams
	// q6_K: nibble t/2 of ql plus bits 2t, 2t+1 of qh as bits 4, 5, minus 32
	dqK6 [4]*dqParams
)

func init() {
	for j := range 4 {
		dqK5Lo[j] = dqp(0, 0xf, uint8(2*j), 1, 4, 0, 0, 1)
		dqK5Hi[j] = dqp(4, 0xf, uint8(2*j+1), 1, 4, 0, 0, 1)
		dqK2[j] = dqp(uint8(2*j), 3, 0, 0, 0, 0, 0, 1)
		dqT2[j] = dqp(uint8(2*j), 3, 0, 0, 0, 0, 1, 0)
	}
	for t := range 4 {
		dqK6[t] = dqp(uint8(4*(t/2)), 0xf, uint8(2*t), 3, 4, 0, 32, 0)
	}
	for k := range 8 {
		dqK3[k] = dqp(uint8(2*(k%4)), 3, uint8(k), 1, 2, 0, 4, 0)
	}
}
