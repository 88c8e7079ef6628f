package transform_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-ml/sluice/core/runtest"
	"github.com/sluice-ml/sluice/core/transform"
	"github.com/sluice-ml/sluice/sdk/detached"
	"github.com/sluice-ml/sluice/sdk/plugin"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// seq returns n float32 values 0, 1, 2 … as bytes.
func seq(n int) []byte {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(i)
	}
	return f32Bytes(v)
}

func TestCast(t *testing.T) {
	c := &runtest.Checkpoint{}
	vals := addFloat(t, c, "a", tensor.BF16, []uint64{4, 8}, 1)
	addFloat(t, c, "b", tensor.F32, []uint64{8}, 2)
	c.Add("ids", tensor.I32, []uint64{3}, []byte{1, 0, 0, 0, 2, 0, 0, 0, 0xff, 0xff, 0xff, 0xff})
	c.Add("q", tensor.Q8_0, []uint64{32}, encode(t, tensor.Q8_0, normal(32, 1, 3)))

	res := run(t, one("cast", `
  type    = "f16"
  exclude = ["b"]`), runtest.Options{Sources: sources(c)})
	out := res.Sinks["out"]
	if !bytes.Equal(out.Data["a"], encode(t, tensor.F16, vals)) {
		t.Error("bf16 → f16 is not the codec's rounding")
	}
	types := map[string]tensor.DType{}
	for _, ti := range out.Manifest.Tensors {
		types[ti.Name] = ti.DType
	}
	if types["a"] != tensor.F16 || types["b"] != tensor.F32 || types["ids"] != tensor.I32 || types["q"] != tensor.Q8_0 {
		t.Errorf("types %v", types)
	}
	mustContain(t, res.Decisions("transform.t"), "ids: kept i32: integer tensor (set allow_integers = true", "q: kept q8_0: quantized; use a dequantize stage")

	res = run(t, one("cast", `
  type           = "f32"
  match          = ["ids"]
  allow_integers = true`), runtest.Options{Sources: sources(c)})
	if got := f32Values(res.Sinks["out"].Data["ids"]); fmt.Sprint(got) != "[1 2 -1]" {
		t.Errorf("i32 → f32 gave %v", got)
	}

	for body, want := range map[string]string{
		`type = "i32"`:  "needs allow_integers = true",
		`type = "q8_0"`: "use quantize for q8_0",
		`type = "f17"`:  `unknown dtype "f17"`,
	} {
		err := runErr(t, one("cast", body), runtest.Options{Sources: sources(c), PlanOnly: true})
		mustContain(t, err.Error(), want)
	}
	// Wide integers would lose bits through float32.
	c.Add("big", tensor.I64, []uint64{1}, make([]byte, 8))
	err := runErr(t, one("cast", `
  type           = "i32"
  match          = ["big"]
  allow_integers = true`), runtest.Options{Sources: sources(c), PlanOnly: true})
	mustContain(t, err.Error(), `"big"`, "lose integers above 2^24")
}

func TestTranspose(t *testing.T) {
	c := &runtest.Checkpoint{}
	c.Add("dense.kernel", tensor.F32, []uint64{3, 5}, seq(15))
	c.Add("experts.kernel", tensor.F32, []uint64{2, 3, 4}, seq(24))
	c.Add("bias", tensor.F32, []uint64{5}, seq(5))
	c.Add("big.kernel", tensor.BF16, []uint64{300, 200}, encode(t, tensor.BF16, normal(60000, 1, 1)))

	res := run(t, one("transpose", `match = ["dense.*", "big.*"]`), runtest.Options{Sources: sources(c), Workers: 2, Slots: 32, SlotSize: 16 << 10})
	out := res.Sinks["out"]
	got := f32Values(out.Data["dense.kernel"])
	for i := 0; i < 3; i++ {
		for j := 0; j < 5; j++ {
			if got[j*3+i] != float32(i*5+j) {
				t.Fatalf("out[%d][%d] = %v, want %v", j, i, got[j*3+i], i*5+j)
			}
		}
	}
	dk, _ := out.Manifest.Tensor("dense.kernel")
	if fmt.Sprint(dk.Shape) != "[5 3]" {
		t.Errorf("shape %v", dk.Shape)
	}
	// bf16 through the tiled path, larger than a slot: held whole.
	big := out.Data["big.kernel"]
	src := c.Data["big.kernel"]
	for i := 0; i < 300; i += 7 {
		for j := 0; j < 200; j += 3 {
			if !bytes.Equal(big[(j*300+i)*2:(j*300+i)*2+2], src[(i*200+j)*2:(i*200+j)*2+2]) {
				t.Fatalf("big: element (%d, %d) moved wrong", i, j)
			}
		}
	}
	d := res.Decisions("transform.t")
	mustContain(t, d, "dense.kernel: [3 5] → [5 3] (whole-tensor op: needs", "big.kernel: [300 200] → [200 300]")

	// Three dimensions: [0, 2, 1] keeps axis 0 and streams per slice;
	// [2, 0, 1] moves every axis.
	for _, axes := range [][]int{{0, 2, 1}, {2, 0, 1}, {1, 2, 0}} {
		res := run(t, one("transpose", fmt.Sprintf("match = [\"experts.*\"]\n axes = %s", strings.ReplaceAll(fmt.Sprint(axes), " ", ", "))), runtest.Options{Sources: sources(c)})
		o, _ := res.Sinks["out"].Manifest.Tensor("experts.kernel")
		in := []int{2, 3, 4}
		want := []uint64{uint64(in[axes[0]]), uint64(in[axes[1]]), uint64(in[axes[2]])}
		if fmt.Sprint(o.Shape) != fmt.Sprint(want) {
			t.Fatalf("axes %v: shape %v, want %v", axes, o.Shape, want)
		}
		got := f32Values(res.Sinks["out"].Data["experts.kernel"])
		n := 0
		for x := 0; x < int(want[0]); x++ {
			for y := 0; y < int(want[1]); y++ {
				for z := 0; z < int(want[2]); z++ {
					var idx [3]int
					idx[axes[0]], idx[axes[1]], idx[axes[2]] = x, y, z
					if w := float32(idx[0]*12 + idx[1]*4 + idx[2]); got[n] != w {
						t.Fatalf("axes %v: out[%d][%d][%d] = %v, want %v", axes, x, y, z, got[n], w)
					}
					n++
				}
			}
		}
		if axes[0] == 0 {
			mustContain(t, res.Decisions("transform.t"), "streamed in slices of 48 B")
		}
	}

	// A block-quantized tensor cannot be transposed.
	c2 := &runtest.Checkpoint{}
	c2.Add("q.kernel", tensor.Q8_0, []uint64{2, 32}, encode(t, tensor.Q8_0, normal(64, 1, 1)))
	err := runErr(t, one("transpose", `match = ["*"]`), runtest.Options{Sources: sources(c2), PlanOnly: true})
	mustContain(t, err.Error(), `"q.kernel"`, "dequantize it first")
}

// TestTransposeOverBudget: a tensor that must be held whole but does not fit
// the heap budget fails with advice, and every sink is aborted.
func TestTransposeOverBudget(t *testing.T) {
	c := &runtest.Checkpoint{}
	c.Add("k", tensor.F32, []uint64{512, 512}, seq(512*512))
	res, err := runtest.Run(t.Context(), one("transpose", `match = ["k"]`), runtest.Options{Sources: sources(c), HeapBudget: 1 << 20, SlotSize: 64 << 10, Slots: 16})
	if err == nil {
		t.Fatal("a 2 MiB whole-tensor op ran in a 1 MiB budget")
	}
	mustContain(t, err.Error(), `"k"`, "need it whole", "raise --max-memory")
	if !res.Sinks["out"].Aborted || res.Sinks["out"].Committed {
		t.Error("the sink was not aborted")
	}
}

// rotary applies llama.cpp's converter permutation to row indexes: within
// each head of hd rows, new row 2b+a = old row a·hd/2+b.
func rotary(rows, heads int) []int {
	hd := rows / heads
	from := make([]int, rows)
	for h := 0; h < heads; h++ {
		for a := 0; a < 2; a++ {
			for b := 0; b < hd/2; b++ {
				from[h*hd+2*b+a] = h*hd + a*hd/2 + b
			}
		}
	}
	return from
}

func TestPermuteAndInverse(t *testing.T) {
	cfg := `{"model_type":"llama","num_hidden_layers":1,"num_attention_heads":4,"num_key_value_heads":2}`
	c := &runtest.Checkpoint{}
	c.Manifest = &tensor.Manifest{}
	c.Manifest.Metadata.Set(tensor.MetaHFConfig, tensor.StringValue(cfg))
	c.Add("model.layers.0.self_attn.q_proj.weight", tensor.BF16, []uint64{32, 16}, encode(t, tensor.BF16, normal(512, 1, 1)))
	c.Add("model.layers.0.self_attn.k_proj.weight", tensor.Q8_0, []uint64{16, 32}, encode(t, tensor.Q8_0, normal(512, 1, 2)))
	c.Add("model.layers.0.self_attn.q_proj.bias", tensor.F32, []uint64{32}, seq(32))
	c.Add("model.layers.0.self_attn.v_proj.weight", tensor.BF16, []uint64{16, 16}, encode(t, tensor.BF16, normal(256, 1, 3)))

	src := `
source "mem" "in" { id = "in" }
transform "permute" "fwd" { input = source.in }
transform "permute" "back" {
  input   = transform.fwd
  inverse = true
}
sink "mem" "permuted" {
  input = transform.fwd
  id    = "fwd"
}
sink "mem" "restored" {
  input = transform.back
  id    = "back"
}`
	// Small slots: every head streams as its own unit.
	res := run(t, src, runtest.Options{Sources: sources(c), Workers: 2, Slots: 64, SlotSize: 256})
	for _, ti := range c.Manifest.Tensors {
		in := c.Data[ti.Name]
		if !bytes.Equal(res.Sinks["back"].Data[ti.Name], in) {
			t.Errorf("%s: permute then inverse is not the identity", ti.Name)
		}
		heads := map[string]int{"q_proj.weight": 4, "k_proj.weight": 2, "q_proj.bias": 4}[ti.Name[strings.LastIndex(ti.Name, "self_attn.")+10:]]
		got := res.Sinks["fwd"].Data[ti.Name]
		if heads == 0 {
			if !bytes.Equal(got, in) {
				t.Errorf("%s changed", ti.Name)
			}
			continue
		}
		rows := int(ti.Shape[0])
		rb := len(in) / rows
		for r, f := range rotary(rows, heads) {
			if !bytes.Equal(got[r*rb:(r+1)*rb], in[f*rb:(f+1)*rb]) {
				t.Fatalf("%s: row %d is not old row %d", ti.Name, r, f)
			}
		}
	}
	mustContain(t, res.Decisions("transform.fwd"),
		"q_proj.weight: query rows permuted: 4 heads of 8 rows (heads from config.json)",
		"k_proj.weight: key rows permuted: 2 heads of 8 rows (key/value heads from config.json)")

	// GGUF names and head counts from GGUF metadata, or given explicitly.
	g := &runtest.Checkpoint{Manifest: &tensor.Manifest{}}
	g.Manifest.Metadata.Set("general.architecture", tensor.StringValue("llama"))
	g.Manifest.Metadata.Set("llama.attention.head_count", tensor.U32Value(2))
	g.Add("blk.0.attn_q.weight", tensor.F32, []uint64{8, 2}, seq(16))
	res = run(t, one("permute", ""), runtest.Options{Sources: sources(g)})
	mustContain(t, res.Decisions("transform.t"), "2 heads of 4 rows (heads from GGUF metadata)")
	res = run(t, one("permute", "n_head = 4"), runtest.Options{Sources: sources(g)})
	mustContain(t, res.Decisions("transform.t"), "4 heads of 2 rows (n_head)")

	// Unknown head count, odd head size.
	u := &runtest.Checkpoint{}
	u.Add("blk.0.attn_q.weight", tensor.F32, []uint64{6, 2}, seq(12))
	err := runErr(t, one("permute", ""), runtest.Options{Sources: sources(u), PlanOnly: true})
	mustContain(t, err.Error(), "head count is unknown: set n_head")
	err = runErr(t, one("permute", "n_head = 2"), runtest.Options{Sources: sources(u), PlanOnly: true})
	mustContain(t, err.Error(), "heads of 3 rows cannot be permuted")
}

func TestRename(t *testing.T) {
	c := &runtest.Checkpoint{}
	for _, n := range []string{"model.embed_tokens.weight", "model.layers.0.self_attn.q_proj.weight", "model.layers.11.mlp.down_proj.weight", "model.norm.weight", "lm_head.weight", "extra.scale"} {
		c.Add(n, tensor.F32, []uint64{2}, seq(2))
	}
	c.Manifest.Tensors[4].SetAttr(tensor.AttrTiedTo, "model.embed_tokens.weight")
	res := run(t, `
source "mem" "in" { id = "in" }
transform "rename" "gguf" {
  input = source.in
  map   = "hf-llama-to-gguf"
}
transform "rename" "back" {
  input = transform.gguf
  map   = "gguf-to-hf-llama"
}
sink "mem" "g" {
  input = transform.gguf
  id    = "g"
}
sink "mem" "h" {
  input = transform.back
  id    = "h"
}`, runtest.Options{Sources: sources(c)})
	var names []string
	for _, ti := range res.Sinks["g"].Manifest.Tensors {
		names = append(names, ti.Name)
		if !bytes.Equal(res.Sinks["g"].Data[ti.Name], seq(2)) {
			t.Errorf("%s: bytes changed", ti.Name)
		}
	}
	if got := strings.Join(names, " "); got != "token_embd.weight blk.0.attn_q.weight blk.11.ffn_down.weight output_norm.weight output.weight extra.scale" {
		t.Errorf("names %s", got)
	}
	if o, _ := res.Sinks["g"].Manifest.Tensor("output.weight"); o.Attr(tensor.AttrTiedTo) != "token_embd.weight" {
		t.Errorf("the tie was not renamed: %v", o.Attrs)
	}
	for i, ti := range res.Sinks["h"].Manifest.Tensors {
		if ti.Name != c.Manifest.Tensors[i].Name {
			t.Errorf("round trip: %s came back as %s", c.Manifest.Tensors[i].Name, ti.Name)
		}
	}
	mustContain(t, res.Decisions("transform.gguf"), "5 tensors renamed; 1 have no name in map hf-llama-to-gguf and keep theirs: extra.scale")

	err := runErr(t, one("rename", `
  map      = "hf-llama-to-gguf"
  unmapped = "error"`), runtest.Options{Sources: sources(c), PlanOnly: true})
	mustContain(t, err.Error(), `"extra.scale"`, "has no name in map")

	// Ordered rules: the first match rewrites.
	res = run(t, one("rename", `
  rule {
    from = "^model\\.layers\\.([0-9]+)\\."
    to   = "layer$1/"
  }
  rule {
    from = "^model\\."
    to   = ""
  }`), runtest.Options{Sources: sources(c)})
	names = nil
	for _, ti := range res.Sinks["out"].Manifest.Tensors {
		names = append(names, ti.Name)
	}
	if got := strings.Join(names, " "); got != "embed_tokens.weight layer0/self_attn.q_proj.weight layer11/mlp.down_proj.weight norm.weight lm_head.weight extra.scale" {
		t.Errorf("names %s", got)
	}
}

func TestRenameCollisionNamesBoth(t *testing.T) {
	c := &runtest.Checkpoint{}
	c.Add("a.weight", tensor.F32, []uint64{1}, seq(1))
	c.Add("b.weight", tensor.F32, []uint64{1}, seq(1))
	c.Add("x", tensor.F32, []uint64{1}, seq(1))
	err := runErr(t, one("rename", `
  rule {
    from = "^[ab]\\."
    to   = "w."
  }`), runtest.Options{Sources: sources(c), PlanOnly: true})
	var ce *transform.CollisionError
	if !errors.As(err, &ce) || ce.First != "a.weight" || ce.Second != "b.weight" || ce.Name != "w.weight" {
		t.Fatalf("got %v", err)
	}
	mustContain(t, err.Error(), `tensors "a.weight" and "b.weight" would both be named "w.weight"`)
	if !plugin.IsBadConfig(err) {
		t.Error("a collision is not reported as a configuration error")
	}
	// Renaming onto a name that an untouched tensor keeps.
	err = runErr(t, one("rename", `
  rule {
    from = "^a\\.weight$"
    to   = "x"
  }`), runtest.Options{Sources: sources(c), PlanOnly: true})
	mustContain(t, err.Error(), `tensors "a.weight" and "x" would both be named "x"`)
}

func TestFilter(t *testing.T) {
	c := &runtest.Checkpoint{}
	c.Add("model.layers.0.rotary_emb.inv_freq", tensor.F32, []uint64{4}, seq(4))
	c.Add("w1", tensor.F32, []uint64{2, 2}, seq(4))
	c.Add("w2", tensor.BF16, []uint64{2, 2}, make([]byte, 8))
	c.Add("ids", tensor.I64, []uint64{2}, make([]byte, 16))
	c.Add("experts", tensor.F32, []uint64{2, 1, 2}, seq(4))
	res := run(t, one("filter", `
  include { min_dims = 2 }
  include { dtype = ["i64"] }
  exclude { match = ["*.inv_freq"] }
  exclude {
    dtype    = ["bf16"]
    max_dims = 2
  }
  exclude { min_dims = 3 }`), runtest.Options{Sources: sources(c)})
	var names []string
	for _, ti := range res.Sinks["out"].Manifest.Tensors {
		names = append(names, ti.Name)
	}
	if got := strings.Join(names, " "); got != "w1 ids" {
		t.Errorf("kept %s, want w1 ids", got)
	}
	mustContain(t, res.Decisions("transform.t"), "2 tensors kept, 3 dropped", "model.layers.0.rotary_emb.inv_freq: dropped: matches no include block",
		"w2: dropped: matches exclude block 2", "experts: dropped: matches exclude block 3")
	err := runErr(t, one("filter", `exclude { match = ["*"] }`), runtest.Options{Sources: sources(c), PlanOnly: true})
	mustContain(t, err.Error(), "drops all 5 tensors")
	err = runErr(t, one("filter", `include { dtype = ["f99"] }`), runtest.Options{Sources: sources(c), PlanOnly: true})
	mustContain(t, err.Error(), `unknown dtype "f99"`)
}

func TestMetadata(t *testing.T) {
	c := &runtest.Checkpoint{Manifest: &tensor.Manifest{}}
	md := &c.Manifest.Metadata
	md.Set("general.name", tensor.StringValue("old"))
	md.Set("llama.context_length", tensor.U32Value(2048))
	md.Set("hf.config.json", tensor.StringValue("{}"))
	md.Set("hf.tokenizer.json", tensor.StringValue("{}"))
	md.Set("general.license", tensor.StringValue("mit"))
	c.Add("w", tensor.F32, []uint64{1}, seq(1))
	res := run(t, one("metadata", `
  delete = ["hf.*"]
  copy {
    from = "general.name"
    to   = "general.basename"
  }
  rename {
    from = "general.license"
    to   = "general.license.name"
  }
  set {
    key   = "general.name"
    value = "sluice-test"
  }
  set {
    key   = "llama.context_length"
    value = 8192
  }
  set {
    key   = "general.file_type"
    type  = "u32"
    value = 7
  }
  set {
    key   = "tokenizer.ggml.scores"
    type  = "array(f32)"
    value = [0.5, -1, 2]
  }
  set {
    key   = "tokenizer.ggml.tokens"
    type  = "array(string)"
    value = ["a", "b"]
  }
  set {
    key   = "x.flag"
    value = true
  }
  set {
    key   = "x.temp"
    type  = "f64"
    value = 0.1
  }`), runtest.Options{Sources: sources(c)})
	out := &res.Sinks["out"].Manifest.Metadata
	want := []string{
		`general.name="sluice-test"`, `llama.context_length=8192`, `general.basename="old"`, `general.license.name="mit"`,
		`general.file_type=7`, `tokenizer.ggml.scores=[f32 × 3]{0.5, -1, 2}`, `tokenizer.ggml.tokens=[string × 2]{"a", "b"}`,
		`x.flag=true`, `x.temp=0.1`,
	}
	var got []string
	out.All(func(k string, v tensor.Value) bool {
		got = append(got, k+"="+v.String())
		return true
	})
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("metadata:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for key, typ := range map[string]tensor.ValueType{"llama.context_length": tensor.TypeU32, "general.file_type": tensor.TypeU32, "x.temp": tensor.TypeF64} {
		if v, _ := out.Get(key); v.Type() != typ {
			t.Errorf("%s is %s, want %s", key, v.Type(), typ)
		}
	}

	for body, want := range map[string]string{
		"set {\n key = \"k\"\n type = \"u8\"\n value = 300\n}":            "300 is out of range for u8",
		"set {\n key = \"k\"\n type = \"u32\"\n value = 1.5\n}":           "not a whole number",
		"set {\n key = \"k\"\n type = \"string\"\n value = 5\n}":          "type string needs a quoted string",
		"set {\n key = \"k\"\n value = 5\n}":                              `key "k" is new and its value is not a string or bool; give its type`,
		"set {\n key = \"k\"\n type = \"array\"\n value = [1]\n}":         "say the element type",
		"set {\n key = \"k\"\n type = \"i8\"\n value = -129\n}":           "-129 is out of range for i8",
		"copy {\n from = \"nope\"\n to = \"x\"\n}":                        `key "nope" does not exist`,
		"rename {\n from = \"general.name\"\n to = \"hf.config.json\"\n}": "that key exists",
	} {
		err := runErr(t, one("metadata", body), runtest.Options{Sources: sources(c), PlanOnly: true})
		mustContain(t, err.Error(), want)
	}
}

func TestShard(t *testing.T) {
	c := &runtest.Checkpoint{}
	for i := 0; i < 5; i++ {
		c.Add(fmt.Sprintf("t%d", i), tensor.F32, []uint64{250}, seq(250)) // 1000 bytes each
	}
	for body, want := range map[string]string{
		`max_size = "2KB"`:   "1/3 1/3 2/3 2/3 3/3",
		`max_size = "2KiB"`:  "1/3 1/3 2/3 2/3 3/3",
		`max_size = "3KB"`:   "1/2 1/2 1/2 2/2 2/2",
		`max_size = "3KiB"`:  "1/2 1/2 1/2 2/2 2/2",
		`max_tensors = 4`:    "1/2 1/2 1/2 1/2 2/2",
		`max_size = "500B"`:  "1/5 2/5 3/5 4/5 5/5",
		`max_size = "4000B"`: "1/2 1/2 1/2 1/2 2/2",
	} {
		res := run(t, one("shard", body), runtest.Options{Sources: sources(c)})
		var got []string
		for _, ti := range res.Sinks["out"].Manifest.Tensors {
			got = append(got, ti.Attr(tensor.AttrShard))
		}
		if strings.Join(got, " ") != want {
			t.Errorf("%s: shards %v, want %s", body, got, want)
		}
	}
	err := runErr(t, one("shard", `max_size = "2 parsecs"`), runtest.Options{Sources: sources(c), PlanOnly: true})
	if !plugin.IsBadConfig(err) {
		t.Errorf("a bad size is not a configuration error: %v", err)
	}
}

func TestSignDetached(t *testing.T) {
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "team.key")
	if err := os.WriteFile(keyFile, []byte("team-secret-42\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := &runtest.Checkpoint{}
	c.Add("w", tensor.F32, []uint64{4}, seq(4))
	out := filepath.Join(dir, "model.bin")
	embedded := filepath.Join(dir, "embedded.bin")
	for _, keyAttr := range []string{`key = "team-secret-42"`, fmt.Sprintf("key_file = %q", keyFile)} {
		os.Remove(out + ".sig")
		res := run(t, fmt.Sprintf(`
source "mem" "in" { id = "in" }
transform "sign" "team" {
  input = source.in
  %s
}
sink "mem" "plain" {
  input = transform.team
  id    = "plain"
  path  = %q
}
sink "mem" "embedding" {
  input            = transform.team
  id               = "embedding"
  path             = %q
  embeds_signature = true
}`, keyAttr, out, embedded), runtest.Options{Sources: sources(c)})
		sig, err := detached.Verify(out, []byte("team-secret-42"))
		if err != nil {
			t.Fatalf("%s: %v", keyAttr, err)
		}
		if sig.KeyID != "shared secret" {
			t.Errorf("key id %q", sig.KeyID)
		}
		if _, err := detached.Verify(out, []byte("team-secret-43")); err == nil {
			t.Error("another key verified")
		}
		if _, err := os.Stat(embedded + ".sig"); err == nil {
			t.Error("a detached signature was written for a sink that embeds its own")
		}
		if o := res.Sinks["embedding"].Options; string(o.SigningKey) != "team-secret-42" || o.SigningKeyID != "shared secret" {
			t.Error("the embedding sink did not get the key")
		}
		if len(res.Sinks["plain"].Options.SigningKey) == 0 {
			t.Error("the plain sink was not told about the key")
		}
		// The signature file is reported, and the key appears nowhere.
		var arts []string
		for _, sa := range res.Run.Artifacts {
			for _, a := range sa.Artifacts {
				arts = append(arts, filepath.Base(a.Path))
			}
		}
		if strings.Join(arts, " ") != "model.bin model.bin.sig embedded.bin" {
			t.Errorf("artifacts %v", arts)
		}
		if d := res.Decisions("transform.team"); strings.Contains(d, "team-secret") {
			t.Errorf("the plan shows the key: %s", d)
		}
		sigText, _ := os.ReadFile(out + ".sig")
		if bytes.Contains(sigText, []byte("team-secret")) {
			t.Error("the signature file holds the key")
		}
	}

	// Tampering is detected.
	b, _ := os.ReadFile(out)
	b[0] ^= 1
	os.WriteFile(out, b, 0o644)
	if _, err := detached.Verify(out, []byte("team-secret-42")); err == nil {
		t.Error("a changed file verified")
	}
}

func TestSignUserKeyAndErrors(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	dir := t.TempDir()
	c := &runtest.Checkpoint{}
	c.Add("w", tensor.F32, []uint64{4}, seq(4))
	out := filepath.Join(dir, "m.bin")
	res := run(t, fmt.Sprintf(`
source "mem" "in" { id = "in" }
transform "sign" "me" {
  input    = source.in
  user_key = true
}
sink "mem" "out" {
  input = transform.me
  id    = "out"
  path  = %q
}`, out), runtest.Options{Sources: sources(c)})
	if res.Sinks["out"].Options.SigningKeyID != "user key" {
		t.Errorf("key id %q", res.Sinks["out"].Options.SigningKeyID)
	}
	if _, err := detached.Verify(out, res.Sinks["out"].Options.SigningKey); err != nil {
		t.Fatal(err)
	}
	for body, want := range map[string]string{
		``:                                     "give exactly one of key, key_file or user_key = true",
		"key = \"a\"\n user_key = true":        "give exactly one of",
		`key = ""`:                             "the shared secret is empty",
		`key_file = "/nonexistent/sluice.key"`: "reading the key file",
	} {
		err := runErr(t, one("sign", body), runtest.Options{Sources: sources(c), PlanOnly: true})
		mustContain(t, err.Error(), want)
	}
}

// TestSensitiveKeyStaysHidden: a key from a sensitive variable is marked;
// the stage reads it, and the stage's attributes show it redacted.
func TestSensitiveKeyStaysHidden(t *testing.T) {
	c := &runtest.Checkpoint{}
	c.Add("w", tensor.F32, []uint64{1}, seq(1))
	res := run(t, `
variable "k" {
  type      = string
  sensitive = true
  default   = "hush-hush-77"
}
source "mem" "in" { id = "in" }
transform "sign" "s" {
  input = source.in
  key   = var.k
}
sink "mem" "out" {
  input = transform.s
  id    = "out"
}`, runtest.Options{Sources: sources(c)})
	if string(res.Sinks["out"].Options.SigningKey) != "hush-hush-77" {
		t.Fatal("the sink did not get the key")
	}
	for _, a := range res.Stage("transform.s").Stage.Attributes() {
		if strings.Contains(a[1], "hush") {
			t.Errorf("attribute %s shows the key", a[0])
		}
	}
	if strings.Contains(res.Decisions("transform.s"), "hush") {
		t.Error("the plan shows the key")
	}
}

// TestTransformsChain runs several stages in a row over a bf16 checkpoint:
// rename, filter, permute, quantize, metadata and shard; the result matches
// doing each step with the codec and the reference permutation.
func TestTransformsChain(t *testing.T) {
	c := &runtest.Checkpoint{Manifest: &tensor.Manifest{}}
	c.Manifest.Metadata.Set(tensor.MetaHFConfig, tensor.StringValue(`{"model_type":"llama","num_hidden_layers":1,"num_attention_heads":2,"num_key_value_heads":1}`))
	q := addFloat(t, c, "model.layers.0.self_attn.q_proj.weight", tensor.BF16, []uint64{8, 64}, 1)
	addFloat(t, c, "model.layers.0.rotary_emb.inv_freq", tensor.F32, []uint64{4}, 2)
	addFloat(t, c, "model.norm.weight", tensor.BF16, []uint64{64}, 3)
	res := run(t, `
source "mem" "in" { id = "in" }
transform "filter" "f" {
  input = source.in
  exclude { match = ["*.inv_freq"] }
}
transform "permute" "p" { input = transform.f }
transform "rename" "r" {
  input = transform.p
  map   = "hf-llama-to-gguf"
}
transform "quantize" "q" {
  input = transform.r
  type  = "q8_0"
  rule {
    match = ["*_norm.weight"]
    type  = "f32"
  }
}
transform "metadata" "m" {
  input  = transform.q
  delete = ["hf.*"]
  set {
    key   = "general.architecture"
    value = "llama"
  }
}
transform "shard" "s" {
  input       = transform.m
  max_tensors = 1
}
sink "mem" "out" {
  input = transform.s
  id    = "out"
}`, runtest.Options{Sources: sources(c), Workers: 2})
	out := res.Sinks["out"]
	if len(out.Manifest.Tensors) != 2 {
		t.Fatalf("%d tensors", len(out.Manifest.Tensors))
	}
	aq, _ := out.Manifest.Tensor("blk.0.attn_q.weight")
	if aq == nil || aq.DType != tensor.Q8_0 || aq.Attr(tensor.AttrShard) != "1/2" {
		t.Fatalf("attn_q: %+v", aq)
	}
	perm := make([]float32, len(q))
	for r, f := range rotary(8, 2) {
		copy(perm[r*64:(r+1)*64], q[f*64:(f+1)*64])
	}
	if !bytes.Equal(out.Data["blk.0.attn_q.weight"], encode(t, tensor.Q8_0, perm)) {
		t.Error("attn_q is not the q8_0 of the permuted rows")
	}
	norm, _ := out.Manifest.Tensor("output_norm.weight")
	if norm.DType != tensor.F32 || norm.Attr(tensor.AttrShard) != "2/2" {
		t.Errorf("output_norm: %+v", norm)
	}
	if out.Manifest.Metadata.Len() != 1 {
		t.Errorf("metadata keys %v", out.Manifest.Metadata.Keys())
	}
	v := f32Values(out.Data["output_norm.weight"])
	if len(v) != 64 || math.IsNaN(float64(v[0])) {
		t.Error("output_norm bytes")
	}
	_ = binary.LittleEndian
}

// TestNoFsyncReachesSinksAndSignatures: a run told not to sync its outputs
// begins every sink with BeginOptions.NoFsync, still signs, and a default
// run does not set it.
func TestNoFsyncReachesSinksAndSignatures(t *testing.T) {
	for _, noFsync := range []bool{false, true} {
		dir := t.TempDir()
		c := &runtest.Checkpoint{}
		c.Add("w", tensor.F32, []uint64{4}, seq(4))
		out := filepath.Join(dir, "m.bin")
		res := run(t, fmt.Sprintf(`
source "mem" "in" { id = "in" }
transform "sign" "me" {
  input = source.in
  key   = "k-1"
}
sink "mem" "out" {
  input = transform.me
  id    = "out"
  path  = %q
}`, out), runtest.Options{Sources: sources(c), NoFsync: noFsync})
		if got := res.Sinks["out"].Options.NoFsync; got != noFsync {
			t.Errorf("run with NoFsync %v: the sink was begun with NoFsync %v", noFsync, got)
		}
		if _, err := detached.Verify(out, []byte("k-1")); err != nil {
			t.Errorf("NoFsync %v: %v", noFsync, err)
		}
	}
}
