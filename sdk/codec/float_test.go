package codec

import (
	"math"
	"math/big"
	"os"
	"runtime"
	"sync"
	"testing"

	"github.com/x448/float16"
)

func isNaN32(f float32) bool { return f != f }

// TestFloat16AllPatterns decodes every binary16 pattern and checks it against
// x448/float16 (an independent implementation), and that encoding gives the
// pattern back.
func TestFloat16AllPatterns(t *testing.T) {
	for i := 0; i < 1<<16; i++ {
		h := uint16(i)
		got := Float16ToFloat32(h)
		want := float16.Frombits(h).Float32()
		if isNaN32(want) {
			// NaNs keep sign and payload; we set the quiet bit as IEEE 754
			// conversions and F16C do.
			wb := math.Float32bits(want) | 0x00400000
			if math.Float32bits(got) != wb {
				t.Fatalf("Float16ToFloat32(%#04x) = %#08x, want quiet NaN %#08x", h, math.Float32bits(got), wb)
			}
			if back := Float32ToFloat16(got); back != h&0x8000|0x7e00 {
				t.Fatalf("Float32ToFloat16(NaN from %#04x) = %#04x, want %#04x", h, back, h&0x8000|0x7e00)
			}
			continue
		}
		if math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("Float16ToFloat32(%#04x) = %g (%#08x), want %g (%#08x)", h, got, math.Float32bits(got), want, math.Float32bits(want))
		}
		if back := Float32ToFloat16(got); back != h {
			t.Fatalf("Float32ToFloat16(Float16ToFloat32(%#04x)) = %#04x", h, back)
		}
	}
	// The bulk decoder uses a table; it must agree with the scalar one.
	src := make([]byte, 2<<16)
	for i := 0; i < 1<<16; i++ {
		src[2*i], src[2*i+1] = byte(i), byte(i>>8)
	}
	dst := make([]float32, 1<<16)
	if err := DecodeFloat32("f16", dst, src); err != nil {
		t.Fatal(err)
	}
	for i, f := range dst {
		if math.Float32bits(f) != math.Float32bits(Float16ToFloat32(uint16(i))) {
			t.Fatalf("bulk decode of %#04x differs from scalar", i)
		}
	}
}

// checkF32ToF16 compares Float32ToFloat16 with x448/float16 on one input.
func checkF32ToF16(t *testing.T, b uint32) {
	f := math.Float32frombits(b)
	got := Float32ToFloat16(f)
	if isNaN32(f) {
		if got != uint16(b>>16)&0x8000|0x7e00 {
			t.Fatalf("Float32ToFloat16(NaN %#08x) = %#04x", b, got)
		}
		return
	}
	if want := float16.Fromfloat32(f).Bits(); got != want {
		t.Fatalf("Float32ToFloat16(%g = %#08x) = %#04x, want %#04x", f, b, got, want)
	}
}

// TestFloat32ToFloat16 checks round-to-nearest-even against x448/float16 on a
// stride through all float32 patterns and densely around every point where
// the result changes (each binary16 value and each midpoint between two).
// SLUICE_EXHAUSTIVE=1 checks all 2^32 patterns instead (about a minute).
func TestFloat32ToFloat16(t *testing.T) {
	if os.Getenv("SLUICE_EXHAUSTIVE") != "" {
		forAllFloat32(t, func(b uint32) { checkF32ToF16(t, b) })
		return
	}
	for b := uint64(0); b < 1<<32; b += 4099 {
		checkF32ToF16(t, uint32(b))
	}
	for h := 0; h < 0x7c00; h++ {
		lo := float64(Float16ToFloat32(uint16(h)))
		hi := float64(Float16ToFloat32(uint16(h + 1)))
		for _, c := range []float64{lo, (lo + hi) / 2} {
			cb := math.Float32bits(float32(c)) // exact: midpoints fit in float32
			for d := uint32(0); d < 3; d++ {
				checkF32ToF16(t, cb+d)
				checkF32ToF16(t, cb-d)
				checkF32ToF16(t, (cb+d)|0x80000000)
			}
		}
	}
}

// forAllFloat32 calls f for every 32-bit pattern, on all CPUs.
func forAllFloat32(t *testing.T, f func(uint32)) {
	workers := runtime.GOMAXPROCS(0)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := uint64(w); b < 1<<32; b += uint64(workers) {
				f(uint32(b))
			}
		}()
	}
	wg.Wait()
}

// nearestEven returns the code among n candidate codes whose value (given by
// val, in float64) is nearest to x, ties to the code with an even mantissa
// (even code). Candidates must be finite and sorted by value.
func nearestEven(x float64, codes []uint32, val func(uint32) float64) uint32 {
	best := codes[0]
	bd := math.Abs(val(best) - x)
	for _, c := range codes[1:] {
		d := math.Abs(val(c) - x)
		if d < bd || d == bd && c&1 == 0 {
			best, bd = c, d
		}
	}
	return best
}

// TestBFloat16 checks all 65536 bf16 patterns, and float32→bf16 against an
// independent round-to-nearest-even on a stride of float32 patterns.
func TestBFloat16(t *testing.T) {
	for i := 0; i < 1<<16; i++ {
		h := uint16(i)
		f := BFloat16ToFloat32(h)
		if math.Float32bits(f) != uint32(h)<<16 {
			t.Fatalf("BFloat16ToFloat32(%#04x) = %#08x", h, math.Float32bits(f))
		}
		want := h
		if isNaN32(f) {
			want = h | 0x40
		}
		if got := Float32ToBFloat16(f); got != want {
			t.Fatalf("Float32ToBFloat16(%#08x) = %#04x, want %#04x", uint32(h)<<16, got, want)
		}
	}
	for b := uint64(0); b < 1<<32; b += 65521 {
		f := math.Float32frombits(uint32(b))
		got := Float32ToBFloat16(f)
		if isNaN32(f) {
			if got != uint16(b>>16)|0x40 {
				t.Fatalf("Float32ToBFloat16(NaN %#08x) = %#04x", b, got)
			}
			continue
		}
		// The two bf16 neighbours of f, ties to even.
		lo := uint32(b) &^ 0xffff
		cands := []uint32{lo >> 16, lo>>16 + 1}
		want := uint16(nearestEven(float64(f), cands, func(c uint32) float64 {
			v := float64(math.Float32frombits(c << 16))
			if math.IsInf(v, 0) || c<<16&0x7fffffff > 0x7f800000 { // past the largest finite value
				return math.Copysign(math.Ldexp(1, 128), v)
			}
			return v
		}))
		if got != want {
			t.Fatalf("Float32ToBFloat16(%g = %#08x) = %#04x, want %#04x", f, b, got, want)
		}
	}
}

// f8Value is an independent decoder of both float8 formats from their
// definition, in float64 (NaN for NaN codes).
func f8Value(b uint8, e4m3 bool) float64 {
	sign := 1.0
	if b&0x80 != 0 {
		sign = -1
	}
	var exp, man, ebits, mbits, bias int
	if e4m3 {
		ebits, mbits, bias = 4, 3, 7
	} else {
		ebits, mbits, bias = 5, 2, 15
	}
	exp = int(b>>mbits) & (1<<ebits - 1)
	man = int(b) & (1<<mbits - 1)
	switch {
	case e4m3 && exp == 15 && man == 7:
		return math.NaN()
	case !e4m3 && exp == 31 && man != 0:
		return math.NaN()
	case !e4m3 && exp == 31:
		return sign * math.Inf(1)
	case exp == 0:
		return sign * math.Ldexp(float64(man), 1-bias-mbits)
	}
	return sign * math.Ldexp(float64(1<<mbits+man), exp-bias-mbits)
}

// TestFloat8 checks every code of both formats against the definition, the
// round trip of every code, and float32→float8 rounding against a brute-force
// nearest search, including the overflow rules.
func TestFloat8(t *testing.T) {
	for _, e4m3 := range []bool{true, false} {
		dec, enc, encSat := E5M2ToFloat32, Float32ToE5M2, Float32ToE5M2Sat
		maxCode, name := uint32(0x7b), "e5m2"
		if e4m3 {
			dec, enc, encSat = E4M3ToFloat32, Float32ToE4M3, Float32ToE4M3Sat
			maxCode, name = 0x7e, "e4m3"
		}
		for i := 0; i < 256; i++ {
			b := uint8(i)
			want := f8Value(b, e4m3)
			got := dec(b)
			if math.IsNaN(want) {
				if !isNaN32(got) || math.Signbit(float64(got)) != (b&0x80 != 0) {
					t.Fatalf("%s decode %#02x = %g, want NaN with its sign", name, b, got)
				}
				if back := enc(got); back != b&0x80|0x7f {
					t.Fatalf("%s encode(NaN from %#02x) = %#02x", name, b, back)
				}
				continue
			}
			if float64(got) != want || math.Signbit(float64(got)) != math.Signbit(want) {
				t.Fatalf("%s decode %#02x = %g, want %g", name, b, got, want)
			}
			if back := enc(got); back != b {
				t.Fatalf("%s encode(decode(%#02x)) = %#02x", name, b, back)
			}
		}
		// Candidates for the brute force: all finite non-negative codes.
		var codes []uint32
		for c := uint32(0); c <= maxCode; c++ {
			codes = append(codes, c)
		}
		maxVal := f8Value(uint8(maxCode), e4m3)
		// The value one step above max: where rounding stops going to max.
		step := maxVal - f8Value(uint8(maxCode-1), e4m3)
		check := func(f float32) {
			a := math.Abs(float64(f))
			sign := uint8(0)
			if math.Signbit(float64(f)) {
				sign = 0x80
			}
			var want, wantSat uint8
			switch {
			case isNaN32(f):
				want, wantSat = sign|0x7f, sign|0x7f
			case a > maxVal+step/2 || a == maxVal+step/2 && maxCode&1 == 1:
				// Rounds past the largest finite value.
				wantSat = sign | uint8(maxCode)
				if e4m3 {
					want = sign | 0x7f
				} else {
					want = sign | 0x7c
				}
			default:
				c := uint8(nearestEven(a, codes, func(c uint32) float64 { return f8Value(uint8(c), e4m3) }))
				want, wantSat = sign|c, sign|c
			}
			if got := enc(f); got != want {
				t.Fatalf("%s encode(%g = %#08x) = %#02x, want %#02x", name, f, math.Float32bits(f), got, want)
			}
			if got := encSat(f); got != wantSat {
				t.Fatalf("%s saturating encode(%g) = %#02x, want %#02x", name, f, got, wantSat)
			}
		}
		for b := uint64(0); b < 1<<32; b += 65521 {
			check(math.Float32frombits(uint32(b)))
		}
		for c := uint32(0); c <= maxCode; c++ {
			v := f8Value(uint8(c), e4m3)
			next := v + step
			if c < maxCode {
				next = f8Value(uint8(c+1), e4m3)
			}
			for _, p := range []float64{v, (v + next) / 2} {
				pb := math.Float32bits(float32(p))
				for d := uint32(0); d < 3; d++ {
					check(math.Float32frombits(pb + d))
					check(math.Float32frombits(pb - d))
					check(-math.Float32frombits(pb + d))
				}
			}
		}
		check(float32(math.Inf(1)))
		check(float32(math.Inf(-1)))
	}
}

// TestFloat64 checks float64→float32 rounding against math/big and the
// widening round trip.
func TestFloat64(t *testing.T) {
	vals := []float64{0, math.Copysign(0, -1), 1, -1, 1.0 / 3, math.Pi, 1e-40, 1e-46, 3.5e38, 3.4028235677973366e38, 1e300, -1e300,
		math.SmallestNonzeroFloat64, math.MaxFloat64, math.Inf(1), math.Inf(-1), 1 + 0x1p-24, 1 + 0x1p-24 + 0x1p-50, 1 + 3*0x1p-24}
	for _, v := range vals {
		got := Float64ToFloat32(v)
		want, _ := new(big.Float).SetFloat64(v).Float32()
		if math.Float32bits(got) != math.Float32bits(want) {
			t.Errorf("Float64ToFloat32(%g) = %g, want %g", v, got, want)
		}
	}
	nan := math.Float64frombits(0xfff0000000000123 | 0x123<<29)
	got := Float64ToFloat32(nan)
	if math.Float32bits(got) != 0xffc00123 {
		t.Errorf("Float64ToFloat32(NaN %#016x) = %#08x, want 0xffc00123", math.Float64bits(nan), math.Float32bits(got))
	}
	for b := uint64(0); b < 1<<32; b += 104729 {
		f := math.Float32frombits(uint32(b))
		w := Float32ToFloat64(f)
		back := Float64ToFloat32(w)
		if isNaN32(f) {
			if math.Float32bits(back) != uint32(b)|0x00400000 {
				t.Fatalf("NaN %#08x did not survive f32→f64→f32 (got %#08x)", b, math.Float32bits(back))
			}
			continue
		}
		if float64(f) != w || math.Float32bits(back) != uint32(b) {
			t.Fatalf("round trip of %#08x through float64 gave %#08x", b, math.Float32bits(back))
		}
	}
}
