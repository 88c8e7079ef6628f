package apsim

import (
	"io"
	"os"
	"testing"

	"github.com/sluice-ml/sluice/sdk/plugintest"
	st "github.com/sluice-ml/sluice/sdk/safetensors"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

func TestMain(m *testing.M) {
	plugintest.ServeIfChild(Plugin())
	os.Exit(m.Run())
}

// TestConformance runs the SDK's conformance kit. The source runs with
// verify = false there, since the kit checks that describing a file reads
// only its header; the digest checks have their own tests.
func TestConformance(t *testing.T) {
	md := &tensor.Metadata{}
	md.Set("arch", tensor.StringValue("test"))
	md.Set("step", tensor.U32Value(7))
	md.Set("tags", tensor.StringArray([]string{"a", "b"}))
	var dtypes []tensor.DType
	for _, n := range tensor.Names() {
		if info, _ := tensor.DType(n).Info(); info.Safetensors != "" {
			dtypes = append(dtypes, tensor.DType(n))
		}
	}
	plugintest.Run(t, plugintest.Suite{
		Plugin: Plugin(), Source: "apsim", Sink: "apsim", File: "model.apsim",
		SourceConfig: map[string]any{"verify": false},
		DTypes:       dtypes,
		Metadata:     md,
		Digests:      true,
		Header: func(r io.ReaderAt, size int64) error {
			f, err := parseFile(r, size, "model.apsim")
			if err == nil && f.header.Metadata[KeyFormat] != FormatName {
				t.Error("not an apsim header")
			}
			_ = st.MetadataKey
			return err
		},
	})
}
