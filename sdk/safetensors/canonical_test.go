package safetensors

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
	"unsafe"

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
		// dtypes alternating; names of 8, 9 and 16 bytes, with braces, past ASCII
		`{"abcdefgh":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"{abcdefg}":{"dtype":"F16","shape":[1],"data_offsets":[1,3]},` +
			`"0123456789abcdef":{"dtype":"U8","shape":[2],"data_offsets":[3,5]},"ünïcode.weight.ünïcode":{"dtype":"F16","shape":[],"data_offsets":[5,7]}}`,
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
		`{"abcdefghijklmn\u006f":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}`,         // an escape past the first word
		"{\"abcdefghijklmn\x01\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}", // a control character there
		`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"b":{"dtype":"","shape":[1],"data_offsets":[1,2]}}`,
		`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},`,   // cut after a comma
		`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},  `, // the same, padded
	}
	for _, h := range fast {
		for _, share := range []bool{false, true} {
			raw := []byte(h)
			got, ok := parseCanonical(raw, share)
			if !ok {
				t.Errorf("%s: not taken by the fast path", h)
				continue
			}
			want, err := parseJSON(raw, "x")
			if err != nil || !reflect.DeepEqual(got, want) {
				t.Errorf("%s: fast path (sharing %v) %+v, encoding/json %+v, %v", h, share, got, want, err)
			}
			for _, e := range got.Tensors {
				if shares := e.Name != "" && within(e.Name, raw); shares != (share && e.Name != "") {
					t.Errorf("%s: sharing %v, but the name %q shares the header: %v", h, share, e.Name, shares)
				}
			}
		}
	}
	for _, h := range slow {
		if _, ok := parseCanonical([]byte(h), false); ok {
			t.Errorf("%s: taken by the fast path", h)
		}
	}
}

// within reports whether s lies inside the memory of b.
func within(s string, b []byte) bool {
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	p := uintptr(unsafe.Pointer(unsafe.StringData(s)))
	return p >= start && p+uintptr(len(s)) <= start+uintptr(len(b))
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
	f.Add([]byte(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}, `))
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !utf8.Valid(raw) {
			return // ParseHeader refuses it before either path
		}
		got, ok := parseCanonical(raw, true)
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

// mayEndString tests eight bytes at once; it must agree with testing them
// one by one, for every byte value at every position of a word of
// otherwise ordinary bytes, and in random words.
func TestMayEndString(t *testing.T) {
	ends := func(x uint64) bool {
		for i := range 8 {
			if c := byte(x >> (8 * i)); c == '"' || c == '\\' || c < 0x20 {
				return true
			}
		}
		return false
	}
	check := func(x uint64) {
		if got, want := mayEndString(x), ends(x); got != want {
			t.Fatalf("mayEndString(%#016x) = %v, want %v", x, got, want)
		}
	}
	const plain = 0x6161616161616161 // "aaaaaaaa"
	for pos := range 8 {
		for c := range 256 {
			check(plain&^(0xff<<(8*pos)) | uint64(c)<<(8*pos))
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 1 << 20 {
		check(rng.Uint64())
	}
}

// bigHeader is a header of n entries, large enough for parseCanonical to
// parse it in halves, with names holding braces and commas, two dtypes and
// __metadata__ at position meta (or none for meta < 0). names overrides
// entry names by position.
func bigHeader(n, meta int, names map[int]string) []byte {
	var b bytes.Buffer
	b.WriteString("{")
	var off uint64
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		if i == meta {
			b.WriteString(`"__metadata__":{"format":"pt","k}":"v},"},`)
		}
		name := fmt.Sprintf("model.layers.%d.mlp.experts.{%d},}.weight", i/64, i%64)
		if s, ok := names[i]; ok {
			name = s
		}
		dtype, size := "BF16", uint64(64*128*2)
		if i%3 == 0 {
			dtype, size = "F32", 64*128*4
		}
		fmt.Fprintf(&b, `%q: {"dtype":%q, "shape":[64,128], "data_offsets":[%d,%d]}`, name, dtype, off, off+size)
		off += size
	}
	b.WriteString("}")
	return b.Bytes()
}

// Large headers are parsed in two halves at once; the result must be the
// one encoding/json gives, wherever the metadata is, and a duplicate name
// across the halves must still send the header to encoding/json.
func TestCanonicalHalvesParseAsTheWhole(t *testing.T) {
	const n = 4000
	for _, meta := range []int{-1, 0, n / 2, n - 1} {
		raw := bigHeader(n, meta, nil)
		if len(raw) < parallelFrom {
			t.Fatalf("header of %d bytes is below the %d at which halves are parsed", len(raw), parallelFrom)
		}
		split := memberNear(raw, len(raw)/2)
		if split < 0 {
			t.Fatal("no member found near the middle")
		}
		got, ok, sure := parseHalves(raw, 1, split, false)
		if !ok || !sure {
			t.Fatalf("metadata at %d: halves not parsed (ok %v, sure %v)", meta, ok, sure)
		}
		want, err := parseJSON(raw, "x")
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("metadata at %d: halves and encoding/json disagree (%v)", meta, err)
		}
	}
	// The same name in each half.
	raw := bigHeader(n, -1, map[int]string{10: "dup", n - 10: "dup"})
	if _, ok := parseCanonical(raw, false); ok {
		t.Fatal("a name in both halves took the fast path")
	}
	if _, err := ParseHeader(raw, "x"); err == nil || !strings.Contains(err.Error(), "appears twice") {
		t.Fatalf("a name in both halves: %v, want the duplicate reported", err)
	}
	// A split that is not where a member starts is noticed.
	raw = bigHeader(n, -1, nil)
	split := memberNear(raw, len(raw)/2)
	if _, _, sure := parseHalves(raw, 1, split+1, false); sure {
		t.Fatal("a split inside a member was taken")
	}
}

// FuzzHalvesAgreeWithWhole holds the parse in halves to the parse of the
// whole, at the split memberNear finds: when the first half confirms the
// split, both parses accept the same headers with the same result.
func FuzzHalvesAgreeWithWhole(f *testing.F) {
	f.Add(bigHeader(3, 1, nil))
	f.Add(bigHeader(4, -1, map[int]string{0: "a", 3: "a"}))
	f.Add([]byte(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}, "b\"},\"c":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		p := canonicalParser{b: raw}
		p.space()
		if !p.eat('{') {
			return
		}
		p.space()
		first := p.i
		split := memberNear(raw, first+len(raw[first:])/2)
		if split < 0 {
			return
		}
		halves, ok, sure := parseHalves(raw, first, split, false)
		if !sure {
			return
		}
		whole, wholeOK := parseWhole(raw, first, false)
		if ok != wholeOK {
			t.Fatalf("halves ok %v, whole ok %v, on %q split at %d", ok, wholeOK, raw, split)
		}
		if ok && !reflect.DeepEqual(halves, whole) {
			t.Fatalf("halves and whole disagree on %q split at %d:\n%v\n%v", raw, split, halves, whole)
		}
	})
}

// Indexes as Hugging Face writes them take the fast path, with the map
// encoding/json reads; anything else is left to encoding/json.
func TestIndexWeightMapTakesPlainIndexes(t *testing.T) {
	fast := []string{
		"{\n  \"metadata\": {\n    \"total_size\": 327680000\n  },\n  \"weight_map\": {\n    \"a.weight\": \"model-00001-of-00002.safetensors\",\n    \"b.weight\": \"model-00002-of-00002.safetensors\",\n    \"c.weight\": \"model-00001-of-00002.safetensors\"\n  }\n}\n",
		`{"weight_map":{"x":"f"},"metadata":{"format":"pt","total_size":1}}`,
		`{"weight_map":{}}`,
		`{"metadata":{},"weight_map":{"ünïcode":"日本.safetensors"}}`,
	}
	slow := []string{
		`{"metadata":{"total_size":1}}`,                     // no weight map
		`{"weight_map":{"a":"f",}}`,                         // a trailing comma
		`{"weight_map":{"a":"f"},}`,                         // another
		`{"weight_map":{"a":"f","a":"g"}}`,                  // a name twice
		`{"weight_map":{"a\u0062":"f"}}`,                    // an escape
		`{"weight_map":{"a":"f"},"weight_map":{"b":"g"}}`,   // the map twice
		`{"Weight_Map":{"a":"f"}}`,                          // another spelling
		`{"weight_map":{"a":"f"},"extra":1}`,                // another member
		`{"metadata":{"total_size":1.5},"weight_map":{}}`,   // a fraction
		`{"metadata":{"n":{"m":1}},"weight_map":{"a":"f"}}`, // nested metadata
		`{"weight_map":{"a":"f"}} x`,                        // trailing bytes
		"{\"weight_map\":{\"a\xff\":\"f\"}}",                // not UTF-8
		`{"weight_map":null}`,
	}
	type index struct {
		Metadata  map[string]any    `json:"metadata"`
		WeightMap map[string]string `json:"weight_map"`
	}
	for _, raw := range fast {
		got, ok := IndexWeightMap([]byte(raw))
		if !ok {
			t.Errorf("%s: not taken by the fast path", raw)
			continue
		}
		var want index
		if err := json.Unmarshal([]byte(raw), &want); err != nil || !reflect.DeepEqual(got, want.WeightMap) {
			t.Errorf("%s: fast path %v, encoding/json %v (%v)", raw, got, want.WeightMap, err)
		}
	}
	for _, raw := range slow {
		if _, ok := IndexWeightMap([]byte(raw)); ok {
			t.Errorf("%s: taken by the fast path", raw)
		}
	}
}

// FuzzIndexWeightMapAgreesWithJSON holds the index's fast path to
// encoding/json: what it accepts, encoding/json reads to the same map.
func FuzzIndexWeightMapAgreesWithJSON(f *testing.F) {
	f.Add([]byte("{\n  \"metadata\": {\n    \"total_size\": 3\n  },\n  \"weight_map\": {\n    \"a\": \"f1\",\n    \"b\": \"f2\"\n  }\n}"))
	f.Add([]byte(`{"weight_map":{"a":"f"},"metadata":{"format":"pt"}}`))
	f.Add([]byte(`{"weight_map":{"a":"f",}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, ok := IndexWeightMap(raw)
		if !ok {
			return
		}
		var want struct {
			Metadata  map[string]any    `json:"metadata"`
			WeightMap map[string]string `json:"weight_map"`
		}
		if err := json.Unmarshal(raw, &want); err != nil {
			t.Fatalf("the fast path took an index encoding/json refuses (%v):\n%q", err, raw)
		}
		if !reflect.DeepEqual(got, want.WeightMap) {
			t.Fatalf("the paths disagree on %q:\nfast %v\njson %v", raw, got, want.WeightMap)
		}
	})
}

// TestDistinctNames: the table of names finds a duplicate wherever the two
// entries are, among names that differ by one character or collide in
// nothing, and passes names that are all distinct.
func TestDistinctNames(t *testing.T) {
	const n = 5000
	entries := make([]Entry, n)
	for i := range entries {
		entries[i].Name = fmt.Sprintf("model.layers.%d.weight", i)
	}
	if !distinctNames(entries) {
		t.Fatal("distinct names reported as duplicates")
	}
	if !distinctNames(nil) || !distinctNames(entries[:1]) {
		t.Fatal("no or one entry reported as duplicates")
	}
	for _, pair := range [][2]int{{0, 1}, {0, n - 1}, {n / 2, n/2 + 1}, {17, 4093}} {
		dup := slices.Clone(entries)
		dup[pair[1]].Name = dup[pair[0]].Name
		if distinctNames(dup) {
			t.Errorf("entries %d and %d share a name: not reported", pair[0], pair[1])
		}
	}
	if distinctNames([]Entry{{Name: ""}, {Name: ""}}) {
		t.Error("two empty names: not reported")
	}
}

// TestValidUTF8AgreesAtTheSplit: the header validated in halves is valid
// exactly when utf8.Valid says so, with characters of every length across
// the middle and invalid bytes on either side of it.
func TestValidUTF8AgreesAtTheSplit(t *testing.T) {
	base := bytes.Repeat([]byte("a"), parallelFrom+64)
	mid := len(base) / 2
	for _, insert := range []string{"é", "€", "𝄞", "\xff", "\x80", "\x80\x80\x80\x80\x80", "\xe2\x82", "\xf0\x9d\x84", "\xed\xa0\x80"} {
		for at := mid - 6; at <= mid+6; at++ {
			raw := slices.Clone(base)
			copy(raw[at:], insert)
			if got, want := validUTF8(raw), utf8.Valid(raw); got != want {
				t.Errorf("%q at %d (middle %d): validUTF8 %v, utf8.Valid %v", insert, at, mid, got, want)
			}
		}
	}
}
