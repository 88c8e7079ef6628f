package gguf

import (
	"encoding/binary"

	"github.com/sluice-ml/sluice/sdk/plugintest"
)

// ggufKV is one metadata entry of a hand-built file: its encoded type and
// value bytes.
type ggufKV struct {
	key   string
	typ   uint32
	value []byte
}

// ggufInfo is one tensor info of a hand-built file.
type ggufInfo struct {
	name   string
	ne     []uint64
	typ    uint32
	offset uint64
}

// ggufSpec is a GGUF file assembled field by field, so the corruption suite
// can damage any field and keep the rest consistent.
type ggufSpec struct {
	magic     string
	version   uint32
	nTensors  *uint64 // nil: len(infos)
	nKV       *uint64 // nil: len(kvs)
	kvs       []ggufKV
	infos     []ggufInfo
	alignment int
	data      []byte  // the data section, padded
	keyLen    *uint64 // when set, the first key's length field
}

// bytes encodes the file and returns the section boundaries.
func (g ggufSpec) bytes() ([]byte, []plugintest.Section) {
	r := &raw{}
	var secs []plugintest.Section
	mark := func(name string) { secs = append(secs, plugintest.Section{Offset: int64(r.Len()), Name: name}) }
	r.WriteString(g.magic)
	mark("the magic")
	r.u32(g.version)
	mark("the version")
	n := uint64(len(g.infos))
	if g.nTensors != nil {
		n = *g.nTensors
	}
	r.u64(n)
	mark("the tensor count")
	n = uint64(len(g.kvs))
	if g.nKV != nil {
		n = *g.nKV
	}
	r.u64(n)
	mark("the key/value count")
	for i, kv := range g.kvs {
		if i == 0 && g.keyLen != nil {
			r.u64(*g.keyLen)
			r.WriteString(kv.key)
		} else {
			r.str(kv.key)
		}
		mark("key " + kv.key)
		r.u32(kv.typ)
		r.Write(kv.value)
		mark("value of " + kv.key)
	}
	for _, t := range g.infos {
		r.str(t.name)
		mark("the name of " + t.name)
		r.u32(uint32(len(t.ne)))
		for _, ne := range t.ne {
			r.u64(ne)
		}
		mark("the dims of " + t.name)
		r.u32(t.typ)
		r.u64(t.offset)
		mark("the info of " + t.name)
	}
	r.pad(g.alignment)
	mark("the header padding")
	data := r.Len()
	r.Write(g.data)
	for _, t := range g.infos {
		if int(t.offset) < len(g.data) {
			secs = append(secs, plugintest.Section{Offset: int64(data) + int64(t.offset), Name: "the data before " + t.name})
		}
	}
	return r.Bytes(), secs
}

func u32b(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }
func u64b(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }
func strb(s string) []byte { return append(u64b(uint64(len(s))), s...) }

// validGGUF is a small file: three metadata entries (a string, a u32, an
// i32 array) and three tensors (f32 [4, 8], q8_0 [2, 32], f16 [8]).
func validGGUF() ggufSpec {
	data := make([]byte, 0, 320)
	for i := 0; i < 128; i++ { // f32 [4, 8]
		data = append(data, byte(i))
	}
	for row := 0; row < 2; row++ { // q8_0 [2, 32]: one block per row
		data = append(data, 0x00, 0x3c) // scale 1.0 (f16)
		for i := 0; i < 32; i++ {
			data = append(data, byte(i-16))
		}
	}
	data = append(data, make([]byte, 224-196)...) // pad to 224
	for i := 0; i < 16; i++ {                     // f16 [8]
		data = append(data, byte(i))
	}
	data = append(data, make([]byte, 16)...) // pad to 256
	arr := append(u32b(5), u64b(3)...)
	arr = append(arr, u32b(1)...)
	arr = append(arr, u32b(0xffffffff)...)
	arr = append(arr, u32b(7)...)
	return ggufSpec{
		magic: "GGUF", version: 3, alignment: 32,
		kvs: []ggufKV{
			{"general.architecture", 8, strb("test")},
			{"test.count", 4, u32b(7)},
			{"test.list", 9, arr},
		},
		infos: []ggufInfo{
			{"w", []uint64{8, 4}, 0, 0},
			{"q", []uint64{32, 2}, 8, 128},
			{"h", []uint64{8}, 1, 224},
		},
		data: data,
	}
}
