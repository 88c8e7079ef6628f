// Package onnx is Sluice's source plugin for ONNX models: it reads a
// model's initializers (the weights) with their names, dtypes and shapes,
// from raw_data, from the typed data fields, or from external data files
// inside the model's directory, and carries the model's descriptive fields
// (IR version, opsets, producer, doc strings, metadata_props) as metadata.
//
// It parses the protobuf wire format itself, with bounds checks, through a
// reader that locates length-delimited fields instead of loading them:
// describing a model reads its structure, never its tensor bytes. Raw and
// external tensor bytes are handed out as file references.
//
// It does not convert the graph (nodes, inputs, outputs), read initializers
// of subgraphs or Constant nodes, or write ONNX models.
package onnx

import (
	"context"
	"os"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/sluice-ml/sluice/sdk/binio"
	"github.com/sluice-ml/sluice/sdk/plugin"
)

// Version is the plugin's version.
const Version = "0.1.0"

// Plugin returns the onnx plugin: one source type, "onnx".
func Plugin() *plugin.Plugin {
	src := plugin.NewSourceType("onnx",
		"Reads the initializers (weights) of an ONNX model, including external data files in the model's "+
			"directory, and its opsets, producer and doc strings as metadata. The graph is not converted.",
		func(ctx context.Context, cfg *Config) (plugin.Source, error) { return NewSource(*cfg) })
	src.Extensions = []string{".onnx"}
	src.Probe = Probe
	return &plugin.Plugin{Name: "onnx", Version: Version, Sources: []plugin.SourceType{src}}
}

// probeFields bounds how many top-level fields Probe looks at.
const probeFields = 64

// Probe reports how sure the source is that path is an ONNX model, from
// its top-level protobuf fields: 95 when it starts with a plausible
// ir_version and has a graph, 60 with a plausible ir_version and only
// ModelProto fields, else 0. It skips over length-delimited fields without
// reading them.
func Probe(path string) int {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return 0
	}
	w := &wire{r: binio.NewReader(f, st.Size(), path), end: st.Size()}
	score := 0
	for i := 0; i < probeFields && w.more(); i++ {
		fd, err := w.next()
		if err != nil {
			return 0
		}
		if i == 0 {
			if fd.num != modelIRVersion || fd.typ != protowire.VarintType || fd.u == 0 || fd.u > 64 {
				return 0
			}
			score = 60
			continue
		}
		switch fd.num {
		case modelGraph:
			if fd.typ != protowire.BytesType {
				return 0
			}
			score = 95
		case modelProducerName, modelProducerVersion, modelDomain, modelDocString, modelOpsetImport, modelMetadataProps:
			if fd.typ != protowire.BytesType {
				return 0
			}
		case modelModelVersion:
			if fd.typ != protowire.VarintType {
				return 0
			}
		case 20, 25, 26: // training_info, functions, configuration
		default:
			return 0
		}
	}
	return score
}
