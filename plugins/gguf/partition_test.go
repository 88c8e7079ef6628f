package gguf

import (
	"testing"

	"github.com/sluice-ml/sluice/sdk/plugintest"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// A split set written shard by shard, by separate sinks, is the set one sink
// writes: every file carries its split.* keys and there is no index.
func TestPartitionedWritesMatchAWholeRun(t *testing.T) {
	md := &tensor.Metadata{}
	md.Set("general.architecture", tensor.StringValue("llama"))
	md.Set("general.name", tensor.StringValue("partitioned"))
	plugintest.Partitions(t, plugintest.Suite{
		Plugin: Plugin(), Sink: "gguf", File: "model.gguf",
		DTypes: []tensor.DType{tensor.Q8_0}, Metadata: md,
	})
}
