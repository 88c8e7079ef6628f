package tensor

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"testing"
)

// layoutOf lays strs out as GGUF does, independently of PackedStrings.
func layoutOf(strs []string) []byte {
	var b []byte
	for _, s := range strs {
		b = binary.LittleEndian.AppendUint64(b, uint64(len(s)))
		b = append(b, s...)
	}
	return b
}

func TestPackedStringArrayReadsLikeAStringArray(t *testing.T) {
	strs := make([]string, 3*walkLimit)
	for i := range strs {
		strs[i] = fmt.Sprintf("tok%dé", i)
	}
	strs[5], strs[walkLimit+1] = "", "" // empty strings, on both sides of the walk limit
	packed, err := PackedStringArray(layoutOf(strs), len(strs))
	if err != nil {
		t.Fatal(err)
	}
	plain := StringArray(strs)
	if packed.Type() != TypeArray || packed.Elem() != TypeString || packed.Len() != len(strs) {
		t.Fatalf("packed array is %s of %s × %d", packed.Type(), packed.Elem(), packed.Len())
	}
	if packed.String() != plain.String() {
		t.Errorf("text %q, want %q", packed.String(), plain.String())
	}
	for i := range strs {
		if got, _ := packed.Index(i).Str(); got != strs[i] {
			t.Fatalf("Index(%d) = %q, want %q", i, got, strs[i])
		}
	}
	if packed.Index(len(strs)).IsValid() || packed.Index(-1).IsValid() {
		t.Error("an index out of range gave a value")
	}
	if ss, ok := packed.StringSlice(); !ok || !slices.Equal(ss, strs) {
		t.Error("StringSlice differs from the strings laid out")
	}
	if !packed.Equal(plain) || !plain.Equal(packed) || !packed.Equal(packed) {
		t.Error("a packed array and the same strings compare unequal")
	}
	other := slices.Clone(strs)
	other[len(other)-1] += "x"
	otherPacked, _ := PackedStringArray(layoutOf(other), len(other))
	if packed.Equal(StringArray(other)) || packed.Equal(otherPacked) {
		t.Error("arrays that differ in the last string compare equal")
	}
	for _, v := range []Value{packed, plain} {
		if l, ok := v.PackedStrings(); !ok || !bytes.Equal(l, layoutOf(strs)) {
			t.Errorf("PackedStrings of the %T form differs from GGUF's layout", v.packed)
		}
		if n, ok := v.PackedLen(); !ok || n != len(layoutOf(strs)) {
			t.Errorf("PackedLen of the %T form is %d, the layout %d bytes", v.packed, n, len(layoutOf(strs)))
		}
	}
	empty, err := PackedStringArray(nil, 0)
	if err != nil || empty.Len() != 0 || !empty.Equal(StringArray(nil)) {
		t.Errorf("empty packed array: %v, len %d", err, empty.Len())
	}
}

func TestPackedStringArrayRefusesBadLayouts(t *testing.T) {
	good := layoutOf([]string{"ab", "c"})
	for _, tc := range []struct {
		name   string
		layout []byte
		n      int
	}{
		{"more strings than the layout holds", good, 3},
		{"fewer strings than the layout holds", good, 1},
		{"a length cut short", good[:4], 1},
		{"a string past the end", good[:len(good)-1], 2},
		{"a length near 2^64", binary.LittleEndian.AppendUint64(nil, ^uint64(0)), 1},
		{"a negative count", nil, -1},
	} {
		if _, err := PackedStringArray(tc.layout, tc.n); err == nil {
			t.Errorf("%s: accepted", tc.name)
		}
	}
}

func FuzzPackedStringArray(f *testing.F) {
	f.Add(layoutOf([]string{"a", "", "bc"}), 3)
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0}, 1)
	f.Fuzz(func(t *testing.T, layout []byte, n int) {
		if n > 1<<16 {
			return
		}
		v, err := PackedStringArray(layout, n)
		if err != nil {
			return
		}
		ss, _ := v.StringSlice()
		if len(ss) != n || v.Len() != n {
			t.Fatalf("%d strings from a layout said to hold %d", len(ss), n)
		}
		if !bytes.Equal(layoutOf(ss), layout) {
			t.Fatal("the strings do not lay out as the input")
		}
		for i := range min(n, walkLimit+2) {
			if s, _ := v.Index(i).Str(); s != ss[i] {
				t.Fatalf("Index(%d) = %q, StringSlice has %q", i, s, ss[i])
			}
		}
	})
}
