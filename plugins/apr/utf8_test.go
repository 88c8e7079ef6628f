package apr

import (
	"bytes"
	"strings"
	"testing"

	"github.com/sluice-ml/sluice/sdk/plugin"
)

// TestNamesMustBeUTF8 is a regression test: a tensor name of invalid UTF-8
// (aprender's names are Rust Strings, always UTF-8) was read, and only
// failed later, where names must be UTF-8. It is refused at its entry.
func TestNamesMustBeUTF8(t *testing.T) {
	b := writeBytes(t, WriteOptions{}, goldenModel())
	h := parseAprenderHeader(b)
	b[h.IndexOffset+3] = 0xff // in "bias"
	_, err := NewReader(bytes.NewReader(b), int64(len(b)), ReadOptions{NoVerify: true, Name: "m.apr"})
	if err == nil || !plugin.IsBadInput(err) || !strings.Contains(err.Error(), "not valid UTF-8") {
		t.Errorf("got %v, want a format error about UTF-8", err)
	}
}
