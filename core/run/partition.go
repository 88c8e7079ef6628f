package run

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/sluice-ml/sluice/core/plan"
	"github.com/sluice-ml/sluice/sdk/plugin"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// Partition names one of Count runs that share a pipeline's work
// (`sluice run --partition INDEX/COUNT`, INDEX from 0 as Kubernetes'
// JOB_COMPLETION_INDEX counts).
type Partition struct {
	Index, Count int
}

// ParsePartition parses "i/N" with 0 ≤ i < N.
func ParsePartition(s string) (Partition, error) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(strings.TrimSpace(a))
	n, err2 := strconv.Atoi(strings.TrimSpace(b))
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 0 || i >= n {
		return Partition{}, fmt.Errorf("partition %q is not INDEX/COUNT with 0 ≤ INDEX < COUNT (e.g. 0/4 … 3/4)", s)
	}
	return Partition{Index: i, Count: n}, nil
}

func (p Partition) String() string { return fmt.Sprintf("%d/%d", p.Index, p.Count) }

// Unit is one piece of work a partition takes whole: one shard of a sink
// that can be written shard by shard, or a whole sink.
type Unit struct {
	Sink *plan.SinkPlan
	// Shard is the shard's number (from 1), or 0 for the whole sink.
	Shard int
	// Bytes is the size of the tensors the unit writes.
	Bytes uint64
	// Partition is the partition that writes it.
	Partition int
}

// Assignment is a deterministic division of a plan's work between Count
// partitions: every process that plans the same pipeline over the same
// inputs computes the same one, so partitions need no coordinator.
type Assignment struct {
	Count int
	Units []Unit
	split map[*plan.SinkPlan]bool
}

// Assign divides the work of pl between n partitions. A sink whose plan says
// Partitions and whose tensors a shard stage spread over several shards
// contributes one unit per shard; any other sink is one unit. Units go,
// largest first, to the partition with the fewest bytes so far (the lowest
// index on a tie).
func Assign(pl *plan.Plan, n int) (*Assignment, error) {
	if n < 1 {
		return nil, fmt.Errorf("partition count %d is not positive", n)
	}
	a := &Assignment{Count: n, split: map[*plan.SinkPlan]bool{}}
	for _, sk := range pl.Sinks {
		shards, sizes, err := sinkShards(sk)
		if err != nil {
			return nil, &plan.StageError{Stage: sk.Stage, Err: err}
		}
		if sk.Plan.Partitions && shards > 1 {
			a.split[sk] = true
			for i := 1; i <= shards; i++ {
				a.Units = append(a.Units, Unit{Sink: sk, Shard: i, Bytes: sizes[i]})
			}
			continue
		}
		var total uint64
		for _, s := range sizes {
			total += s
		}
		a.Units = append(a.Units, Unit{Sink: sk, Bytes: total})
	}
	order := make([]int, len(a.Units))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool { return a.Units[order[i]].Bytes > a.Units[order[j]].Bytes })
	load := make([]uint64, n)
	for _, u := range order {
		best := 0
		for p := 1; p < n; p++ {
			if load[p] < load[best] {
				best = p
			}
		}
		a.Units[u].Partition = best
		load[best] += a.Units[u].Bytes
	}
	return a, nil
}

// sinkShards returns a sink's shard count (1 without a shard stage) and the
// bytes of each shard's tensors, by shard number.
func sinkShards(sk *plan.SinkPlan) (int, map[int]uint64, error) {
	n := 0
	sizes := map[int]uint64{}
	for _, t := range sk.Final.Tensors {
		i, count, ok := t.Shard()
		if !ok {
			i, count = 1, 1
		}
		if n == 0 {
			n = count
		} else if count != n {
			return 0, nil, fmt.Errorf("tensor %q is in shard %d/%d, others in a set of %d", t.Name, i, count, n)
		}
		sizes[i] += t.Size
	}
	if n == 0 {
		n = 1
	}
	return n, sizes, nil
}

// Split reports whether the sink's shards are divided between partitions:
// each partition writes its shards and `sluice finalize` writes the rest
// (an index, side files).
func (a *Assignment) Split(sk *plan.SinkPlan) bool { return a.split[sk] }

// Shards returns the shards of sk that partition i writes (nil for a sink
// that is not split).
func (a *Assignment) Shards(sk *plan.SinkPlan, i int) []int {
	var out []int
	for _, u := range a.Units {
		if u.Sink == sk && u.Shard > 0 && u.Partition == i {
			out = append(out, u.Shard)
		}
	}
	sort.Ints(out)
	return out
}

// Whole reports whether partition i writes the whole of sk.
func (a *Assignment) Whole(sk *plan.SinkPlan, i int) bool {
	for _, u := range a.Units {
		if u.Sink == sk && u.Shard == 0 && u.Partition == i {
			return true
		}
	}
	return false
}

// Restrict returns the plan of partition i: the sinks it writes whole, the
// split sinks it writes shards of (asking them, at Begin, for those shards
// only), and only the tensors they receive. Sinks and trees are copies;
// pl is not changed.
func (a *Assignment) Restrict(pl *plan.Plan, i int) *plan.Plan {
	out := &plan.Plan{Pipeline: pl.Pipeline, Stages: pl.Stages}
	copies := map[*plan.SinkPlan]*plan.SinkPlan{}
	shardOf := map[*plan.SinkPlan]map[int]bool{}
	for _, sk := range pl.Sinks {
		var keep bool
		c := *sk
		if a.split[sk] {
			shards := a.Shards(sk, i)
			if len(shards) > 0 {
				keep = true
				c.Sink = partialSink{Sink: sk.Sink, shards: shards}
				shardOf[sk] = map[int]bool{}
				for _, s := range shards {
					shardOf[sk][s] = true
				}
			}
		} else {
			keep = a.Whole(sk, i)
		}
		if keep {
			copies[sk] = &c
			out.Sinks = append(out.Sinks, &c)
		}
	}
	finalIndex := map[*plan.SinkPlan]map[string]int{}
	keepLeaf := func(l plan.Leaf) (plan.Leaf, bool) {
		c, ok := copies[l.Sink]
		if !ok {
			return l, false
		}
		if set := shardOf[l.Sink]; set != nil {
			index, ok := finalIndex[l.Sink]
			if !ok {
				index = l.Sink.Final.Index()
				finalIndex[l.Sink] = index
			}
			i, found := index[l.Name]
			if !found {
				return l, false
			}
			s, _, ok := l.Sink.Final.Tensors[i].Shard()
			if !ok {
				s = 1
			}
			if !set[s] {
				return l, false
			}
		}
		return plan.Leaf{Sink: c, Name: l.Name}, true
	}
	var prune func(n *plan.Node) *plan.Node
	prune = func(n *plan.Node) *plan.Node {
		c := &plan.Node{Op: n.Op, Size: n.Size}
		for _, l := range n.Leaves {
			if nl, ok := keepLeaf(l); ok {
				c.Leaves = append(c.Leaves, nl)
			}
		}
		for _, ch := range n.Children {
			if pc := prune(ch); pc != nil {
				c.Children = append(c.Children, pc)
			}
		}
		if len(c.Leaves) == 0 && len(c.Children) == 0 {
			return nil
		}
		return c
	}
	for _, t := range pl.Trees {
		if root := prune(t.Root); root != nil {
			out.Trees = append(out.Trees, &plan.Tree{Source: t.Source, Tensor: t.Tensor, Root: root})
		}
	}
	return out
}

// partialSink asks its sink, at Begin, for some shards only.
type partialSink struct {
	plugin.Sink
	shards []int
}

// GathersFileWrites forwards to the sink.
func (p partialSink) GathersFileWrites() bool { return plugin.GathersFileWrites(p.Sink) }

// GathersDataWrites forwards to the sink.
func (p partialSink) GathersDataWrites() bool { return plugin.GathersDataWrites(p.Sink) }

func (p partialSink) Begin(ctx context.Context, m *tensor.Manifest, opts plugin.BeginOptions) error {
	opts.Shards = p.shards
	return p.Sink.Begin(ctx, m, opts)
}
