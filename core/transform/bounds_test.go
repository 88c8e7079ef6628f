package transform_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/sluice-ml/sluice/core/runtest"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// blockBound is the largest error of quantize-then-dequantize for one ggml
// type, as a fraction of the largest magnitude in the element's block. The
// bounds come from each format's grid, with the float16 rounding of its
// scales:
//   - legacy types with a symmetric scale (q8_0, q4_0, q5_0) are within half a
//     step, except that the code on the far side of the block's extreme
//     value clamps, costing a whole step for q4_0 and q5_0 (8 and 16 levels
//     per side);
//   - types with a minimum (q4_1, q5_1) are within half a step of the
//     block's range: (2·amax)/(2^b − 1)/2;
//   - K-quants fit per-sub-block scales and minimums quantized to 6 bits (8
//     for q6_K), which can cost up to a whole step of the grid:
//     2/(2^b − 1) with minimums (q2_K, q4_K, q5_K), 1/2^(b−1) without (q3_K,
//     q6_K);
//   - ternary types (tq1_0, tq2_0) have levels −amax, 0, amax: half of amax;
//   - mxfp4 scales by a power of two with amax/scale in [4, 8) over the e2m1
//     grid (0 … 6, gaps up to 2): under a quarter of amax;
//   - iq4_nl and iq4_xs use a 16-level non-linear grid from −127 to 113 (gaps
//     up to 24): the clamped side costs 14/127 of amax; iq4_xs's 6-bit
//     sub-block scales add a little more.
var blockBound = map[tensor.DType]float64{
	tensor.Q8_0:  1.0/254 + 0x1p-11,
	tensor.Q4_0:  1.0/8 + 0x1p-10,
	tensor.Q5_0:  1.0/16 + 0x1p-10,
	tensor.Q4_1:  1.0/15 + 0x1p-10,
	tensor.Q5_1:  1.0/31 + 0x1p-10,
	tensor.Q2_K:  2.0 / 3,
	tensor.Q3_K:  1.0 / 4,
	tensor.Q4_K:  2.0 / 15,
	tensor.Q5_K:  2.0 / 31,
	tensor.Q6_K:  1.0 / 32,
	tensor.TQ1_0: 0.5 + 0x1p-10,
	tensor.TQ2_0: 0.5 + 0x1p-10,
	tensor.MXFP4: 0.25,
	tensor.IQ4NL: 14.0/127 + 0x1p-10,
	tensor.IQ4XS: 0.15,
}

// floatBound is the relative error of a float cast (half an ulp) and the
// absolute error under its smallest normal (half the smallest subnormal).
var floatBound = map[tensor.DType][2]float64{
	tensor.F16:    {0x1p-11, 0x1p-25},
	tensor.BF16:   {0x1p-8, 0x1p-134},
	tensor.F8E4M3: {0x1p-4, 0x1p-10},
	tensor.F8E5M2: {0x1p-3, 0x1p-17},
}

// samples draws values of several shapes of distribution: normal, uniform
// over several magnitudes, heavy-tailed with outliers, and all zero.
func samples(kind, n int, r *rand.Rand) []float32 {
	v := make([]float32, n)
	for i := range v {
		switch kind {
		case 0:
			v[i] = float32(r.NormFloat64() * 0.02)
		case 1:
			v[i] = float32((r.Float64()*2 - 1) * math.Pow(10, float64(r.IntN(6)-3)))
		case 2:
			x := r.NormFloat64()
			if r.IntN(20) == 0 {
				x *= 50
			}
			v[i] = float32(x)
		case 3:
			v[i] = 0
		}
	}
	return v
}

// TestQuantizeDequantizeWithinBound runs quantize then dequantize through
// the runner for every encodable ggml type and checks every element against
// the type's bound.
func TestQuantizeDequantizeWithinBound(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for dt, bound := range blockBound {
		t.Run(string(dt), func(t *testing.T) {
			info, _ := dt.Info()
			bs := int(info.BlockSize)
			for kind := 0; kind < 4; kind++ {
				shape := []uint64{5, uint64(2 * 256)}
				vals := samples(kind, elements(shape), r)
				c := &runtest.Checkpoint{}
				c.Add("w", tensor.F32, shape, f32Bytes(vals))
				res := run(t, fmt.Sprintf(`
source "mem" "in" { id = "in" }
transform "quantize" "q" {
  input = source.in
  type  = %q
}
transform "dequantize" "dq" { input = transform.q }
sink "mem" "out" {
  input = transform.dq
  id    = "out"
}`, dt), runtest.Options{Sources: sources(c), Workers: 2, Slots: 32, SlotSize: 4 << 10})
				back := f32Values(res.Sinks["out"].Data["w"])
				for b := 0; b < len(vals)/bs; b++ {
					amax := 0.0
					for _, x := range vals[b*bs : (b+1)*bs] {
						amax = math.Max(amax, math.Abs(float64(x)))
					}
					for i := b * bs; i < (b+1)*bs; i++ {
						if d := math.Abs(float64(back[i]) - float64(vals[i])); d > bound*amax {
							t.Fatalf("sample kind %d, element %d: %g came back as %g: error %g > %g × block amax %g", kind, i, vals[i], back[i], d, bound, amax)
						}
					}
				}
			}
		})
	}
}

// TestCastWithinBound casts f32 values to each float type and back.
func TestCastWithinBound(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for dt, bound := range floatBound {
		t.Run(string(dt), func(t *testing.T) {
			vals := samples(1, 4096, r)
			vals = append(vals, 0, -0, 1e-30, -1e-9, 3.1415927)
			c := &runtest.Checkpoint{}
			c.Add("w", tensor.F32, []uint64{uint64(len(vals))}, f32Bytes(vals))
			res := run(t, fmt.Sprintf(`
source "mem" "in" { id = "in" }
transform "cast" "down" {
  input = source.in
  type  = %q
}
transform "cast" "up" {
  input = transform.down
  type  = "f32"
}
sink "mem" "out" {
  input = transform.up
  id    = "out"
}`, dt), runtest.Options{Sources: sources(c)})
			back := f32Values(res.Sinks["out"].Data["w"])
			for i, x := range vals {
				ax := math.Abs(float64(x))
				if d := math.Abs(float64(back[i]) - float64(x)); d > max(bound[0]*ax, bound[1]) {
					t.Fatalf("element %d: %g came back as %g", i, x, back[i])
				}
			}
		})
	}
}
