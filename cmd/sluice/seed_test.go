package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-ml/sluice/internal/refdata"
)

// seedCommands are the examples of seed 000 §3 ("Command line"), verbatim,
// with `apsi model` as `sluice`. TestSeedCommandsAreVerbatim checks them
// against the seed when ../shared is present.
var seedCommands = []string{
	`sluice info model.gguf                          # tensors, types, metadata (headers only)`,
	`sluice info model.apsim.index.json`,
	`sluice verify model.apsim                       # check SHA-256 of every shard`,
	`sluice verify model.apsim --key "team secret"   # and the signature`,
	`sluice convert model.safetensors model.gguf --dtype q4_0`,
	`sluice convert model.gguf model.apsim --shard 2GB --key "team secret"`,
	`sluice convert model.apsim model.safetensors`,
}

// splitCommand splits a shell command line with double quotes, dropping a
// trailing comment and the program name.
func splitCommand(line string) []string {
	if i := strings.Index(line, " #"); i >= 0 {
		line = line[:i]
	}
	var args []string
	var cur strings.Builder
	inQuote, have := false, false
	for _, r := range line {
		switch {
		case r == '"':
			inQuote, have = !inQuote, true
		case r == ' ' && !inQuote:
			if have {
				args = append(args, cur.String())
				cur.Reset()
				have = false
			}
		default:
			cur.WriteRune(r)
			have = true
		}
	}
	if have {
		args = append(args, cur.String())
	}
	return args[1:]
}

func TestSeedCommandsAreVerbatim(t *testing.T) {
	matches, _ := filepath.Glob(filepath.Join(refdata.Path(t, "seeds"), "000_*.txt"))
	if len(matches) == 0 {
		t.Skip("../shared/seeds is absent: cannot compare the examples with seed 000")
	}
	b, err := os.ReadFile(matches[0])
	if err != nil {
		t.Fatal(err)
	}
	_, sec, _ := strings.Cut(string(b), "## 3. Command line")
	sec, _, _ = strings.Cut(sec, "## 4.")
	var lines []string
	for _, l := range strings.Split(sec, "\n") {
		if strings.HasPrefix(l, "apsi model ") {
			lines = append(lines, "sluice "+strings.TrimPrefix(l, "apsi model "))
		}
	}
	if strings.Join(lines, "\n") != strings.Join(seedCommands, "\n") {
		t.Errorf("seed 000 §3 lists:\n%s\n\nthe test runs:\n%s", strings.Join(lines, "\n"), strings.Join(seedCommands, "\n"))
	}
}

// TestSeedCommandLine runs every example of seed 000 §3 in a working
// directory holding model.safetensors, in an order where each has its
// input, and checks what the seed says each does.
func TestSeedCommandLine(t *testing.T) {
	f := fixtures(t)
	dir := t.TempDir()
	t.Chdir(dir)
	sluiceCode(t, exitOK, "convert", f.HF, "model.safetensors", "--quiet")
	run := func(i int, want int) (string, string) {
		t.Helper()
		args := splitCommand(seedCommands[i])
		t.Logf("$ %s", seedCommands[i])
		return sluiceCode(t, want, args...)
	}

	// convert model.safetensors model.gguf --dtype q4_0
	run(4, exitOK)
	r := infoOf(t, "model.gguf")
	if d := dtypeSet(r); d["q4_0"] != 16 || r.Format != "gguf" {
		t.Errorf("model.gguf: %s with dtypes %v, want q4_0 matrices", r.Format, d)
	}
	// info model.gguf: tensors, types, metadata (headers only)
	out, _ := run(0, exitOK)
	for _, want := range []string{"model.gguf: gguf, 21 tensors", "metadata:", "tensors:", "q4_0", "[320, 64]", "parameters"} {
		if !strings.Contains(out, want) {
			t.Errorf("info model.gguf lacks %q:\n%s", want, out)
		}
	}
	// convert model.gguf model.apsim --shard 2GB --key "team secret"
	run(5, exitOK)
	// info model.apsim.index.json: the checkpoint is far below 2GB, so it
	// was written as one file, and info says so.
	out, _ = run(1, exitOK)
	if !strings.Contains(out, "apsim, 21 tensors") || !strings.Contains(out, "written as the single file model.apsim") {
		t.Errorf("info model.apsim.index.json:\n%s", out)
	}
	// verify model.apsim: the SHA-256 of every shard.
	out, _ = run(2, exitOK)
	if !strings.Contains(out, "OK      sha256") || !strings.Contains(out, "SKIPPED signature") {
		t.Errorf("verify model.apsim:\n%s", out)
	}
	// verify model.apsim --key "team secret": and the signature.
	out, _ = run(3, exitOK)
	if !strings.Contains(out, "OK      signature") {
		t.Errorf("verify --key:\n%s", out)
	}
	sluiceCode(t, exitBadInput, "verify", "model.apsim", "--key", "another team")
	// convert model.apsim model.safetensors: q4_0 cannot live in apsim or
	// safetensors, so it was expanded to f32, exactly.
	run(6, exitOK)
	r = infoOf(t, "model.safetensors")
	if d := dtypeSet(r); d["f32"] != 21 {
		t.Errorf("model.safetensors dtypes %v, want 21 f32 tensors", d)
	}
	out, _ = sluiceCode(t, exitOK, "diff", "model.gguf", "model.safetensors", "--max-abs", "0", "--ignore-metadata", "-q")
	if out != "" {
		t.Errorf("the safetensors values differ from the GGUF's dequantized ones:\n%s", out)
	}

	// The same with a set that really is sharded.
	sluiceCode(t, exitOK, "convert", "model.gguf", "big.apsim", "--shard", "100KB", "--key", "team secret", "--quiet")
	out, _ = sluiceCode(t, exitOK, "info", "big.apsim.index.json")
	if !strings.Contains(out, "big-00001-of-") {
		t.Errorf("info of a set lists no shard files:\n%s", out)
	}
	out, _ = sluiceCode(t, exitOK, "verify", "big.apsim", "--key", "team secret")
	if strings.Count(out, "OK      sha256") < 4 || !strings.Contains(out, "OK      signature") {
		t.Errorf("verify of a set should check every shard and the signature:\n%s", out)
	}
	sluiceCode(t, exitOK, "convert", "big.apsim.index.json", "again.safetensors", "--quiet")
	sluiceCode(t, exitOK, "diff", "model.safetensors", "again.safetensors", "--strict", "--ignore-metadata", "-q")
}
