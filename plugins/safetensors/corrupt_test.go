package safetensors

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/sluice-ml/sluice/internal/clitest"
	"github.com/sluice-ml/sluice/sdk/plugintest"
	st "github.com/sluice-ml/sluice/sdk/safetensors"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// corruptSuite is a small safetensors file (three tensors and metadata) and
// the damages the corruption suite tries on it.
func corruptSuite(t testing.TB) plugintest.CorruptSuite {
	l, err := st.PlanLayout([]st.Tensor{
		{Name: "w", DType: tensor.F32, Shape: []uint64{4, 8}, Size: 128},
		{Name: "b", DType: tensor.BF16, Shape: []uint64{8}, Size: 16},
		{Name: "ids", DType: tensor.U8, Shape: []uint64{5}, Size: 5},
	}, map[string]string{"format": "pt"})
	if err != nil {
		t.Fatal(err)
	}
	valid := append([]byte(nil), l.Prefix...)
	for i := uint64(0); i < l.DataSize; i++ {
		valid = append(valid, byte(i*7+1))
	}
	sections := []plugintest.Section{{Offset: 8, Name: "the header length"}, {Offset: int64(len(l.Prefix)), Name: "the JSON header"}}
	for _, e := range l.Tensors {
		sections = append(sections, plugintest.Section{Offset: int64(len(l.Prefix)) + int64(e.End), Name: "tensor " + e.Name})
	}
	header := string(l.Prefix[8:])
	data := valid[len(l.Prefix):]
	// withHeader re-frames a modified header (same data).
	withHeader := func(h string) []byte {
		out := make([]byte, 8, 8+len(h)+len(data))
		binary.LittleEndian.PutUint64(out, uint64(len(h)))
		return append(append(out, h...), data...)
	}
	withLength := func(n uint64) []byte {
		out := append([]byte(nil), valid...)
		binary.LittleEndian.PutUint64(out, n)
		return out
	}
	replace := func(old, new string) string {
		if !strings.Contains(header, old) {
			t.Fatalf("the header lacks %q:\n%s", old, header)
		}
		return strings.Replace(header, old, new, 1)
	}
	ids := `"ids":{"dtype":"U8","shape":[5],"data_offsets":[144,149]}`
	crafted := []plugintest.Damage{
		{Name: "header length claims 2^31", Data: withLength(1 << 31)},
		{Name: "header length claims 2^63", Data: withLength(1 << 63)},
		{Name: "header length claims -1", Data: withLength(1<<64 - 1)},
		{Name: "header length claims 1 TB", Data: withLength(1 << 40)},
		{Name: "header length one short", Data: withLength(uint64(len(header) - 1))},
		{Name: "tensor claims 1 TB", Data: withHeader(replace(ids, `"ids":{"dtype":"U8","shape":[1099511627776],"data_offsets":[144,1099511627920]}`))},
		{Name: "tensor claims 2^31 elements", Data: withHeader(replace(ids, `"ids":{"dtype":"U8","shape":[2147483648],"data_offsets":[144,2147483792]}`))},
		{Name: "data offsets near 2^63", Data: withHeader(replace(ids, `"ids":{"dtype":"U8","shape":[5],"data_offsets":[9223372036854775807,9223372036854775812]}`))},
		{Name: "data offsets past 2^64", Data: withHeader(replace(ids, `"ids":{"dtype":"U8","shape":[5],"data_offsets":[18446744073709551615,18446744073709551620]}`))},
		{Name: "data offset -1", Data: withHeader(replace(ids, `"ids":{"dtype":"U8","shape":[5],"data_offsets":[-1,4]}`))},
		{Name: "dimension -1", Data: withHeader(replace(ids, `"ids":{"dtype":"U8","shape":[-1],"data_offsets":[144,149]}`))},
		{Name: "offsets out of bounds", Data: withHeader(replace(ids, `"ids":{"dtype":"U8","shape":[5],"data_offsets":[145,150]}`))},
		{Name: "offsets overlapping", Data: withHeader(replace(ids, `"ids":{"dtype":"U8","shape":[5],"data_offsets":[140,145]}`))},
		{Name: "end before begin", Data: withHeader(replace(ids, `"ids":{"dtype":"U8","shape":[0],"data_offsets":[149,144]}`))},
		{Name: "dims whose product overflows", Data: withHeader(replace(ids, `"ids":{"dtype":"U8","shape":[4294967296,4294967296,5],"data_offsets":[144,149]}`))},
		{Name: "dims whose byte size overflows", Data: withHeader(replace(ids, `"ids":{"dtype":"F64","shape":[2305843009213693952,1],"data_offsets":[144,149]}`))},
		{Name: "duplicate tensor name", Data: withHeader(replace(ids, `"w":{"dtype":"U8","shape":[5],"data_offsets":[144,149]}`))},
		{Name: "tensor name of invalid UTF-8", Data: withHeader(replace(`"ids"`, "\"i\xffs\""))},
		{Name: "unknown dtype", Data: withHeader(replace(`"dtype":"U8"`, `"dtype":"Q8_0"`))},
		{Name: "dtype of another case", Data: withHeader(replace(`"dtype":"U8"`, `"dtype":"u8"`))},
		{Name: "metadata not strings", Data: withHeader(replace(`"format":"pt"`, `"format":{"a":1}`))},
		{Name: "header not an object", Data: withHeader(`[1,2,3]` + strings.Repeat(" ", len(header)-7))},
		{Name: "header with trailing bytes", Data: withHeader(strings.TrimRight(header, " ") + "{}")},
		{Name: "header of NUL bytes", Data: withHeader(strings.Repeat("\x00", len(header)))},
		// Separators are legal in safetensors tensor names (they are JSON
		// strings); no reader or writer of Sluice turns a tensor name into a
		// file path.
		{Name: "tensor name with path separators (legal)", Data: withHeader(replace(`"ids"`, `"../i/d"`)), MayRead: true},
	}
	return plugintest.CorruptSuite{
		Plugin: Plugin(), Source: "safetensors", File: "model.safetensors",
		Valid: valid, Sections: sections, Crafted: crafted, NameFileInErrors: true,
	}
}

func TestCorruptFiles(t *testing.T) {
	s := corruptSuite(t)
	if len(s.Valid) > 4096 {
		t.Fatalf("the specimen is %d bytes; keep it small", len(s.Valid))
	}
	plugintest.Corrupt(t, s)
	if testing.Short() {
		t.Skip("-short: the CLI runs are skipped")
	}
	clitest.CorruptCLI(t, clitest.Build(t), s, clitest.CorruptOptions{ConvertTo: "out.gguf"})
}
