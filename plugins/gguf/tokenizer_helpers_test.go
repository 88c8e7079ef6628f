package gguf

import (
	"encoding/json"
	"fmt"
)

// spmTokenizer returns a small SentencePiece-style tokenizer.json (Llama 2
// layout: <unk> <s> </s>, 256 byte-fallback tokens, a few letters and merges)
// and its tokenizer_config.json with a chat template.
func spmTokenizer() (string, string) {
	vocab := map[string]int{"<unk>": 0, "<s>": 1, "</s>": 2}
	for b := 0; b < 256; b++ {
		vocab[fmt.Sprintf("<0x%02X>", b)] = len(vocab)
	}
	for _, c := range []string{"▁", "a", "b", "c"} {
		vocab[c] = len(vocab)
	}
	var merges []string
	for _, m := range [][2]string{{"a", "b"}, {"▁", "ab"}, {"▁ab", "c"}} {
		vocab[m[0]+m[1]] = len(vocab)
		merges = append(merges, m[0]+" "+m[1])
	}
	var added []map[string]any
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
		"decoder": map[string]any{"type": "Sequence", "decoders": []any{
			map[string]any{"type": "Replace", "pattern": map[string]any{"String": "▁"}, "content": " "},
			map[string]any{"type": "ByteFallback"},
			map[string]any{"type": "Fuse"},
			map[string]any{"type": "Strip", "content": " ", "start": 1, "stop": 0},
		}},
		"model": map[string]any{"type": "BPE", "vocab": vocab, "merges": merges, "unk_token": "<unk>", "byte_fallback": true},
	}
	b, _ := json.Marshal(doc)
	return string(b), `{"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "add_bos_token": true, "add_eos_token": false,
"chat_template": "{% for m in messages %}[{{ m.role }}] {{ m.content }}\n{% endfor %}"}`
}

// qwenPreTokenizerRegex is Qwen 2's split pattern (single digits).
const qwenPreTokenizerRegex = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`

// byteLevelTokenizer returns a small GPT-2-style byte-level tokenizer.json
// that splits like Qwen 2, with <|endoftext|> and <think> added, and its
// tokenizer_config.json.
func byteLevelTokenizer() (string, string) {
	// GPT-2's byte → printable rune table.
	var runes [256]rune
	n := 0
	for b := 0; b < 256; b++ {
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			runes[b] = rune(b)
		} else {
			runes[b] = rune(256 + n)
			n++
		}
	}
	vocab := map[string]int{}
	for b := 0; b < 256; b++ {
		vocab[string(runes[b])] = b
	}
	var merges []string
	for _, m := range [][2]string{{"a", "b"}, {"Ġ", "ab"}} {
		vocab[m[0]+m[1]] = len(vocab)
		merges = append(merges, m[0]+" "+m[1])
	}
	doc := map[string]any{
		"added_tokens": []map[string]any{
			{"id": 258, "content": "<|endoftext|>", "special": true, "normalized": false},
			{"id": 259, "content": "<think>", "special": false, "normalized": false},
		},
		"normalizer": map[string]any{"type": "NFC"},
		"pre_tokenizer": map[string]any{"type": "Sequence", "pretokenizers": []any{
			map[string]any{"type": "Split", "pattern": map[string]any{"Regex": qwenPreTokenizerRegex}, "behavior": "Isolated", "invert": false},
			map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false},
		}},
		"decoder": map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false},
		"model":   map[string]any{"type": "BPE", "vocab": vocab, "merges": merges},
	}
	b, _ := json.Marshal(doc)
	return string(b), `{"eos_token": "<|endoftext|>", "pad_token": "<|endoftext|>", "bos_token": null,
"chat_template": "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"}`
}
