package gguf

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

func TestConformance(t *testing.T) {
	md := &tensor.Metadata{}
	md.Set("general.architecture", tensor.StringValue("test"))
	md.Set("test.u32", tensor.U32Value(7))
	md.Set("test.arr", tensor.StringArray([]string{"a", "b"}))
	var dtypes []tensor.DType
	for _, n := range tensor.Names() {
		if info, _ := tensor.DType(n).Info(); info.GGML != tensor.NoGGML {
			dtypes = append(dtypes, tensor.DType(n))
		}
	}
	plugintest.Run(t, plugintest.Suite{
		Plugin: Plugin(), Source: "gguf", Sink: "gguf", File: "model.gguf",
		DTypes:   dtypes,
		Metadata: md,
		Digests:  true,
		Header: func(r io.ReaderAt, size int64) error {
			_, err := NewFile(r, size, "model.gguf")
			return err
		},
	})
}
