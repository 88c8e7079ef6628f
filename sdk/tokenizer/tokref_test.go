package tokenizer

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/sluice-ml/sluice/internal/refdata"
)

type vector struct {
	ID                 int      `json:"id"`
	Category           string   `json:"category"`
	Text               string   `json:"text"`
	IDs                []int32  `json:"ids"`
	Tokens             []string `json:"tokens"`
	IDsNoSpecial       []int32  `json:"ids_no_special"`
	Decoded            *string  `json:"decoded"`
	DecodedSkipSpecial *string  `json:"decoded_skip_special"`
}

func readVectors(t testing.TB, path string) []vector {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []vector
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var v vector
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, v)
	}
	return out
}

type refFiles struct {
	tokenizer, config []byte
}

var refCache sync.Map // folder → refFiles

func readRef(t testing.TB, name string) (refFiles, string) {
	t.Helper()
	dir := filepath.Join(refdata.Path(t, "tokref"), name)
	if v, ok := refCache.Load(dir); ok {
		return v.(refFiles), dir
	}
	tj, err := os.ReadFile(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	cj, err := os.ReadFile(filepath.Join(dir, "tokenizer_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	f := refFiles{tj, cj}
	refCache.Store(dir, f)
	return f, dir
}

var builtCache sync.Map // "name/source" → *Tokenizer

// refTokenizer builds the reference tokenizer from tokenizer.json, or from
// the GGUF metadata GGUFMetadata writes for it.
func refTokenizer(t testing.TB, name string, viaGGUF bool) *Tokenizer {
	t.Helper()
	key := name + "/json"
	if viaGGUF {
		key = name + "/gguf"
	}
	if v, ok := builtCache.Load(key); ok {
		return v.(*Tokenizer)
	}
	f, _ := readRef(t, name)
	var tok *Tokenizer
	var err error
	if viaGGUF {
		md, err := GGUFMetadata(f.tokenizer, f.config, GGUFOptions{})
		if err != nil {
			t.Fatal(err)
		}
		tok, err = FromGGUF(md)
		if err != nil {
			t.Fatal(err)
		}
	} else {
		tok, err = FromHuggingFace(f.tokenizer, f.config)
		if err != nil {
			t.Fatal(err)
		}
	}
	builtCache.Store(key, tok)
	return tok
}

func checkVectors(t *testing.T, tok *Tokenizer, vecs []vector, checkTokens bool) (passed int) {
	t.Helper()
	for _, v := range vecs {
		ok := true
		if v.IDs != nil {
			if got := tok.Encode(v.Text, true); !slices.Equal(got, v.IDs) {
				t.Errorf("#%d %s %q: ids\n got  %v\n want %v", v.ID, v.Category, v.Text, got, v.IDs)
				ok = false
			}
		}
		if got := tok.Encode(v.Text, false); !slices.Equal(got, v.IDsNoSpecial) {
			t.Errorf("#%d %s %q: ids_no_special\n got  %v\n want %v", v.ID, v.Category, v.Text, got, v.IDsNoSpecial)
			ok = false
		}
		if checkTokens && v.Tokens != nil {
			if got := tok.Tokens(v.IDs); !slices.Equal(got, v.Tokens) {
				t.Errorf("#%d %q: tokens\n got  %q\n want %q", v.ID, v.Text, got, v.Tokens)
				ok = false
			}
		}
		if v.Decoded != nil {
			if got := tok.Decode(v.IDs, false); got != *v.Decoded {
				t.Errorf("#%d %q: decoded\n got  %q\n want %q", v.ID, v.Text, got, *v.Decoded)
				ok = false
			}
		}
		if v.DecodedSkipSpecial != nil {
			if got := tok.Decode(v.IDs, true); got != *v.DecodedSkipSpecial {
				t.Errorf("#%d %q: decoded_skip_special\n got  %q\n want %q", v.ID, v.Text, got, *v.DecodedSkipSpecial)
				ok = false
			}
		}
		if ok {
			passed++
		}
	}
	return passed
}

func TestReferenceVectors(t *testing.T) {
	for _, name := range []string{"llama2", "llama3"} {
		for _, viaGGUF := range []bool{false, true} {
			source := "tokenizer.json"
			if viaGGUF {
				source = "gguf"
			}
			t.Run(name+"/"+source, func(t *testing.T) {
				_, dir := readRef(t, name)
				tok := refTokenizer(t, name, viaGGUF)
				vecs := readVectors(t, filepath.Join(dir, "vectors.jsonl"))
				n := checkVectors(t, tok, vecs, true)
				t.Logf("%d/%d vectors pass", n, len(vecs))
				if name == "llama3" {
					lc := readVectors(t, filepath.Join(dir, "llamacpp_llama-bpe.jsonl"))
					n := checkVectors(t, tok, lc, false)
					t.Logf("%d/%d llama.cpp vectors pass", n, len(lc))
				}
			})
		}
	}
}

// TestReferenceChatRenders checks that the reference chat renders encode to
// their rendered_ids (without added special tokens), from both sources.
func TestReferenceChatRenders(t *testing.T) {
	for _, viaGGUF := range []bool{false, true} {
		_, dir := readRef(t, "llama3")
		data, err := os.ReadFile(filepath.Join(dir, "chat_template.jsonl"))
		if err != nil {
			t.Skipf("no chat renders: %v", err)
		}
		tok := refTokenizer(t, "llama3", viaGGUF)
		n := 0
		for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
			var r struct {
				Rendered    string  `json:"rendered"`
				RenderedIDs []int32 `json:"rendered_ids"`
			}
			if err := json.Unmarshal(line, &r); err != nil {
				t.Fatal(err)
			}
			if got := tok.Encode(r.Rendered, false); !slices.Equal(got, r.RenderedIDs) {
				t.Errorf("gguf=%v %q:\n got  %v\n want %v", viaGGUF, r.Rendered, got, r.RenderedIDs)
			}
			if got := tok.Decode(r.RenderedIDs, false); got != r.Rendered {
				t.Errorf("gguf=%v decode: got %q, want %q", viaGGUF, got, r.Rendered)
			}
			n++
		}
		if n == 0 {
			t.Error("no renders read")
		}
	}
}
