package transform_test

import (
	"fmt"
	"testing"

	"github.com/sluice-ml/sluice/core/runtest"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// BenchmarkQuantizeWorkers quantizes one 64 MiB f32 tensor through the
// planner and the runner with 1 and 2 workers (8 MiB arena slots, as the
// CLI uses). MB/s is of f32 input.
//
//	go test ./core/transform -run XXX -bench QuantizeWorkers -benchtime 3x
func BenchmarkQuantizeWorkers(b *testing.B) {
	shape := []uint64{4096, 4096}
	c := &runtest.Checkpoint{}
	c.Add("w", tensor.F32, shape, f32Bytes(normal(elements(shape), 0.02, 1)))
	for _, dt := range []tensor.DType{tensor.Q4_K, tensor.Q8_0, tensor.Q4_0, tensor.Q6_K} {
		for _, w := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/workers=%d", dt, w), func(b *testing.B) {
				src := one("quantize", fmt.Sprintf("type = %q", dt))
				b.SetBytes(int64(len(c.Data["w"])))
				for i := 0; i < b.N; i++ {
					run(b, src, runtest.Options{Sources: sources(c), Workers: w, Slots: 32, SlotSize: 8 << 20})
				}
			})
		}
	}
}
