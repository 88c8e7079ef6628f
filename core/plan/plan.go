// Package plan propagates manifests through a pipeline without moving a
// byte: every source describes its checkpoint, every transform maps its
// input manifest to an output manifest, every sink decides its files and the
// dtypes it needs. The result says, for every tensor every sink will write,
// which source tensor it comes from and which ops change it on the way; the
// runner executes exactly that.
package plan

import (
	"context"
	"errors"
	"fmt"

	"github.com/sluice-ml/sluice/core/pipeline"
	"github.com/sluice-ml/sluice/core/transform"
	"github.com/sluice-ml/sluice/sdk/plugin"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// Env holds the opened stages of a pipeline.
type Env struct {
	Sources    map[*pipeline.Stage]plugin.Source
	Sinks      map[*pipeline.Stage]plugin.Sink
	Transforms map[*pipeline.Stage]transform.Transform
}

// Plan is the whole decision for one run.
type Plan struct {
	Pipeline *pipeline.Pipeline
	// Stages holds every enabled stage's plan, in pipeline order.
	Stages []*StagePlan
	// Sinks holds the sinks' plans, in pipeline order.
	Sinks []*SinkPlan
	// Trees holds one tree per source tensor that some sink needs.
	Trees []*Tree
}

// StagePlan is one stage's output.
type StagePlan struct {
	Stage *pipeline.Stage
	// Out is the manifest the stage produces (nil for sinks).
	Out *tensor.Manifest
	// Mappings, for transforms, align with Out.Tensors.
	Mappings []transform.Mapping
	// Decisions are the stage's notes.
	Decisions []plugin.Decision
	// SigningKey carries a sign transform's key downstream.
	SigningKey   []byte
	SigningKeyID string
}

// SinkPlan is one sink's decision.
type SinkPlan struct {
	Stage *pipeline.Stage
	Sink  plugin.Sink
	// In is the manifest the sink's input stage produces.
	In *tensor.Manifest
	// Plan is what the sink decided.
	Plan *plugin.SinkPlan
	// Final is the manifest the sink receives: In after the conversions it
	// asked for and without the tensors it drops.
	Final *tensor.Manifest
	// Routes holds, per tensor of Final and in its order, how it is
	// produced.
	Routes []Route
	// SigningKey comes from a sign stage upstream.
	SigningKey   []byte
	SigningKeyID string

	// inIndex holds, per tensor of Final, its place in In.Tensors, and
	// converts the conversion the sink asked for (nil for none).
	inIndex  []int
	converts []transform.Op
}

// Route is the path of one tensor from a source to a sink.
type Route struct {
	Source       *pipeline.Stage
	SourceTensor string
	// SourceIndex is the tensor's place in the source's manifest.
	SourceIndex int
	// Ops are applied in order, from the source's bytes to the sink's.
	Ops []transform.Op
}

// Tree gathers every use of one source tensor: ops shared by several sinks
// run once.
type Tree struct {
	Source *pipeline.Stage
	Tensor tensor.TensorInfo
	Root   *Node
}

// Node is the tensor after a sequence of ops.
type Node struct {
	// Op produced this node from its parent; nil at the root.
	Op transform.Op
	// Size is the node's byte size.
	Size     uint64
	Children []*Node
	Leaves   []Leaf
}

// Leaf delivers a node's bytes to a sink under a name.
type Leaf struct {
	Sink *SinkPlan
	Name string
}

// StageError attributes an error to a stage.
type StageError struct {
	Stage *pipeline.Stage
	Err   error
}

func (e *StageError) Error() string { return e.Stage.Addr() + ": " + e.Err.Error() }

// Unwrap returns the cause.
func (e *StageError) Unwrap() error { return e.Err }

// Build plans the pipeline. Sources are described (headers only), transforms
// and sinks planned; nothing is written.
func Build(ctx context.Context, p *pipeline.Pipeline, env Env) (*Plan, error) {
	pl := &Plan{Pipeline: p}
	byStage := map[*pipeline.Stage]*StagePlan{}
	for _, s := range p.Stages {
		if !s.Enabled {
			continue
		}
		sp := &StagePlan{Stage: s}
		switch s.Kind {
		case pipeline.Source:
			m, err := env.Sources[s].Describe(ctx)
			if err != nil {
				return nil, &StageError{s, err}
			}
			if err := checkManifest(m); err != nil {
				return nil, &StageError{s, err}
			}
			sp.Out = m
		case pipeline.Transform:
			in := byStage[s.Input]
			tp, err := env.Transforms[s].Plan(in.Out)
			if err != nil {
				return nil, &StageError{s, err}
			}
			if len(tp.Mappings) != len(tp.Out.Tensors) {
				return nil, &StageError{s, fmt.Errorf("internal: %d mappings for %d tensors", len(tp.Mappings), len(tp.Out.Tensors))}
			}
			sp.Out, sp.Mappings, sp.Decisions = tp.Out, tp.Mappings, tp.Decisions
			sp.SigningKey, sp.SigningKeyID = in.SigningKey, in.SigningKeyID
			if tp.SigningKey != nil {
				sp.SigningKey, sp.SigningKeyID = tp.SigningKey, tp.SigningKeyID
			}
		case pipeline.Sink:
			in := byStage[s.Input]
			skp, err := planSink(ctx, s, env.Sinks[s], in)
			if err != nil {
				return nil, &StageError{s, err}
			}
			pl.Sinks = append(pl.Sinks, skp)
		}
		byStage[s] = sp
		pl.Stages = append(pl.Stages, sp)
	}
	indexes := map[*StagePlan]map[string]int{}
	for _, sk := range pl.Sinks {
		if err := routeSink(sk, byStage, indexes); err != nil {
			return nil, &StageError{sk.Stage, err}
		}
	}
	pl.Trees = buildTrees(pl)
	return pl, nil
}

func checkManifest(m *tensor.Manifest) error {
	seen := make(map[string]bool, len(m.Tensors))
	for i := range m.Tensors {
		t := &m.Tensors[i]
		if seen[t.Name] {
			return fmt.Errorf("tensor %q appears twice", t.Name)
		}
		seen[t.Name] = true
		if t.DType.Known() {
			if err := t.CheckSize(); err != nil {
				return err
			}
		}
	}
	return nil
}

func planSink(ctx context.Context, s *pipeline.Stage, sink plugin.Sink, in *StagePlan) (*SinkPlan, error) {
	sp, err := sink.Plan(ctx, in.Out)
	if err != nil {
		return nil, err
	}
	skp := &SinkPlan{Stage: s, Sink: sink, In: in.Out, Plan: sp, SigningKey: in.SigningKey, SigningKeyID: in.SigningKeyID}
	convert, err := conversionsByTensor(in.Out, sp.Convert)
	if err != nil {
		return nil, err
	}
	var drop map[string]bool
	if len(sp.Drop) > 0 {
		drop = make(map[string]bool, len(sp.Drop))
		for _, d := range sp.Drop {
			drop[d.Tensor] = true
		}
	}
	n := len(in.Out.Tensors)
	final := &tensor.Manifest{Metadata: in.Out.Metadata.Clone(), Tensors: make([]tensor.TensorInfo, 0, n)}
	skp.inIndex, skp.converts = make([]int, 0, n), make([]transform.Op, 0, n)
	for i := range in.Out.Tensors {
		t := &in.Out.Tensors[i]
		if drop[t.Name] {
			continue
		}
		var op transform.Op
		var out tensor.TensorInfo
		if convert != nil && convert[i] != "" && convert[i] != t.DType {
			if op, out, err = transform.ConvertOp(t, convert[i]); err != nil {
				return nil, err
			}
		} else {
			out = t.Clone()
		}
		final.Tensors = append(final.Tensors, out)
		skp.inIndex = append(skp.inIndex, i)
		skp.converts = append(skp.converts, op)
	}
	skp.Final = final
	return skp, nil
}

// conversionsByTensor returns, per tensor of m and in its order, the dtype
// a sink asked for it in ("" for none); nil when it asked for none. A sink
// lists its conversions in the manifest's order, as they come: they are
// then matched in one pass, and through an index of the names otherwise.
// The last of two conversions of a tensor holds.
func conversionsByTensor(m *tensor.Manifest, convs []plugin.Conversion) ([]tensor.DType, error) {
	if len(convs) == 0 {
		return nil, nil
	}
	to := make([]tensor.DType, len(m.Tensors))
	k := 0
	for i := range m.Tensors {
		if k < len(convs) && convs[k].Tensor == m.Tensors[i].Name {
			to[i] = convs[k].To
			k++
		}
	}
	if k == len(convs) {
		return to, nil
	}
	clear(to)
	index := m.Index()
	for _, c := range convs {
		i, ok := index[c.Tensor]
		if !ok {
			return nil, fmt.Errorf("sink asked to convert tensor %q, which it does not receive", c.Tensor)
		}
		to[i] = c.To
	}
	return to, nil
}

// routeSink traces every tensor a sink receives back to its source.
// indexes holds each transform's name → position map of its input, built
// on first use and shared by the sinks: a lookup per tensor per stage must
// not scan the stage's list (models have tens of thousands of tensors). A
// transform that keeps its input's order (most do) needs none.
func routeSink(sk *SinkPlan, byStage map[*pipeline.Stage]*StagePlan, indexes map[*StagePlan]map[string]int) error {
	position := func(sp *StagePlan, name string, guess int) (int, bool) {
		if guess < len(sp.Out.Tensors) && sp.Out.Tensors[guess].Name == name {
			return guess, true
		}
		index, ok := indexes[sp]
		if !ok {
			index = sp.Out.Index()
			indexes[sp] = index
		}
		i, ok := index[name]
		return i, ok
	}
	sk.Routes = make([]Route, len(sk.Final.Tensors))
	for f := range sk.Final.Tensors {
		r := &sk.Routes[f]
		at := sk.inIndex[f] // the tensor's place in the stage's output
		stage := sk.Stage.Input
		name := byStage[stage].Out.Tensors[at].Name
		var rev [][]transform.Op
		for stage.Kind == pipeline.Transform {
			m := byStage[stage].Mappings[at]
			rev = append(rev, m.Ops)
			name, stage = m.From, stage.Input
			i, ok := position(byStage[stage], name, at)
			if !ok {
				return fmt.Errorf("internal: tensor %q not produced by %s", name, stage.Addr())
			}
			at = i
		}
		r.Source, r.SourceTensor, r.SourceIndex = stage, name, at
		for i := len(rev) - 1; i >= 0; i-- {
			r.Ops = append(r.Ops, rev[i]...)
		}
		if op := sk.converts[f]; op != nil {
			r.Ops = append(r.Ops, op)
		}
	}
	return nil
}

// buildTrees merges every route that starts at the same source tensor,
// sharing ops that are the same value (one quantization feeding two sinks).
func buildTrees(pl *Plan) []*Tree {
	// A tree per source tensor that reaches a sink, at most one per leaf,
	// found by the tensor's place in its source: the trees, their roots and
	// their other nodes come from one allocation each.
	leaves, ops := 0, 0
	for _, sk := range pl.Sinks {
		leaves += len(sk.Final.Tensors)
		for i := range sk.Routes {
			ops += len(sk.Routes[i].Ops)
		}
	}
	type source struct {
		out   *tensor.Manifest
		trees []*Tree // by the tensor's place in out
	}
	sources := map[*pipeline.Stage]source{}
	sourceTensors := 0
	for _, sp := range pl.Stages {
		if sp.Stage.Kind == pipeline.Source {
			sources[sp.Stage] = source{sp.Out, make([]*Tree, len(sp.Out.Tensors))}
			sourceTensors += len(sp.Out.Tensors)
		}
	}
	n := min(leaves, sourceTensors)
	treeSlab, rootSlab, nodeSlab := make([]Tree, 0, n), make([]Node, 0, n), make([]Node, 0, ops)
	count := 0
	for _, sk := range pl.Sinks {
		for f, t := range sk.Final.Tensors {
			r := &sk.Routes[f]
			src := sources[r.Source]
			tr := src.trees[r.SourceIndex]
			if tr == nil {
				info := &src.out.Tensors[r.SourceIndex]
				rootSlab = append(rootSlab, Node{Size: info.Size})
				treeSlab = append(treeSlab, Tree{Source: r.Source, Tensor: *info, Root: &rootSlab[len(rootSlab)-1]})
				tr = &treeSlab[len(treeSlab)-1]
				src.trees[r.SourceIndex] = tr
				count++
			}
			n := tr.Root
			for _, op := range r.Ops {
				var next *Node
				for _, c := range n.Children {
					if c.Op == op {
						next = c
						break
					}
				}
				if next == nil {
					in, out := op.UnitBytes()
					nodeSlab = append(nodeSlab, Node{Op: op, Size: n.Size / in * out})
					next = &nodeSlab[len(nodeSlab)-1]
					n.Children = append(n.Children, next)
				}
				n = next
			}
			n.Leaves = append(n.Leaves, Leaf{Sink: sk, Name: t.Name})
		}
	}
	// Source order first, then tensor order within the source.
	out := make([]*Tree, 0, count)
	for _, sp := range pl.Stages {
		for _, tr := range sources[sp.Stage].trees {
			if tr != nil {
				out = append(out, tr)
			}
		}
	}
	return out
}

// ErrNothingToDo is returned when no enabled sink exists.
var ErrNothingToDo = errors.New("the pipeline has no enabled sink")
