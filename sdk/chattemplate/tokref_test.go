package chattemplate

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluice-ml/sluice/internal/refdata"
)

// TestReferenceRenders renders every conversation of the reference
// chat_template.jsonl files with the checkpoint's own template and compares
// the text exactly.
func TestReferenceRenders(t *testing.T) {
	ref := refdata.Path(t, "tokref")
	folders, _ := filepath.Glob(filepath.Join(ref, "*", "chat_template.jsonl"))
	if len(folders) == 0 {
		t.Skip("no chat_template.jsonl under " + ref)
	}
	for _, path := range folders {
		dir := filepath.Dir(path)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			cfg, err := os.ReadFile(filepath.Join(dir, "tokenizer_config.json"))
			if err != nil {
				t.Fatal(err)
			}
			set, err := FromTokenizerConfig(cfg)
			if err != nil {
				t.Fatal(err)
			}
			tpl, err := set.Template("")
			if err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			sc := bufio.NewScanner(f)
			sc.Buffer(nil, 1<<24)
			n, pass := 0, 0
			for sc.Scan() {
				var r struct {
					Conversation        string          `json:"conversation"`
					Messages            json.RawMessage `json:"messages"`
					AddGenerationPrompt bool            `json:"add_generation_prompt"`
					Rendered            string          `json:"rendered"`
				}
				if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
					t.Fatal(err)
				}
				msgs, err := ParseJSON(r.Messages)
				if err != nil {
					t.Fatal(err)
				}
				n++
				got, err := tpl.Render(Input{Messages: msgs.([]any), AddGenerationPrompt: r.AddGenerationPrompt, BOSToken: set.BOSToken, EOSToken: set.EOSToken})
				if err != nil {
					t.Errorf("%s (add_generation_prompt=%v): %v", r.Conversation, r.AddGenerationPrompt, err)
					continue
				}
				if got != r.Rendered {
					t.Errorf("%s (add_generation_prompt=%v):\n got  %q\n want %q", r.Conversation, r.AddGenerationPrompt, got, r.Rendered)
					continue
				}
				pass++
			}
			t.Logf("%d/%d renders match", pass, n)
		})
	}
}
