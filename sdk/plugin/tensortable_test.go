package plugin

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"google.golang.org/protobuf/proto"

	pb "github.com/sluice-ml/sluice/sdk/proto/v1"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// tableTensors has a tensor of each shape a table holds: a scalar, the
// largest dimension and size, attributes, locations sharing a path and one
// of another path, names of many bytes and of none.
func tableTensors() []tensor.TensorInfo {
	return []tensor.TensorInfo{
		{Name: "model.layers.0.self_attn.q_proj.weight", DType: tensor.BF16, Shape: []uint64{4096, 4096}, Size: 4096 * 4096 * 2,
			Location: &tensor.FileRef{Path: "/models/a/model-00001.safetensors", Offset: 8, Length: 4096 * 4096 * 2}},
		{Name: "model.layers.0.mlp.down_proj.weight", DType: tensor.BF16, Shape: []uint64{4096, 11008}, Size: 4096 * 11008 * 2,
			Location: &tensor.FileRef{Path: "/models/a/model-00001.safetensors", Offset: 8 + 4096*4096*2, Length: 4096 * 11008 * 2}},
		{Name: "scale", DType: tensor.F32, Size: 4},
		{Name: "", DType: "", Shape: []uint64{math.MaxUint64, 1, 0}, Size: math.MaxUint64},
		{Name: "écarts→ü", DType: tensor.Q4_K, Shape: []uint64{256}, Size: 144,
			Attrs:    map[string]string{tensor.AttrShard: "2/3", tensor.AttrUnit: "[0,1,0]", "z": "", "": "empty key"},
			Location: &tensor.FileRef{Path: "/models/b/other file.gguf", Offset: math.MaxUint64, Length: 0}},
	}
}

func TestTensorTableRoundTrip(t *testing.T) {
	ts := tableTensors()
	b := appendTensorTable([]byte("prefix"), ts)
	if !bytes.HasPrefix(b, []byte("prefix")) {
		t.Fatal("appendTensorTable did not append")
	}
	got, err := parseTensorTable(b[len("prefix"):])
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, ts) {
		t.Fatalf("the tensors changed in a round trip:\n got %+v\nwant %+v", got, ts)
	}
	// Each path and dtype crosses once, however many tensors name it.
	if n := bytes.Count(b, []byte("/models/a/model-00001.safetensors")); n != 1 {
		t.Errorf("a path two tensors share is in the table %d times, want once", n)
	}
	if n := bytes.Count(b, []byte(tensor.BF16)); n != 1 {
		t.Errorf("a dtype two tensors share is in the table %d times, want once", n)
	}
	// A shape is its own: appending to one does not write into the next.
	got[0].Shape = append(got[0].Shape, 7)
	if got[1].Shape[0] != 4096 {
		t.Error("appending to a parsed shape changed the next tensor's")
	}
	empty, err := parseTensorTable(appendTensorTable(nil, nil))
	if err != nil || len(empty) != 0 {
		t.Errorf("an empty table read as %v, %v", empty, err)
	}
}

// TestPackedTablesAreReadInPlace: a tensor table's names and a direct
// target list's are pieces of the bytes read, not copies, and so are those
// of the manifest ManifestFromProto makes of a message holding a table.
func TestPackedTablesAreReadInPlace(t *testing.T) {
	within := func(s string, b []byte) bool {
		p, start := uintptr(unsafe.Pointer(unsafe.StringData(s))), uintptr(unsafe.Pointer(unsafe.SliceData(b)))
		return p >= start && p+uintptr(len(s)) <= start+uintptr(len(b))
	}
	ts := tableTensors()
	b := appendTensorTable(nil, ts)
	got, err := parseTensorTable(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, ts) {
		t.Fatalf("the tensors changed in a round trip:\n got %+v\nwant %+v", got, ts)
	}
	for i := range got {
		if !within(got[i].Name, b) || got[i].Location != nil && !within(got[i].Location.Path, b) {
			t.Errorf("tensor %d's name %q or path is a copy, not a piece of the table", i, got[i].Name)
		}
	}
	m, err := ManifestFromProto(&pb.Manifest{PackedTensors: b})
	if err != nil {
		t.Fatal(err)
	}
	if !within(m.Tensors[0].Name, b) {
		t.Error("ManifestFromProto copied the packed table")
	}
	list := appendDirectTargets(nil, []packedTarget{{tensor: "a.weight", offset: 64, size: 8}, {tensor: "b.weight", offset: 128, size: 8}})
	targets, err := parseDirectTargets(list)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range targets {
		if !within(x.tensor, list) {
			t.Errorf("target %q is a copy, not a piece of the list", x.tensor)
		}
	}
}

// TestTensorTableIsCanonical: the same tensors give the same bytes every
// time, whatever order Go walks their attribute maps in.
func TestTensorTableIsCanonical(t *testing.T) {
	ts := tableTensors()
	first := appendTensorTable(nil, ts)
	for range 20 {
		if !bytes.Equal(appendTensorTable(nil, ts), first) {
			t.Fatal("the same tensors gave different tables")
		}
	}
}

// tableOf builds a table by hand: the strings, then the tensor count and
// the tensors' bytes as given.
func tableOf(strs []string, count uint64, tensors ...[]byte) []byte {
	b := binary.AppendUvarint(nil, uint64(len(strs)))
	for _, s := range strs {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	b = binary.AppendUvarint(b, count)
	for _, t := range tensors {
		b = append(b, t...)
	}
	return b
}

// varints writes each value as a varint.
func varints(vs ...uint64) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.AppendUvarint(b, v)
	}
	return b
}

// named writes a tensor's name, then the rest of its fields as varints.
func named(name string, rest ...uint64) []byte {
	return append(append(varints(uint64(len(name))), name...), varints(rest...)...)
}

func TestMalformedTensorTablesAreRefused(t *testing.T) {
	dtypes := []string{"F32", "/x"}
	// name "w", dtype 0, rank 1, dim 4, size 16, no attributes, no location
	good := named("w", 0, 1, 4, 16, 0, 0)
	if ts, err := parseTensorTable(tableOf(dtypes, 1, good)); err != nil || len(ts) != 1 {
		t.Fatalf("the well-formed table of this test read as %v, %v", ts, err)
	}
	overlong := bytes.Repeat([]byte{0x80}, 11)
	for _, tc := range []struct {
		name  string
		table []byte
		want  []string
	}{
		{"no bytes", nil, []string{"byte 0", "string count", "ends"}},
		{"a string count past the table", varints(1 << 40), []string{"byte 0", "string count 1099511627776"}},
		{"a string past the table", append(varints(1, 9), "short"...), []string{"byte 1", "string 0 of 9 bytes"}},
		{"a string that is not UTF-8", append(varints(1, 1), 0xff), []string{"byte 2", "string 0 is not valid UTF-8"}},
		{"a tensor count past the table", tableOf(dtypes, 2, good), []string{"tensor count 2"}},
		{"a varint of more than 64 bits", append(varints(0), overlong...), []string{"byte 1", "tensor count", "longer than 64 bits"}},
		{"a name that is not UTF-8", tableOf(dtypes, 1, append(varints(1, 0xc3), varints(0, 0, 0, 0, 0)...)), []string{"tensor 0", "name is not valid UTF-8"}},
		{"a dtype index out of range", tableOf(dtypes, 1, named("w", 2, 0, 0, 0, 0)), []string{`tensor 0 ("w")`, "dtype: string 2 of 2"}},
		{"a rank past the table", tableOf(dtypes, 1, named("w", 0, 200, 0, 0, 0)), []string{`tensor 0 ("w")`, "rank 200"}},
		{"an attribute count past the table", tableOf(dtypes, 1, named("w", 0, 0, 4, 90, 0)), []string{`tensor 0 ("w")`, "attribute count 90"}},
		{"an attribute value out of range", tableOf(dtypes, 1, named("w", 0, 0, 4, 1, 0, 5, 0)), []string{"attribute value: string 5 of 2"}},
		{"an attribute twice", tableOf(dtypes, 1, named("w", 0, 0, 4, 2, 0, 1, 0, 1, 0)), []string{`attribute "F32": keys out of order or repeated`}},
		{"attributes out of order", tableOf(dtypes, 1, named("w", 0, 0, 4, 2, 0, 1, 1, 0, 0)), []string{`attribute "/x": keys out of order`}},
		{"a location's path out of range", tableOf(dtypes, 1, named("w", 0, 0, 4, 0, 3, 0, 0)), []string{`tensor 0 ("w")`, "location: string 2 of 2"}},
		{"a location cut short", tableOf(dtypes, 1, named("w", 0, 0, 4, 0, 2, 8)), []string{`tensor 0 ("w")`, "length: the table ends"}},
		{"the second tensor cut short", tableOf(dtypes, 2, good, named("v", 0, 1)), []string{`tensor 1 ("v")`, "rank 1"}},
		{"bytes after the last tensor", append(tableOf(dtypes, 1, good), 0), []string{"1 bytes follow the last tensor"}},
	} {
		_, err := parseTensorTable(tc.table)
		if err == nil {
			t.Errorf("%s: accepted", tc.name)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not say %q", tc.name, err, w)
			}
		}
	}
	// Every table cut short is refused, none read past its end.
	whole := appendTensorTable(nil, tableTensors())
	for n := range len(whole) {
		if _, err := parseTensorTable(whole[:n]); err == nil {
			t.Errorf("the table cut to %d of its %d bytes was accepted", n, len(whole))
		}
	}
}

func TestManifestWithBothTensorFormsIsRefused(t *testing.T) {
	p := manifestToProto(&tensor.Manifest{Tensors: tableTensors()}, wireForms{tensors: true})
	p.Tensors = []*pb.TensorInfo{{Name: "extra", Dtype: "F32", Size: 4}}
	if _, err := ManifestFromProto(p); err == nil || !strings.Contains(err.Error(), "both") {
		t.Errorf("a manifest with tensors both ways: %v, want it refused", err)
	}
	p = &pb.Manifest{PackedTensors: []byte{0, 1}}
	if _, err := ManifestFromProto(p); err == nil || !strings.Contains(err.Error(), "packed tensor table: byte 1") {
		t.Errorf("a manifest with a bad table: %v, want an error naming the table and the byte", err)
	}
}

// tableSeeds are packed tensor tables: the tensors of tableTensors, none,
// and two built by hand.
func tableSeeds() [][]byte {
	return [][]byte{
		appendTensorTable(nil, tableTensors()),
		appendTensorTable(nil, nil),
		tableOf([]string{"F32"}, 1, named("w", 0, 1, 4, 16, 0, 0)),
		tableOf([]string{"a", "b"}, 1, named("w", 0, 0, 4, 2, 0, 1, 1, 0, 2, 3, 4)),
	}
}

// FuzzParseTensorTable reads any bytes as a packed tensor table: each gives
// tensors or an error, never a panic or an allocation the bytes cannot
// account for, and tensors it gives write a table that reads back the same,
// byte for byte on the second round.
func FuzzParseTensorTable(f *testing.F) {
	for _, b := range tableSeeds() {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ts, err := parseTensorTable(b)
		if err != nil {
			return
		}
		once := appendTensorTable(nil, ts)
		back, err := parseTensorTable(once)
		if err != nil {
			t.Fatalf("a table this side wrote does not read back: %v", err)
		}
		if !reflect.DeepEqual(back, ts) {
			t.Fatalf("the tensors changed in a round trip:\n%+v\n%+v", ts, back)
		}
		if twice := appendTensorTable(nil, back); !bytes.Equal(once, twice) {
			t.Fatalf("the same tensors wrote two tables:\n%x\n%x", once, twice)
		}
	})
}

// TestTensorTableIsSizedExactly: the table is written into the one array
// its size asks for, as appendTensorTable sizes it before writing: not
// grown on the way, nor larger than needed.
func TestTensorTableIsSizedExactly(t *testing.T) {
	// Many tensors, so that a byte too many or too few for each is more than
	// the allocator rounds an array's size up by.
	var many []tensor.TensorInfo
	for i := range 5000 {
		for _, tt := range tableTensors() {
			tt.Name = fmt.Sprint(i, tt.Name)
			many = append(many, tt)
		}
	}
	for _, ts := range [][]tensor.TensorInfo{nil, tableTensors(), many} {
		b := appendTensorTable(nil, ts)
		if want := cap(slices.Grow([]byte(nil), len(b))); cap(b) != want {
			t.Errorf("%d tensors: a table of %d bytes in an array of %d, want %d", len(ts), len(b), cap(b), want)
		}
	}
	for _, v := range []uint64{0, 1, 127, 128, 16383, 16384, math.MaxUint32, math.MaxUint64} {
		if got, want := uvarintLen(v), len(binary.AppendUvarint(nil, v)); got != want {
			t.Errorf("uvarintLen(%d) = %d, want %d", v, got, want)
		}
	}
}

// BenchmarkManifestCrossing is what a manifest of 20,000 tensors, each from
// a file, costs both ends of a crossing (encoding, protobuf's marshalling and
// unmarshalling, decoding and checking) as a message per tensor and as a
// packed tensor table; bytes/s are of the message.
func BenchmarkManifestCrossing(b *testing.B) {
	m := &tensor.Manifest{}
	for i := range 20000 {
		m.Tensors = append(m.Tensors, tensor.TensorInfo{
			Name: fmt.Sprintf("model.layers.%d.mlp.experts.%d.down_proj.weight", i/64, i%64), DType: tensor.BF16, Shape: []uint64{64, 64}, Size: 8192,
			Location: &tensor.FileRef{Path: "/data/checkpoints/many-tensors/model.safetensors", Offset: 8 + uint64(i)*8192, Length: 8192}})
	}
	for _, form := range []struct {
		name  string
		forms wireForms
	}{{"messages", wireForms{strings: true}}, {"table", wireForms{strings: true, tensors: true}}} {
		b.Run(form.name, func(b *testing.B) {
			for b.Loop() {
				raw, err := proto.Marshal(&pb.PlanRequest{Session: 1, Manifest: manifestToProto(m, form.forms)})
				if err != nil {
					b.Fatal(err)
				}
				var req pb.PlanRequest
				if err := proto.Unmarshal(raw, &req); err != nil {
					b.Fatal(err)
				}
				if _, err := ManifestFromProto(req.Manifest); err != nil {
					b.Fatal(err)
				}
				b.SetBytes(int64(len(raw)))
			}
		})
	}
}
