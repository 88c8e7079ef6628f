package chattemplate

import (
	"strings"
	"testing"
)

func TestParseInput(t *testing.T) {
	in, err := ParseInput([]byte(`{"messages":[{"role":"user","content":"Hi"}],"add_generation_prompt":true,"tools":[{"type":"function"}],"documents":null,"enable_thinking":false}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Messages) != 1 || !in.AddGenerationPrompt || len(in.Tools) != 1 || in.Documents != nil || in.Vars["enable_thinking"] != false {
		t.Errorf("ParseInput: %+v", in)
	}
	if in, err := ParseInput([]byte(`[]`)); err != nil || in.Messages == nil || len(in.Messages) != 0 {
		t.Errorf("an empty list: %+v, %v", in, err)
	}
	for doc, want := range map[string]string{
		`{"messages":"x"}`:                          `"messages" is not a list`,
		`{"msgs":[]}`:                               `no "messages" list`,
		`{"messages":[],"tools":1}`:                 `"tools" is not a list`,
		`{"messages":[],"add_generation_prompt":1}`: `"add_generation_prompt" is not a boolean`,
		`null`: `want a JSON list of messages`,
		`[`:    `EOF`,
	} {
		if _, err := ParseInput([]byte(doc)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseInput(%s): %v, want %q", doc, err, want)
		}
	}
}

// FuzzParseInput feeds template --messages files: never a panic; an
// accepted file always yields a message list.
// Seeds: testdata/fuzz/FuzzParseInput.
func FuzzParseInput(f *testing.F) {
	for _, s := range []string{
		`[{"role":"user","content":"Hi"}]`,
		`{"messages":[{"role":"user","content":"Hi"}],"add_generation_prompt":true,"tools":[{"type":"function"}],"enable_thinking":false}`,
		`{"messages":"x"}`, `{"msgs":[]}`, `[`, `null`, `{"messages":[],"tools":null,"documents":[1]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		in, err := ParseInput(b)
		if err == nil && in.Messages == nil {
			t.Fatalf("%q accepted without messages", b)
		}
	})
}
