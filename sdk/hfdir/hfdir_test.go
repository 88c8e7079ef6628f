package hfdir

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/sluice-ml/sluice/sdk/plugin"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

func TestCarry(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"model_type": "llama"}`), 0o644)
	os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), []byte(`{"chat_template": "x"}`), 0o644)
	os.WriteFile(filepath.Join(dir, "unrelated.json"), []byte(`{}`), 0o644)
	var md tensor.Metadata
	if err := Carry(&md, dir); err != nil {
		t.Fatal(err)
	}
	if want := []string{tensor.MetaHFConfig, tensor.MetaHFTokenizerConfig}; len(md.Keys()) != len(want) || md.Keys()[0] != want[0] || md.Keys()[1] != want[1] {
		t.Errorf("keys %v, want %v", md.Keys(), want)
	}
	if v, _ := md.Get(tensor.MetaHFConfig); v.String() == "" {
		t.Errorf("config.json not carried")
	}

	os.WriteFile(filepath.Join(dir, "tokenizer.json"), []byte(`{"truncated": `), 0o644)
	if err := Carry(&tensor.Metadata{}, dir); err == nil || !plugin.IsBadInput(err) {
		t.Errorf("invalid JSON: got %v, want a bad-input error", err)
	}
	os.Remove(filepath.Join(dir, "tokenizer.json"))

	outside := filepath.Join(t.TempDir(), "secret.json")
	os.WriteFile(outside, []byte(`{"secret": 1}`), 0o644)
	if err := os.Symlink(outside, filepath.Join(dir, "generation_config.json")); err != nil {
		t.Skipf("cannot make a symbolic link: %v", err)
	}
	if err := Carry(&tensor.Metadata{}, dir); err == nil || !plugin.IsBadInput(err) {
		t.Errorf("a side file linked out of the directory: got %v, want a bad-input error", err)
	}
}
