package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const unformatted = `source "gguf" "in" {
path="a.gguf"
    only = ["x"]
}

sink "apsim" "out" {
 input=source.in
      path = "b.apsim"
}
`

const formatted = `source "gguf" "in" {
  path = "a.gguf"
  only = ["x"]
}

sink "apsim" "out" {
  input = source.in
  path  = "b.apsim"
}
`

func TestFmt(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.hcl")
	ok := filepath.Join(dir, "ok.hcl")
	sub := filepath.Join(dir, "sub", "c.hcl")
	other := filepath.Join(dir, "notes.txt")
	os.MkdirAll(filepath.Dir(sub), 0o755)
	for p, s := range map[string]string{a: unformatted, ok: formatted, sub: unformatted, other: unformatted} {
		os.WriteFile(p, []byte(s), 0o640)
	}
	t.Chdir(dir)

	// -check changes nothing, lists the file and exits 3; -diff shows the change.
	out, _ := sluiceCode(t, exitBadInput, "fmt", "-check", "-diff")
	if !strings.Contains(out, "a.hcl\n") || strings.Contains(out, "ok.hcl") || strings.Contains(out, "c.hcl") {
		t.Errorf("-check should list a.hcl only (not recursive):\n%s", out)
	}
	for _, want := range []string{"--- old/a.hcl", "+++ new/a.hcl", "-path=\"a.gguf\"", "+  path = \"a.gguf\"", "@@ -1,9 +1,9 @@"} {
		if !strings.Contains(out, want) {
			t.Errorf("-diff lacks %q:\n%s", want, out)
		}
	}
	if b, _ := os.ReadFile(a); string(b) != unformatted {
		t.Error("-check rewrote the file")
	}

	// -write=false prints the result instead of writing it.
	out, _ = sluiceCode(t, exitOK, "fmt", "-write=false", "-list=false", a)
	if out != formatted {
		t.Errorf("-write=false printed:\n%s", out)
	}

	// The default writes, keeping the file's mode; a second run finds nothing.
	out, _ = sluiceCode(t, exitOK, "fmt")
	if out != "a.hcl\n" {
		t.Errorf("fmt listed %q", out)
	}
	b, _ := os.ReadFile(a)
	fi, _ := os.Stat(a)
	if string(b) != formatted || fi.Mode().Perm() != 0o640 {
		t.Errorf("a.hcl (mode %v) is now:\n%s", fi.Mode().Perm(), b)
	}
	sluiceCode(t, exitOK, "fmt", "-check")
	sluiceCode(t, exitBadInput, "fmt", "-check", "-recursive")
	out, _ = sluiceCode(t, exitOK, "fmt", "-recursive")
	if out != filepath.Join("sub", "c.hcl")+"\n" {
		t.Errorf("-recursive listed %q", out)
	}
	if b, _ := os.ReadFile(other); string(b) != unformatted {
		t.Error("fmt touched a file that is not *.hcl")
	}
}

func TestFmtStdinAndSyntaxErrors(t *testing.T) {
	var out, errb bytes.Buffer
	root := (&app{stdout: &out, stderr: &errb}).rootCommand()
	root.SetArgs([]string{"fmt", "-"})
	root.SetIn(strings.NewReader(unformatted))
	root.SetOut(&out)
	if err := root.Execute(); err != nil || out.String() != formatted {
		t.Errorf("fmt - : %v\n%s", err, out.String())
	}

	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.hcl")
	os.WriteFile(bad, []byte("source \"gguf\" \"in\" {\n  path = \n}\n"), 0o644)
	_, stderr := sluiceCode(t, exitBadConfig, "fmt", bad)
	if !strings.Contains(stderr, "bad.hcl line 2") {
		t.Errorf("a syntax error should be shown at its line:\n%s", stderr)
	}
	sluiceCode(t, exitBadConfig, "fmt", filepath.Join(dir, "missing.hcl"))
}

// TestShippedPipelinesAreFormatted keeps the example pipelines in fmt's
// style.
func TestShippedPipelinesAreFormatted(t *testing.T) {
	sluiceCode(t, exitOK, "fmt", "-check", "-recursive", filepath.Join(repoRoot(t), "pipelines"))
}
