package safetensors

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-ml/sluice/sdk/plugin"
	"github.com/sluice-ml/sluice/sdk/plugintest"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

func TestPartitionedWritesMatchAWholeRun(t *testing.T) {
	md := &tensor.Metadata{}
	md.Set("format", tensor.StringValue("pt"))
	md.Set(tensor.MetaHFConfig, tensor.StringValue(`{"model_type": "llama"}`))
	plugintest.Partitions(t, plugintest.Suite{
		Plugin: Plugin(), Sink: "safetensors", File: "model.safetensors",
		DTypes: []tensor.DType{tensor.BF16}, Metadata: md,
	})
}

func TestFinalizeNeedsEveryShard(t *testing.T) {
	dir := t.TempDir()
	s, err := NewSink(&SinkConfig{Path: filepath.Join(dir, "model.safetensors")})
	if err != nil {
		t.Fatal(err)
	}
	m := &tensor.Manifest{}
	for i, n := range []string{"a", "b"} {
		ti := tensor.TensorInfo{Name: n, DType: tensor.F32, Shape: []uint64{2}, Size: 8}
		ti.SetAttr(tensor.AttrShard, tensor.FormatShard(i+1, 2))
		m.Tensors = append(m.Tensors, ti)
	}
	ctx := context.Background()
	if _, err := s.Plan(ctx, m); err != nil {
		t.Fatal(err)
	}
	err = s.Begin(ctx, m, plugin.BeginOptions{Finalize: true})
	if err == nil || !plugin.IsBadInput(err) || !strings.Contains(err.Error(), "model-00001-of-00002.safetensors") {
		t.Fatalf("finalize without shards: got %v, want an input error naming the missing shard", err)
	}
	if err := s.Begin(ctx, m, plugin.BeginOptions{Shards: []int{3}}); err == nil {
		t.Fatal("a shard beyond the set was accepted")
	}
}
