package codec

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/sluice-ml/sluice/sdk/tensor"
)

// Benchmarks report MB/s of float32: the input when quantizing or narrowing,
// the output when dequantizing or widening, as ggml's reference numbers in
// spec/gguf.md §8 do. Run them with
//
//	go test ./sdk/codec -run '^$' -bench . -benchtime 3x
//
// docs/codecs.md has the results next to ggml's.

// benchElems is the size of the benchmark tensor: 4 Mi float32 (16 MiB).
const benchElems = 1 << 22

// normalData returns n N(0,1) float32 values from a fixed seed.
func normalData(n int, seed uint64) []float32 {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	return x
}

var benchData = sync1(func() []float32 { return normalData(benchElems, 42) })

// sync1 memoizes f.
func sync1[T any](f func() T) func() T {
	var v T
	done := false
	return func() T {
		if !done {
			v, done = f(), true
		}
		return v
	}
}

// quantTypes are all dtypes EncodeFloat32 quantizes, in the order of the
// ggml tables.
var quantTypes = []tensor.DType{
	tensor.Q8_0, tensor.Q4_0, tensor.Q4_1, tensor.Q5_0, tensor.Q5_1,
	tensor.Q2_K, tensor.Q3_K, tensor.Q4_K, tensor.Q5_K, tensor.Q6_K,
	tensor.TQ1_0, tensor.TQ2_0, tensor.MXFP4, tensor.IQ4NL, tensor.IQ4XS,
	tensor.F16, tensor.BF16, tensor.F8E4M3, tensor.F8E5M2,
}

func mustBytes(t testing.TB, dt tensor.DType, n int) []byte {
	t.Helper()
	info, _ := dt.Info()
	size, err := dt.ByteSize(uint64(n))
	if err != nil || info.BlockSize == 0 {
		t.Fatalf("%s: %v", dt, err)
	}
	return make([]byte, size)
}

func BenchmarkQuantize(b *testing.B) {
	x := benchData()
	for _, dt := range quantTypes {
		b.Run(string(dt), func(b *testing.B) {
			dst := mustBytes(b, dt, len(x))
			b.SetBytes(int64(4 * len(x)))
			for b.Loop() {
				if err := EncodeFloat32(dt, dst, x); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkDequantize(b *testing.B) { benchmarkDequantize(b, benchData()) }

// BenchmarkDequantizeCached is BenchmarkDequantize on 64 Ki elements, whose
// float32 output (256 KiB) stays in a core's L2 cache: the decoder's own
// speed, as Convert uses it through its scratch buffer, rather than the
// memory's (16 MiB of output go at the speed of the memory's writes).
func BenchmarkDequantizeCached(b *testing.B) { benchmarkDequantize(b, benchData()[:1<<16]) }

// benchmarkDequantize decodes x, quantized to every dtype, back to float32.
func benchmarkDequantize(b *testing.B, x []float32) {
	for _, dt := range quantTypes {
		b.Run(string(dt), func(b *testing.B) {
			q := mustBytes(b, dt, len(x))
			if err := EncodeFloat32(dt, q, x); err != nil {
				b.Fatal(err)
			}
			out := make([]float32, len(x))
			b.SetBytes(int64(4 * len(x)))
			for b.Loop() {
				if err := DecodeFloat32(dt, out, q); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkConvert measures the byte-to-byte casts the core uses most.
func BenchmarkConvert(b *testing.B) {
	x := benchData()
	pairs := [][2]tensor.DType{
		{tensor.BF16, tensor.F32}, {tensor.F16, tensor.F32}, {tensor.F32, tensor.F16},
		{tensor.F32, tensor.BF16}, {tensor.BF16, tensor.F16}, {tensor.F16, tensor.BF16},
		{tensor.F8E4M3, tensor.F32}, {tensor.F32, tensor.F8E4M3}, {tensor.BF16, tensor.Q8_0},
		{tensor.F16, tensor.Q4_0}, {tensor.Q8_0, tensor.F16},
	}
	for _, p := range pairs {
		from, to := p[0], p[1]
		b.Run(fmt.Sprintf("%s-%s", from, to), func(b *testing.B) {
			src := mustBytes(b, from, len(x))
			if err := EncodeFloat32(from, src, x); err != nil {
				b.Fatal(err)
			}
			dst := mustBytes(b, to, len(x))
			b.SetBytes(int64(4 * len(x)))
			for b.Loop() {
				if err := Convert(from, to, dst, src, len(x)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkConvertRows compares one worker with GOMAXPROCS workers on a
// large tensor (4096-element rows).
func BenchmarkConvertRows(b *testing.B) {
	x := benchData()
	src := mustBytes(b, tensor.F32, len(x))
	if err := EncodeFloat32(tensor.F32, src, x); err != nil {
		b.Fatal(err)
	}
	for _, dt := range []tensor.DType{tensor.Q8_0, tensor.Q4_0, tensor.Q4_K, tensor.Q6_K, tensor.F16, tensor.BF16} {
		for _, workers := range []int{1, runtime.GOMAXPROCS(0)} {
			b.Run(fmt.Sprintf("%s/workers=%d", dt, workers), func(b *testing.B) {
				dst := mustBytes(b, dt, len(x))
				b.SetBytes(int64(4 * len(x)))
				for b.Loop() {
					if err := ConvertRows(tensor.F32, dt, dst, src, 4096, workers); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
