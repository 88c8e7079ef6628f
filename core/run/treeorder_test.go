package run

import (
	"context"
	"testing"

	"github.com/sluice-ml/sluice/core/pipeline"
	"github.com/sluice-ml/sluice/core/plan"
	"github.com/sluice-ml/sluice/core/transform"
	"github.com/sluice-ml/sluice/sdk/plugin"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// The plan's trees, which the run starts in order, follow the sources in
// pipeline order and each source's tensors in its own order, whatever order
// the sinks come in.
func TestTreesFollowSourcesThenTheirTensors(t *testing.T) {
	manifest := func(names ...string) *tensor.Manifest {
		m := &tensor.Manifest{}
		for _, n := range names {
			m.Tensors = append(m.Tensors, tensor.TensorInfo{Name: n, DType: tensor.U8, Shape: []uint64{4}, Size: 4})
		}
		return m
	}
	first := &pipeline.Stage{Kind: pipeline.Source, Type: "mem", Name: "first", Enabled: true}
	second := &pipeline.Stage{Kind: pipeline.Source, Type: "mem", Name: "second", Enabled: true}
	// The sinks come in the other order, so the routes reach the trees
	// second source first.
	toSecond := &pipeline.Stage{Kind: pipeline.Sink, Type: "mem", Name: "a", Enabled: true, Input: second}
	toFirst := &pipeline.Stage{Kind: pipeline.Sink, Type: "mem", Name: "b", Enabled: true, Input: first}
	p := &pipeline.Pipeline{Stages: []*pipeline.Stage{first, second, toSecond, toFirst}}
	env := plan.Env{
		Sources: map[*pipeline.Stage]plugin.Source{
			first:  &memSource{m: manifest("z", "m", "a", "q")},
			second: &memSource{m: manifest("y", "b", "x")},
		},
		Sinks:      map[*pipeline.Stage]plugin.Sink{toSecond: &memSink{}, toFirst: &memSink{}},
		Transforms: map[*pipeline.Stage]transform.Transform{},
	}
	pl, err := plan.Build(context.Background(), p, env)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		source *pipeline.Stage
		name   string
	}{{first, "z"}, {first, "m"}, {first, "a"}, {first, "q"}, {second, "y"}, {second, "b"}, {second, "x"}}
	if len(pl.Trees) != len(want) {
		t.Fatalf("%d trees, want %d", len(pl.Trees), len(want))
	}
	for i, tr := range pl.Trees {
		if tr.Source != want[i].source || tr.Tensor.Name != want[i].name {
			t.Errorf("tree %d: %s %q, want %s %q", i, tr.Source.Name, tr.Tensor.Name, want[i].source.Name, want[i].name)
		}
	}
}
