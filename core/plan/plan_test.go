package plan_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/sluice-ml/sluice/core/pipeline"
	"github.com/sluice-ml/sluice/core/plan"
	"github.com/sluice-ml/sluice/core/transform"
	"github.com/sluice-ml/sluice/sdk/plugin"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// bf16Tensors is a manifest of bf16 tensors of 64 elements with these names.
func bf16Tensors(names ...string) *tensor.Manifest {
	m := &tensor.Manifest{}
	for _, n := range names {
		m.Tensors = append(m.Tensors, tensor.TensorInfo{Name: n, DType: tensor.BF16, Shape: []uint64{64}, Size: 128})
	}
	return m
}

// reverseRename is a transform that reverses its input's order, drops the
// tensor named drop and prefixes every other name with "r.": its output's
// places are none of its input's.
type reverseRename struct{ drop string }

func (r reverseRename) Plan(in *tensor.Manifest) (*transform.Plan, error) {
	p := &transform.Plan{Out: &tensor.Manifest{}}
	for i := len(in.Tensors) - 1; i >= 0; i-- {
		t := in.Tensors[i]
		if t.Name == r.drop {
			continue
		}
		from := t.Name
		t.Name = "r." + t.Name
		p.Out.Tensors = append(p.Out.Tensors, t)
		p.Mappings = append(p.Mappings, transform.Mapping{From: from})
	}
	return p, nil
}

// oneSink plans a pipeline of a source of the tensors of m, the transforms
// given, one after another, and a sink.
func oneSink(t *testing.T, m *tensor.Manifest, sink plugin.Sink, transforms ...transform.Transform) (*plan.Plan, error) {
	t.Helper()
	src := &pipeline.Stage{Kind: pipeline.Source, Type: "mem", Name: "in", Enabled: true}
	p := &pipeline.Pipeline{Stages: []*pipeline.Stage{src}}
	env := plan.Env{
		Sources:    map[*pipeline.Stage]plugin.Source{src: describedSource{m}},
		Sinks:      map[*pipeline.Stage]plugin.Sink{},
		Transforms: map[*pipeline.Stage]transform.Transform{},
	}
	prev := src
	for i, tr := range transforms {
		s := &pipeline.Stage{Kind: pipeline.Transform, Type: "mem", Name: fmt.Sprint("t", i), Enabled: true, Input: prev}
		p.Stages = append(p.Stages, s)
		env.Transforms[s] = tr
		prev = s
	}
	out := &pipeline.Stage{Kind: pipeline.Sink, Type: "mem", Name: "out", Enabled: true, Input: prev}
	p.Stages = append(p.Stages, out)
	env.Sinks[out] = sink
	return plan.Build(context.Background(), p, env)
}

// routes describes each route of the plan's one sink: the tensor's name and
// dtype as the sink receives it, where it comes from and the ops on the way.
func routes(pl *plan.Plan) []string {
	sk := pl.Sinks[0]
	var out []string
	for i, t := range sk.Final.Tensors {
		r := sk.Routes[i]
		var ops []string
		for _, op := range r.Ops {
			ops = append(ops, op.String())
		}
		out = append(out, fmt.Sprintf("%s %s ← %s #%d [%s]", t.Name, t.DType, r.SourceTensor, r.SourceIndex, strings.Join(ops, ", ")))
	}
	return out
}

func TestConversionsMatchTheirTensorsInAnyOrder(t *testing.T) {
	for _, tc := range []struct {
		name    string
		convert []plugin.Conversion
	}{
		{"in the manifest's order", []plugin.Conversion{{Tensor: "b", To: tensor.F16}, {Tensor: "c", To: tensor.Q8_0}}},
		{"in another order", []plugin.Conversion{{Tensor: "c", To: tensor.Q8_0}, {Tensor: "b", To: tensor.F16}}},
		{"the last of two for a tensor", []plugin.Conversion{{Tensor: "b", To: tensor.Q8_0}, {Tensor: "c", To: tensor.Q8_0}, {Tensor: "b", To: tensor.F16}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pl, err := oneSink(t, bf16Tensors("a", "b", "c"), listedSink{convert: tc.convert})
			if err != nil {
				t.Fatal(err)
			}
			want := []string{"a bf16 ← a #0 []", "b f16 ← b #1 [bf16 → f16]", "c q8_0 ← c #2 [bf16 → q8_0]"}
			if got := routes(pl); !slices.Equal(got, want) {
				t.Errorf("routes:\n%q\nwant\n%q", got, want)
			}
		})
	}
}

func TestConvertingATensorTheSinkDoesNotReceiveFails(t *testing.T) {
	_, err := oneSink(t, bf16Tensors("a", "b"), listedSink{convert: []plugin.Conversion{{Tensor: "a", To: tensor.F16}, {Tensor: "z", To: tensor.F16}}})
	if err == nil || !strings.Contains(err.Error(), `convert tensor "z", which it does not receive`) {
		t.Fatalf("err = %v, want the conversion of z refused", err)
	}
}

// Routes go back through transforms whose output is in another order than
// their input, to the source tensor's place; the trees follow the source's
// order whatever order the sink receives the tensors in.
func TestRoutesGoBackThroughTransformsToTheirSourceTensor(t *testing.T) {
	sink := listedSink{convert: []plugin.Conversion{{Tensor: "r.r.d", To: tensor.Q8_0}}, drop: []string{"r.r.a"}}
	pl, err := oneSink(t, bf16Tensors("a", "b", "c", "d"), sink, reverseRename{drop: "c"}, reverseRename{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"r.r.b bf16 ← b #1 []", "r.r.d q8_0 ← d #3 [bf16 → q8_0]"}
	if got := routes(pl); !slices.Equal(got, want) {
		t.Errorf("routes:\n%q\nwant\n%q", got, want)
	}
	var trees []string
	for _, tr := range pl.Trees {
		trees = append(trees, tr.Tensor.Name)
	}
	if want := []string{"b", "d"}; !slices.Equal(trees, want) {
		t.Errorf("trees %q, want %q", trees, want)
	}
}

// Two sinks of the same source tensor share its tree, and a conversion both
// ask for runs once.
func TestSinksShareTreesAndOps(t *testing.T) {
	src := &pipeline.Stage{Kind: pipeline.Source, Type: "mem", Name: "in", Enabled: true}
	var stages []*pipeline.Stage
	sinks := map[*pipeline.Stage]plugin.Sink{}
	for _, name := range []string{"q1", "q2", "copy"} {
		s := &pipeline.Stage{Kind: pipeline.Sink, Type: "mem", Name: name, Enabled: true, Input: src}
		stages = append(stages, s)
		sinks[s] = convertingSink{}
	}
	sinks[stages[0]] = convertingSink{to: tensor.Q8_0}
	sinks[stages[1]] = convertingSink{to: tensor.Q8_0}
	p := &pipeline.Pipeline{Stages: append([]*pipeline.Stage{src}, stages...)}
	pl, err := plan.Build(context.Background(), p, plan.Env{Sources: map[*pipeline.Stage]plugin.Source{src: describedSource{bf16Tensors("a", "b")}}, Sinks: sinks})
	if err != nil {
		t.Fatal(err)
	}
	if len(pl.Trees) != 2 {
		t.Fatalf("%d trees, want one per source tensor", len(pl.Trees))
	}
	for _, tr := range pl.Trees {
		if len(tr.Root.Leaves) != 1 || tr.Root.Leaves[0].Sink.Stage.Name != "copy" {
			t.Errorf("%s: the root's leaves %v, want the copy", tr.Tensor.Name, tr.Root.Leaves)
		}
		if len(tr.Root.Children) != 1 {
			t.Fatalf("%s: %d children of the root, want the one q8_0 conversion", tr.Tensor.Name, len(tr.Root.Children))
		}
		q := tr.Root.Children[0]
		if len(q.Leaves) != 2 || q.Size != 68 {
			t.Errorf("%s: the q8_0 node has %d leaves and %d bytes, want 2 and 68", tr.Tensor.Name, len(q.Leaves), q.Size)
		}
	}
}
