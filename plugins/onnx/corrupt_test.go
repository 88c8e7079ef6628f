package onnx

import (
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/sluice-ml/sluice/internal/clitest"
	"github.com/sluice-ml/sluice/sdk/plugintest"
)

func craftedModels() []plugintest.Damage {
	ok := rawF32("w", 8, 2)
	// A length prefix claiming more than the file holds, by hand: the
	// initializer field of the graph, then a length varint of 2^63.
	claim := func(n uint64) []byte {
		g := pb(nil).str(graphName, "g")
		g = protowire.AppendTag(g, graphInitializer, protowire.BytesType)
		g = protowire.AppendVarint(g, n)
		g = append(g, ok...)
		return pb(nil).varint(modelIRVersion, 8).bytes(modelGraph, g)
	}
	// Nested graphs: a node whose attribute holds a graph, 20000 deep.
	deep := pb(nil).str(graphName, "g")
	for i := 0; i < 20000; i++ {
		attr := pb(nil).str(1, "body").bytes(6, deep) // AttributeProto.g
		node := pb(nil).str(4, "Loop").bytes(5, attr) // NodeProto.attribute
		deep = pb(nil).str(graphName, "g").bytes(graphNode, node)
	}
	return []plugintest.Damage{
		{Name: "length prefix claims 2^31", Data: claim(1 << 31), MaxAlloc: 16 << 20},
		{Name: "length prefix claims 2^63", Data: claim(1 << 63), MaxAlloc: 16 << 20},
		{Name: "length prefix claims -1", Data: claim(1<<64 - 1), MaxAlloc: 16 << 20},
		{Name: "dims claim 1 TB", Data: modelBytes(rawF32("w", 8, 1<<38)), MaxAlloc: 16 << 20},
		{Name: "dims claim 2^31 × 2^31", Data: modelBytes(rawF32("w", 8, 1<<31, 1<<31)), MaxAlloc: 16 << 20},
		{Name: "dims whose product overflows", Data: modelBytes(rawF32("w", 8, 1<<32, 1<<32, 4))},
		{Name: "dimension -1", Data: modelBytes(rawF32("w", 8, 1<<64-1))},
		{Name: "65 dimensions", Data: modelBytes(rawF32("w", 8, make([]uint64, 65)...))},
		{Name: "raw data shorter than the dims", Data: modelBytes(rawF32("w", 4, 2))},
		{Name: "raw data longer than the dims", Data: modelBytes(rawF32("w", 12, 2))},
		{Name: "unknown data type", Data: modelBytes(pb(nil).varint(tensorDims, 2).varint(tensorDataType, 99).str(tensorName, "w").bytes(tensorRawData, make([]byte, 8)))},
		{Name: "undefined data type", Data: modelBytes(pb(nil).varint(tensorDims, 2).varint(tensorDataType, 0).str(tensorName, "w").bytes(tensorRawData, make([]byte, 8)))},
		{Name: "duplicate initializer name", Data: modelBytes(ok, ok)},
		{Name: "initializer name of invalid UTF-8", Data: modelBytes(rawF32("w\xff", 8, 2))},
		{Name: "empty initializer name", Data: modelBytes(rawF32("", 8, 2))},
		// Initializer names are names, never paths: no reader or writer of
		// Sluice turns one into a file path. (External data locations are
		// paths, and are confined to the model's directory.)
		{Name: "initializer name with path separators (legal)", Data: modelBytes(rawF32("../w/x", 8, 2)), MayRead: true},
		{Name: "external data outside the directory", Data: modelBytes(externalTensor("e", "../../etc/passwd", 8))},
		{Name: "external data at an absolute path", Data: modelBytes(externalTensor("e", "/etc/passwd", 8))},
		{Name: "external data offset 2^63", Data: modelBytes(pb(nil).varint(tensorDims, 2).varint(tensorDataType, 1).str(tensorName, "e").bytes(tensorExternalData, kv("location", "x.bin")).bytes(tensorExternalData, kv("offset", "9223372036854775808")).varint(tensorDataLocation, 1))},
		// The reader reads the main graph's initializers; nodes, and the
		// graphs in their attributes, are skipped whole, never recursed.
		{Name: "graphs nested 20000 deep (skipped, valid)", Data: pb(nil).varint(modelIRVersion, 8).bytes(modelGraph, deep), MayRead: true},
		{Name: "wire type of a group", Data: append(pb(nil).varint(modelIRVersion, 8), protowire.AppendTag(nil, modelGraph, protowire.StartGroupType)...)},
	}
}

// TestCorruptFiles runs the corruption suite of sourceSuite through the CLI
// (TestConformance runs it in-process).
func TestCorruptFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the CLI runs are skipped")
	}
	bin := clitest.Build(t)
	for _, cs := range sourceSuite().CorruptSuites(t) {
		clitest.CorruptCLI(t, bin, cs, clitest.CorruptOptions{ConvertTo: "out.safetensors"})
	}
}
