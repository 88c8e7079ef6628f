package gguf

import (
	"testing"

	"github.com/sluice-ml/sluice/sdk/tensor"
)

// TestHeaderBoundIsExact holds the size PlanFile reserves to what it
// writes: exact for shapes without leading 1s (which the encoding drops),
// an upper bound otherwise.
func TestHeaderBoundIsExact(t *testing.T) {
	var md tensor.Metadata
	md.Set("u8", tensor.U8Value(1))
	md.Set("i16", tensor.I16Value(-2))
	md.Set("u32", tensor.U32Value(3))
	md.Set("f64", tensor.F64Value(4))
	md.Set("bool", tensor.BoolValue(true))
	md.Set("str", tensor.StringValue("héllo"))
	md.Set("strs", tensor.StringArray([]string{"a", "", "bcd"}))
	layout, _ := tensor.StringArray([]string{"x", "yz", ""}).PackedStrings()
	packed, err := tensor.PackedStringArray(layout, 3)
	if err != nil {
		t.Fatal(err)
	}
	md.Set("packed", packed)
	md.Set("i32s", tensor.Int32Array([]int32{1, 2, 3}))
	md.Set("empty", tensor.StringArray(nil))
	specs := []TensorSpec{
		{Name: "w", DType: tensor.F32, Shape: []uint64{3, 5}},
		{Name: "q", DType: tensor.Q8_0, Shape: []uint64{2, 64}},
	}
	l, err := PlanFile(&md, specs, DefaultAlignment)
	if err != nil {
		t.Fatal(err)
	}
	if got := headerBound(&md, specs); got != len(l.Header) {
		t.Errorf("bound %d, header %d bytes", got, len(l.Header))
	}
	for _, extra := range []TensorSpec{
		{Name: "v", DType: tensor.F32, Shape: []uint64{1, 1, 8}},
		{Name: "scalar", DType: tensor.F32, Shape: []uint64{}}, // written as [1]
	} {
		more := append(specs[:len(specs):len(specs)], extra)
		l, err = PlanFile(&md, more, DefaultAlignment)
		if err != nil {
			t.Fatal(err)
		}
		if got := headerBound(&md, more); got < len(l.Header) {
			t.Errorf("with %s of shape %v: bound %d under the header's %d bytes", extra.Name, extra.Shape, got, len(l.Header))
		}
	}
}
