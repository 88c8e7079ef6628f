package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestRedactorCatchesSplitSecrets writes text holding secrets in every
// possible split into two writes, and with a secret's prefix left at the
// end of a write that turns out not to be the secret.
func TestRedactorCatchesSplitSecrets(t *testing.T) {
	s := &secretSet{}
	s.add("hunter2-secret")
	s.add("abc") // too short to redact
	text := "key=hunter2-secret; again hunter2-secret; not hunter2-secre; abc\n"
	want := "key=(sensitive value); again (sensitive value); not hunter2-secre; abc\n"
	for cut := 0; cut <= len(text); cut++ {
		var out bytes.Buffer
		r := newRedactor(&out, s)
		r.Write([]byte(text[:cut]))
		r.Write([]byte(text[cut:]))
		r.Flush()
		if out.String() != want {
			t.Fatalf("split at %d: %q", cut, out.String())
		}
	}
	var out bytes.Buffer
	r := newRedactor(&out, s)
	r.Write([]byte("ends with hunter2"))
	if strings.Contains(out.String(), "hunter2") {
		t.Errorf("a possible secret prefix was written before the rest was known")
	}
	r.Flush()
	if out.String() != "ends with hunter2" {
		t.Errorf("Flush: %q", out.String())
	}
}
