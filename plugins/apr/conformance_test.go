package apr

import (
	"io"
	"os"
	"testing"

	"github.com/sluice-ml/sluice/sdk/plugintest"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

func TestMain(m *testing.M) {
	plugintest.ServeIfChild(Plugin())
	os.Exit(m.Run())
}

// TestConformance runs sdk/plugintest on both uncompressed layouts. The
// source runs with verify = false: with verify on (the default) Describe
// deliberately reads the whole file once to check its footer, which the
// kit's header-only check forbids. Compressed files are left out for the
// same reason (their Describe decompresses); their round trips are tested
// in roundtrip_test.go.
func TestConformance(t *testing.T) {
	md := &tensor.Metadata{}
	md.Set("model_type", tensor.StringValue("llama"))
	md.Set("hidden_size", tensor.U64Value(24))
	md.Set("rope_theta", tensor.F32Value(500000))
	md.Set("sluice.note", tensor.StringValue("conformance"))
	md.Set("sluice.list", tensor.StringArray([]string{"a", "b"}))
	md.Set("sluice.flag", tensor.BoolValue(true))
	for _, layout := range []string{"aprender", "spec"} {
		t.Run(layout, func(t *testing.T) {
			plugintest.Run(t, plugintest.Suite{
				Plugin: Plugin(), Source: "apr", Sink: "apr", File: "model.apr",
				SinkConfig:   map[string]any{"layout": layout},
				SourceConfig: map[string]any{"verify": false},
				Digests:      true,
				DTypes:       []tensor.DType{tensor.F32, tensor.F16, tensor.BF16, tensor.Q4_K, tensor.Q6_K},
				Metadata:     md,
				Header: func(r io.ReaderAt, size int64) error {
					_, err := NewReader(r, size, ReadOptions{NoVerify: true, Name: "model.apr"})
					return err
				},
			})
		})
	}
}
