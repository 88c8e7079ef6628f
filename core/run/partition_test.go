package run

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/sluice-ml/sluice/core/pipeline"
	"github.com/sluice-ml/sluice/core/plan"
	"github.com/sluice-ml/sluice/sdk/plugin"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// testPlan builds a plan of one source feeding: a split sink of shards
// shards, a sink of the same shards that cannot be partitioned, and an
// unsharded sink. Every source tensor is one tree with a leaf per sink.
func testPlan(shards, perShard int) *plan.Plan {
	src := &pipeline.Stage{Kind: pipeline.Source, Name: "src"}
	mk := func(name string, partitions bool, sharded bool) *plan.SinkPlan {
		sk := &plan.SinkPlan{Stage: &pipeline.Stage{Kind: pipeline.Sink, Name: name}, Plan: &plugin.SinkPlan{Partitions: partitions}, Final: &tensor.Manifest{}}
		for i := 0; i < shards*perShard; i++ {
			t := tensor.TensorInfo{Name: fmt.Sprintf("t%d", i), DType: tensor.F32, Shape: []uint64{uint64(16 * (i + 1))}, Size: uint64(64 * (i + 1))}
			if sharded {
				t.SetAttr(tensor.AttrShard, tensor.FormatShard(i/perShard+1, shards))
			}
			sk.Final.Tensors = append(sk.Final.Tensors, t)
		}
		return sk
	}
	pl := &plan.Plan{Sinks: []*plan.SinkPlan{mk("split", true, true), mk("whole-sharded", false, true), mk("single", true, false)}}
	for i := 0; i < shards*perShard; i++ {
		info := pl.Sinks[0].Final.Tensors[i]
		root := &plan.Node{Size: info.Size}
		for _, sk := range pl.Sinks {
			root.Leaves = append(root.Leaves, plan.Leaf{Sink: sk, Name: info.Name})
		}
		pl.Trees = append(pl.Trees, &plan.Tree{Source: src, Tensor: info, Root: root})
	}
	return pl
}

func TestAssignmentCoversEveryPieceOnce(t *testing.T) {
	pl := testPlan(5, 3)
	for n := 1; n <= 8; n++ {
		a, err := Assign(pl, n)
		if err != nil {
			t.Fatal(err)
		}
		if again, _ := Assign(pl, n); !reflect.DeepEqual(a.Units, again.Units) {
			t.Fatalf("%d partitions: the assignment is not deterministic", n)
		}
		if len(a.Units) != 5+1+1 || !a.Split(pl.Sinks[0]) || a.Split(pl.Sinks[1]) || a.Split(pl.Sinks[2]) {
			t.Fatalf("%d partitions: units %+v", n, a.Units)
		}
		// Every leaf is written by exactly one partition; split sinks are
		// asked for the shards of their leaves.
		written := map[string]int{}
		for i := 0; i < n; i++ {
			rp := a.Restrict(pl, i)
			for _, tr := range rp.Trees {
				for _, l := range tr.Root.Leaves {
					written[l.Sink.Stage.Name+"/"+l.Name]++
					if l.Sink.Stage.Name == "split" {
						ps, ok := l.Sink.Sink.(partialSink)
						ti, _ := l.Sink.Final.Tensor(l.Name)
						s, _, _ := ti.Shard()
						if !ok || !contains(ps.shards, s) {
							t.Errorf("partition %d writes %s of shard %d through a sink asked for %v", i, l.Name, s, ps.shards)
						}
					}
				}
			}
			for _, sk := range rp.Sinks {
				if _, partial := sk.Sink.(partialSink); partial != (sk.Stage.Name == "split") {
					t.Errorf("partition %d: sink %s wrapped: %v", i, sk.Stage.Name, partial)
				}
			}
		}
		for _, sk := range pl.Sinks {
			for _, ti := range sk.Final.Tensors {
				if c := written[sk.Stage.Name+"/"+ti.Name]; c != 1 {
					t.Errorf("%d partitions: %s/%s written %d times", n, sk.Stage.Name, ti.Name, c)
				}
			}
		}
	}
}

func contains(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

func TestPartialSinkAsksForItsShards(t *testing.T) {
	rec := &recordingSink{}
	ps := partialSink{Sink: rec, shards: []int{2, 5}}
	if err := ps.Begin(context.Background(), &tensor.Manifest{}, plugin.BeginOptions{SigningKeyID: "k"}); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rec.opts.Shards, []int{2, 5}) || rec.opts.SigningKeyID != "k" || rec.opts.Finalize {
		t.Errorf("Begin options: %+v", rec.opts)
	}
}

type recordingSink struct {
	plugin.Sink
	opts plugin.BeginOptions
}

func (r *recordingSink) Begin(_ context.Context, _ *tensor.Manifest, opts plugin.BeginOptions) error {
	r.opts = opts
	return nil
}

func TestParsePartition(t *testing.T) {
	for s, want := range map[string]Partition{"0/1": {0, 1}, "3/4": {3, 4}, " 2 / 8 ": {2, 8}} {
		if got, err := ParsePartition(s); err != nil || got != want {
			t.Errorf("%q: %v %v", s, got, err)
		}
	}
	for _, s := range []string{"4/4", "-1/4", "1", "0/0", "a/2", ""} {
		if _, err := ParsePartition(s); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
}
