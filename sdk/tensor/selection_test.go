package tensor

import (
	"slices"
	"testing"
)

func TestSelection(t *testing.T) {
	if p, err := (Selection{"a.*", "[", "b"}).Check(); p != "[" || err == nil {
		t.Errorf("Check = %q, %v; want the bad pattern \"[\"", p, err)
	}
	if p, err := (Selection{"a.*", "b"}).Check(); p != "" || err != nil {
		t.Errorf("Check of good patterns = %q, %v", p, err)
	}
	var all Selection
	if !all.Selects("anything") || !all.Mark("anything", nil) {
		t.Error("an empty selection must select every tensor")
	}
	s := Selection{"layers.0.*", "head", "layers.*.bias", "none.*"}
	matched := make([]bool, len(s))
	var got []string
	for _, name := range []string{"layers.0.weight", "layers.1.bias", "layers.1.weight", "head", "a[0]"} {
		if s.Mark(name, matched) {
			got = append(got, name)
		}
		if s.Selects(name) != slices.Contains(got, name) {
			t.Errorf("Selects(%q) disagrees with Mark", name)
		}
	}
	if want := []string{"layers.0.weight", "layers.1.bias", "head"}; !slices.Equal(got, want) {
		t.Errorf("selected %v, want %v", got, want)
	}
	if u := s.Unmatched(matched); !slices.Equal(u, []string{"none.*"}) {
		t.Errorf("Unmatched = %v", u)
	}
}
