package codec

import (
	"encoding/binary"
	"math"
	"os"
	"runtime"
	"sync"
	"testing"
)

// TestCastKernelsExhaustive runs the f32 → f16 and f32 → bf16 casts over
// all 2^32 float32 patterns, in chunks through the bulk paths (the SSE2
// kernels where there are any, and the AVX2 and F16C ones where the CPU has
// them), and compares every result with the scalar Float32ToFloat16 and
// Float32ToBFloat16 (which TestFloat32ToFloat16 checks against
// x448/float16) when SLUICE_EXHAUSTIVE=1 is set (23 s for both kernel sets
// on the 2-core VM of 2026-12-07); by default it covers a stride and every
// binary16 rounding boundary. bf16 → f32 is checked on all 65536 patterns.
func TestCastKernelsExhaustive(t *testing.T) {
	eachKernelSet(t, func(t *testing.T) {
		const chunk = 1 << 12
		check := func(base uint32, src []float32, h16, b16 []byte) {
			h16, b16 = h16[:2*len(src)], b16[:2*len(src)]
			for i := range src {
				src[i] = math.Float32frombits(base + uint32(i))
			}
			encodeF16(h16, src)
			encodeBF16(b16, src)
			for i, f := range src {
				if got, want := binary.LittleEndian.Uint16(h16[2*i:]), Float32ToFloat16(f); got != want {
					t.Errorf("f16 of %#08x: bulk %#04x, scalar %#04x", base+uint32(i), got, want)
					return
				}
				if got, want := binary.LittleEndian.Uint16(b16[2*i:]), Float32ToBFloat16(f); got != want {
					t.Errorf("bf16 of %#08x: bulk %#04x, scalar %#04x", base+uint32(i), got, want)
					return
				}
			}
		}
		var bases []uint32
		window := chunk
		if os.Getenv("SLUICE_EXHAUSTIVE") == "" {
			window = 16
			for b := uint64(0); b < 1<<32; b += 1 << 16 {
				bases = append(bases, uint32(b)+12345)
			}
			for h := 0; h < 0x7c01; h++ {
				c := math.Float32bits(Float16ToFloat32(uint16(h)))
				for _, s := range []uint32{0, 0x80000000} {
					bases = append(bases, (c|s)-8, (c|s)+1<<12-8) // value and midpoint
				}
			}
		} else {
			for b := uint64(0); b < 1<<32; b += chunk {
				bases = append(bases, uint32(b))
			}
		}
		workers := runtime.GOMAXPROCS(0)
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				src := make([]float32, window)
				h16, b16 := make([]byte, 2*chunk), make([]byte, 2*chunk)
				for i := w; i < len(bases) && !t.Failed(); i += workers {
					check(bases[i], src, h16, b16)
				}
			}()
		}
		wg.Wait()
		// Odd lengths and offsets exercise the scalar tails and the byte kernels.
		src := make([]float32, 1000)
		for i := range src {
			src[i] = float32(math.Sin(float64(i))) * 7e4
		}
		raw := f32Bytes(src)
		for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 17, 999} {
			h1, h2 := make([]byte, 2*n+1), make([]byte, 2*n)
			b1, b2 := make([]byte, 2*n+1), make([]byte, 2*n)
			f32ToF16Bytes(h1[1:], raw[4:], n)
			f32ToBF16Bytes(b1[1:], raw[4:], n)
			for i := range n {
				binary.LittleEndian.PutUint16(h2[2*i:], Float32ToFloat16(src[1+i]))
				binary.LittleEndian.PutUint16(b2[2*i:], Float32ToBFloat16(src[1+i]))
			}
			if string(h1[1:]) != string(h2) || string(b1[1:]) != string(b2) {
				t.Fatalf("byte kernels differ from the scalar casts at n = %d", n)
			}
			w1, w2 := make([]byte, 4*n+1), make([]float32, n)
			bf16ToF32Bytes(w1[1:], b2, n)
			decodeBF16(w2, b2)
			for i := range n {
				want := BFloat16ToFloat32(binary.LittleEndian.Uint16(b2[2*i:]))
				if binary.LittleEndian.Uint32(w1[1+4*i:]) != math.Float32bits(want) || !sameFloat(w2[i], want) {
					t.Fatalf("bf16 → f32 differs at n = %d, i = %d", n, i)
				}
			}
		}
		all := make([]byte, 2<<16)
		for h := range 1 << 16 {
			binary.LittleEndian.PutUint16(all[2*h:], uint16(h))
		}
		wide := make([]float32, 1<<16)
		decodeBF16(wide, all)
		for h, f := range wide {
			if math.Float32bits(f) != uint32(h)<<16 {
				t.Fatalf("bf16 %#04x decodes to %#08x", h, math.Float32bits(f))
			}
		}
	})
}

// TestF16WideningExhaustive decodes every binary16 and every bfloat16 value
// (in both bulk paths, at every position of the kernels' 16-element stride
// and in the scalar tail), with the SSE2 kernels and with the AVX2 and F16C
// ones where the CPU has them, and compares the results with f16Bits and
// BFloat16ToFloat32.
func TestF16WideningExhaustive(t *testing.T) {
	const n = 1<<16 + 7 // a tail the kernel leaves to the scalar loop
	src := make([]byte, 2*n)
	for i := range n {
		binary.LittleEndian.PutUint16(src[2*i:], uint16(i*40503)) // a permutation of the 2^16 values, repeated
	}
	f32 := make([]float32, n)
	raw := make([]byte, 4*n)
	widenings := []struct {
		name        string
		decode      func([]float32, []byte)
		decodeBytes func(dst, src []byte, n int)
		want        func(uint16) uint32
	}{
		{"f16", decodeF16, f16ToF32Bytes, f16Bits},
		{"bf16", decodeBF16, bf16ToF32Bytes, func(h uint16) uint32 { return math.Float32bits(BFloat16ToFloat32(h)) }},
	}
	eachKernelSet(t, func(t *testing.T) {
		for _, w := range widenings {
			for shift := range 2 {
				s := src[2*shift:]
				m := n - shift
				w.decode(f32[:m], s)
				w.decodeBytes(raw, s, m)
				for i := range m {
					h := binary.LittleEndian.Uint16(s[2*i:])
					want := w.want(h)
					if got := math.Float32bits(f32[i]); got != want {
						t.Fatalf("decoding %s %#04x at %d: %#08x, want %#08x", w.name, h, i, got, want)
					}
					if got := binary.LittleEndian.Uint32(raw[4*i:]); got != want {
						t.Fatalf("widening the bytes of %s %#04x at %d: %#08x, want %#08x", w.name, h, i, got, want)
					}
				}
			}
		}
	})
}

// TestHalfToHalfExhaustive holds the direct bf16 → f16 and f16 → bf16
// kernels, which go through float32 in chunks, to the scalar conversion of
// every one of the 2^16 values, as a run longer than a chunk whose length is
// no multiple of the kernels' vectors.
func TestHalfToHalfExhaustive(t *testing.T) {
	const n = 1<<16 + 7
	src, dst := make([]byte, 2*n), make([]byte, 2*n)
	for i := range n {
		binary.LittleEndian.PutUint16(src[2*i:], uint16(i*40503)) // every value, in a scattered order
	}
	bf16ToF16Bytes(dst, src, n)
	for i := range n {
		h := binary.LittleEndian.Uint16(src[2*i:])
		if got, want := binary.LittleEndian.Uint16(dst[2*i:]), Float32ToFloat16(BFloat16ToFloat32(h)); got != want {
			t.Fatalf("f16 of bf16 %#04x: %#04x, want %#04x", h, got, want)
		}
	}
	tab := f16Tab()
	f16ToBF16Bytes(dst, src, n)
	for i := range n {
		h := binary.LittleEndian.Uint16(src[2*i:])
		if got, want := binary.LittleEndian.Uint16(dst[2*i:]), bf16FromBits(tab[h]); got != want {
			t.Fatalf("bf16 of f16 %#04x: %#04x, want %#04x", h, got, want)
		}
	}
}
