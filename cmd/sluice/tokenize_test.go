package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-ml/sluice/internal/refdata"
	"github.com/sluice-ml/sluice/sdk/tokenizer"
)

// autoGGUF converts the sample to a GGUF file the way llama.cpp's converter
// does (tokenizer keys, chat template), once per test.
func autoGGUF(t *testing.T) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "auto.gguf")
	sluiceCode(t, exitOK, "convert", fixtures(t).HF, out, "--arch", "auto", "--in-process", "-q")
	return out
}

func tokenizeJSON(t *testing.T, args ...string) tokenizeReport {
	t.Helper()
	out, _ := sluiceCode(t, exitOK, append([]string{"tokenize", "--json"}, args...)...)
	var r tokenizeReport
	decodeJSON(t, out, &r)
	return r
}

func TestTokenizeHuggingFaceAndGGUFAgree(t *testing.T) {
	f := fixtures(t)
	gguf := autoGGUF(t)
	tokJSON, _ := os.ReadFile(filepath.Join(f.HF, "tokenizer.json"))
	tokCfg, _ := os.ReadFile(filepath.Join(f.HF, "tokenizer_config.json"))
	ref, err := tokenizer.FromHuggingFace(tokJSON, tokCfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"Hello world", "The checkpoint converts<|eot_id|> 12345 tensors", "  spaces\tand\nlines  ", "é ü 中文 🙂"} {
		for _, special := range []bool{true, false} {
			args := []string{text}
			if !special {
				args = append(args, "--no-special")
			}
			want := fmt.Sprint(ref.Encode(text, special))
			for _, ckpt := range []string{f.HF, filepath.Join(f.HF, "tokenizer.json"), f.ST + "-dir", gguf, f.ApsimQ, f.APR} {
				if ckpt == f.ST+"-dir" {
					ckpt = filepath.Dir(f.ST) // the safetensors sink wrote the tokenizer files beside the file
				}
				r := tokenizeJSON(t, append([]string{ckpt}, args...)...)
				if fmt.Sprint(r.IDs) != want || r.Count != len(r.IDs) || len(r.Tokens) != r.Count || r.AddSpecial != special {
					t.Errorf("%s %q (special %v): ids %v, want %v", filepath.Base(ckpt), text, special, r.IDs, want)
				}
			}
		}
	}
	// Decoding the ids gives the text back.
	ids := ref.Encode("Hello world<|eot_id|>", false)
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = fmt.Sprint(id)
	}
	out, _ := sluiceCode(t, exitOK, "tokenize", gguf, strings.Join(parts, " "), "--decode")
	if out != "Hello world<|eot_id|>\n" {
		t.Errorf("--decode gave %q", out)
	}
	out, _ = sluiceCode(t, exitOK, "tokenize", gguf, strings.Join(parts, ","), "--decode", "--skip-special")
	if out != "Hello world\n" {
		t.Errorf("--decode --skip-special gave %q", out)
	}
	// Text from standard input, and the human table.
	text, _ := sluiceCode(t, exitOK, "tokenize", f.HF, "Hello world")
	golden(t, "tokenize-sample.txt", text, f.dir, "$FIXTURES")
	js, _ := sluiceCode(t, exitOK, "tokenize", f.HF, "Hello world<|eot_id|>", "--json")
	golden(t, "tokenize-sample.json", js, f.dir, "$FIXTURES")
}

func TestTokenizeRefusals(t *testing.T) {
	f := fixtures(t)
	_, stderr := sluiceCode(t, exitBadInput, "tokenize", f.GGUF, "hi")
	if !strings.Contains(stderr, "carries no tokenizer") || !strings.Contains(stderr, "Hint:") {
		t.Errorf("a GGUF without tokenizer keys:\n%s", stderr)
	}
	sluiceCode(t, exitBadConfig, "tokenize", f.HF, "12 x", "--decode")
}

func TestTemplateShowsAndRenders(t *testing.T) {
	f := fixtures(t)
	gguf := autoGGUF(t)
	var cfg struct {
		ChatTemplate string `json:"chat_template"`
	}
	b, _ := os.ReadFile(filepath.Join(f.HF, "tokenizer_config.json"))
	json.Unmarshal(b, &cfg)
	for _, ckpt := range []string{f.HF, gguf, f.ApsimQ, f.APR} {
		out, _ := sluiceCode(t, exitOK, "template", ckpt)
		if strings.TrimSuffix(out, "\n") != strings.TrimSuffix(cfg.ChatTemplate, "\n") {
			t.Errorf("%s: template is\n%s\nwant\n%s", ckpt, out, cfg.ChatTemplate)
		}
	}
	dir := t.TempDir()
	msgs := filepath.Join(dir, "chat.json")
	os.WriteFile(msgs, []byte(`[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hello!"}]`), 0o644)
	want := "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHello!<|eot_id|>"
	for _, ckpt := range []string{f.HF, gguf, f.APR} {
		out, _ := sluiceCode(t, exitOK, "template", ckpt, "--messages", msgs)
		if out != want {
			t.Errorf("%s rendered %q, want %q", ckpt, out, want)
		}
		out, _ = sluiceCode(t, exitOK, "template", ckpt, "--messages", msgs, "--add-generation-prompt")
		if out != want+"<|start_header_id|>assistant<|end_header_id|>\n\n" {
			t.Errorf("%s with a generation prompt rendered %q", ckpt, out)
		}
		// The object form carries add_generation_prompt itself; --tokenize
		// encodes the prompt without adding BOS again.
		obj := filepath.Join(dir, "obj.json")
		os.WriteFile(obj, []byte(`{"messages": [{"role": "user", "content": "Hello!"}], "add_generation_prompt": true}`), 0o644)
		out, _ = sluiceCode(t, exitOK, "template", ckpt, "--messages", obj, "--json", "--tokenize")
		var r struct {
			Rendered string  `json:"rendered"`
			IDs      []int32 `json:"ids"`
		}
		decodeJSON(t, out, &r)
		tok := tokenizeJSON(t, ckpt, r.Rendered, "--no-special")
		if !strings.HasSuffix(r.Rendered, "assistant<|end_header_id|>\n\n") || fmt.Sprint(r.IDs) != fmt.Sprint(tok.IDs) || strings.Count(fmt.Sprint(r.IDs), "315") != 1 {
			t.Errorf("%s: rendered %q with ids %v (tokenize gives %v)", ckpt, r.Rendered, r.IDs, tok.IDs)
		}
	}
	_, stderr := sluiceCode(t, exitBadInput, "template", f.HF, "--name", "tool_use")
	if !strings.Contains(stderr, "no chat template") {
		t.Errorf("a missing named template:\n%s", stderr)
	}
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"msgs": []}`), 0o644)
	sluiceCode(t, exitBadConfig, "template", f.HF, "--messages", bad)
}

// TestTokrefThroughTheCLI checks a few reference vectors and every chat
// render of ../shared/tokref/llama3 through the commands (the SDK's own tests
// run all of them).
func TestTokrefThroughTheCLI(t *testing.T) {
	dir := filepath.Dir(refdata.Path(t, "tokref", "llama3", "tokenizer.json"))
	if testing.Short() {
		t.Skip("each command builds the 128k-token vocabulary (about a second)")
	}
	vf, err := os.Open(filepath.Join(dir, "vectors.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer vf.Close()
	s := bufio.NewScanner(vf)
	s.Buffer(nil, 1<<20)
	picked := map[string]bool{}
	for s.Scan() {
		var v struct {
			Category     string  `json:"category"`
			Text         string  `json:"text"`
			IDs          []int32 `json:"ids"`
			IDsNoSpecial []int32 `json:"ids_no_special"`
		}
		if err := json.Unmarshal(s.Bytes(), &v); err != nil {
			t.Fatal(err)
		}
		if picked[v.Category] || len(picked) == 2 || v.Category != "special" && v.Category != "digits" {
			continue
		}
		picked[v.Category] = true
		r := tokenizeJSON(t, dir, v.Text)
		if fmt.Sprint(r.IDs) != fmt.Sprint(nonNilIDs(v.IDs)) {
			t.Errorf("%s %q: ids %v, want %v", v.Category, v.Text, r.IDs, v.IDs)
		}
	}
	cf, err := os.Open(filepath.Join(dir, "chat_template.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer cf.Close()
	s = bufio.NewScanner(cf)
	s.Buffer(nil, 1<<20)
	tmp := t.TempDir()
	for i := 0; s.Scan(); i++ {
		var c struct {
			Rendered    string  `json:"rendered"`
			RenderedIDs []int32 `json:"rendered_ids"`
		}
		if err := json.Unmarshal(s.Bytes(), &c); err != nil {
			t.Fatal(err)
		}
		// The line itself is the --messages object: messages and
		// add_generation_prompt (its other members become unused variables).
		p := filepath.Join(tmp, fmt.Sprintf("chat%d.json", i))
		os.WriteFile(p, s.Bytes(), 0o644)
		args := []string{"template", dir, "--messages", p, "--json"}
		if i == 1 {
			args = append(args, "--tokenize")
		}
		out, _ := sluiceCode(t, exitOK, args...)
		var r struct {
			Rendered string  `json:"rendered"`
			IDs      []int32 `json:"ids"`
		}
		decodeJSON(t, out, &r)
		if r.Rendered != c.Rendered {
			t.Errorf("chat %d: rendered %q, want %q", i, r.Rendered, c.Rendered)
		}
		if i == 1 && fmt.Sprint(r.IDs) != fmt.Sprint(c.RenderedIDs) {
			t.Errorf("chat %d: ids %v, want %v", i, r.IDs, c.RenderedIDs)
		}
	}
}
