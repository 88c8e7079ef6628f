package llamanames

import (
	"regexp"
	"testing"
)

func TestMapsBothWays(t *testing.T) {
	for hf, gguf := range map[string]string{
		"model.embed_tokens.weight":                      "token_embd.weight",
		"model.norm.weight":                              "output_norm.weight",
		"lm_head.weight":                                 "output.weight",
		"model.layers.0.input_layernorm.weight":          "blk.0.attn_norm.weight",
		"model.layers.12.self_attn.q_proj.weight":        "blk.12.attn_q.weight",
		"model.layers.12.self_attn.q_proj.bias":          "blk.12.attn_q.bias",
		"model.layers.3.self_attn.k_proj.weight":         "blk.3.attn_k.weight",
		"model.layers.3.self_attn.v_proj.weight":         "blk.3.attn_v.weight",
		"model.layers.3.self_attn.o_proj.weight":         "blk.3.attn_output.weight",
		"model.layers.3.self_attn.q_norm.weight":         "blk.3.attn_q_norm.weight",
		"model.layers.3.self_attn.k_norm.weight":         "blk.3.attn_k_norm.weight",
		"model.layers.3.post_attention_layernorm.weight": "blk.3.ffn_norm.weight",
		"model.layers.3.mlp.gate_proj.weight":            "blk.3.ffn_gate.weight",
		"model.layers.3.mlp.up_proj.weight":              "blk.3.ffn_up.weight",
		"model.layers.3.mlp.down_proj.weight":            "blk.3.ffn_down.weight",
	} {
		if got, ok := ToGGUF(hf); !ok || got != gguf {
			t.Errorf("ToGGUF(%s) = %q, %v; want %s", hf, got, ok, gguf)
		}
		if got, ok := ToHF(gguf); !ok || got != hf {
			t.Errorf("ToHF(%s) = %q, %v; want %s", gguf, got, ok, hf)
		}
		if Canonical(hf) != gguf || Canonical(gguf) != gguf {
			t.Errorf("Canonical of %s / %s", hf, gguf)
		}
	}
	for _, n := range []string{"model.layers.0.self_attn.rotary_emb.inv_freq", "model.layers.x.mlp.up_proj.weight", "blk.1.unknown.weight", "token_embd", "", "model.layers.1.mlp.up_proj"} {
		if g, ok := ToGGUF(n); ok {
			t.Errorf("ToGGUF(%q) = %q", n, g)
		}
		if h, ok := ToHF(n); ok {
			t.Errorf("ToHF(%q) = %q", n, h)
		}
	}
}

func TestLayerIndex(t *testing.T) {
	for name, want := range map[string]int{"blk.7.attn_q.weight": 7, "model.layers.31.mlp.up_proj.weight": 31, "token_embd.weight": -1, "blk.x.y": -1} {
		got, ok := LayerIndex(name)
		if !ok {
			got = -1
		}
		if got != want {
			t.Errorf("LayerIndex(%s) = %d, want %d", name, got, want)
		}
	}
}

// layerPatterns are the patterns splitLayer replaces, one per prefix.
var layerPatterns = map[string]*regexp.Regexp{
	hfLayerPrefix:   regexp.MustCompile(`^model\.layers\.([0-9]+)\.(.+)$`),
	ggufLayerPrefix: regexp.MustCompile(`^blk\.([0-9]+)\.(.+)$`),
}

// checkSplitLayer holds splitLayer to the pattern for prefix on name.
func checkSplitLayer(t *testing.T, name, prefix string) {
	t.Helper()
	n, rest, ok := splitLayer(name, prefix)
	m := layerPatterns[prefix].FindStringSubmatch(name)
	if ok != (m != nil) || ok && (n != m[1] || rest != m[2]) {
		t.Errorf("splitLayer(%q, %q) = %q, %q, %v; the pattern: %q", name, prefix, n, rest, ok, m)
	}
}

func TestSplitLayerAgreesWithThePattern(t *testing.T) {
	for _, name := range []string{
		"model.layers.0.mlp.down_proj.weight", "model.layers.12.x", "model.layers.007.a.b", "model.layers.1.",
		"model.layers..x", "model.layers.x.y", "model.layers.1x.y", "model.layers.1", "model.layers.1.a\nb",
		"model.layers.1.\n", "model.layers.1.a\n", "model.layers.1..", "model.layers.1.é", "xmodel.layers.1.a",
		"blk.0.attn_q.weight", "blk.3", "blk.3.", "blk..a", "blk.3.a.b", "blk.٣.a", "", "blk.", "model.layers.",
	} {
		checkSplitLayer(t, name, hfLayerPrefix)
		checkSplitLayer(t, name, ggufLayerPrefix)
	}
}

func FuzzSplitLayer(f *testing.F) {
	f.Add("model.layers.3.self_attn.q_proj.weight")
	f.Add("blk.3.attn_q.weight")
	f.Add("blk.3.\n")
	f.Fuzz(func(t *testing.T, name string) {
		checkSplitLayer(t, name, hfLayerPrefix)
		checkSplitLayer(t, name, ggufLayerPrefix)
	})
}
