package gguf

import (
	"testing"

	"github.com/sluice-ml/sluice/internal/clitest"
	"github.com/sluice-ml/sluice/sdk/plugintest"
)

func corruptGGUF(t testing.TB) plugintest.CorruptSuite {
	v := validGGUF()
	valid, sections := v.bytes()
	if f, err := parse(valid); err != nil || f.CheckPadding() != nil {
		t.Fatalf("the specimen does not parse: %v", err)
	}
	type edit func(g *ggufSpec)
	ptr := func(n uint64) *uint64 { return &n }
	cases := []struct {
		name     string
		e        edit
		mayRead  bool
		dataOnly bool
		tight    bool
	}{
		{"tensor count claims 2^31", func(g *ggufSpec) { g.nTensors = ptr(1 << 31) }, false, false, true},
		{"tensor count claims 2^63", func(g *ggufSpec) { g.nTensors = ptr(1 << 63) }, false, false, true},
		{"tensor count claims -1", func(g *ggufSpec) { g.nTensors = ptr(1<<64 - 1) }, false, false, true},
		{"key/value count claims 2^31", func(g *ggufSpec) { g.nKV = ptr(1 << 31) }, false, false, true},
		{"key/value count claims 2^63", func(g *ggufSpec) { g.nKV = ptr(1 << 63) }, false, false, true},
		{"key/value count claims -1", func(g *ggufSpec) { g.nKV = ptr(1<<64 - 1) }, false, false, true},
		{"key length claims 2^31", func(g *ggufSpec) { g.keyLen = ptr(1 << 31) }, false, false, true},
		{"key length claims -1", func(g *ggufSpec) { g.keyLen = ptr(1<<64 - 1) }, false, false, true},
		{"string value length claims 2^63", func(g *ggufSpec) { g.kvs[0].value = u64b(1 << 63) }, false, false, true},
		{"string value length claims -1", func(g *ggufSpec) { g.kvs[0].value = u64b(1<<64 - 1) }, false, false, true},
		{"array length claims 2^31", func(g *ggufSpec) { g.kvs[2].value = append(u32b(5), u64b(1<<31)...) }, false, false, true},
		{"array length claims 2^63", func(g *ggufSpec) { g.kvs[2].value = append(u32b(5), u64b(1<<63)...) }, false, false, true},
		{"array length claims -1", func(g *ggufSpec) { g.kvs[2].value = append(u32b(5), u64b(1<<64-1)...) }, false, false, true},
		{"string array claims 2^63 strings", func(g *ggufSpec) { g.kvs[2].value = append(u32b(8), u64b(1<<63)...) }, false, false, true},
		{"arrays nested 10000 deep", func(g *ggufSpec) {
			var v []byte
			for i := 0; i < 10000; i++ {
				v = append(v, append(u32b(9), u64b(1)...)...)
			}
			g.kvs[2].value = append(v, append(u32b(4), u64b(0)...)...)
		}, false, false, true},
		{"unknown value type", func(g *ggufSpec) { g.kvs[1].typ = 13 }, false, false, false},
		{"unknown array element type", func(g *ggufSpec) { g.kvs[2].value = append(u32b(99), u64b(1)...) }, false, false, false},
		{"duplicate key", func(g *ggufSpec) { g.kvs[1].key = g.kvs[0].key }, false, false, false},
		{"key of invalid UTF-8", func(g *ggufSpec) { g.kvs[1].key = "test.\xff\xfe" }, false, false, false},
		{"tensor name of invalid UTF-8", func(g *ggufSpec) { g.infos[0].name = "w\xff" }, false, false, false},
		{"duplicate tensor name", func(g *ggufSpec) { g.infos[2].name = "w" }, false, false, false},
		{"empty tensor name", func(g *ggufSpec) { g.infos[2].name = "" }, false, false, false},
		// GGUF tensor names are strings; no reader or writer turns one into a
		// file path, so separators are legal.
		{"tensor name with path separators (legal)", func(g *ggufSpec) { g.infos[2].name = "../h/x" }, true, false, false},
		{"5 dimensions", func(g *ggufSpec) { g.infos[2].ne = []uint64{8, 1, 1, 1, 1} }, false, false, false},
		{"dimension count claims 2^31", func(g *ggufSpec) { g.infos[2].ne = make([]uint64, 0); g.infos[2].typ = 1 << 31 }, false, false, false},
		{"dims whose product overflows", func(g *ggufSpec) { g.infos[2].ne = []uint64{1 << 32, 1 << 32, 4} }, false, false, false},
		{"dimension -1", func(g *ggufSpec) { g.infos[2].ne = []uint64{1<<64 - 1} }, false, false, false},
		{"tensor claims 1 TB", func(g *ggufSpec) { g.infos[2].ne = []uint64{1 << 39} }, false, false, true},
		{"tensor claims 2^31 elements", func(g *ggufSpec) { g.infos[2].ne = []uint64{1 << 31} }, false, false, true},
		{"offset out of bounds", func(g *ggufSpec) { g.infos[2].offset = 1 << 20 }, false, false, false},
		{"offset near 2^63", func(g *ggufSpec) { g.infos[2].offset = 1<<63 - 32 }, false, false, false},
		{"offset -1", func(g *ggufSpec) { g.infos[2].offset = 1<<64 - 1 }, false, false, false},
		{"offsets overlapping", func(g *ggufSpec) { g.infos[2].offset = 128 }, false, false, false},
		{"offset not aligned", func(g *ggufSpec) { g.infos[2].offset = 225 }, false, false, false},
		{"unknown dtype", func(g *ggufSpec) { g.infos[2].typ = 99 }, false, false, false},
		{"removed dtype q4_2", func(g *ggufSpec) { g.infos[2].typ = 4 }, false, false, false},
		{"row not a whole number of blocks", func(g *ggufSpec) { g.infos[1].ne = []uint64{16, 4} }, false, false, false},
		{"alignment 0", func(g *ggufSpec) { g.kvs = append(g.kvs, ggufKV{"general.alignment", 4, u32b(0)}) }, false, false, false},
		{"alignment 3", func(g *ggufSpec) { g.kvs = append(g.kvs, ggufKV{"general.alignment", 4, u32b(3)}) }, false, false, false},
		{"alignment 2^31", func(g *ggufSpec) { g.kvs = append(g.kvs, ggufKV{"general.alignment", 4, u32b(1 << 31)}) }, false, false, true},
		{"alignment of the wrong type", func(g *ggufSpec) { g.kvs = append(g.kvs, ggufKV{"general.alignment", 10, u64b(32)}) }, false, false, false},
		{"version 1", func(g *ggufSpec) { g.version = 1 }, false, false, false},
		{"version 4", func(g *ggufSpec) { g.version = 4 }, false, false, false},
		{"big-endian version", func(g *ggufSpec) { g.version = 3 << 24 }, false, false, false},
		{"magic of another format", func(g *ggufSpec) { g.magic = "GGML" }, false, false, false},
		{"NaN scale in a q8_0 block", func(g *ggufSpec) { g.data[128], g.data[129] = 0x00, 0x7e }, true, true, false},
		{"infinite scale in a q8_0 block", func(g *ggufSpec) { g.data[128+34], g.data[128+35] = 0x00, 0x7c }, true, true, false},
		{"missing padding after the last tensor", func(g *ggufSpec) { g.data = g.data[:240] }, false, false, false},
	}
	var crafted []plugintest.Damage
	for _, c := range cases {
		g := validGGUF()
		c.e(&g)
		b, _ := g.bytes()
		d := plugintest.Damage{Name: c.name, Data: b, MayRead: c.mayRead, DataOnly: c.dataOnly}
		if c.tight {
			d.MaxAlloc = 16 << 20
		}
		crafted = append(crafted, d)
	}
	return plugintest.CorruptSuite{
		Plugin: Plugin(), Source: "gguf", File: "model.gguf",
		Valid: valid, Sections: sections, Crafted: crafted, NameFileInErrors: true,
	}
}

func TestCorruptFiles(t *testing.T) {
	s := corruptGGUF(t)
	plugintest.Corrupt(t, s)
	if testing.Short() {
		t.Skip("-short: the CLI runs are skipped")
	}
	clitest.CorruptCLI(t, clitest.Build(t), s, clitest.CorruptOptions{ConvertTo: "out.safetensors"})
}
