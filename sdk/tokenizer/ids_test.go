package tokenizer

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
)

func TestParseIDs(t *testing.T) {
	for _, tc := range []struct {
		in, want, err string
	}{
		{"128000 9906 1917", "[128000 9906 1917]", ""},
		{" 1,2,\t3\n", "[1 2 3]", ""},
		{"[1, 2, 3]", "[1 2 3]", ""},
		{"", "[]", ""},
		{"[1, 2", "", `"[1, 2" is not a JSON array of token ids`},
		{"5 x", "", `"x" is not a token id`},
		{"99999999999", "", `"99999999999" is not a token id`},
	} {
		ids, err := ParseIDs(tc.in)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("ParseIDs(%q): error %v, want %q", tc.in, err, tc.err)
		case tc.err == "" && (err != nil || fmt.Sprint(ids) != tc.want):
			t.Errorf("ParseIDs(%q) = %v, %v; want %s", tc.in, ids, err, tc.want)
		}
	}
}

// FuzzParseIDs feeds id lists as tokenize --decode takes them: never a
// panic, and what parses prints back to the same ids.
// Seeds: testdata/fuzz/FuzzParseIDs.
func FuzzParseIDs(f *testing.F) {
	for _, s := range []string{"128000 9906 1917", "[1, 2, 3]", "1,2,3", "", "[", "-5 x", "99999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ids, err := ParseIDs(s)
		if err != nil {
			return
		}
		parts := make([]string, len(ids))
		for i, id := range ids {
			parts[i] = strconv.Itoa(int(id))
		}
		again, err := ParseIDs(strings.Join(parts, " "))
		if err != nil || fmt.Sprint(again) != fmt.Sprint(ids) {
			t.Fatalf("%q parsed to %v, which does not parse back: %v %v", s, ids, again, err)
		}
	})
}
