package tokenizer

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/sluice-ml/sluice/sdk/tensor"
)

// tinyByteLevelJSON is a hand-built byte-level tokenizer.json: the 256 byte
// tokens (ids = byte values), nine merges spelling "hello" and " world", and
// three added tokens. It splits with Llama 3's regex.
func tinyByteLevelJSON(t testing.TB) []byte {
	t.Helper()
	vocab := map[string]int{}
	for b := 0; b < 256; b++ {
		vocab[string(byteToRune[b])] = b
	}
	merges := [][2]string{{"h", "e"}, {"l", "l"}, {"he", "ll"}, {"hell", "o"}, {"Ġ", "w"}, {"o", "r"}, {"Ġw", "or"}, {"l", "d"}, {"Ġwor", "ld"}}
	var mergeStrs []string
	for _, m := range merges {
		vocab[m[0]+m[1]] = len(vocab)
		mergeStrs = append(mergeStrs, m[0]+" "+m[1])
	}
	doc := map[string]any{
		"version": "1.0",
		"added_tokens": []map[string]any{
			{"id": 265, "content": "<|bos|>", "special": true, "normalized": false},
			{"id": 266, "content": "<think>", "special": false, "normalized": false},
			{"id": 267, "content": "</think>", "special": false, "normalized": false},
		},
		"normalizer": nil,
		"pre_tokenizer": map[string]any{"type": "Sequence", "pretokenizers": []any{
			map[string]any{"type": "Split", "pattern": map[string]any{"Regex": regexLlama3}, "behavior": "Isolated", "invert": false},
			map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false},
		}},
		"post_processor": map[string]any{"type": "TemplateProcessing",
			"single":         []any{map[string]any{"SpecialToken": map[string]any{"id": "<|bos|>", "type_id": 0}}, map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}}},
			"special_tokens": map[string]any{"<|bos|>": map[string]any{"id": "<|bos|>", "ids": []int{265}, "tokens": []string{"<|bos|>"}}},
		},
		"decoder": map[string]any{"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true},
		"model":   map[string]any{"type": "BPE", "vocab": vocab, "merges": mergeStrs, "ignore_merges": true},
	}
	out, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

const tinyConfigJSON = `{"bos_token": "<|bos|>", "eos_token": null, "chat_template": [{"name": "default", "template": "{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}"}, {"name": "tool use", "template": "T"}]}`

// tinySPMJSON is a hand-built SentencePiece-style tokenizer.json in the
// Llama 2 layout: <unk> <s> </s>, the 256 <0xNN> byte tokens, "▁" and some
// letters, and merges spelling "▁hello" and "▁world".
func tinySPMJSON(t testing.TB) []byte {
	t.Helper()
	vocab := map[string]int{"<unk>": 0, "<s>": 1, "</s>": 2}
	for b := 0; b < 256; b++ {
		vocab[fmt.Sprintf("<0x%02X>", b)] = 3 + b
	}
	for _, c := range []string{"▁", "h", "e", "l", "o", "w", "r", "d"} {
		vocab[c] = len(vocab)
	}
	merges := [][2]string{{"h", "e"}, {"l", "l"}, {"he", "ll"}, {"▁", "hell"}, {"▁hell", "o"}, {"▁", "w"}, {"o", "r"}, {"▁w", "or"}, {"▁wor", "l"}, {"▁worl", "d"}}
	var mergeStrs []string
	for _, m := range merges {
		vocab[m[0]+m[1]] = len(vocab)
		mergeStrs = append(mergeStrs, m[0]+" "+m[1])
	}
	added := []map[string]any{}
	for i, c := range []string{"<unk>", "<s>", "</s>"} {
		added = append(added, map[string]any{"id": i, "content": c, "special": true, "normalized": false})
	}
	doc := map[string]any{
		"added_tokens": added,
		"normalizer": map[string]any{"type": "Sequence", "normalizers": []any{
			map[string]any{"type": "Prepend", "prepend": "▁"},
			map[string]any{"type": "Replace", "pattern": map[string]any{"String": " "}, "content": "▁"},
		}},
		"pre_tokenizer": nil,
		"post_processor": map[string]any{"type": "TemplateProcessing",
			"single":         []any{map[string]any{"SpecialToken": map[string]any{"id": "<s>", "type_id": 0}}, map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}}},
			"special_tokens": map[string]any{"<s>": map[string]any{"id": "<s>", "ids": []int{1}, "tokens": []string{"<s>"}}},
		},
		"decoder": map[string]any{"type": "Sequence", "decoders": []any{
			map[string]any{"type": "Replace", "pattern": map[string]any{"String": "▁"}, "content": " "},
			map[string]any{"type": "ByteFallback"},
			map[string]any{"type": "Fuse"},
			map[string]any{"type": "Strip", "content": " ", "start": 1, "stop": 0},
		}},
		"model": map[string]any{"type": "BPE", "vocab": vocab, "merges": mergeStrs, "unk_token": "<unk>", "byte_fallback": true, "fuse_unk": true},
	}
	out, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

const tinySPMConfigJSON = `{"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "add_bos_token": true, "add_eos_token": false}`

// both returns the tokenizer built from the JSON and the one built from the
// GGUF metadata GGUFMetadata writes for it.
func both(t *testing.T, tokJSON []byte, cfg string) map[string]*Tokenizer {
	t.Helper()
	fromJSON, err := FromHuggingFace(tokJSON, []byte(cfg))
	if err != nil {
		t.Fatal(err)
	}
	md, err := GGUFMetadata(tokJSON, []byte(cfg), GGUFOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fromGGUF, err := FromGGUF(md)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]*Tokenizer{"tokenizer.json": fromJSON, "gguf": fromGGUF}
}

func TestTinyByteLevel(t *testing.T) {
	for src, tok := range both(t, tinyByteLevelJSON(t), tinyConfigJSON) {
		t.Run(src, func(t *testing.T) {
			cases := []struct {
				text    string
				special []int32
				plain   []int32
			}{
				{"hello world", []int32{265, 259, 264}, []int32{259, 264}},
				{"<think>hi</think>", []int32{265, 266, 'h', 'i', 267}, []int32{266, 'h', 'i', 267}},
				{"<|bos|>hello", []int32{265, 265, 259}, []int32{265, 259}},
				{"12345", []int32{265, '1', '2', '3', '4', '5'}, []int32{'1', '2', '3', '4', '5'}},
				{"", []int32{265}, nil},
			}
			for _, c := range cases {
				if got := tok.Encode(c.text, true); !slices.Equal(got, c.special) {
					t.Errorf("Encode(%q, true) = %v, want %v", c.text, got, c.special)
				}
				if got := tok.Encode(c.text, false); !slices.Equal(got, c.plain) {
					t.Errorf("Encode(%q, false) = %v, want %v", c.text, got, c.plain)
				}
				if got := tok.Decode(c.special, true); got != strings.ReplaceAll(c.text, "<|bos|>", "") {
					t.Errorf("Decode(%v, skip) = %q", c.special, got)
				}
				if got := tok.Decode(c.special, false); got != "<|bos|>"+c.text {
					t.Errorf("Decode(%v) = %q", c.special, got)
				}
			}
			if got := tok.Tokens([]int32{259, 264, 266}); !slices.Equal(got, []string{"hello", "Ġworld", "<think>"}) {
				t.Errorf("Tokens = %q", got)
			}
			if got := tok.PreTokenize("Hi <think>123456 x"); !slices.Equal(got, []string{"Hi", " ", "<think>", "123", "456", " x"}) {
				t.Errorf("PreTokenize = %q", got)
			}
			if tok.Model() != ModelGPT2 || tok.PreTokenizer() != "llama-bpe" {
				t.Errorf("model %q pre %q, want gpt2 llama-bpe", tok.Model(), tok.PreTokenizer())
			}
			if tok.TokenType(266) != TokenUserDefined || tok.TokenType(265) != TokenControl || tok.TokenType(100) != TokenNormal {
				t.Errorf("token types %v %v %v", tok.TokenType(266), tok.TokenType(265), tok.TokenType(100))
			}
			// Invalid UTF-8 survives a round trip through byte tokens.
			if got := tok.Decode(tok.Encode("a\xffb", false), false); got != "a\ufffdb" {
				t.Errorf("round trip of invalid UTF-8 = %q", got)
			}
		})
	}
}

func TestTinySentencePiece(t *testing.T) {
	for src, tok := range both(t, tinySPMJSON(t), tinySPMConfigJSON) {
		t.Run(src, func(t *testing.T) {
			hello, world := int32(3+256+8+4), int32(3+256+8+9)
			b := func(c byte) int32 { return 3 + int32(c) }
			cases := []struct {
				text string
				want []int32
			}{
				{"hello world", []int32{1, hello, world}},
				{"é", []int32{1, 259, b(0xC3), b(0xA9)}},
				{"</s>hello", []int32{1, 2, hello}},
				{"", []int32{1}},
			}
			for _, c := range cases {
				if got := tok.Encode(c.text, true); !slices.Equal(got, c.want) {
					t.Errorf("Encode(%q) = %v, want %v", c.text, got, c.want)
				}
				if got := tok.Decode(c.want, true); got != strings.ReplaceAll(c.text, "</s>", "") {
					t.Errorf("Decode(%v, skip) = %q, want %q", c.want, got, c.text)
				}
			}
			if got := tok.Decode([]int32{1, hello, world}, false); got != "<s> hello world" {
				t.Errorf("Decode with special = %q", got)
			}
			if tok.Model() != ModelLlama || !tok.AddsBOS() || tok.AddsEOS() {
				t.Errorf("model %q adds bos %v eos %v", tok.Model(), tok.AddsBOS(), tok.AddsEOS())
			}
			if tok.TokenType(b('A')) != TokenByte || tok.TokenType(1) != TokenControl {
				t.Errorf("token types %v %v", tok.TokenType(b('A')), tok.TokenType(1))
			}
		})
	}
}

func TestGGUFMetadataKeys(t *testing.T) {
	md, err := GGUFMetadata(tinyByteLevelJSON(t), []byte(tinyConfigJSON), GGUFOptions{ConfigJSON: []byte(`{"vocab_size": 270, "eos_token_id": 267}`)})
	if err != nil {
		t.Fatal(err)
	}
	wantKeys := []string{KeyModel, KeyPre, KeyTokens, KeyTokenType, KeyMerges, KeyBOSID, KeyEOSID, KeyAddBOS, KeyAddEOS,
		KeyChatTemplate + ".tool_use", KeyChatTemplates, KeyChatTemplate}
	if !slices.Equal(md.Keys(), wantKeys) {
		t.Fatalf("keys\n got  %q\n want %q", md.Keys(), wantKeys)
	}
	check := func(key string, want tensor.Value) {
		t.Helper()
		if got, _ := md.Get(key); !got.Equal(want) {
			t.Errorf("%s = %v (%s), want %v (%s)", key, got, got.Type(), want, want.Type())
		}
	}
	check(KeyModel, tensor.StringValue("gpt2"))
	check(KeyPre, tensor.StringValue("llama-bpe"))
	check(KeyBOSID, tensor.U32Value(265))
	check(KeyEOSID, tensor.U32Value(267))
	check(KeyAddBOS, tensor.BoolValue(true))
	check(KeyAddEOS, tensor.BoolValue(false))
	check(KeyChatTemplate+".tool_use", tensor.StringValue("T"))
	check(KeyChatTemplates, tensor.StringArray([]string{"tool_use"}))
	tokens, _ := md.Get(KeyTokens)
	if tokens.Len() != 270 || tokens.Index(32).String() != `"Ġ"` || tokens.Index(266).String() != `"<think>"` || tokens.Index(269).String() != `"[PAD269]"` {
		t.Errorf("tokens: %d entries, [32]=%v [266]=%v [269]=%v", tokens.Len(), tokens.Index(32), tokens.Index(266), tokens.Index(269))
	}
	types, _ := md.Get(KeyTokenType)
	if types.Elem() != tensor.TypeI32 || types.Len() != 270 {
		t.Fatalf("token_type is %v", types)
	}
	for id, want := range map[int]TokenType{0: TokenNormal, 265: TokenControl, 266: TokenUserDefined, 269: TokenUnused} {
		if v, _ := types.Index(id).Int(); TokenType(v) != want {
			t.Errorf("token_type[%d] = %d, want %v", id, v, want)
		}
	}
	merges, _ := md.Get(KeyMerges)
	if merges.Len() != 9 || merges.Index(4).String() != `"Ġ w"` {
		t.Errorf("merges = %v", merges)
	}

	spm, err := GGUFMetadata(tinySPMJSON(t), []byte(tinySPMConfigJSON), GGUFOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantKeys = []string{KeyModel, KeyPre, KeyTokens, KeyScores, KeyTokenType, KeyBOSID, KeyEOSID, KeyUnknownID, KeyAddBOS, KeyAddEOS}
	if !slices.Equal(spm.Keys(), wantKeys) {
		t.Fatalf("keys\n got  %q\n want %q", spm.Keys(), wantKeys)
	}
	scores, _ := spm.Get(KeyScores)
	if scores.Elem() != tensor.TypeF32 {
		t.Fatalf("scores are %s", scores.Elem())
	}
	if v, _ := scores.Index(3 + 256 + 8).Float(); v != 0 { // "he", made by merge 0
		t.Errorf("score of \"he\" = %v, want 0", v)
	}
	if v, _ := scores.Index(3 + 256 + 8 + 9).Float(); v != -9 { // "▁world", merge 9
		t.Errorf("score of \"▁world\" = %v, want -9", v)
	}
}

func TestGGUFErrors(t *testing.T) {
	base := func() *tensor.Metadata {
		md, err := GGUFMetadata(tinyByteLevelJSON(t), []byte(tinyConfigJSON), GGUFOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return md
	}
	cases := []struct {
		name   string
		edit   func(md *tensor.Metadata)
		substr string
	}{
		{"unknown pre", func(md *tensor.Metadata) { md.Set(KeyPre, tensor.StringValue("mystery")) }, `unknown pre-tokenizer "mystery"`},
		{"unknown model", func(md *tensor.Metadata) { md.Set(KeyModel, tensor.StringValue("t5")) }, `"t5" is not supported`},
		{"no tokens", func(md *tensor.Metadata) { md.Delete(KeyTokens) }, KeyTokens + " is missing"},
		{"no merges", func(md *tensor.Metadata) { md.Delete(KeyMerges) }, KeyMerges + " is missing"},
		{"bos out of range", func(md *tensor.Metadata) { md.Set(KeyBOSID, tensor.U32Value(1<<20)) }, KeyBOSID},
		{"short token types", func(md *tensor.Metadata) { md.Set(KeyTokenType, tensor.Int32Array([]int32{1})) }, "1 entries for 268 tokens"},
		{"wrong type", func(md *tensor.Metadata) { md.Set(KeyAddBOS, tensor.U32Value(1)) }, KeyAddBOS + " is a u32, want a bool"},
		{"duplicate token", func(md *tensor.Metadata) {
			v, _ := md.Get(KeyTokens)
			s, _ := v.StringSlice()
			s = append([]string(nil), s...)
			s[1] = s[0]
			md.Set(KeyTokens, tensor.StringArray(s))
		}, "has ids 0 and 1"},
	}
	for _, c := range cases {
		md := base()
		c.edit(md)
		if _, err := FromGGUF(md); err == nil || !strings.Contains(err.Error(), c.substr) {
			t.Errorf("%s: got error %v, want one containing %q", c.name, err, c.substr)
		}
	}
}

func TestHuggingFaceErrors(t *testing.T) {
	good := string(tinyByteLevelJSON(t))
	cases := []struct {
		name, json, substr string
	}{
		{"not json", "{", "tokenizer.json: parse"},
		{"unigram", `{"model": {"type": "Unigram", "vocab": []}}`, `model type "Unigram" is not supported`},
		{"huge id", `{"model": {"type": "BPE", "vocab": {"a": 4000000000}, "merges": []}}`, `token "a" has id 4000000000`},
		{"bad merge", `{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["a b"]}}`, `model.merges[0] ("a" "b")`},
		{"unknown pre-tokenizer", strings.Replace(good, `"type":"Split"`, `"type":"Mystery"`, 1), `pre-tokenizer type "Mystery" is not supported`},
		{"bad regex", strings.Replace(good, `"Regex":"(?i:`, `"Regex":"((?i:`, 1), "pre-tokenizer regex"},
	}
	for _, c := range cases {
		if _, err := FromHuggingFace([]byte(c.json), nil); err == nil || !strings.Contains(err.Error(), c.substr) {
			t.Errorf("%s: got error %v, want one containing %q", c.name, err, c.substr)
		}
	}
}

func TestLossyUTF8(t *testing.T) {
	cases := map[string]string{
		"abc":              "abc",
		"a\xffb":           "a\ufffdb",
		"\xe2\x82":         "\ufffd",             // one maximal subpart
		"\xe2\x82a":        "\ufffda",            // truncated sequence, then ASCII
		"\xf0\x9f\x98":     "\ufffd",             // truncated 4-byte sequence
		"\xed\xa0\x80":     "\ufffd\ufffd\ufffd", // surrogate: ED then A0 is not allowed
		"\xc0\xaf":         "\ufffd\ufffd",       // overlong lead
		"\xe2\x82\xac\xe2": "€\ufffd",
	}
	for in, want := range cases {
		if got := lossyUTF8([]byte(in)); got != want {
			t.Errorf("lossyUTF8(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestMergeHeapMatchesLinear checks the heap merge loop used for long words
// against the linear one on random merge tables.
func TestMergeHeapMatchesLinear(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	for trial := 0; trial < 200; trial++ {
		m := &bpeModel{merges: map[uint64]merge{}}
		next := int32(8)
		for i := 0; i < 40; i++ {
			a, b := int32(r.IntN(int(next))), int32(r.IntN(int(next)))
			if _, ok := m.merges[pairKey(a, b)]; ok {
				continue
			}
			m.merges[pairKey(a, b)] = merge{rank: int32(i), id: next}
			next++
		}
		n := 2 + r.IntN(linearMergeMax-2)
		ids := make([]int32, n)
		for i := range ids {
			ids[i] = int32(r.IntN(8))
		}
		linear := m.mergeLinear(append([]int32(nil), ids...))
		heaped := m.mergeHeap(append([]int32(nil), ids...))
		if !slices.Equal(linear, heaped) {
			t.Fatalf("trial %d on %v: linear %v, heap %v", trial, ids, linear, heaped)
		}
	}
}

// TestConcurrentEncode encodes from several goroutines at once (run with
// -race to check the piece cache).
func TestConcurrentEncode(t *testing.T) {
	tok, err := FromHuggingFace(tinyByteLevelJSON(t), []byte(tinyConfigJSON))
	if err != nil {
		t.Fatal(err)
	}
	want := tok.Encode("hello world <think>12345 hello", true)
	done := make(chan []int32)
	for g := 0; g < 8; g++ {
		go func() {
			var got []int32
			for i := 0; i < 200; i++ {
				got = tok.Encode("hello world <think>12345 hello", true)
			}
			done <- got
		}()
	}
	for g := 0; g < 8; g++ {
		if got := <-done; !slices.Equal(got, want) {
			t.Fatalf("concurrent Encode = %v, want %v", got, want)
		}
	}
}
