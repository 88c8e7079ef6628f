package safetensors

import (
	"fmt"
	"reflect"
	"testing"
	"unicode/utf8"

	"github.com/sluice-ml/sluice/sdk/tensor"
)

// Headers as writers produce them take the fast path; anything else goes
// to encoding/json, with the same result when it is valid.
func TestCanonicalHeadersTakeTheFastPath(t *testing.T) {
	l, err := PlanLayout([]Tensor{
		{Name: "w", DType: tensor.F32, Shape: []uint64{2, 2}, Size: 16},
		{Name: "scalar", DType: tensor.BF16, Shape: []uint64{}, Size: 2},
		{Name: "b", DType: tensor.U8, Shape: []uint64{3}, Size: 3},
	}, map[string]string{"format": "pt", "ünïcode": "✓"})
	if err != nil {
		t.Fatal(err)
	}
	fast := []string{
		string(l.Prefix[8:]),
		`{}`,
		" \n{ \"a\" : { \"shape\" : [ 1 , 2 ] , \"data_offsets\" : [ 0 , 2 ] , \"dtype\" : \"U8\" } } \t",
		`{"__metadata__":{},"a":{"dtype":"I64","shape":[0],"data_offsets":[0,0]}}`,
	}
	slow := []string{
		`{"a\u0062":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}`,        // an escape
		`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"extra":true}}`, // an extra member
		`{"a":{"dtype":"U8","shape":["1"],"data_offsets":[0,1]}}`,            // a number as a string
		`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1,2]}}`,            // a third offset
		`{"__metadata__":{"k":"1","k":"2"}}`,                                 // a duplicate key
		`{"__metadata__":null}`,                                              // no metadata object
		`{"a":{"DType":"U8","shape":[1],"data_offsets":[0,1]}}`,              // another spelling
		`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}`,
	}
	for _, h := range fast {
		got, ok := parseCanonical([]byte(h))
		if !ok {
			t.Errorf("%s: not taken by the fast path", h)
			continue
		}
		want, err := parseJSON([]byte(h), "x")
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: fast path %+v, encoding/json %+v, %v", h, got, want, err)
		}
	}
	for _, h := range slow {
		if _, ok := parseCanonical([]byte(h)); ok {
			t.Errorf("%s: taken by the fast path", h)
		}
	}
}

// FuzzCanonicalAgreesWithJSON holds the fast path to encoding/json: what
// it accepts, encoding/json accepts, with the same header.
func FuzzCanonicalAgreesWithJSON(f *testing.F) {
	l, _ := PlanLayout([]Tensor{
		{Name: "w", DType: tensor.F32, Shape: []uint64{2, 2}, Size: 16},
		{Name: "b", DType: tensor.BF16, Shape: []uint64{2}, Size: 4},
	}, map[string]string{"format": "pt"})
	f.Add(l.Prefix[8:])
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"a":{"dtype":"U8","shape":[18446744073709551615],"data_offsets":[0,1]}}`))
	f.Add([]byte(` {"__metadata__":{"a":"b"}, "x":{"data_offsets":[0,8],"dtype":"F64","shape":[]}} `))
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !utf8.Valid(raw) {
			return // ParseHeader refuses it before either path
		}
		got, ok := parseCanonical(raw)
		if !ok {
			return
		}
		want, err := parseJSON(raw, "fuzz")
		if err != nil {
			t.Fatalf("the fast path took a header encoding/json refuses (%v):\n%q", err, raw)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("the paths disagree on %q:\nfast %s\njson %s", raw, fmt.Sprint(got), fmt.Sprint(want))
		}
	})
}
