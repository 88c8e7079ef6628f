package safetensors

import (
	"testing"

	"github.com/sluice-ml/sluice/internal/fuzzseed"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// TestFuzzSeeds keeps testdata/fuzz/FuzzReadHeader in step with these seeds
// (go test -run TestFuzzSeeds -update-seeds rewrites them): a written file
// with metadata, an empty table, one tensor, and the damage cases the
// corruption suite uses (lengths near 2^31, 2^63 and −1, overlapping and
// out-of-bounds offsets, dims whose product overflows, duplicate names,
// invalid UTF-8, an unknown dtype).
func TestFuzzSeeds(t *testing.T) {
	l, err := PlanLayout([]Tensor{
		{Name: "w", DType: tensor.F32, Shape: []uint64{2, 2}, Size: 16},
		{Name: "b", DType: tensor.BF16, Shape: []uint64{2}, Size: 4},
	}, map[string]string{"format": "pt"})
	if err != nil {
		t.Fatal(err)
	}
	seeds := map[string][]byte{
		"written":   append(append([]byte(nil), l.Prefix...), make([]byte, 20)...),
		"empty":     rawFile(`{}      `, nil),
		"one":       rawFile(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}`, []byte{7}),
		"len2p31":   rawFile(`{"a":{"dtype":"U8","shape":[2147483648],"data_offsets":[0,2147483648]}}`, []byte{7}),
		"len2p63":   rawFile(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[9223372036854775808,9223372036854775809]}}`, []byte{7}),
		"lenminus1": rawFile(`{"a":{"dtype":"U8","shape":[-1],"data_offsets":[0,18446744073709551615]}}`, []byte{7}),
		"overlap":   rawFile(`{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},"b":{"dtype":"U8","shape":[2],"data_offsets":[1,3]}}`, []byte{1, 2, 3}),
		"overflow":  rawFile(`{"a":{"dtype":"F32","shape":[4294967296,4294967296,4],"data_offsets":[0,0]}}`, nil),
		"duplicate": rawFile(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}`, []byte{1, 2}),
		"badutf8":   rawFile("{\"\xff\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}", []byte{1}),
		"dtype":     rawFile(`{"a":{"dtype":"Q8_0","shape":[32],"data_offsets":[0,34]}}`, make([]byte, 34)),
	}
	var list []fuzzseed.Seed
	for name, b := range seeds {
		list = append(list, fuzzseed.Seed{Name: name, Values: []any{b}})
	}
	fuzzseed.Sync(t, "FuzzReadHeader", list)
}
