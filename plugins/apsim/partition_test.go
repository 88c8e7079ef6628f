package apsim

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-ml/sluice/sdk/plugin"
	"github.com/sluice-ml/sluice/sdk/plugintest"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// A set written shard by shard by separate sinks, then indexed (and signed)
// by a finalizing one, is the set one sink writes.
func TestPartitionedWritesMatchAWholeRun(t *testing.T) {
	md := &tensor.Metadata{}
	md.Set("general.name", tensor.StringValue("partitioned"))
	for _, cfg := range []map[string]any{nil, {"key": "team secret"}} {
		plugintest.Partitions(t, plugintest.Suite{
			Plugin: Plugin(), Sink: "apsim", File: "model.apsim", SinkConfig: cfg,
			DTypes: []tensor.DType{tensor.F32}, Metadata: md,
		})
	}
}

func TestFinalizeChecksTheShards(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "model.apsim")
	m := &tensor.Manifest{}
	for i, n := range []string{"a", "b"} {
		ti := tensor.TensorInfo{Name: n, DType: tensor.F32, Shape: []uint64{2}, Size: 8}
		ti.SetAttr(tensor.AttrShard, tensor.FormatShard(i+1, 2))
		m.Tensors = append(m.Tensors, ti)
	}
	ctx := context.Background()
	open := func() *Sink {
		s, err := NewSink(&SinkConfig{Path: path})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Plan(ctx, m); err != nil {
			t.Fatal(err)
		}
		return s
	}
	fin := open()
	if err := fin.Begin(ctx, m, plugin.BeginOptions{Finalize: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := fin.Commit(ctx); err == nil || !plugin.IsBadInput(err) || !strings.Contains(err.Error(), "model-00001-of-00002.apsim") {
		t.Fatalf("finalize without shards: %v", err)
	}
	// Shard 1 of another manifest (other values are fine, other names are not).
	other := &tensor.Manifest{Tensors: append([]tensor.TensorInfo(nil), m.Tensors...)}
	other.Tensors[0].Name = "z"
	s, _ := NewSink(&SinkConfig{Path: path})
	s.Plan(ctx, other)
	if err := s.Begin(ctx, other, plugin.BeginOptions{Shards: []int{1, 2}}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"z", "b"} {
		if err := s.Write(ctx, n, plugin.BytesData(make([]byte, 8))); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	fin = open()
	fin.Begin(ctx, m, plugin.BeginOptions{Finalize: true})
	if _, err := fin.Commit(ctx); err == nil || !strings.Contains(err.Error(), "not the one this pipeline plans") {
		t.Fatalf("finalize over another manifest's shard: %v", err)
	}
	// A tensor of a shard the run does not write is refused.
	p := open()
	if err := p.Begin(ctx, m, plugin.BeginOptions{Shards: []int{2}}); err != nil {
		t.Fatal(err)
	}
	if err := p.Write(ctx, "a", plugin.BytesData(make([]byte, 8))); err == nil || !strings.Contains(err.Error(), "does not write") {
		t.Errorf("a tensor of another shard: %v", err)
	}
	p.Abort(ctx)
}
