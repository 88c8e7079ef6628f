package onnx

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/sluice-ml/sluice/sdk/plugintest"
)

func TestMain(m *testing.M) {
	plugintest.ServeIfChild(Plugin())
	os.Exit(m.Run())
}

// sourceSuite describes the source to sdk/plugintest: fixtures read the same
// in-process and over a real go-plugin process with the shared arena,
// external data leaving the model's directory refused there too, a large
// model described from its structure only, and the corruption suite.
func sourceSuite() plugintest.SourceSuite {
	return plugintest.SourceSuite{
		Plugin: Plugin(), Source: "onnx", Fixtures: []string{filepath.Join("testdata", "model.onnx")},
		Crafted: craftedModels(), TruncationMayRead: true, NameFileInErrors: true,
		Large: func(dir string) (string, error) {
			p := filepath.Join(dir, "large.onnx")
			return p, os.WriteFile(p, modelBytes(rawF32("w", 64<<20, 16<<20)), 0o644)
		},
		Compare:  []string{filepath.Join("testdata", "model.onnx"), filepath.Join("testdata", "external", "model.onnx")},
		MinProbe: 90,
		Refused: []plugintest.Refusal{{
			Name: "escaping external data",
			Path: func(t *testing.T, dir string) string {
				os.WriteFile(filepath.Join(filepath.Dir(dir), "secret.bin"), make([]byte, 8), 0o644)
				return modelWith(t, dir, externalTensor("w", "../secret.bin", 8))
			},
			Contains: "leaves the model's directory",
		}},
	}
}

// TestConformance runs sdk/plugintest's checks of a source-only plugin.
func TestConformance(t *testing.T) {
	plugintest.RunSource(t, sourceSuite())
}
