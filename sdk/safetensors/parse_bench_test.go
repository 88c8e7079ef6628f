package safetensors

import (
	"fmt"
	"testing"

	"github.com/sluice-ml/sluice/sdk/tensor"
)

// BenchmarkParseHeader parses the header of a file of many small tensors,
// as a mixture-of-experts checkpoint has (per entry: ns/op ÷ 4096).
func BenchmarkParseHeader(b *testing.B) {
	ts := make([]Tensor, 4096)
	for i := range ts {
		ts[i] = Tensor{Name: fmt.Sprintf("model.layers.%d.mlp.experts.%d.down_proj.weight", i/64, i%64), DType: tensor.BF16, Shape: []uint64{64, 128}, Size: 64 * 128 * 2}
	}
	l, err := PlanLayout(ts, map[string]string{"format": "pt"})
	if err != nil {
		b.Fatal(err)
	}
	raw := l.Prefix[8:]
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		if _, err := ParseHeader(raw, "bench"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPlanLayout lays out 4,096 tensors, as a sink does for a
// mixture-of-experts shard (twice: in Plan and in Begin).
func BenchmarkPlanLayout(b *testing.B) {
	ts := make([]Tensor, 4096)
	for i := range ts {
		ts[i] = Tensor{Name: fmt.Sprintf("model.layers.%d.mlp.experts.%d.down_proj.weight", i/64, i%64), DType: tensor.BF16, Shape: []uint64{64, 128}, Size: 64 * 128 * 2}
	}
	for b.Loop() {
		if _, err := PlanLayout(ts, map[string]string{"format": "pt"}); err != nil {
			b.Fatal(err)
		}
	}
}
