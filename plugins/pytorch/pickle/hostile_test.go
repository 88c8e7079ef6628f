package pickle

import (
	"strings"
	"testing"
)

// TestUnicodeMustBeUTF8 is a regression test: a BINUNICODE string of invalid
// UTF-8, which Python refuses to decode, was read as a Go string (and went on
// to fail as an internal error where names must be UTF-8).
func TestUnicodeMustBeUTF8(t *testing.T) {
	for name, pkl := range map[string]string{
		"BINUNICODE":       "X\x02\x00\x00\x00w\xff.",
		"SHORT_BINUNICODE": "\x8c\x02w\xff.",
		"BINUNICODE8":      "\x8d\x02\x00\x00\x00\x00\x00\x00\x00w\xff.",
	} {
		_, err := (&Machine{}).Load(p(pkl))
		if err == nil || !strings.Contains(err.Error(), "not valid UTF-8") {
			t.Errorf("%s: got %v, want an error about UTF-8", name, err)
		}
	}
	if v, err := (&Machine{}).Load(p("X\x03\x00\x00\x00w\xc3\xa9.")); err != nil || v != "wé" {
		t.Errorf("valid UTF-8: got %v, %v", v, err)
	}
}

// TestUniqueKeys is a regression test: with UniqueKeys, a dict key set twice
// (two tensors of one name in a state dict) is refused; without it, the last
// value wins as in Python.
func TestUniqueKeys(t *testing.T) {
	for name, pkl := range map[string]string{
		"SETITEMS": "}(X\x01\x00\x00\x00aK\x01X\x01\x00\x00\x00aK\x02u.",
		"SETITEM":  "}X\x01\x00\x00\x00aK\x01sX\x01\x00\x00\x00aK\x02s.",
	} {
		if _, err := (&Machine{UniqueKeys: true}).Load(p(pkl)); err == nil || !strings.Contains(err.Error(), "set twice") {
			t.Errorf("%s with UniqueKeys: got %v, want a refusal", name, err)
		}
		v, err := (&Machine{}).Load(p(pkl))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got, _ := v.(*Dict).Get("a"); got != int64(2) {
			t.Errorf("%s without UniqueKeys: a = %v, want 2 (the last value)", name, got)
		}
	}
}
