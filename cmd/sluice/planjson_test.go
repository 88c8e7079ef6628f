package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestPlanJSONGolden pins the --json form of a plan: its stages, and for
// each sink its files, notes and every tensor's dtype, shape, size, source
// and ops. Two sinks of one source, one converting and one copying.
func TestPlanJSONGolden(t *testing.T) {
	f := fixtures(t)
	out := t.TempDir()
	p := filepath.Join(t.TempDir(), "pipeline.hcl")
	src := `variable "model" { type = string }
variable "out" { type = string }

source "safetensors" "hf" {
  path = var.model
}

sink "gguf" "q8" {
  input = source.hf
  path  = "${var.out}/model.gguf"
  dtype = "q8_0"
}

sink "safetensors" "copy" {
  input    = source.hf
  path     = "${var.out}/model.safetensors"
  hf_files = false
}
`
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	got := sluiceOK(t, "plan", p, "--json", "-var", "model="+f.HF, "-var", "out="+out)
	golden(t, "plan-two-sinks.json", got, f.dir, "$FIXTURES", out, "$OUT")
}
