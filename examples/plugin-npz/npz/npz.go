// Package npz is a Sluice format plugin for NumPy .npz archives, written
// against the Sluice SDK alone (github.com/sluice-ml/sluice/sdk/...) as an
// example for third-party plugin authors: a source that reads archives
// written by numpy.savez and numpy.savez_compressed, and a sink that writes
// what numpy.savez writes, which numpy.load reads.
//
// An .npz file is a ZIP archive of .npy arrays (see npy.go and
// ziplayout.go). Arrays are C-ordered, little-endian, of NumPy's bool,
// integer and float16/32/64 types; a tensor of another dtype (bf16, a ggml
// block type) is written as float32, which the core converts to because the
// sink asks for it in its plan. NumPy files carry no metadata.
package npz

import (
	"context"

	"github.com/sluice-ml/sluice/sdk/plugin"
)

// Version is the plugin's version.
const Version = "0.1.0"

// Plugin returns the npz plugin: what the binary serves.
func Plugin() *plugin.Plugin {
	src := plugin.NewSourceType("npz",
		"Reads a NumPy .npz archive (numpy.savez, numpy.savez_compressed): one tensor per NAME.npy entry. Stored entries are read in place; compressed ones are inflated.",
		func(ctx context.Context, cfg *SourceConfig) (plugin.Source, error) { return OpenSource(cfg) })
	src.Extensions = []string{".npz"}
	src.Probe = Probe
	sink := plugin.NewSinkType("npz",
		"Writes a NumPy .npz archive as numpy.savez does (stored entries, ZIP64 when needed), readable with numpy.load. Dtypes NumPy lacks (bf16, quantized) are written as float32; metadata is not kept.",
		func(ctx context.Context, cfg *SinkConfig) (plugin.Sink, error) { return NewSink(cfg) })
	sink.Extensions = []string{".npz"}
	return &plugin.Plugin{Name: "npz", Version: Version, Sources: []plugin.SourceType{src}, Sinks: []plugin.SinkType{sink}}
}
