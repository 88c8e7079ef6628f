package plan_test

import (
	"context"
	"testing"

	"github.com/sluice-ml/sluice/core/pipeline"
	"github.com/sluice-ml/sluice/core/plan"
	"github.com/sluice-ml/sluice/core/transform"
	"github.com/sluice-ml/sluice/sdk/plugin"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// BenchmarkBuildManyTensors plans 20,000 tensors from one source to a sink
// that quantizes every one to q8_0 and a sink that copies them: the
// planning a run of a mixture-of-experts checkpoint does before its first
// byte moves.
func BenchmarkBuildManyTensors(b *testing.B) {
	src := &pipeline.Stage{Kind: pipeline.Source, Type: "mem", Name: "in", Enabled: true}
	quantized := &pipeline.Stage{Kind: pipeline.Sink, Type: "mem", Name: "q8_0", Enabled: true, Input: src}
	copied := &pipeline.Stage{Kind: pipeline.Sink, Type: "mem", Name: "copy", Enabled: true, Input: src}
	p := &pipeline.Pipeline{Stages: []*pipeline.Stage{src, quantized, copied}}
	env := plan.Env{
		Sources:    map[*pipeline.Stage]plugin.Source{src: describedSource{manyTensors(20000)}},
		Sinks:      map[*pipeline.Stage]plugin.Sink{quantized: convertingSink{to: tensor.Q8_0}, copied: convertingSink{}},
		Transforms: map[*pipeline.Stage]transform.Transform{},
	}
	b.ReportAllocs()
	for b.Loop() {
		pl, err := plan.Build(context.Background(), p, env)
		if err != nil {
			b.Fatal(err)
		}
		if len(pl.Trees) != 20000 {
			b.Fatalf("%d trees, want 20000", len(pl.Trees))
		}
	}
}
