package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/sluice-ml/sluice/sdk/binio"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// build assembles a file from a layout and per-tensor data.
func build(t *testing.T, l *Layout, data map[string][]byte) []byte {
	t.Helper()
	out := append([]byte(nil), l.Prefix...)
	for _, e := range l.Tensors {
		out = append(out, data[e.Name]...)
	}
	return out
}

func rawFile(header string, data []byte) []byte {
	out := make([]byte, 8, 8+len(header)+len(data))
	binary.LittleEndian.PutUint64(out, uint64(len(header)))
	out = append(out, header...)
	return append(out, data...)
}

func TestPlanLayoutMatchesReferenceSerializer(t *testing.T) {
	for _, tc := range []struct {
		name    string
		tensors []Tensor
		meta    map[string]string
		header  string
	}{
		{
			name:    "one f32 tensor",
			tensors: []Tensor{{Name: "attn.0", DType: tensor.F32, Shape: []uint64{1, 2, 3}, Size: 24}},
			header:  `{"attn.0":{"dtype":"F32","shape":[1,2,3],"data_offsets":[0,24]}}`,
		},
		{
			name:   "empty",
			header: `{}      `,
		},
		{
			name: "metadata only",
			meta: map[string]string{"framework": "pt"},
			// 35 bytes of JSON padded with spaces to 40.
			header: `{"__metadata__":{"framework":"pt"}}     `,
		},
		{
			name:    "padding with spaces",
			tensors: []Tensor{{Name: "attn0", DType: tensor.F32, Shape: []uint64{1, 1, 2, 3}, Size: 24}},
			header:  `{"attn0":{"dtype":"F32","shape":[1,1,2,3],"data_offsets":[0,24]}}       `,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := PlanLayout(tc.tensors, tc.meta)
			if err != nil {
				t.Fatal(err)
			}
			if len(tc.header)%8 != 0 {
				t.Fatalf("test header is %d bytes, not a multiple of 8", len(tc.header))
			}
			want := rawFile(tc.header, nil)
			if !bytes.Equal(l.Prefix, want) {
				t.Fatalf("prefix\n got %q\nwant %q", l.Prefix, want)
			}
		})
	}
}

func TestPlanLayoutOrdersByAlignmentThenName(t *testing.T) {
	l, err := PlanLayout([]Tensor{
		{Name: "b", DType: tensor.F16, Shape: []uint64{3}, Size: 6},
		{Name: "flag", DType: tensor.Bool, Shape: []uint64{1}, Size: 1},
		{Name: "a", DType: tensor.F16, Shape: []uint64{1}, Size: 2},
		{Name: "z", DType: tensor.I64, Shape: []uint64{1}, Size: 8},
		{Name: "w", DType: tensor.F32, Shape: []uint64{2}, Size: 8},
		{Name: "bf", DType: tensor.BF16, Shape: []uint64{1}, Size: 2},
	}, map[string]string{"b": "2", "a": "1"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range l.Tensors {
		names = append(names, e.Name)
	}
	if got, want := strings.Join(names, " "), "z w bf a b flag"; got != want {
		t.Fatalf("order %q, want %q", got, want)
	}
	if !bytes.Contains(l.Prefix, []byte(`{"__metadata__":{"a":"1","b":"2"},"z":`)) {
		t.Fatalf("metadata not first and sorted: %s", l.Prefix[8:])
	}
	// Every tensor starts at a multiple of its element size.
	for _, e := range l.Tensors {
		info, _ := e.DType.Info()
		if (uint64(len(l.Prefix))+e.Begin)%info.BlockBytes != 0 {
			t.Errorf("tensor %s at %d is misaligned for %s", e.Name, e.Begin, e.DType)
		}
	}
}

func TestWriteThenReadRoundTrip(t *testing.T) {
	tensors := []Tensor{
		{Name: "model.embed_tokens.weight", DType: tensor.BF16, Shape: []uint64{4, 3}, Size: 24},
		{Name: "model.norm.weight", DType: tensor.F32, Shape: []uint64{3}, Size: 12},
		{Name: "step", DType: tensor.I64, Shape: nil, Size: 8},
		{Name: "quote\"and\\slash\u00e9\n", DType: tensor.U8, Shape: []uint64{2}, Size: 2},
	}
	data := map[string][]byte{}
	for i, tt := range tensors {
		data[tt.Name] = bytes.Repeat([]byte{byte(i + 1)}, int(tt.Size))
	}
	l, err := PlanLayout(tensors, map[string]string{"format": "pt", "k<>&": "v\u2028"})
	if err != nil {
		t.Fatal(err)
	}
	file := build(t, l, data)
	if uint64(len(file)) != l.FileSize() {
		t.Fatalf("file is %d bytes, layout says %d", len(file), l.FileSize())
	}
	h, err := ReadHeader(bytes.NewReader(file), int64(len(file)), "rt.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	if h.Metadata["format"] != "pt" || h.Metadata["k<>&"] != "v\u2028" {
		t.Fatalf("metadata %v", h.Metadata)
	}
	if len(h.Tensors) != len(tensors) {
		t.Fatalf("%d tensors read back, want %d", len(h.Tensors), len(tensors))
	}
	for _, want := range tensors {
		e, ok := h.Tensor(want.Name)
		if !ok {
			t.Fatalf("tensor %q missing", want.Name)
		}
		if e.DType != want.DType || len(e.Shape) != len(want.Shape) || e.Size() != want.Size {
			t.Fatalf("tensor %q read as %+v", want.Name, e)
		}
		got := file[h.DataOffset+int64(e.Begin) : h.DataOffset+int64(e.End)]
		if !bytes.Equal(got, data[want.Name]) {
			t.Fatalf("tensor %q data differs", want.Name)
		}
		off, _ := l.Offset(want.Name)
		if off != h.DataOffset+int64(e.Begin) {
			t.Fatalf("tensor %q: layout offset %d, read offset %d", want.Name, off, h.DataOffset+int64(e.Begin))
		}
	}
}

func TestReadHeaderRejectsMalformedFiles(t *testing.T) {
	good := `{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"U8","shape":[4],"data_offsets":[8,12]}}`
	for _, tc := range []struct {
		name string
		file []byte
		want string
	}{
		{"too short", []byte{1, 2, 3}, "truncated"},
		{"header over cap", func() []byte { b := make([]byte, 16); binary.LittleEndian.PutUint64(b, 1<<62); return b }(), "over the"},
		{"header past end", rawFile(good, make([]byte, 12))[:50], "longer than"},
		{"not an object", rawFile(`[1,2]`, nil), "does not start"},
		{"bad json", rawFile(`{"a":`, nil), "not valid JSON"},
		{"invalid utf8", rawFile("{\"a\xff\":1}", nil), "UTF-8"},
		{"duplicate name", rawFile(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}`, make([]byte, 2)), "twice"},
		{"unknown dtype", rawFile(`{"a":{"dtype":"Q8","shape":[1],"data_offsets":[0,1]}}`, make([]byte, 1)), "unknown dtype"},
		{"size mismatch", rawFile(`{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}`, make([]byte, 8)), "needs 12 bytes"},
		{"negative dim", rawFile(`{"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}}`, make([]byte, 4)), "non-negative"},
		{"overflowing shape", rawFile(`{"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]}}`, make([]byte, 4)), "overflow"},
		{"end before begin", rawFile(`{"a":{"dtype":"U8","shape":[0],"data_offsets":[4,0]}}`, nil), "end before"},
		{"hole", rawFile(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}`, make([]byte, 2)), "hole"},
		{"overlap", rawFile(`{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},"b":{"dtype":"U8","shape":[2],"data_offsets":[1,3]}}`, make([]byte, 3)), "overlaps"},
		{"data past end", rawFile(good, make([]byte, 10)), "past the end"},
		{"extra data", rawFile(good, make([]byte, 13)), "unaccounted"},
		{"trailing garbage", rawFile(good+` x`, make([]byte, 12)), "after the JSON"},
		{"metadata not strings", rawFile(`{"__metadata__":{"a":1}}`, nil), "object of strings"},
		{"miscased member", rawFile(`{"a":{"DType":"U8","shape":[1],"data_offsets":[0,1]}}`, make([]byte, 1)), "must be spelled"},
		{"missing offsets", rawFile(`{"a":{"dtype":"U8","shape":[1]}}`, make([]byte, 1)), "needs dtype"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadHeader(bytes.NewReader(tc.file), int64(len(tc.file)), "bad.safetensors")
			if err == nil {
				t.Fatal("accepted")
			}
			if !errors.Is(err, binio.ErrFormat) {
				t.Fatalf("error %v is not a format error", err)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "bad.safetensors") {
				t.Fatalf("error %q does not mention %q and the file", err, tc.want)
			}
		})
	}
}

func TestPlanLayoutRefusesWhatSafetensorsCannotHold(t *testing.T) {
	for _, tc := range []struct {
		name string
		ts   []Tensor
	}{
		{"block dtype", []Tensor{{Name: "q", DType: tensor.Q8_0, Shape: []uint64{32}, Size: 34}}},
		{"wrong size", []Tensor{{Name: "w", DType: tensor.F32, Shape: []uint64{2}, Size: 4}}},
		{"duplicate", []Tensor{{Name: "w", DType: tensor.U8, Shape: []uint64{1}, Size: 1}, {Name: "w", DType: tensor.U8, Shape: []uint64{1}, Size: 1}}},
		{"reserved name", []Tensor{{Name: MetadataKey, DType: tensor.U8, Shape: []uint64{1}, Size: 1}}},
	} {
		if _, err := PlanLayout(tc.ts, nil); err == nil {
			t.Errorf("%s: accepted", tc.name)
		}
	}
}

func FuzzReadHeader(f *testing.F) {
	l, _ := PlanLayout([]Tensor{
		{Name: "w", DType: tensor.F32, Shape: []uint64{2, 2}, Size: 16},
		{Name: "b", DType: tensor.BF16, Shape: []uint64{2}, Size: 4},
	}, map[string]string{"format": "pt"})
	f.Add(append(append([]byte(nil), l.Prefix...), make([]byte, 20)...))
	f.Add(rawFile(`{}      `, nil))
	f.Add(rawFile(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}`, []byte{7}))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := ReadHeader(bytes.NewReader(b), int64(len(b)), "fuzz")
		if err != nil {
			if !errors.Is(err, binio.ErrFormat) {
				t.Fatalf("non-format error: %v", err)
			}
			return
		}
		for _, e := range h.Tensors {
			if h.DataOffset+int64(e.End) > int64(len(b)) {
				t.Fatalf("accepted tensor %q past the end", e.Name)
			}
		}
	})
}

// Offset finds every tensor of a layout by its index, and by a scan in a
// layout changed after PlanLayout.
func TestLayoutOffsetByName(t *testing.T) {
	l, err := PlanLayout([]Tensor{
		{Name: "a", DType: tensor.F32, Shape: []uint64{2}, Size: 8},
		{Name: "b", DType: tensor.U8, Shape: []uint64{3}, Size: 3},
		{Name: "c", DType: tensor.BF16, Shape: []uint64{1}, Size: 2},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range l.Tensors {
		if off, ok := l.Offset(e.Name); !ok || off != l.EntryOffset(e) {
			t.Errorf("%s: %d, %v; want %d", e.Name, off, ok, l.EntryOffset(e))
		}
	}
	old := l.Tensors[0].Name
	l.Tensors[0].Name = "renamed"
	if off, ok := l.Offset("renamed"); !ok || off != l.EntryOffset(l.Tensors[0]) {
		t.Errorf("renamed: %d, %v", off, ok)
	}
	if _, ok := l.Offset(old); ok {
		t.Errorf("%s still found after its rename", old)
	}
}

// appendJSONString escapes as serde_json does, which for valid UTF-8 without
// U+2028 and U+2029 is what encoding/json does with HTML escaping off; the
// bytes to escape sit anywhere, before, inside and after the words the fast
// path skips.
func TestAppendJSONStringEscapesAsJSON(t *testing.T) {
	pieces := []string{"a", "model.layers.", "é", "日本", "\"", "\\", "\n", "\t", "\x00", "\x1f", "\b", "\f", "\r", "\x7f", "}"}
	rng := rand.New(rand.NewPCG(5, 6))
	for range 5000 {
		var sb strings.Builder
		for range rng.IntN(12) {
			sb.WriteString(pieces[rng.IntN(len(pieces))])
		}
		s := sb.String()
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(s); err != nil {
			t.Fatal(err)
		}
		if got := appendJSONString(nil, s); string(got) != strings.TrimSuffix(want.String(), "\n") {
			t.Fatalf("%q: got %s, want %s", s, got, want.String())
		}
	}
}
