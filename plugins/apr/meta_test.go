package apr

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/sluice-ml/sluice/internal/refdata"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// renderMeta builds the metadata JSON of a manifest and decodes it.
func renderMeta(t *testing.T, m *tensor.Manifest) (raw []byte, members map[string]json.RawMessage, keys []string, a *aprMeta) {
	t.Helper()
	a, err := buildMeta(m)
	if err != nil {
		t.Fatal(err)
	}
	raw = a.render(nil, m.Tensors)
	if !json.Valid(raw) {
		t.Fatalf("metadata is not valid JSON: %s", raw)
	}
	members = map[string]json.RawMessage{}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.Token()
	for dec.More() {
		k, _ := dec.Token()
		var v json.RawMessage
		dec.Decode(&v)
		if _, dup := members[k.(string)]; dup {
			t.Fatalf("key %q written twice", k)
		}
		members[k.(string)] = v
		keys = append(keys, k.(string))
	}
	return raw, members, keys, a
}

func noAliases(t *testing.T, members map[string]json.RawMessage) {
	t.Helper()
	for k := range members {
		if canon, ok := aliases[k]; ok {
			t.Errorf("alias %q of %q written", k, canon)
		}
	}
}

func TestAliasesBecomeCanonical(t *testing.T) {
	m := &tensor.Manifest{}
	m.Metadata.Set("num_hidden_layers", tensor.U32Value(24))
	m.Metadata.Set("hidden_size", tensor.U64Value(896))
	m.Metadata.Set("d_model", tensor.U64Value(1000)) // canonical already set: dropped
	m.Metadata.Set("n_heads", tensor.I32Value(14))
	m.Metadata.Set("layer_norm_eps", tensor.F64Value(1e-6))
	m.Metadata.Set("context_length", tensor.U64Value(32768))
	m.Metadata.Set("vocab_size", tensor.StringValue("151936")) // wrong type: dropped
	m.Metadata.Set("rope_theta", tensor.F64Value(1e6))
	m.Metadata.Set("norm_topk_prob", tensor.U8Value(1)) // serve needs a bool: dropped
	_, mem, _, a := renderMeta(t, m)
	noAliases(t, mem)
	want := map[string]string{
		"num_layers": "24", "hidden_size": "896", "num_heads": "14", "rms_norm_eps": "1e-6",
		"max_position_embeddings": "32768", "rope_theta": "1000000.0", "model_type": `""`,
		"license": "null", "total_size": "0", "param_count": "0",
	}
	for k, v := range want {
		if string(mem[k]) != v {
			t.Errorf("%s = %s, want %s", k, mem[k], v)
		}
	}
	for _, k := range []string{"vocab_size", "norm_topk_prob"} {
		if _, ok := mem[k]; ok {
			t.Errorf("%s written with a wrong type: %s", k, mem[k])
		}
	}
	notes := strings.Join(a.notes, "\n")
	for _, frag := range []string{`"d_model" dropped`, `"vocab_size" dropped`, `"num_hidden_layers" written as "num_layers"`, `"norm_topk_prob" dropped`} {
		if !strings.Contains(notes, frag) {
			t.Errorf("no note %q in:\n%s", frag, notes)
		}
	}
}

// ggufManifest is what a GGUF source carries for a small qwen2 model.
func ggufManifest() *tensor.Manifest {
	m := &tensor.Manifest{}
	md := &m.Metadata
	md.Set("general.architecture", tensor.StringValue("qwen2"))
	md.Set("general.name", tensor.StringValue("Tiny Qwen"))
	md.Set("general.file_type", tensor.U32Value(1))
	md.Set("qwen2.block_count", tensor.U32Value(2))
	md.Set("qwen2.context_length", tensor.U32Value(4096))
	md.Set("qwen2.embedding_length", tensor.U32Value(8))
	md.Set("qwen2.feed_forward_length", tensor.U32Value(16))
	md.Set("qwen2.attention.head_count", tensor.U32Value(2))
	md.Set("qwen2.attention.head_count_kv", tensor.U32Value(1))
	md.Set("qwen2.rope.freq_base", tensor.F32Value(1e6))
	md.Set("qwen2.attention.layer_norm_rms_epsilon", tensor.F32Value(1e-6))
	md.Set("qwen2.rope.dimension_count", tensor.U32Value(4))
	md.Set("tokenizer.ggml.model", tensor.StringValue("gpt2"))
	md.Set("tokenizer.ggml.pre", tensor.StringValue("qwen2"))
	md.Set("tokenizer.ggml.tokens", tensor.StringArray([]string{"a", "b", "ab", "<|im_start|>", "<|im_end|>", "<|endoftext|>"}))
	md.Set("tokenizer.ggml.token_type", tensor.Int32Array([]int32{1, 1, 1, 3, 3, 3}))
	md.Set("tokenizer.ggml.merges", tensor.StringArray([]string{"a b"}))
	md.Set("tokenizer.ggml.bos_token_id", tensor.U32Value(5))
	md.Set("tokenizer.ggml.eos_token_id", tensor.U32Value(4))
	md.Set("tokenizer.ggml.add_bos_token", tensor.BoolValue(false))
	md.Set("tokenizer.ggml.eot_token_id", tensor.U32Value(4))
	md.Set("tokenizer.chat_template", tensor.StringValue("{% for m in messages %}<|im_start|>{{ m.content }}<|im_end|>{% endfor %}"))
	m.Tensors = []tensor.TensorInfo{
		{Name: "token_embd.weight", DType: tensor.F32, Shape: []uint64{6, 8}, Size: 192},
		{Name: "output_norm.weight", DType: tensor.F32, Shape: []uint64{8}, Size: 32},
	}
	return m
}

func TestGGUFMetadataAndTokenizer(t *testing.T) {
	m := ggufManifest()
	_, mem, _, a := renderMeta(t, m)
	noAliases(t, mem)
	want := map[string]string{
		"model_type": `"qwen2"`, "architecture": `"qwen2"`, "name": `"Tiny Qwen"`, "original_format": `"gguf"`,
		"hidden_size": "8", "num_layers": "2", "num_heads": "2", "num_kv_heads": "1", "vocab_size": "6",
		"intermediate_size": "16", "max_position_embeddings": "4096", "rope_theta": "1000000.0",
		"rms_norm_eps": "1e-6", "rope_type": "2", "param_count": "56", "total_size": "224",
		"tokenizer.vocabulary":        `["a","b","ab","<|im_start|>","<|im_end|>","<|endoftext|>"]`,
		"tokenizer.vocab_size":        "6",
		"tokenizer.model":             `"gpt2"`,
		"tokenizer.model_type":        `"gpt2"`,
		"tokenizer.pre_type":          `"qwen2"`,
		"tokenizer.merges":            `["a b"]`,
		"tokenizer.token_type":        "[1,1,1,3,3,3]",
		"tokenizer.bos_token_id":      "5",
		"tokenizer.eos_token_id":      "4",
		"tokenizer.add_bos_token":     "false",
		"general.file_type":           "1",
		"qwen2.rope.dimension_count":  "4",
		"tokenizer.ggml.eot_token_id": "4",
		"special_tokens":              `{"bos_token":"<|endoftext|>","eos_token":"<|im_end|>","unk_token":null,"pad_token":null,"im_start_token":"<|im_start|>","im_end_token":"<|im_end|>"}`,
	}
	for k, v := range want {
		if string(mem[k]) != v {
			t.Errorf("%s = %s, want %s", k, mem[k], v)
		}
	}
	tmpl := `"{% for m in messages %}<|im_start|>{{ m.content }}<|im_end|>{% endfor %}"`
	if string(mem["chat_template"]) != tmpl || string(mem["tokenizer.chat_template"]) != tmpl {
		t.Errorf("chat template not kept: %s / %s", mem["chat_template"], mem["tokenizer.chat_template"])
	}
	for _, k := range []string{"tokenizer.ggml.tokens", "tokenizer.ggml.merges", "general.architecture", "qwen2.block_count"} {
		if _, ok := mem[k]; ok {
			t.Errorf("mapped source key %q copied too", k)
		}
	}
	if _, ok := mem["tensor_shapes"]; !ok {
		t.Error("no tensor_shapes for an imported model")
	}
	if !a.hasVocab {
		t.Error("HAS_VOCAB not set")
	}
}

func TestHasVocabFlagInFile(t *testing.T) {
	mo := &model{}
	mo.m = *ggufManifest()
	mo.data = map[string][]byte{"token_embd.weight": make([]byte, 192), "output_norm.weight": make([]byte, 32)}
	b := writeBytes(t, WriteOptions{}, mo)
	h := parseAprenderHeader(b)
	if h.Flags != FlagLayoutRowMajor|FlagHasVocab {
		t.Errorf("flags %#x, want ROW_MAJOR|HAS_VOCAB", h.Flags)
	}
	plain := writeBytes(t, WriteOptions{}, goldenModel())
	if h := parseAprenderHeader(plain); h.Flags != FlagLayoutRowMajor {
		t.Errorf("flags without a tokenizer %#x", h.Flags)
	}
}

const testTokenizerJSON = `{
  "version": "1.0",
  "added_tokens": [
    {"id": 5, "content": "<s>", "special": true},
    {"id": 6, "content": "</s>", "special": true},
    {"id": 7, "content": "<extra>", "special": false}
  ],
  "model": {
    "type": "BPE",
    "vocab": {"h": 0, "e": 1, "he": 2, "\u0120": 3, "\u010a": 4},
    "merges": [["h", "e"]]
  }
}`

func hfManifest() *tensor.Manifest {
	m := &tensor.Manifest{}
	m.Metadata.Set(tensor.MetaHFConfig, tensor.StringValue(`{"architectures":["LlamaForCausalLM"],"model_type":"llama",
		"hidden_size":8,"num_hidden_layers":2,"num_attention_heads":2,"num_key_value_heads":1,"vocab_size":10,
		"intermediate_size":16,"max_position_embeddings":2048,"rope_theta":500000.0,"rms_norm_eps":1e-05,
		"bos_token_id":5,"eos_token_id":[6,7],"tie_word_embeddings":false}`))
	m.Metadata.Set(tensor.MetaHFTokenizer, tensor.StringValue(testTokenizerJSON))
	m.Metadata.Set(tensor.MetaHFTokenizerConfig, tensor.StringValue(`{"add_bos_token":true,"bos_token":"<s>",
		"eos_token":{"content":"</s>"},"chat_template":[{"name":"default","template":"{{ bos_token }}hi"},{"name":"tool_use","template":"x"}]}`))
	m.Metadata.Set("format", tensor.StringValue("pt"))
	m.Tensors = []tensor.TensorInfo{{Name: "model.embed_tokens.weight", DType: tensor.BF16, Shape: []uint64{10, 8}, Size: 160}}
	return m
}

func TestHFMetadataAndTokenizer(t *testing.T) {
	_, mem, _, a := renderMeta(t, hfManifest())
	noAliases(t, mem)
	want := map[string]string{
		"model_type": `"llama"`, "architecture": `"llama"`, "hf_architecture": `"LlamaForCausalLM"`,
		"hf_model_type": `"llama"`, "original_format": `"safetensors"`,
		"hidden_size": "8", "num_layers": "2", "num_heads": "2", "num_kv_heads": "1", "vocab_size": "10",
		"intermediate_size": "16", "max_position_embeddings": "2048", "rope_theta": "500000.0",
		"rms_norm_eps": "0.00001", "rope_type": "0", "chat_template": `"{{ bos_token }}hi"`,
		"tokenizer.vocabulary":    `["h","e","he","Ġ","Ċ","<s>","</s>","<extra>","[PAD8]","[PAD9]"]`,
		"tokenizer.vocab_size":    "10",
		"tokenizer.merges":        `["h e"]`,
		"tokenizer.model_type":    `"gpt2"`,
		"tokenizer.token_type":    "[1,1,1,1,1,3,3,4,5,5]",
		"tokenizer.bos_token_id":  "5",
		"tokenizer.eos_token_id":  "6",
		"tokenizer.add_bos_token": "true",
		"tokenizer.chat_template": `"{{ bos_token }}hi"`,
		"format":                  `"pt"`,
	}
	for k, v := range want {
		if string(mem[k]) != v {
			t.Errorf("%s = %s, want %s", k, mem[k], v)
		}
	}
	for k := range mem {
		if strings.HasPrefix(k, "hf.") {
			t.Errorf("carried file %q copied", k)
		}
	}
	if !a.hasVocab {
		t.Error("HAS_VOCAB not set")
	}
	if !strings.Contains(strings.Join(a.notes, "\n"), "no pre-tokenizer name") {
		t.Errorf("the fallback is not noted: %q", a.notes)
	}
}

// Real tokenizers (../shared/tokref) go through sdk/tokenizer: the
// vocabulary, the pre-tokenizer's name, special ids and chat template.
func TestRealTokenizers(t *testing.T) {
	cases := []struct {
		dir, model, pre string
		n               int
		bos             string
		scores, merges  bool
	}{
		{"llama3", "gpt2", "llama-bpe", 128256, "128000", false, true},
		{"llama2", "llama", "default", 32000, "1", true, false},
	}
	for _, c := range cases {
		t.Run(c.dir, func(t *testing.T) {
			dir := refdata.Path(t, "tokref", c.dir)
			tj, err := os.ReadFile(filepath.Join(dir, "tokenizer.json"))
			if err != nil {
				t.Fatal(err)
			}
			tc, err := os.ReadFile(filepath.Join(dir, "tokenizer_config.json"))
			if err != nil {
				t.Fatal(err)
			}
			m := &tensor.Manifest{}
			m.Metadata.Set(tensor.MetaHFTokenizer, tensor.StringValue(string(tj)))
			m.Metadata.Set(tensor.MetaHFTokenizerConfig, tensor.StringValue(string(tc)))
			_, mem, _, a := renderMeta(t, m)
			var vocab []string
			if err := json.Unmarshal(mem["tokenizer.vocabulary"], &vocab); err != nil || len(vocab) != c.n {
				t.Fatalf("vocabulary: %d tokens (%v), want %d; notes %q", len(vocab), err, c.n, a.notes)
			}
			if string(mem["tokenizer.model_type"]) != `"`+c.model+`"` || string(mem["tokenizer.pre_type"]) != `"`+c.pre+`"` {
				t.Errorf("model %s pre %s, want %s %s", mem["tokenizer.model_type"], mem["tokenizer.pre_type"], c.model, c.pre)
			}
			if string(mem["tokenizer.bos_token_id"]) != c.bos {
				t.Errorf("bos %s, want %s", mem["tokenizer.bos_token_id"], c.bos)
			}
			if _, ok := mem["tokenizer.scores"]; ok != c.scores {
				t.Errorf("scores present: %v", ok)
			}
			if _, ok := mem["tokenizer.merges"]; ok != c.merges {
				t.Errorf("merges present: %v", ok)
			}
			var cfg struct {
				ChatTemplate *string `json:"chat_template"`
			}
			json.Unmarshal(tc, &cfg)
			if cfg.ChatTemplate != nil {
				var got string
				json.Unmarshal(mem["chat_template"], &got)
				if got != *cfg.ChatTemplate {
					t.Errorf("chat template not kept verbatim")
				}
			}
			if !a.hasVocab {
				t.Error("HAS_VOCAB not set")
			}
		})
	}
}

func TestUnigramTokenizer(t *testing.T) {
	m := &tensor.Manifest{}
	m.Metadata.Set(tensor.MetaHFTokenizer, tensor.StringValue(`{"model":{"type":"Unigram","unk_id":0,
		"vocab":[["<unk>",0.0],["\u2581a",-1.5],["b",-2.25]]}}`))
	_, mem, _, _ := renderMeta(t, m)
	if string(mem["tokenizer.scores"]) != "[0.0,-1.5,-2.25]" || string(mem["tokenizer.token_type"]) != "[2,1,1]" ||
		string(mem["tokenizer.model_type"]) != `"unigram"` {
		t.Errorf("unigram: scores %s types %s model %s", mem["tokenizer.scores"], mem["tokenizer.token_type"], mem["tokenizer.model_type"])
	}
	if string(mem["special_tokens"]) != `{"bos_token":null,"eos_token":null,"unk_token":"<unk>","pad_token":null,"im_start_token":null,"im_end_token":null}` {
		t.Errorf("special tokens %s", mem["special_tokens"])
	}
}

func TestBadTokenizerJSONIsANote(t *testing.T) {
	m := &tensor.Manifest{}
	m.Metadata.Set(tensor.MetaHFTokenizer, tensor.StringValue(`{"model":{"vocab":{"a":99999999999}}}`))
	_, mem, _, a := renderMeta(t, m)
	if _, ok := mem["tokenizer.vocabulary"]; ok || !strings.Contains(strings.Join(a.notes, " "), "tokenizer.json not embedded") {
		t.Errorf("a token id past the limit: %v", a.notes)
	}
}

// Reading a file and writing its manifest again gives the same metadata
// section byte for byte.
func TestMetadataRoundTrip(t *testing.T) {
	for name, m := range map[string]*tensor.Manifest{"gguf": ggufManifest(), "hf": hfManifest()} {
		t.Run(name, func(t *testing.T) {
			mo := &model{m: *m, data: map[string][]byte{}}
			for _, ti := range m.Tensors {
				mo.data[ti.Name] = make([]byte, ti.Size)
			}
			dir := t.TempDir()
			first := filepath.Join(dir, "a.apr")
			write(t, first, WriteOptions{}, mo)
			r, err := OpenFile(first, ReadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			mo2 := &model{m: tensor.Manifest{Metadata: r.Metadata}, data: mo.data}
			mo2.m.Tensors = m.Tensors
			r.Close()
			second := filepath.Join(dir, "b.apr")
			write(t, second, WriteOptions{}, mo2)
			a, _ := os.ReadFile(first)
			b, _ := os.ReadFile(second)
			if !bytes.Equal(a, b) {
				t.Fatalf("rewritten file differs:\n%s", diffHex(b, a))
			}
		})
	}
}

func TestParseMetadataJSON(t *testing.T) {
	md, err := parseMetadataJSON([]byte(`{"model_type":"x","a":null,"n":-3,"big":18446744073709551615,"f":1.5,
		"rope_theta":10000.0,"rope_type":2,"flags":[true,false],"nested":[[1,2],[3]],"mixed":[1,"a"],
		"obj":{"k":[1, 2]},"dup":1,"dup":"two","empty":[],"tokenizer.scores":[0.5,-1],"apr.json.x":"s"}`))
	if err != nil {
		t.Fatal(err)
	}
	wantKeys := []string{"model_type", "n", "big", "f", "rope_theta", "rope_type", "flags", "nested",
		RawJSONPrefix + "mixed", RawJSONPrefix + "obj", "dup", RawJSONPrefix + "empty", "tokenizer.scores", RawJSONPrefix + "apr.json.x"}
	if !reflect.DeepEqual(md.Keys(), wantKeys) {
		t.Fatalf("keys %q\nwant %q", md.Keys(), wantKeys)
	}
	check := func(key string, want tensor.Value) {
		t.Helper()
		if got, _ := md.Get(key); !got.Equal(want) {
			t.Errorf("%s = %s (%s), want %s (%s)", key, got, got.Type(), want, want.Type())
		}
	}
	check("n", tensor.I64Value(-3))
	check("big", tensor.U64Value(math.MaxUint64))
	check("f", tensor.F64Value(1.5))
	check("rope_theta", tensor.F32Value(10000))
	check("rope_type", tensor.U32Value(2))
	check("dup", tensor.StringValue("two"))
	check(RawJSONPrefix+"obj", tensor.StringValue(`{"k":[1,2]}`))
	check("tokenizer.scores", tensor.Float32Array([]float32{0.5, -1}))
	check(RawJSONPrefix+"apr.json.x", tensor.StringValue(`"s"`))
	for _, bad := range []string{`[1]`, `{"a":1} x`, `{"a":`, ``, `{"a":1}{}`} {
		if _, err := parseMetadataJSON([]byte(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestFormatFloatLikeSerde(t *testing.T) {
	cases := []struct {
		f    float64
		bits int
		want string
	}{
		{10000, 32, "10000.0"}, {1e-6, 32, "1e-6"}, {1e-5, 32, "0.00001"}, {0.5, 64, "0.5"}, {-2.25, 64, "-2.25"},
		{1.5e30, 64, "1.5e30"}, {123456789, 64, "123456789.0"}, {1e16, 64, "1e16"}, {1e15, 64, "1000000000000000.0"},
		{0, 64, "0.0"}, {math.Copysign(0, -1), 64, "-0.0"}, {1e-7, 64, "1e-7"}, {0.0001234, 64, "0.0001234"},
		{float64(float32(0.1)), 32, "0.1"}, {3e13, 32, "3e13"}, {1.25e12, 32, "1250000000000.0"},
	}
	for _, c := range cases {
		if got := formatFloat(c.f, c.bits); got != c.want {
			t.Errorf("formatFloat(%g, %d) = %s, want %s", c.f, c.bits, got, c.want)
		}
	}
}

func TestJSONStringEscapes(t *testing.T) {
	got := string(appendJSONString(nil, "a\"\\\b\f\n\r\t\x01\x1f\x7f<>&é\u2028\xff"))
	want := `"a\"\\\b\f\n\r\t\u0001\u001f` + "\x7f<>&é\u2028\ufffd" + `"`
	if got != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
}
