package gguf

import (
	"strings"
	"testing"

	"github.com/sluice-ml/sluice/sdk/plugin"
)

// TestNamesMustBeUTF8 is a regression test: a key or tensor name of invalid
// UTF-8 used to be read, then failed to cross the plugin protocol (whose
// strings are UTF-8) as an internal error. GGUF strings are UTF-8, so the
// reader refuses such names, at their offset.
func TestNamesMustBeUTF8(t *testing.T) {
	for name, edit := range map[string]func(g *ggufSpec){
		"key":         func(g *ggufSpec) { g.kvs[1].key = "test.\xff\xfe" },
		"tensor name": func(g *ggufSpec) { g.infos[0].name = "w\xff" },
	} {
		g := validGGUF()
		edit(&g)
		b, _ := g.bytes()
		_, err := parse(b)
		if err == nil || !plugin.IsBadInput(err) || !strings.Contains(err.Error(), "not valid UTF-8") || !strings.Contains(err.Error(), "at byte") {
			t.Errorf("%s of invalid UTF-8: got %v, want a format error at its offset", name, err)
		}
	}
}
