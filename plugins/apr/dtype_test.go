package apr

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"io"
	"strings"
	"testing"

	"github.com/sluice-ml/sluice/sdk/tensor"
)

// rawEntry is one tensor of a hand-built file: any dtype id, any bytes.
type rawEntry struct {
	name  string
	id    uint8
	shape []uint64
	data  []byte
}

// buildRaw lays out an aprender-layout file by hand, as aprender's writer
// does, with arbitrary dtype ids and magic.
func buildRaw(magic string, flags uint16, meta string, entries []rawEntry) []byte {
	var index []byte
	var data []byte
	for _, e := range entries {
		index = appendIndexEntry(index, e.name, e.id, e.shape, uint64(len(data)), uint64(len(e.data)))
		data = append(data, e.data...)
		data = append(data, make([]byte, align64(uint64(len(e.data)))-uint64(len(e.data)))...)
	}
	h := aprenderHeader{Major: 2, Flags: flags, TensorCount: uint32(len(entries)), MetadataOffset: 64,
		MetadataSize: uint32(len(meta))}
	h.IndexOffset = 64 + align64(uint64(len(meta)))
	h.DataOffset = h.IndexOffset + align64(uint64(len(index)))
	b := make([]byte, h.DataOffset)
	copy(b, h.sealed())
	copy(b, magic)
	binary.LittleEndian.PutUint32(b[40:], headerCRC(b))
	copy(b[64:], meta)
	copy(b[h.IndexOffset:], index)
	b = append(b, data...)
	return binary.LittleEndian.AppendUint32(b, crc32.ChecksumIEEE(b))
}

func TestReadEveryDTypeID(t *testing.T) {
	cases := []struct {
		id    uint8
		shape []uint64
		size  int
		want  tensor.DType
	}{
		{0, []uint64{3}, 12, tensor.F32},
		{1, []uint64{3}, 6, tensor.F16},
		{2, []uint64{3}, 6, tensor.BF16},     // legacy BF16 (before GH-438)
		{2, []uint64{32}, 18, tensor.Q4_0},   // the inference reader's Q4_0
		{3, []uint64{3}, 24, tensor.F64},     // aprender's F64
		{3, []uint64{32}, 20, tensor.Q4_1},   // the inference reader's Q4_1
		{4, []uint64{3}, 12, tensor.I32},     // aprender's I32
		{5, []uint64{3}, 24, tensor.I64},     // aprender's I64
		{6, []uint64{3}, 3, tensor.I8},       // aprender's I8
		{6, []uint64{32}, 22, tensor.Q5_0},   // the inference reader's Q5_0
		{7, []uint64{3}, 3, tensor.U8},       // aprender's U8
		{7, []uint64{32}, 24, tensor.Q5_1},   // the inference reader's Q5_1
		{8, []uint64{40}, 36, Q4},            // legacy q4
		{8, []uint64{32}, 34, tensor.Q8_0},   // Q8_0 as the inference reader's own writer labels it
		{9, []uint64{7}, 11, Q8},             // legacy q8
		{9, []uint64{32}, 36, Q8},            // 4+32 = 36 = one Q8_1 block: aprender's reading wins
		{9, []uint64{64}, 72, tensor.Q8_1},   // the inference reader's Q8_1
		{10, []uint64{256}, 84, tensor.Q2_K}, // the inference reader's k-quants
		{11, []uint64{256}, 110, tensor.Q3_K},
		{12, []uint64{2, 256}, 288, tensor.Q4_K},
		{13, []uint64{256}, 176, tensor.Q5_K},
		{14, []uint64{256}, 210, tensor.Q6_K},
		{16, []uint64{256}, 66, tensor.IQ2XXS},
		{17, []uint64{256}, 74, tensor.IQ2XS},
		{30, []uint64{3}, 6, tensor.BF16},
		{128, []uint64{33}, 36, Q4},
		{129, []uint64{0}, 0, Q8},
	}
	for _, c := range cases {
		data := bytes.Repeat([]byte{0xab}, c.size)
		b := buildRaw("APR\x00", FlagLayoutRowMajor, "{}", []rawEntry{{"t", c.id, c.shape, data}})
		r, err := NewReader(bytes.NewReader(b), int64(len(b)), ReadOptions{})
		if err != nil {
			t.Errorf("id %d %v (%d bytes): %v", c.id, c.shape, c.size, err)
			continue
		}
		tt := r.Tensors[0]
		if tt.DType != c.want || tt.ID != c.id {
			t.Errorf("id %d %v (%d bytes) read as %s, want %s", c.id, c.shape, c.size, tt.DType, c.want)
		}
		rc, _ := r.Open(&tt)
		got, _ := io.ReadAll(rc)
		if !bytes.Equal(got, data) {
			t.Errorf("id %d: bytes differ", c.id)
		}
	}
}

func TestReadRefusedDTypes(t *testing.T) {
	cases := []struct {
		id    uint8
		shape []uint64
		size  int
		msg   string
	}{
		{15, []uint64{256}, 292, "not one aprender defines"},
		{200, []uint64{1}, 4, "not one aprender defines"},
		{0, []uint64{3}, 8, "f32 needs 12"},
		{12, []uint64{2, 300}, 576, "row-padded"}, // aprender's row-padded Q4_K
		{2, []uint64{5}, 7, "q4_0 cannot have that shape"},
	}
	for _, c := range cases {
		b := buildRaw("APR\x00", FlagLayoutRowMajor, "{}", []rawEntry{{"t", c.id, c.shape, make([]byte, c.size)}})
		_, err := NewReader(bytes.NewReader(b), int64(len(b)), ReadOptions{})
		if err == nil || !strings.Contains(err.Error(), c.msg) || !strings.Contains(err.Error(), `tensor "t"`) {
			t.Errorf("id %d %v %d bytes: %v, want an error saying %q", c.id, c.shape, c.size, err, c.msg)
		}
	}
}

func TestMagicAPR2Accepted(t *testing.T) {
	b := buildRaw("APR2", 0, `{"model_type":"x"}`, []rawEntry{{"w", 0, []uint64{2}, f32Bytes(1, 2)}})
	r, err := NewReader(bytes.NewReader(b), int64(len(b)), ReadOptions{})
	if err != nil || r.Layout != LayoutAprender || r.Metadata.String("model_type") != "x" {
		t.Fatalf("APR2 magic: %v", err)
	}
}

// Files without a footer exist (spec/apr.md §7): they read with verify off
// and are refused, naming the footer, with it on.
func TestFileWithoutFooter(t *testing.T) {
	b := buildRaw("APR\x00", FlagLayoutRowMajor, "{}", []rawEntry{{"w", 0, []uint64{2}, f32Bytes(1, 2)}})
	b = b[:len(b)-4]
	if _, err := NewReader(bytes.NewReader(b), int64(len(b)), ReadOptions{NoVerify: true}); err != nil {
		t.Errorf("no footer, verify off: %v", err)
	}
	if _, err := NewReader(bytes.NewReader(b), int64(len(b)), ReadOptions{}); err == nil || !strings.Contains(err.Error(), "footer") {
		t.Errorf("no footer, verify on: %v", err)
	}
}

// aprender's streaming writer puts data in insertion order and the index in
// name order: offsets need not grow with the index.
func TestOffsetsOutOfIndexOrder(t *testing.T) {
	b := buildRaw("APR\x00", FlagLayoutRowMajor, "{}", []rawEntry{{"b", 0, []uint64{1}, f32Bytes(2)}, {"a", 0, []uint64{1}, f32Bytes(1)}})
	// buildRaw writes the index in the order given; sort it by name as
	// aprender does while keeping the data order.
	r, err := NewReader(bytes.NewReader(b), int64(len(b)), ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range r.Tensors {
		rc, _ := r.Open(&tt)
		got, _ := io.ReadAll(rc)
		want := map[string][]byte{"a": f32Bytes(1), "b": f32Bytes(2)}[tt.Name]
		if !bytes.Equal(got, want) {
			t.Errorf("%s: %x", tt.Name, got)
		}
	}
	checkStreamRaw(t, b, map[string][]byte{"a": f32Bytes(1), "b": f32Bytes(2)})
}

func checkStreamRaw(t *testing.T, b []byte, want map[string][]byte) {
	t.Helper()
	sr, err := NewStreamReader(bytes.NewReader(b), ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for {
		tt, d, err := sr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(d)
		if !bytes.Equal(got, want[tt.Name]) {
			t.Errorf("stream %s: %x", tt.Name, got)
		}
		n++
	}
	if n != len(want) {
		t.Errorf("stream: %d tensors", n)
	}
}

func TestStructuralErrors(t *testing.T) {
	good := []rawEntry{{"a", 0, []uint64{1}, f32Bytes(1)}, {"b", 0, []uint64{1}, f32Bytes(2)}}
	cases := map[string]struct {
		b   []byte
		msg string
	}{
		"duplicate names": {buildRaw("APR\x00", 0, "{}", []rawEntry{good[0], good[0]}), "appears twice"},
		"bad JSON":        {buildRaw("APR\x00", 0, "{x", good), "metadata"},
		"JSON array":      {buildRaw("APR\x00", 0, "[]", good), "not a JSON object"},
		"lying count": {func() []byte {
			b := buildRaw("APR\x00", 0, "{}", good)
			h := parseAprenderHeader(b)
			h.TensorCount = 3 // claims 3, holds 2: the lying.apr case
			copy(b, h.sealed())
			binary.LittleEndian.PutUint32(b[len(b)-4:], crc32.ChecksumIEEE(b[:len(b)-4]))
			return b
		}(), "empty name"},
		"index past data": {func() []byte {
			b := buildRaw("APR\x00", 0, "{}", good)
			h := parseAprenderHeader(b)
			h.DataOffset = 1 << 40
			copy(b, h.sealed())
			binary.LittleEndian.PutUint32(b[len(b)-4:], crc32.ChecksumIEEE(b[:len(b)-4]))
			return b
		}(), "past the end"},
		"overlapping tensors": {func() []byte {
			b := buildRaw("APR\x00", 0, "{}", good)
			h := parseAprenderHeader(b)
			// second entry's offset (after name "b", dtype, ndim, one dim) → 0
			off := h.IndexOffset + indexEntrySize(1, 1) + 2 + 1 + 2 + 8
			binary.LittleEndian.PutUint64(b[off:], 0)
			binary.LittleEndian.PutUint32(b[len(b)-4:], crc32.ChecksumIEEE(b[:len(b)-4]))
			return b
		}(), "overlaps"},
		"version 3": {func() []byte {
			b := buildRaw("APR\x00", 0, "{}", good)
			b[4] = 3
			binary.LittleEndian.PutUint32(b[40:], headerCRC(b))
			binary.LittleEndian.PutUint32(b[len(b)-4:], crc32.ChecksumIEEE(b[:len(b)-4]))
			return b
		}(), "version 3.0"},
		"encrypted":         {buildRaw("APR\x00", FlagEncrypted, "{}", good), "ENCRYPTED"},
		"both compressions": {buildRaw("APR\x00", FlagLZ4|FlagZstd, "{}", good), "both LZ4 and ZSTD"},
	}
	for name, c := range cases {
		_, err := NewReader(bytes.NewReader(c.b), int64(len(c.b)), ReadOptions{})
		if err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: %v, want %q", name, err, c.msg)
		}
		_, err = NewStreamReader(bytes.NewReader(c.b), ReadOptions{})
		if err == nil {
			if err = streamEverything(c.b); err == nil {
				t.Errorf("%s: the stream reader accepted it", name)
			}
		}
	}
}
