package codec

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/sluice-ml/sluice/sdk/tensor"
)

// blockBounds are the documented error bounds of the block types
// (docs/codecs.md), as fractions of the block's largest magnitude amax:
// every element satisfies |x - y| ≤ maxErr·amax, and the block's root mean
// square error is at most rmsErr·amax. They hold while the block's scales fit
// the fp16 range (amax roughly between 1e-4 and 6e4). q8_0 … q5_1 and the
// ternary types follow from their formulas (half a step, plus the fp16
// rounding of the scale, plus q4_0/q5_0's clamp of +max); the others are
// search-based and their bounds are measured with a margin.
var blockBounds = map[tensor.DType]struct{ maxErr, rmsErr float64 }{
	tensor.Q8_0:  {1.0/254 + 1.0/2048, 0.0035},
	tensor.Q4_0:  {1.0/8 + 1.0/2048, 0.065},
	tensor.Q4_1:  {1.0/15 + 3.0/2048, 0.065},
	tensor.Q5_0:  {1.0/16 + 1.0/2048, 0.032},
	tensor.Q5_1:  {1.0/31 + 3.0/2048, 0.032},
	tensor.Q2_K:  {0.5, 0.19},
	tensor.Q3_K:  {0.35, 0.10},
	tensor.Q4_K:  {0.15, 0.045},
	tensor.Q5_K:  {0.08, 0.023},
	tensor.Q6_K:  {0.03, 0.011},
	tensor.TQ1_0: {0.5 + 1.0/2048, 0.34},
	tensor.TQ2_0: {0.5 + 1.0/2048, 0.34},
	tensor.MXFP4: {0.25, 0.16},
	tensor.IQ4NL: {0.17, 0.06},
	tensor.IQ4XS: {0.18, 0.05},
}

// randomRow fills x with one of four distributions: normal, uniform in
// [-1, 1], normal with a log-normal scale per element, uniform in [0, 3].
func randomRow(r *rand.Rand, x []float32, kind int) {
	for i := range x {
		switch kind % 4 {
		case 0:
			x[i] = float32(r.NormFloat64())
		case 1:
			x[i] = float32(r.Float64()*2 - 1)
		case 2:
			x[i] = float32(r.NormFloat64() * math.Exp(r.NormFloat64()*2))
		case 3:
			x[i] = float32(r.Float64() * 3)
		}
	}
}

// TestQuantizeErrorBounds quantizes random data and checks every block
// against its type's documented error bound.
func TestQuantizeErrorBounds(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	x := make([]float32, 4096)
	y := make([]float32, len(x))
	for dt, bound := range blockBounds {
		info, _ := dt.Info()
		bs := int(info.BlockSize)
		q := make([]byte, mustSize(t, dt, len(x)))
		for iter := 0; iter < 40; iter++ {
			randomRow(r, x, iter)
			if err := EncodeFloat32(dt, q, x); err != nil {
				t.Fatal(err)
			}
			if err := DecodeFloat32(dt, y, q); err != nil {
				t.Fatal(err)
			}
			for b := 0; b < len(x); b += bs {
				var amax, se float64
				for _, v := range x[b : b+bs] {
					amax = math.Max(amax, math.Abs(float64(v)))
				}
				for i := b; i < b+bs; i++ {
					e := math.Abs(float64(x[i]) - float64(y[i]))
					if e > bound.maxErr*amax {
						t.Fatalf("%s: element %d: |%g - %g| = %g > %g·amax (amax %g)", dt, i, x[i], y[i], e, bound.maxErr, amax)
					}
					se += e * e
				}
				if rms := math.Sqrt(se / float64(bs)); rms > bound.rmsErr*amax {
					t.Fatalf("%s: block at %d: rms error %g > %g·amax (amax %g)", dt, b, rms, bound.rmsErr, amax)
				}
			}
		}
	}
}

// elementBounds are the relative error bounds of the float element types for
// values in their normal range: half a unit in the last place.
var elementBounds = []struct {
	dt       tensor.DType
	rel      float64
	min, max float64 // normal range
}{
	{tensor.F16, 0x1p-11, 0x1p-14, 65504},
	{tensor.BF16, 0x1p-8, 0x1p-126, 3.38e38},
	{tensor.F8E4M3, 0x1p-4, 0x1p-6, 448},
	{tensor.F8E5M2, 0x1p-3, 0x1p-14, 57344},
	{tensor.F64, 0, 0, math.MaxFloat32},
	{tensor.F32, 0, 0, math.MaxFloat32},
}

func TestElementErrorBounds(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	x := make([]float32, 1<<14)
	y := make([]float32, len(x))
	for _, c := range elementBounds {
		lo, hi := math.Log(math.Max(c.min, 1e-38)), math.Log(c.max)
		for i := range x {
			v := math.Exp(lo + r.Float64()*(hi-lo))
			if r.IntN(2) == 0 {
				v = -v
			}
			x[i] = float32(v)
			if math.Abs(float64(x[i])) > c.max {
				x[i] = float32(math.Copysign(c.max, v))
			}
		}
		b := make([]byte, mustSize(t, c.dt, len(x)))
		if err := EncodeFloat32(c.dt, b, x); err != nil {
			t.Fatal(err)
		}
		if err := DecodeFloat32(c.dt, y, b); err != nil {
			t.Fatal(err)
		}
		for i := range x {
			if e := math.Abs(float64(x[i]) - float64(y[i])); e > c.rel*math.Abs(float64(x[i])) {
				t.Fatalf("%s: %g came back as %g (relative error %g > %g)", c.dt, x[i], y[i], e/math.Abs(float64(x[i])), c.rel)
			}
		}
	}
}
