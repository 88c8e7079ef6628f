package hfdir

import (
	"os"
	"path/filepath"
	"slices"
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
	if want := []string{tensor.MetaHFConfig, tensor.MetaHFModelName, tensor.MetaHFTokenizerConfig}; !slices.Equal(md.Keys(), want) {
		t.Errorf("keys %v, want %v", md.Keys(), want)
	}
	if got, want := md.String(tensor.MetaHFModelName), filepath.Base(dir); got != want {
		t.Errorf("model name %q, want %q", got, want)
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

func TestModelName(t *testing.T) {
	for dir, want := range map[string]string{
		"/models/Llama-3.2-1B-Instruct":  "Llama-3.2-1B-Instruct",
		"/models/Llama-3.2-1B-Instruct/": "Llama-3.2-1B-Instruct",
		"/cache/hub/models--meta-llama--Llama-3.2-1B/snapshots/4e20de362430cd3b72f300e6b0f18e50e7166e08": "Llama-3.2-1B",
		"/cache/hub/models--gpt2/snapshots/607a30d783dfa663caf39e06633721c8d4cfcd7e":                     "gpt2",
		// Not a cache snapshot: a directory that happens to be called snapshots.
		"/data/snapshots/2024-01-01": "2024-01-01",
		"/":                          "",
	} {
		if got := ModelName(dir); got != want {
			t.Errorf("ModelName(%q) = %q, want %q", dir, got, want)
		}
	}
	if got, want := ModelName("."), filepath.Base(mustGetwd(t)); got != want {
		t.Errorf("ModelName(.) = %q, want %q", got, want)
	}
}

func mustGetwd(t *testing.T) string {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return wd
}
