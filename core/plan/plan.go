// Package plan propagates manifests through a pipeline without moving a
// byte: every source describes its checkpoint, every transform maps its
// input manifest to an output manifest, every sink decides its files and the
// dtypes it needs. The result says, for every tensor every sink will write,
// which source tensor it comes from and which ops change it on the way; the
// runner executes exactly that.
package plan

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

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
	// Routes holds, per tensor of Final, how it is produced.
	Routes map[string]*Route
	// SigningKey comes from a sign stage upstream.
	SigningKey   []byte
	SigningKeyID string
}

// Route is the path of one tensor from a source to a sink.
type Route struct {
	Source       *pipeline.Stage
	SourceTensor string
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
	final := &tensor.Manifest{Metadata: in.Out.Metadata.Clone()}
	convert := make(map[string]tensor.DType, len(sp.Convert))
	var received map[string]int
	if len(sp.Convert) > 0 {
		received = in.Out.Index()
	}
	for _, c := range sp.Convert {
		if _, ok := received[c.Tensor]; !ok {
			return nil, fmt.Errorf("sink asked to convert tensor %q, which it does not receive", c.Tensor)
		}
		convert[c.Tensor] = c.To
	}
	drop := map[string]bool{}
	for _, d := range sp.Drop {
		drop[d.Tensor] = true
	}
	skp.Routes = make(map[string]*Route, len(in.Out.Tensors))
	final.Tensors = make([]tensor.TensorInfo, 0, len(in.Out.Tensors))
	for _, t := range in.Out.Tensors {
		if drop[t.Name] {
			continue
		}
		if to, ok := convert[t.Name]; ok && to != t.DType {
			_, out, err := transform.ConvertOp(&t, to)
			if err != nil {
				return nil, err
			}
			final.Tensors = append(final.Tensors, out)
			continue
		}
		c := t.Clone()
		final.Tensors = append(final.Tensors, c)
	}
	skp.Final = final
	return skp, nil
}

// routeSink traces every tensor a sink receives back to its source.
// indexes holds each stage's name → position map, built on first use and
// shared by the sinks: a lookup per tensor per stage must not scan the
// stage's list (models have tens of thousands of tensors).
func routeSink(sk *SinkPlan, byStage map[*pipeline.Stage]*StagePlan, indexes map[*StagePlan]map[string]int) error {
	lookup := func(sp *StagePlan, name string) (int, bool) {
		index, ok := indexes[sp]
		if !ok {
			index = sp.Out.Index()
			indexes[sp] = index
		}
		i, ok := index[name]
		return i, ok
	}
	convert := make(map[string]tensor.DType, len(sk.Plan.Convert))
	for _, c := range sk.Plan.Convert {
		convert[c.Tensor] = c.To
	}
	var received map[string]int
	if len(convert) > 0 {
		received = sk.In.Index()
	}
	for _, t := range sk.Final.Tensors {
		r := &Route{}
		name := t.Name
		stage := sk.Stage.Input
		var rev [][]transform.Op
		for stage.Kind == pipeline.Transform {
			sp := byStage[stage]
			i, ok := lookup(sp, name)
			if !ok {
				return fmt.Errorf("internal: tensor %q not produced by %s", name, stage.Addr())
			}
			m := sp.Mappings[i]
			rev = append(rev, m.Ops)
			name = m.From
			stage = stage.Input
		}
		if _, ok := lookup(byStage[stage], name); !ok {
			return fmt.Errorf("internal: tensor %q not read by %s", name, stage.Addr())
		}
		r.Source, r.SourceTensor = stage, name
		for i := len(rev) - 1; i >= 0; i-- {
			r.Ops = append(r.Ops, rev[i]...)
		}
		if to, ok := convert[t.Name]; ok {
			in := &sk.In.Tensors[received[t.Name]]
			if in.DType != to {
				op, _, err := transform.ConvertOp(in, to)
				if err != nil {
					return err
				}
				r.Ops = append(r.Ops, op)
			}
		}
		sk.Routes[t.Name] = r
	}
	return nil
}

// buildTrees merges every route that starts at the same source tensor,
// sharing ops that are the same value (one quantization feeding two sinks).
func buildTrees(pl *Plan) []*Tree {
	type key struct {
		src  *pipeline.Stage
		name string
	}
	// A tree sorts by its source's place among the stages, then its tensor's
	// place in the source's list.
	type sorted struct {
		tree      *Tree
		rank, pos int
	}
	leaves, sourceTensors := 0, 0
	for _, sk := range pl.Sinks {
		leaves += len(sk.Final.Tensors)
	}
	for _, sp := range pl.Stages {
		if sp.Stage.Kind == pipeline.Source {
			sourceTensors += len(sp.Out.Tensors)
		}
	}
	pos := make(map[key]int, sourceTensors)
	rank := map[*pipeline.Stage]int{}
	sourceInfo := map[*pipeline.Stage]*tensor.Manifest{}
	for i, sp := range pl.Stages {
		if sp.Stage.Kind != pipeline.Source {
			continue
		}
		sourceInfo[sp.Stage] = sp.Out
		rank[sp.Stage] = i
		for j, t := range sp.Out.Tensors {
			pos[key{sp.Stage, t.Name}] = j
		}
	}
	// A tree per source tensor that reaches a sink, at most one per leaf:
	// the trees and their roots come from two allocations.
	n := min(leaves, sourceTensors)
	trees := make(map[key]*Tree, n)
	order := make([]sorted, 0, n)
	treeSlab, rootSlab := make([]Tree, 0, n), make([]Node, 0, n)
	for _, sk := range pl.Sinks {
		for _, t := range sk.Final.Tensors {
			r := sk.Routes[t.Name]
			k := key{r.Source, r.SourceTensor}
			tr, ok := trees[k]
			if !ok {
				j := pos[k]
				info := &sourceInfo[r.Source].Tensors[j]
				rootSlab = append(rootSlab, Node{Size: info.Size})
				treeSlab = append(treeSlab, Tree{Source: r.Source, Tensor: *info, Root: &rootSlab[len(rootSlab)-1]})
				tr = &treeSlab[len(treeSlab)-1]
				trees[k] = tr
				order = append(order, sorted{tr, rank[r.Source], j})
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
					next = &Node{Op: op, Size: n.Size / in * out}
					n.Children = append(n.Children, next)
				}
				n = next
			}
			n.Leaves = append(n.Leaves, Leaf{Sink: sk, Name: t.Name})
		}
	}
	// Source order first, then tensor order within the source.
	byPlace := func(a, b sorted) int { return cmp.Or(cmp.Compare(a.rank, b.rank), cmp.Compare(a.pos, b.pos)) }
	if !slices.IsSortedFunc(order, byPlace) {
		slices.SortFunc(order, byPlace)
	}
	out := make([]*Tree, len(order))
	for i, o := range order {
		out[i] = o.tree
	}
	return out
}

// ErrNothingToDo is returned when no enabled sink exists.
var ErrNothingToDo = errors.New("the pipeline has no enabled sink")
