package tensor

import (
	"encoding/json"
	"math"
	"os"
	"testing"

	"github.com/sluice-ml/sluice/internal/refdata"
)

func TestRegistryMatchesGGMLTypeTable(t *testing.T) {
	b, err := os.ReadFile(refdata.Path(t, "ref", "gguf", "types.json"))
	if err != nil {
		t.Skipf("types.json unavailable: %v", err)
	}
	var table struct {
		Count int `json:"ggml_type_count"`
		Types []struct {
			ID      int    `json:"id"`
			Name    string `json:"name"`
			Removed bool   `json:"removed"`
			Block   uint64 `json:"blck_size"`
			Size    uint64 `json:"type_size"`
			Imatrix bool   `json:"requires_imatrix"`
		} `json:"types"`
	}
	if err := json.Unmarshal(b, &table); err != nil {
		t.Fatal(err)
	}
	if table.Count != GGMLTypeCount {
		t.Errorf("GGMLTypeCount = %d, ggml says %d", GGMLTypeCount, table.Count)
	}
	for _, e := range table.Types {
		d, err := FromGGML(uint32(e.ID))
		if e.Removed {
			if err == nil {
				t.Errorf("removed ggml id %d maps to %s", e.ID, d)
			}
			continue
		}
		if err != nil {
			t.Errorf("ggml id %d (%s): %v", e.ID, e.Name, err)
			continue
		}
		info, _ := d.Info()
		if string(d) != e.Name || info.BlockSize != e.Block || info.BlockBytes != e.Size || info.GGML != e.ID || info.NeedsImatrix != e.Imatrix {
			t.Errorf("ggml id %d: registry has %+v, ggml %+v", e.ID, info, e)
		}
	}
	if _, err := FromGGML(GGMLTypeCount); err == nil {
		t.Errorf("id %d past the table accepted", GGMLTypeCount)
	}
}

func TestSafetensorsDTypes(t *testing.T) {
	for _, s := range []string{"F64", "F32", "F16", "BF16", "F8_E4M3", "F8_E5M2", "I64", "I32", "I16", "I8", "U64", "U32", "U16", "U8", "BOOL"} {
		d, ok := FromSafetensors(s)
		if !ok {
			t.Errorf("safetensors dtype %s unknown", s)
			continue
		}
		if info, _ := d.Info(); info.Safetensors != s || info.BlockSize != 1 {
			t.Errorf("%s → %+v", s, info)
		}
	}
	if _, ok := FromSafetensors("Q8_0"); ok {
		t.Error("Q8_0 is not a safetensors dtype")
	}
}

func TestSizes(t *testing.T) {
	for _, tc := range []struct {
		d     DType
		shape []uint64
		want  uint64
		ok    bool
	}{
		{F32, []uint64{2, 3}, 24, true},
		{BF16, nil, 2, true},
		{Q8_0, []uint64{4, 64}, 4 * 2 * 34, true},
		{Q4_K, []uint64{3, 256}, 3 * 144, true},
		{Q8_0, []uint64{4, 48}, 0, false},
		{F32, []uint64{1 << 40, 1 << 40}, 0, false},
		{F64, []uint64{1 << 62}, 0, false},
		{"nope", []uint64{1}, 0, false},
	} {
		got, err := tc.d.ShapeByteSize(tc.shape)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("%s %v: %d, %v (want %d, ok=%v)", tc.d, tc.shape, got, err, tc.want, tc.ok)
		}
	}
	if d, err := ParseDType("Q4_k"); err != nil || d != Q4_K {
		t.Errorf("ParseDType(Q4_k) = %s, %v", d, err)
	}
	if _, err := ParseDType("q9_9"); err == nil {
		t.Error("q9_9 accepted")
	}
}

func TestValues(t *testing.T) {
	nan := math.Float32frombits(0x7fc00123)
	for _, tc := range []struct {
		v    Value
		typ  ValueType
		text string
	}{
		{U8Value(200), TypeU8, "200"},
		{I8Value(-5), TypeI8, "-5"},
		{I64Value(math.MinInt64), TypeI64, "-9223372036854775808"},
		{U64Value(math.MaxUint64), TypeU64, "18446744073709551615"},
		{F32Value(nan), TypeF32, "NaN"},
		{BoolValue(true), TypeBool, "true"},
		{StringValue("é"), TypeString, `"é"`},
		{StringArray([]string{"a", "b"}), TypeArray, `[string × 2]{"a", "b"}`},
		{Int32Array([]int32{-1, 2}), TypeArray, "[i32 × 2]{-1, 2}"},
	} {
		if tc.v.Type() != tc.typ || tc.v.String() != tc.text {
			t.Errorf("%s: type %s text %q", tc.text, tc.v.Type(), tc.v.String())
		}
		if !tc.v.Equal(tc.v) {
			t.Errorf("%s is not equal to itself", tc.text)
		}
	}
	if got := F32Value(nan).Bits(); got != 0x7fc00123 {
		t.Errorf("NaN payload lost: %x", got)
	}
	if v, _ := I8Value(-5).Int(); v != -5 {
		t.Errorf("I8 -5 reads %d", v)
	}
	if _, ok := I8Value(-5).Uint(); ok {
		t.Error("negative value read as unsigned")
	}
	s, _ := Scalar(TypeI16, 0xffff)
	if v, _ := s.Int(); v != -1 {
		t.Errorf("Scalar i16 0xffff reads %d", v)
	}
	if _, err := ArrayValue(TypeU32, []byte{1, 2, 3}); err == nil {
		t.Error("3 bytes accepted as u32 elements")
	}
	inner := Int32Array([]int32{1})
	nested, err := NestedArray([]Value{inner, inner})
	if err != nil || nested.Depth() != 2 || nested.Len() != 2 {
		t.Errorf("nested array: %v depth %d", err, nested.Depth())
	}
	if _, err := NestedArray([]Value{U8Value(1)}); err == nil {
		t.Error("scalar accepted as a nested array item")
	}
	if F32Value(1).Equal(F64Value(1)) {
		t.Error("values of different types compare equal")
	}
}

func TestMetadataKeepsOrder(t *testing.T) {
	var m Metadata
	m.Set("b", U32Value(1))
	m.Set("a", U32Value(2))
	m.Set("c", U32Value(3))
	m.Set("a", U32Value(4))
	m.Delete("b")
	if got := m.Keys(); len(got) != 2 || got[0] != "a" || got[1] != "c" {
		t.Errorf("keys %v, want [a c]", got)
	}
	if v, _ := m.Get("a"); !v.Equal(U32Value(4)) {
		t.Errorf("a = %s", v)
	}
	c := m.Clone()
	c.Set("d", U8Value(1))
	if m.Len() != 2 || c.Len() != 3 || m.Equal(&c) {
		t.Errorf("clone shares its key list")
	}
}

func TestManifestValidate(t *testing.T) {
	m := &Manifest{Tensors: []TensorInfo{
		{Name: "a", DType: F32, Shape: []uint64{2}, Size: 8},
		{Name: "a", DType: F32, Shape: []uint64{2}, Size: 8},
	}}
	if err := m.Validate(); err == nil {
		t.Error("duplicate names accepted")
	}
	m.Tensors[1] = TensorInfo{Name: "b", DType: F32, Shape: []uint64{2}, Size: 7}
	if err := m.Validate(); err == nil {
		t.Error("wrong size accepted")
	}
	m.Tensors[1].Size = 8
	if err := m.Validate(); err != nil {
		t.Error(err)
	}
	if i, n, ok := ParseShard("2/3"); !ok || i != 2 || n != 3 {
		t.Errorf("ParseShard(2/3) = %d %d %v", i, n, ok)
	}
	for _, bad := range []string{"0/3", "4/3", "x/3", "3", ""} {
		if _, _, ok := ParseShard(bad); ok {
			t.Errorf("ParseShard(%q) accepted", bad)
		}
	}
}
