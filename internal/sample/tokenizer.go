package sample

import (
	"encoding/json"
	"sort"
	"strings"
)

// Special token ids of the sample tokenizer.
const (
	BOS = 256 + merges
	EOS = BOS + 1
)

// merges is the number of BPE merges the sample tokenizer learns.
const merges = 59

var specials = []string{"<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"}

// TokenizerSize is the number of tokens of the sample tokenizer.
func TokenizerSize() int { return 256 + merges + len(specials) }

// llama3Split is the pre-tokenizer pattern Llama 3 uses.
const llama3Split = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`

// chatTemplate follows the shape of Llama 3's.
const chatTemplate = "{{ bos_token }}{% for message in messages %}{{ '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' + message['content'] | trim + '<|eot_id|>' }}{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{% endif %}"

// corpus trains the sample merges.
const corpus = `Sluice converts machine learning checkpoints through declarative pipelines.
A source reads a checkpoint, transforms quantize and rename the tensors, and a sink writes them.
The tensors stream through the pipeline in parallel, inside a memory budget, and every output is written
under a temporary name and renamed into place when the whole run has succeeded. The quick start converts
this sample checkpoint to safetensors and to GGUF, the format that llama.cpp reads.`

// byteUnicode is GPT-2's mapping of bytes to printable characters.
func byteUnicode() [256]rune {
	var m [256]rune
	n := 0
	for b := 0; b < 256; b++ {
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			m[b] = rune(b)
		} else {
			m[b] = rune(256 + n)
			n++
		}
	}
	return m
}

// train learns merges over the corpus words, GPT-2 style (a word keeps its
// leading space). Ties go to the lexicographically smallest pair.
func train(count int) (vocab map[string]int, merged [][2]string) {
	bu := byteUnicode()
	vocab = map[string]int{}
	for b := 0; b < 256; b++ {
		vocab[string(bu[b])] = b
	}
	var words [][]string
	for i, w := range strings.Fields(strings.ReplaceAll(corpus, "\n", " ")) {
		if i > 0 {
			w = " " + w
		}
		var syms []string
		for _, c := range []byte(w) {
			syms = append(syms, string(bu[c]))
		}
		words = append(words, syms)
	}
	for len(merged) < count {
		pairs := map[[2]string]int{}
		for _, w := range words {
			for i := 0; i+1 < len(w); i++ {
				pairs[[2]string{w[i], w[i+1]}]++
			}
		}
		if len(pairs) == 0 {
			break
		}
		keys := make([][2]string, 0, len(pairs))
		for k := range pairs {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool {
			if pairs[keys[i]] != pairs[keys[j]] {
				return pairs[keys[i]] > pairs[keys[j]]
			}
			if keys[i][0] != keys[j][0] {
				return keys[i][0] < keys[j][0]
			}
			return keys[i][1] < keys[j][1]
		})
		best := keys[0]
		merged = append(merged, best)
		joined := best[0] + best[1]
		vocab[joined] = len(vocab)
		for wi, w := range words {
			var out []string
			for i := 0; i < len(w); i++ {
				if i+1 < len(w) && w[i] == best[0] && w[i+1] == best[1] {
					out = append(out, joined)
					i++
				} else {
					out = append(out, w[i])
				}
			}
			words[wi] = out
		}
	}
	return vocab, merged
}

// Tokenizer returns the sample's tokenizer.json and tokenizer_config.json.
func Tokenizer() (tok, cfg []byte, err error) {
	vocab, merged := train(merges)
	type added struct {
		ID         int    `json:"id"`
		Content    string `json:"content"`
		SingleWord bool   `json:"single_word"`
		Lstrip     bool   `json:"lstrip"`
		Rstrip     bool   `json:"rstrip"`
		Normalized bool   `json:"normalized"`
		Special    bool   `json:"special"`
	}
	var addedTokens []added
	decoder := map[string]any{}
	for i, s := range specials {
		id := 256 + len(merged) + i
		vocab[s] = id
		addedTokens = append(addedTokens, added{ID: id, Content: s, Special: true})
		decoder[itoa(id)] = map[string]any{"content": s, "lstrip": false, "normalized": false, "rstrip": false, "single_word": false, "special": true}
	}
	mergeStrings := make([]string, len(merged))
	for i, m := range merged {
		mergeStrings[i] = m[0] + " " + m[1]
	}
	bosSpec := map[string]any{"SpecialToken": map[string]any{"id": specials[0], "type_id": 0}}
	doc := map[string]any{
		"version":      "1.0",
		"truncation":   nil,
		"padding":      nil,
		"added_tokens": addedTokens,
		"normalizer":   nil,
		"pre_tokenizer": map[string]any{"type": "Sequence", "pretokenizers": []any{
			map[string]any{"type": "Split", "pattern": map[string]any{"Regex": llama3Split}, "behavior": "Isolated", "invert": false},
			map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false},
		}},
		"post_processor": map[string]any{
			"type":   "TemplateProcessing",
			"single": []any{bosSpec, map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}}},
			"pair": []any{bosSpec, map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}},
				map[string]any{"SpecialToken": map[string]any{"id": specials[0], "type_id": 1}}, map[string]any{"Sequence": map[string]any{"id": "B", "type_id": 1}}},
			"special_tokens": map[string]any{specials[0]: map[string]any{"id": specials[0], "ids": []int{BOS}, "tokens": []string{specials[0]}}},
		},
		"decoder": map[string]any{"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true},
		"model": map[string]any{
			"type": "BPE", "dropout": nil, "unk_token": nil, "continuing_subword_prefix": nil, "end_of_word_suffix": nil,
			"fuse_unk": false, "byte_fallback": false, "ignore_merges": true, "vocab": vocab, "merges": mergeStrings,
		},
	}
	tok, err = json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, nil, err
	}
	cfg, err = json.MarshalIndent(map[string]any{
		"add_bos_token":                true,
		"add_eos_token":                false,
		"added_tokens_decoder":         decoder,
		"bos_token":                    specials[0],
		"eos_token":                    specials[1],
		"chat_template":                chatTemplate,
		"clean_up_tokenization_spaces": true,
		"model_max_length":             2048,
		"tokenizer_class":              "PreTrainedTokenizerFast",
	}, "", "  ")
	return append(tok, '\n'), append(cfg, '\n'), err
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}
