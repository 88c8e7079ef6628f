package tokenizer

import "testing"

// FuzzFromHuggingFace feeds arbitrary tokenizer.json and tokenizer_config.json
// bytes to the parser. Whatever it accepts must encode and decode without
// panicking, give ids inside the vocabulary, and, when GGUFMetadata accepts
// the files too, give GGUF metadata that FromGGUF accepts.
// Seeds: testdata/fuzz/FuzzFromHuggingFace.
func FuzzFromHuggingFace(f *testing.F) {
	f.Add([]byte(`{"model":{"type":"BPE","vocab":{"a":0,"b":1,"ab":2},"merges":["a b"]}}`), []byte(`{}`))
	f.Fuzz(func(t *testing.T, tokJSON, cfgJSON []byte) {
		tok, err := FromHuggingFace(tokJSON, cfgJSON)
		if err != nil {
			return
		}
		exercise(t, tok, fuzzTexts...)
		md, err := GGUFMetadata(tokJSON, cfgJSON, GGUFOptions{})
		if err != nil {
			return
		}
		if _, err := FromGGUF(md); err != nil {
			t.Fatalf("FromGGUF rejects what GGUFMetadata wrote: %v", err)
		}
	})
}

// fuzzTexts are the texts the fuzz targets encode with every tokenizer they build.
var fuzzTexts = []string{"Hello, world! 123 <think>é\n", " a  b\t\xff", ""}

// exercise encodes each text with and without special tokens and decodes the
// ids back: every id must lie inside the vocabulary, and nothing may panic.
func exercise(t *testing.T, tok *Tokenizer, texts ...string) {
	t.Helper()
	for _, text := range texts {
		for _, special := range []bool{false, true} {
			ids := tok.Encode(text, special)
			for _, id := range ids {
				if id < 0 || int(id) >= tok.VocabSize() {
					t.Fatalf("Encode(%q) gave id %d outside the vocabulary of %d", text, id, tok.VocabSize())
				}
			}
			_ = tok.Decode(ids, false)
			_ = tok.Decode(ids, true)
			_ = tok.Tokens(ids)
		}
	}
}
