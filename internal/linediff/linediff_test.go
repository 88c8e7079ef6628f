package linediff

import (
	"bytes"
	"strings"
	"testing"
)

func TestUnified(t *testing.T) {
	a := "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n"
	b := "1\n2\nthree\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\n"
	var out bytes.Buffer
	Unified(&out, "f.hcl", []byte(a), []byte(b))
	want := `--- old/f.hcl
+++ new/f.hcl
@@ -1,6 +1,6 @@
 1
 2
-3
+three
 4
 5
 6
@@ -10,3 +10,4 @@
 10
 11
 12
+13
`
	if out.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", out.String(), want)
	}
	out.Reset()
	Unified(&out, "same", []byte(a), []byte(a))
	if out.String() != "--- old/same\n+++ new/same\n" {
		t.Errorf("equal texts: %q", out.String())
	}
}

// FuzzLines checks the edit script: it turns the first text into the
// second, and Unified prints any pair without a panic.
// Seeds: testdata/fuzz/FuzzLines.
func FuzzLines(f *testing.F) {
	f.Add("a\nb\nc\n", "a\nx\nc\n")
	f.Add("", "x\n")
	f.Add("path=\"a\"\n  only = 1\n", "  path = \"a\"\n  only = 1\n")
	f.Fuzz(func(t *testing.T, a, b string) {
		la, lb := Split([]byte(a)), Split([]byte(b))
		if len(la)*len(lb) > 1<<16 {
			return
		}
		var ra, rb []string
		for _, op := range Lines(la, lb) {
			if op.Kind != '+' {
				ra = append(ra, op.Text)
			}
			if op.Kind != '-' {
				rb = append(rb, op.Text)
			}
		}
		if strings.Join(ra, "\n") != strings.Join(la, "\n") || strings.Join(rb, "\n") != strings.Join(lb, "\n") {
			t.Fatalf("the edit script of %q → %q does not rebuild them", a, b)
		}
		var out bytes.Buffer
		Unified(&out, "f", []byte(a), []byte(b))
	})
}
