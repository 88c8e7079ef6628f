package apsim

import (
	"encoding/binary"
	"encoding/hex"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/sluice-ml/sluice/internal/clitest"
	"github.com/sluice-ml/sluice/sdk/plugintest"
	st "github.com/sluice-ml/sluice/sdk/safetensors"
)

// reseal re-frames a modified JSON header over data and, when the header
// still parses, recomputes its sha256 so the damage reaches the checks past
// the digest.
func reseal(header string, data []byte) []byte {
	if h, err := st.ParseHeader([]byte(header), "x"); err == nil && h.Metadata != nil {
		if old := h.Metadata[KeySHA256]; len(old) == 64 {
			d := newDigest(h.Metadata, h.Tensors)
			d.Write(data)
			header = strings.Replace(header, old, hex.EncodeToString(d.Sum(nil)), 1)
		}
	}
	for len(header)%8 != 0 {
		header += " "
	}
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	return append(append(out, header...), data...)
}

func corruptApsim(t *testing.T) plugintest.CorruptSuite {
	c := smallCheckpoint(t)
	p := tempPath(t, "small.apsim")
	mustSave(t, SinkConfig{Path: p}, c)
	valid, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	n := binary.LittleEndian.Uint64(valid)
	header, data := string(valid[8:8+n]), valid[8+n:]
	h, err := st.ParseHeader([]byte(header), p)
	if err != nil {
		t.Fatal(err)
	}
	sections := []plugintest.Section{{Offset: 8, Name: "the header length"}, {Offset: int64(8 + n), Name: "the JSON header"}}
	for _, e := range h.Tensors {
		sections = append(sections, plugintest.Section{Offset: int64(8+n) + int64(e.End), Name: "tensor " + e.Name})
	}
	edit := func(old, new string) []byte {
		if !strings.Contains(header, old) {
			t.Fatalf("the header lacks %q:\n%s", old, header)
		}
		return reseal(strings.Replace(header, old, new, 1), data)
	}
	withLength := func(v uint64) []byte {
		out := append([]byte(nil), valid...)
		binary.LittleEndian.PutUint64(out, v)
		return out
	}
	withData := func(off int, b ...byte) []byte {
		d := append([]byte(nil), data...)
		copy(d[off:], b)
		return reseal(header, d)
	}
	nan := binary.LittleEndian.AppendUint32(nil, math.Float32bits(float32(math.NaN())))
	inf := binary.LittleEndian.AppendUint32(nil, math.Float32bits(float32(math.Inf(-1))))
	deep := strings.Repeat("[", 100000) + strings.Repeat("]", 100000)
	crafted := []plugintest.Damage{
		{Name: "header length claims 2^31", Data: withLength(1 << 31)},
		{Name: "header length claims 2^63", Data: withLength(1 << 63)},
		{Name: "header length claims -1", Data: withLength(1<<64 - 1)},
		{Name: "header length claims 1 TB", Data: withLength(1 << 40), MaxAlloc: 16 << 20},
		{Name: "QTensor shape claims 2^63", Data: edit(`\"shape\":[2,3]`, `\"shape\":[9223372036854775808,3]`), MaxAlloc: 16 << 20},
		{Name: "QTensor shape claims 2^31 × 2^31", Data: edit(`\"shape\":[2,3]`, `\"shape\":[2147483648,2147483648]`), MaxAlloc: 16 << 20},
		{Name: "QTensor dims whose product overflows", Data: edit(`\"shape\":[2,3]`, `\"shape\":[4294967296,4294967296,2]`)},
		{Name: "QTensor shape -1", Data: edit(`\"shape\":[2,3]`, `\"shape\":[-1,3]`)},
		{Name: "QTensor scale shape claims 2^63", Data: edit(`\"scale_shape\":[2,1]`, `\"scale_shape\":[9223372036854775808,1]`)},
		{Name: "QTensor unknown format", Data: edit(`\"format\":\"int4\"`, `\"format\":\"int3\"`)},
		{Name: "QTensor axis out of range", Data: edit(`\"axis\":0`, `\"axis\":5`)},
		{Name: "QTensor axis -2", Data: edit(`\"axis\":0`, `\"axis\":-2`)},
		{Name: "QTensor unknown packing", Data: edit(`\"packing\":\"lsb-rows\"`, `\"packing\":\"msb\"`)},
		{Name: "QTensor of a missing tensor", Data: edit(`{\"a.q\":{`, `{\"a.z\":{`)},
		{Name: "units nested 100000 deep", Data: edit(`\"a.w\":[0,1]`, `\"a.w\":`+strings.ReplaceAll(deep, `"`, `\"`))},
		{Name: "metadata nested 100000 deep", Data: edit(`{\"n\":{\"type\":\"u32\",\"value\":7}}`, deep)},
		{Name: "metadata of an unknown type", Data: edit(`\"type\":\"u32\"`, `\"type\":\"u128\"`)},
		{Name: "metadata value out of range", Data: edit(`\"type\":\"u32\",\"value\":7`, `\"type\":\"u8\",\"value\":300`)},
		{Name: "shard 0 of 2", Data: edit(`"version":"1"`, `"version":"1","shard":"0/2"`)},
		{Name: "shard 1 of 2^31", Data: edit(`"version":"1"`, `"version":"1","shard":"1/2147483648"`)},
		{Name: "version 2", Data: edit(`"version":"1"`, `"version":"2"`)},
		{Name: "unknown metadata key", Data: edit(`"version":"1"`, `"version":"1","extra":"x"`)},
		{Name: "signature without key_id", Data: edit(`"version":"1"`, `"version":"1","signature":"`+strings.Repeat("0", 64)+`"`)},
		{Name: "sha256 in upper case", Data: []byte(strings.Replace(string(valid), h.Metadata[KeySHA256], strings.ToUpper(h.Metadata[KeySHA256]), 1))},
		{Name: "data changed, digest not", Data: append(append([]byte(nil), valid[:len(valid)-1]...), valid[len(valid)-1]^1), MayRead: true, DataOnly: true},
		{Name: "duplicate tensor name", Data: edit(`"a.w":{`, `"a.q":{`)},
		{Name: "tensor name of invalid UTF-8", Data: edit(`"a.w":{`, "\"a.\xff\":{")},
		{Name: "unknown dtype", Data: edit(`"dtype":"F16"`, `"dtype":"F4"`)},
		{Name: "offsets overlapping", Data: edit(`"data_offsets":[8,14]`, `"data_offsets":[6,12]`)},
		{Name: "offsets out of bounds", Data: edit(`"data_offsets":[14,18]`, `"data_offsets":[14,1099511627776]`)},
		{Name: "scale tensor of the wrong dtype", Data: edit(`"a.q__qscale":{"dtype":"F32","shape":[2,1]`, `"a.q__qscale":{"dtype":"I32","shape":[2,1]`)},
		{Name: "NaN scale", Data: withData(0, nan...), MayRead: true, DataOnly: true},
		{Name: "infinite scale", Data: withData(4, inf...), MayRead: true, DataOnly: true},
	}
	return plugintest.CorruptSuite{
		Plugin: Plugin(), Source: "apsim", File: "model.apsim",
		Valid: valid, Sections: sections, Crafted: crafted, NameFileInErrors: true,
	}
}

func TestCorruptFiles(t *testing.T) {
	s := corruptApsim(t)
	plugintest.Corrupt(t, s)
	if testing.Short() {
		t.Skip("-short: the CLI runs are skipped")
	}
	clitest.CorruptCLI(t, clitest.Build(t), s, clitest.CorruptOptions{ConvertTo: "out.safetensors"})
}
