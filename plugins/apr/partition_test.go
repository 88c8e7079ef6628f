package apr

import (
	"testing"

	"github.com/sluice-ml/sluice/sdk/plugintest"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// The shards of a set, written by separate sinks, are the set one sink
// writes; there is no index, so finalizing writes nothing.
func TestPartitionedWritesMatchAWholeRun(t *testing.T) {
	for _, cfg := range []map[string]any{nil, {"compression": "zstd"}} {
		plugintest.Partitions(t, plugintest.Suite{
			Plugin: Plugin(), Sink: "apr", File: "model.apr", SinkConfig: cfg,
			DTypes: []tensor.DType{tensor.F32},
		})
	}
}
