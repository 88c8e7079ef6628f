package transform

import "testing"

func TestGlobs(t *testing.T) {
	for _, tc := range []struct {
		pattern, name string
		want          bool
	}{
		{"*", "model.layers.0.mlp.up_proj.weight", true},
		{"*.weight", "a/b.weight", true},
		{"*.weight", "a.bias", false},
		{"blk.?.attn_q.weight", "blk.3.attn_q.weight", true},
		{"blk.?.attn_q.weight", "blk.12.attn_q.weight", false},
		{"blk.[0-3].*", "blk.2.ffn_up.weight", true},
		{"blk.[0-3].*", "blk.4.ffn_up.weight", false},
		{"blk.[!0-3].*", "blk.4.ffn_up.weight", true},
		{"a+b(c)", "a+b(c)", true},
		{"a.b", "axb", false},
		{"[]]x", "]x", true},
		{"x^[^]", "x^^", true},
	} {
		g, err := compileGlobs("match", []string{tc.pattern})
		if err != nil {
			t.Fatalf("%q: %v", tc.pattern, err)
		}
		if got := g.match(tc.name); got != tc.want {
			t.Errorf("%q on %q: %v, want %v", tc.pattern, tc.name, got, tc.want)
		}
	}
	for _, bad := range []string{"[abc", "x[", "[]"} {
		if _, err := compileGlobs("match", []string{bad}); err == nil {
			t.Errorf("%q compiled", bad)
		}
	}
	g, _ := compileGlobs("match", []string{"*attn_v.weight"})
	g.aliases = true
	if !g.match("model.layers.3.self_attn.v_proj.weight") {
		t.Error("a GGUF-style pattern does not match the Hugging Face name")
	}
	g, _ = compileGlobs("match", []string{"*.v_proj.*"})
	g.aliases = true
	if !g.match("blk.3.attn_v.weight") {
		t.Error("a Hugging Face-style pattern does not match the GGUF name")
	}
}
