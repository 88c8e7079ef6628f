package standby

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func writeFile(t *testing.T, path, src string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestWantedCountsTheFormatsOfAPipeline(t *testing.T) {
	dir := t.TempDir()
	twoFormats := filepath.Join(dir, "convert.hcl")
	writeFile(t, twoFormats, `
source "safetensors" "hf" {
  path = var.model_dir
}
sink "gguf" "llama" {
  input = source.hf
}
  sink "safetensors" "copy" { input = source.hf }
transform "quantize" "q" { input = source.hf }
# source "apsim" "commented" is a comment, not a block
`)
	oneFormat := filepath.Join(dir, "copy.hcl")
	writeFile(t, oneFormat, "source \"gguf\" \"in\" {}\nsink \"gguf\" \"out\" {}\n")

	split := filepath.Join(dir, "split")
	if err := os.Mkdir(split, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(split, "sources.hcl"), `source "safetensors" "a" {}`)
	writeFile(t, filepath.Join(split, "sinks.hcl"), `sink "apsim" "b" {}`+"\n"+`sink "apr" "c" {}`)
	// Neither variable files nor hidden files are pipeline files.
	writeFile(t, filepath.Join(split, "prod.sluicevars.hcl"), `sink "onnx" "x" {}`)
	writeFile(t, filepath.Join(split, ".sluice.lock.hcl"), `sink "pytorch" "x" {}`)

	many := filepath.Join(dir, "many.hcl")
	writeFile(t, many, "source \"a\" \"1\" {}\nsink \"b\" \"2\" {}\nsink \"c\" \"3\" {}\nsink \"d\" \"4\" {}\nsink \"e\" \"5\" {}\n")

	in := filepath.Join(dir, "model.safetensors")
	writeFile(t, in, "")

	for _, c := range []struct {
		args []string
		want int
	}{
		{[]string{"run", twoFormats}, 2},
		{[]string{"run", "--max-memory", "1GiB", twoFormats, "--var", "x=1"}, 2},
		{[]string{"plan", oneFormat}, 1},
		{[]string{"run", split}, 3},
		{[]string{"run", many}, maxAhead},
		{[]string{"run", twoFormats, "--in-process"}, 0},
		{[]string{"run", twoFormats, "--in-process=true"}, 0},
		{[]string{"run", twoFormats, "--in-process=false"}, 2},
		{[]string{"run", twoFormats, "--skip-unchanged"}, 0},
		{[]string{"run", "--help"}, 0},
		{[]string{"run", filepath.Join(dir, "missing.hcl")}, 0},
		{[]string{"run"}, 0},
		{[]string{"info", in}, 0},
		{[]string{"verify", twoFormats}, 0},
		{[]string{"convert", in, filepath.Join(dir, "out.gguf")}, 2},
		{[]string{"convert", "--dtype", "bf16", dir, filepath.Join(dir, "out.safetensors")}, 1},
		{[]string{"convert", dir, filepath.Join(dir, "out.apsim"), "--dtype", "q8_0"}, 2},
		{[]string{"convert", in, filepath.Join(dir, "OUT.SAFETENSORS")}, 1},
		{[]string{"convert", in, filepath.Join(dir, "out.gguf"), "--print-pipeline"}, 0},
		{nil, 0},
	} {
		if got := wanted(c.args); got != c.want {
			t.Errorf("wanted(%q) = %d, want %d", c.args, got, c.want)
		}
	}

	t.Setenv(EnvSwitch, "off")
	if got := wanted([]string{"run", twoFormats}); got != 0 {
		t.Errorf("with %s=off: wanted = %d, want 0", EnvSwitch, got)
	}
}

func TestBlockTypesReadsTheLinesThatOpenSourcesAndSinks(t *testing.T) {
	src := "source \"safetensors\" \"hf\" {\n\tsink\t\"gguf\" \"out\" {\nsink gguf {\nsinks \"x\" {\nsource\n  source \"apr\"\n"
	if got, want := blockTypes([]byte(src)), []string{"safetensors", "gguf", "apr"}; !slices.Equal(got, want) {
		t.Errorf("blockTypes = %q, want %q", got, want)
	}
}

func TestIsChild(t *testing.T) {
	if !IsChild([]string{"plugin", "standby"}) {
		t.Error("plugin standby is not a child's command line")
	}
	for _, args := range [][]string{nil, {"plugin"}, {"plugin", "serve", "gguf"}, {"plugin", "standby", "x"}, {"run", "standby"}} {
		if IsChild(args) {
			t.Errorf("IsChild(%q) = true", args)
		}
	}
}
