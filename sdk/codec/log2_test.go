package codec

import (
	"math"
	"os"
	"testing"
)

// TestLog2FloorInt checks the table-driven floor(log2f(x)) of mxfp4 against
// log2Floor (glibc's correctly rounded log2f): densely around every
// threshold and binade edge, and on a stride through all positive floats.
// SLUICE_EXHAUSTIVE=1 checks every positive float32 instead.
func TestLog2FloorInt(t *testing.T) {
	check := func(b uint32) {
		x := math.Float32frombits(b)
		if got, want := log2FloorInt(x), int32(log2Floor(x)); got != want {
			t.Fatalf("log2FloorInt(%g = %#08x) = %d, want %d", x, b, got, want)
		}
	}
	if os.Getenv("SLUICE_EXHAUSTIVE") != "" {
		forAllFloat32(t, func(b uint32) {
			if b > 0 && b < 0x7f800000 {
				check(b)
			}
		})
		return
	}
	for b := uint32(1); b < 0x7f800000; b += 997 {
		check(b)
	}
	for e := uint32(1); e <= 254; e++ {
		for _, c := range []uint32{e<<23 | log2Thresh[e]&0x7fffff, e << 23, e<<23 | 0x7fffff} {
			for d := uint32(0); d < 64; d++ {
				check(c + d)
				check(c - d)
			}
		}
	}
}
