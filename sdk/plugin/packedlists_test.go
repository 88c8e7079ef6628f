package plugin

import (
	"bytes"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	pb "github.com/sluice-ml/sluice/sdk/proto/v1"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// listManifest is the manifest the conversions of these tests are of.
var listManifest = &tensor.Manifest{Tensors: []tensor.TensorInfo{{Name: "a"}, {Name: "b"}, {Name: "c"}, {Name: "écart"}}}

func TestConversionsRoundTrip(t *testing.T) {
	for _, cs := range [][]Conversion{
		nil,
		// in the manifest's order, one reason shared
		{{Tensor: "a", To: tensor.Q8_0, Reason: "GGUF q8_0"}, {Tensor: "b", To: tensor.Q8_0, Reason: "GGUF q8_0"}, {Tensor: "écart", To: tensor.F16}},
		// out of order, and a tensor twice
		{{Tensor: "c", To: tensor.BF16, Reason: "x"}, {Tensor: "a", To: tensor.F32}, {Tensor: "c", To: tensor.BF16, Reason: "x"}},
	} {
		b, ok := appendConversions(nil, cs, listManifest)
		if !ok {
			t.Fatalf("%+v: not packed", cs)
		}
		got, err := parseConversions(b, listManifest)
		if err != nil || len(got) != len(cs) || len(cs) > 0 && !reflect.DeepEqual(got, cs) {
			t.Errorf("%+v came back as %+v, %v", cs, got, err)
		}
		if n := bytes.Count(b, []byte("GGUF q8_0")); n > 1 {
			t.Errorf("a reason two conversions share is in the list %d times", n)
		}
	}
	// A conversion of a tensor the manifest lacks is not packed: only a
	// message can name it, for the host to refuse by name.
	if _, ok := appendConversions(nil, []Conversion{{Tensor: "a", To: tensor.F16}, {Tensor: "zz", To: tensor.F16}}, listManifest); ok {
		t.Error("a conversion of a tensor the manifest lacks was packed")
	}
}

func TestDirectTargetsRoundTrip(t *testing.T) {
	targets := []packedTarget{{tensor: "a", file: 0, offset: 0, size: 4}, {tensor: "écart", file: math.MaxUint32, offset: math.MaxUint64, size: 1 << 40}, {tensor: "", file: 3}}
	got, err := parseDirectTargets(appendDirectTargets(nil, targets))
	if err != nil || !reflect.DeepEqual(got, targets) {
		t.Errorf("%+v came back as %+v, %v", targets, got, err)
	}
	if b := appendDirectTargets(nil, targets); cap(b) != cap(slices.Grow([]byte(nil), len(b))) {
		t.Errorf("a list of %d bytes in an array of %d: not sized before it was written", len(b), cap(b))
	}
}

func TestMalformedPackedListsAreRefused(t *testing.T) {
	strs := []string{"q8_0", "why"}
	for _, tc := range []struct {
		name string
		list []byte
		want []string
	}{
		{"no bytes", nil, []string{"byte 0", "string count", "ends"}},
		{"a conversion count past the list", tableOf(strs, 5, varints(0, 0, 1)), []string{"conversion count 5"}},
		{"a tensor out of range", tableOf(strs, 1, varints(4, 0, 1)), []string{"conversion 0", "tensor: tensor 4 of 4"}},
		{"a dtype out of range", tableOf(strs, 1, varints(0, 2, 1)), []string{"conversion 0", "dtype: string 2 of 2"}},
		{"a reason out of range", tableOf(strs, 1, varints(0, 0, 2)), []string{"conversion 0", "reason: string 2 of 2"}},
		{"a string not UTF-8", append(varints(1, 1), 0xfe), []string{"string 0 is not valid UTF-8"}},
		{"bytes after the last", append(tableOf(strs, 1, varints(3, 0, 1)), 7), []string{"1 bytes follow the last conversion"}},
	} {
		_, err := parseConversions(tc.list, listManifest)
		checkRefusal(t, "conversions: "+tc.name, err, tc.want)
	}
	for _, tc := range []struct {
		name string
		list []byte
		want []string
	}{
		{"no bytes", nil, []string{"byte 0", "target count", "ends"}},
		{"a target count past the list", varints(3, 1, 0, 0, 0), []string{"target count 3"}},
		{"a name not UTF-8", append(varints(1, 1), 0xc3, 0, 0, 0), []string{"target 0", "name is not valid UTF-8"}},
		{"a file past 32 bits", append(varints(1, 1), append([]byte("t"), varints(1<<32, 0, 0)...)...), []string{`target 0 ("t")`, "byte 3: file 4294967296"}},
		{"cut short", append(varints(1, 1), append([]byte("t"), varints(0, 0)...)...), []string{`target 0 ("t")`, "size: the table ends"}},
		{"bytes after the last", append(appendDirectTargets(nil, []packedTarget{{tensor: "t"}}), 0), []string{"1 bytes follow the last target"}},
	} {
		_, err := parseDirectTargets(tc.list)
		checkRefusal(t, "targets: "+tc.name, err, tc.want)
	}
	// A plan's answer with its conversions both ways, or a list that does
	// not read, is refused.
	list, _ := appendConversions(nil, []Conversion{{Tensor: "a", To: tensor.F16}}, listManifest)
	_, err := planFromProto(&pb.PlanResponse{Convert: []*pb.Conversion{{Tensor: "b", Dtype: "f16"}}, PackedConvert: list}, listManifest)
	checkRefusal(t, "a plan with conversions both ways", err, []string{"conversions sent both as messages and as a packed block"})
	_, err = planFromProto(&pb.PlanResponse{PackedConvert: list[:len(list)-1]}, listManifest)
	checkRefusal(t, "a plan with a list cut short", err, []string{"packed conversions: byte 6", "conversion count 1"})
	// Every list cut short is refused.
	cs, _ := appendConversions(nil, []Conversion{{Tensor: "a", To: tensor.Q8_0, Reason: "r"}, {Tensor: "c", To: tensor.F16}}, listManifest)
	ts := appendDirectTargets(nil, []packedTarget{{tensor: "a", size: 300}, {tensor: "b", offset: 300, size: 300}})
	for n := range len(cs) {
		if _, err := parseConversions(cs[:n], listManifest); err == nil {
			t.Errorf("conversions cut to %d of %d bytes were accepted", n, len(cs))
		}
	}
	for n := range len(ts) {
		if _, err := parseDirectTargets(ts[:n]); err == nil {
			t.Errorf("targets cut to %d of %d bytes were accepted", n, len(ts))
		}
	}
}

// checkRefusal fails t unless err says each of want.
func checkRefusal(t *testing.T, name string, err error, want []string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: accepted", name)
		return
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s: %q does not say %q", name, err, w)
		}
	}
}

// listSeeds are packed lists: conversions of listManifest's tensors and
// direct targets.
func listSeeds() [][]byte {
	cs, _ := appendConversions(nil, []Conversion{{Tensor: "a", To: tensor.Q8_0, Reason: "r"}, {Tensor: "écart", To: tensor.F16}}, listManifest)
	return [][]byte{
		cs,
		appendDirectTargets(nil, []packedTarget{{tensor: "a", size: 300}, {tensor: "b", file: 1, offset: 300, size: 1 << 33}}),
		{0, 0},
	}
}

// FuzzParsePackedLists reads any bytes as a packed list of conversions (of
// listManifest's tensors) and as one of direct targets: each gives a list
// or an error, and a list it gives writes bytes that read back the same,
// byte for byte on the second round.
func FuzzParsePackedLists(f *testing.F) {
	for _, b := range listSeeds() {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if cs, err := parseConversions(b, listManifest); err == nil {
			once, ok := appendConversions(nil, cs, listManifest)
			if !ok {
				t.Fatal("conversions read from a list do not pack again")
			}
			back, err := parseConversions(once, listManifest)
			if err != nil || len(back) != len(cs) || len(cs) > 0 && !reflect.DeepEqual(back, cs) {
				t.Fatalf("conversions changed in a round trip: %+v, %+v, %v", cs, back, err)
			}
			if twice, _ := appendConversions(nil, back, listManifest); !bytes.Equal(once, twice) {
				t.Fatalf("the same conversions packed two ways:\n%x\n%x", once, twice)
			}
		}
		if ts, err := parseDirectTargets(b); err == nil {
			once := appendDirectTargets(nil, ts)
			back, err := parseDirectTargets(once)
			if err != nil || len(back) != len(ts) || len(ts) > 0 && !reflect.DeepEqual(back, ts) {
				t.Fatalf("targets changed in a round trip: %+v, %+v, %v", ts, back, err)
			}
			if twice := appendDirectTargets(nil, back); !bytes.Equal(once, twice) {
				t.Fatalf("the same targets packed two ways:\n%x\n%x", once, twice)
			}
		}
	})
}
