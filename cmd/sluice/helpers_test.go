package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/sluice-ml/sluice/internal/linediff"
	"github.com/sluice-ml/sluice/internal/sample"
)

// update rewrites golden files (testdata/golden/*) and the generated
// reference (docs/cli/) instead of comparing against them.
var update = flag.Bool("update", false, "rewrite golden files and docs/cli/")

// testSecret is the shared secret the fixtures are signed with; no output
// may ever contain it.
const testSecret = "fixture-secret-do-not-print"

// fixtureSet is a set of small checkpoints of every format, built once per
// test process from the generated sample (a llama-shaped Hugging Face
// directory) with `sluice convert` itself.
type fixtureSet struct {
	dir string
	// HF is the Hugging Face directory: two bf16 safetensors shards, an
	// index, config and tokenizer files.
	HF string
	// ST is one bf16 safetensors file.
	ST string
	// GGUF is a q8_0 GGUF file; GGUFQ4 a q4_0 one.
	GGUF, GGUFQ4 string
	// GGUFSplit is the first shard of a gguf-split set; GGUFSplitName the
	// name the set was written as.
	GGUFSplit, GGUFSplitName string
	// Apsim is a single signed apsim file; ApsimSet the index of a signed
	// sharded set, ApsimSetName the name it was written as.
	Apsim, ApsimSet, ApsimSetName string
	// ApsimQ is an unsigned apsim file of int8 QTensors.
	ApsimQ string
	// APR is an APR file (aprender layout).
	APR string
	// Tensors and Params describe the sample.
	Tensors int
	Params  uint64
}

var (
	fixturesOnce sync.Once
	fixturesVal  *fixtureSet
	fixturesErr  string
)

// fixtures returns the shared fixtures. They live in a directory removed by
// TestMain (cleanupFixtures).
func fixtures(t *testing.T) *fixtureSet {
	t.Helper()
	fixturesOnce.Do(func() {
		dir, err := os.MkdirTemp("", "sluice-cli-fixtures-")
		if err != nil {
			fixturesErr = err.Error()
			return
		}
		f := &fixtureSet{dir: dir}
		fixturesVal = f
		f.HF = filepath.Join(dir, "hf")
		if err := sample.Write(f.HF, sample.Default); err != nil {
			fixturesErr = err.Error()
			return
		}
		f.Tensors = len(sample.Default.Tensors())
		for _, tt := range sample.Default.Tensors() {
			n := uint64(1)
			for _, d := range tt.Shape {
				n *= d
			}
			f.Params += n
		}
		p := func(parts ...string) string { return filepath.Join(append([]string{dir}, parts...)...) }
		f.ST = p("st", "model.safetensors")
		f.GGUF = p("gguf", "model.gguf")
		f.GGUFQ4 = p("ggufq4", "model.gguf")
		f.GGUFSplitName = p("ggufsplit", "model.gguf")
		f.GGUFSplit = p("ggufsplit", "model-00001-of-00003.gguf")
		f.Apsim = p("apsim", "model.apsim")
		f.ApsimSetName = p("apsimset", "model.apsim")
		f.ApsimSet = p("apsimset", "model.apsim.index.json")
		f.ApsimQ = p("apsimq", "model.apsim")
		f.APR = p("apr", "model.apr")
		for _, args := range [][]string{
			{f.HF, f.ST},
			{f.HF, f.GGUF, "--dtype", "q8_0"},
			{f.ST, f.GGUFQ4, "--dtype", "q4_0"},
			{f.HF, f.GGUFSplitName, "--shard", "100KB"},
			{f.GGUF, f.Apsim, "--key", testSecret},
			{f.HF, f.ApsimSetName, "--shard", "100KB", "--key", testSecret},
			{f.HF, f.ApsimQ, "--dtype", "int8"},
			{f.HF, f.APR},
		} {
			var out, errb bytes.Buffer
			if code := runMain(append([]string{"convert", "--in-process", "--quiet"}, args...), &out, &errb); code != 0 {
				fixturesErr = "sluice convert " + strings.Join(args, " ") + ": " + errb.String()
				return
			}
		}
		if _, err := os.Stat(f.GGUFSplit); err != nil {
			fixturesErr = "the split GGUF set was not written as 3 shards: " + err.Error()
		}
	})
	if fixturesErr != "" {
		t.Fatalf("building the fixtures: %s", fixturesErr)
	}
	return fixturesVal
}

// cleanupFixtures removes the fixtures; TestMain calls it.
func cleanupFixtures() {
	if fixturesVal != nil {
		os.RemoveAll(fixturesVal.dir)
	}
}

// sluiceOK runs the CLI and fails the test unless it exits 0.
func sluiceOK(t *testing.T, args ...string) string {
	t.Helper()
	out, stderr, code := sluice(t, args...)
	if code != 0 {
		t.Fatalf("sluice %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, out, stderr)
	}
	return out
}

// sluiceCode runs the CLI and fails the test unless it exits with want.
func sluiceCode(t *testing.T, want int, args ...string) (string, string) {
	t.Helper()
	out, stderr, code := sluice(t, args...)
	if code != want {
		t.Fatalf("sluice %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, want, out, stderr)
	}
	if strings.Contains(out+stderr, testSecret) {
		t.Fatalf("sluice %s printed the signing key", strings.Join(args, " "))
	}
	return out, stderr
}

// decodeJSON parses a command's --json output.
func decodeJSON(t *testing.T, out string, v any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(out))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
}

// golden compares got with testdata/golden/name, after replacing the
// fixture directory and other machine-specific strings, or rewrites it
// with -update.
func golden(t *testing.T, name string, got string, replace ...string) {
	t.Helper()
	r := strings.NewReplacer(replace...)
	got = r.Replace(got)
	got = versionRE.ReplaceAllString(got, `"sluice $${VERSION}"`)
	p := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs from the golden file (go test -update rewrites it after a deliberate change)\n%s", name, lineDiff(string(want), got))
	}
}

// versionRE matches the sluice version recorded in written files.
var versionRE = regexp.MustCompile(`"sluice [0-9][^"]*"`)

// lineDiff shows the first lines that differ.
func lineDiff(want, got string) string {
	var b bytes.Buffer
	linediff.Unified(&b, "golden", []byte(want), []byte(got))
	s := b.String()
	if len(s) > 4000 {
		s = s[:4000] + "\n…"
	}
	return s
}
