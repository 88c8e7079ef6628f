package plan_test

import (
	"context"
	"fmt"
	"io"

	"github.com/sluice-ml/sluice/sdk/plugin"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// describedSource is a source whose manifest is given.
type describedSource struct{ m *tensor.Manifest }

func (s describedSource) Describe(context.Context) (*tensor.Manifest, error) { return s.m, nil }
func (s describedSource) Open(context.Context, string) (io.ReadCloser, error) {
	return nil, fmt.Errorf("a source for planning only")
}
func (s describedSource) Close() error { return nil }

// convertingSink plans every tensor of its input in dtype to, in one file,
// as a format sink that quantizes does.
type convertingSink struct {
	plugin.Sink
	to tensor.DType
}

func (s convertingSink) Plan(_ context.Context, in *tensor.Manifest) (*plugin.SinkPlan, error) {
	p := &plugin.SinkPlan{Files: []plugin.PlannedFile{{Path: "out", Tensors: len(in.Tensors)}}}
	if s.to != "" {
		p.Convert = make([]plugin.Conversion, 0, len(in.Tensors))
		for _, t := range in.Tensors {
			if t.DType != s.to {
				p.Convert = append(p.Convert, plugin.Conversion{Tensor: t.Name, To: s.to, Reason: "the sink's dtype"})
			}
		}
	}
	return p, nil
}

// manyTensors is a mixture-of-experts checkpoint's manifest: n bf16 tensors
// of 64 × 128 in one file.
func manyTensors(n int) *tensor.Manifest {
	m := &tensor.Manifest{Tensors: make([]tensor.TensorInfo, n)}
	for i := range m.Tensors {
		m.Tensors[i] = tensor.TensorInfo{
			Name:  fmt.Sprintf("model.layers.%d.mlp.experts.%d.%s_proj.weight", i/192, i/3%64, []string{"down", "gate", "up"}[i%3]),
			DType: tensor.BF16, Shape: []uint64{64, 128}, Size: 16384,
			Location: &tensor.FileRef{Path: "/data/model.safetensors", Offset: uint64(i) * 16384, Length: 16384},
		}
	}
	return m
}

// listedSink plans the conversions and drops it is given, in their order.
type listedSink struct {
	plugin.Sink
	convert []plugin.Conversion
	drop    []string
}

func (s listedSink) Plan(context.Context, *tensor.Manifest) (*plugin.SinkPlan, error) {
	p := &plugin.SinkPlan{Convert: s.convert}
	for _, d := range s.drop {
		p.Drop = append(p.Drop, plugin.Decision{Tensor: d, Msg: "not wanted"})
	}
	return p, nil
}
