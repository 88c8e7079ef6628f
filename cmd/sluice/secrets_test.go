package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// plantedSecret is the value of every sensitive input in
// TestSecretsNeverAppear: a signing key, a sensitive variable, a sensitive
// plugin attribute. It must never appear in what sluice prints or writes.
const plantedSecret = "planted-s3cret-7f3a9c"

// grepSecret fails the test when s holds the planted secret (or the secret
// test fixtures are signed with).
func grepSecret(t *testing.T, what, s string) {
	t.Helper()
	for _, secret := range []string{plantedSecret, testSecret} {
		if strings.Contains(s, secret) {
			t.Errorf("%s shows a secret:\n%s", what, s)
		}
	}
}

// grepFiles greps every file under dir, the signatures and run manifests
// included.
func grepFiles(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		n++
		grepSecret(t, "file "+p, string(b))
		return nil
	})
	return n
}

// TestSecretsNeverAppear plants one secret as a signing key (--key, a
// sensitive variable, SLUICE_VAR_…, a key file), as a sensitive plugin
// attribute, and runs every command that sees it — validate, plan, run and
// convert, with and without --json, succeeding, failing on bad input, on a
// failed variable validation, on a plugin that refuses its configuration, on
// a plugin crash, and verify with a wrong key — then greps everything
// printed and every file written (outputs, signatures, run manifests).
func TestSecretsNeverAppear(t *testing.T) {
	f := fixtures(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	keyFile := filepath.Join(dir, "key")
	os.WriteFile(keyFile, []byte(plantedSecret+"\n"), 0o600)
	damaged := filepath.Join(dir, "damaged.safetensors")
	os.WriteFile(damaged, []byte{0xff, 0, 0, 0, 0, 0, 0, 0, '{', '}'}, 0o644)

	pipeline := func(name, body string) string {
		p := filepath.Join(dir, name+".hcl")
		src := fmt.Sprintf(`
variable "key" {
  type      = string
  sensitive = true
}
variable "in" {
  type    = string
  default = %q
}
source "safetensors" "hf" { path = var.in }
transform "sign" "team" {
  input = source.hf
  key   = var.key
}
sink "gguf" "signed" {
  input = transform.team
  path  = "%s/%s/model.gguf"
}
sink "apsim" "embedded" {
  input = source.hf
  path  = "%s/%s/model.apsim"
  key   = var.key
}
%s`, f.HF, out, name, out, name, body)
		os.WriteFile(p, []byte(src), 0o644)
		return p
	}
	good := pipeline("good", "")
	validated := pipeline("validated", `
variable "short" {
  type      = string
  sensitive = true
  validation {
    condition     = length(var.short) < 5
    error_message = "The value is too long."
  }
}
`)
	refused := filepath.Join(dir, "refused.hcl")
	os.WriteFile(refused, []byte(fmt.Sprintf(`
variable "key" {
  type      = string
  sensitive = true
}
source "safetensors" "hf" { path = %q }
sink "apsim" "embedded" {
  input = source.hf
  path  = "%s/refused/model.apsim"
  key   = var.key
  shard = var.key
}
`, f.HF, out)), 0o644)
	crashing := filepath.Join(dir, "crash.hcl")
	os.WriteFile(crashing, []byte(fmt.Sprintf(`
variable "key" {
  type      = string
  sensitive = true
}
source "safetensors" "hf" { path = %q }
transform "sign" "team" {
  input = source.hf
  key   = var.key
}
sink "crashy" "boom" {
  input = transform.team
  path  = "%s/crash/boom.bin"
  mode  = "panic"
}
`, f.HF, out)), 0o644)

	viaVar := []string{"-var", "key=" + plantedSecret}
	type run struct {
		name string
		args []string
		env  []string
		code int // -1: any
	}
	runs := []run{
		{"validate", append([]string{"validate", good}, viaVar...), nil, exitOK},
		{"validate --json", append([]string{"validate", good, "--json"}, viaVar...), nil, exitOK},
		{"plan", append([]string{"plan", good}, viaVar...), nil, exitOK},
		{"plan --json", append([]string{"plan", good, "--json"}, viaVar...), nil, exitOK},
		{"run", []string{"run", good}, []string{"SLUICE_VAR_key=" + plantedSecret}, exitOK},
		{"run --json", append([]string{"run", pipeline("json", ""), "--json"}, viaVar...), nil, exitOK},
		{"run on a damaged input", append([]string{"run", good, "-var", "in=" + damaged}, viaVar...), nil, exitBadInput},
		{"a failed variable validation", append([]string{"plan", validated, "-var", "short=" + plantedSecret}, viaVar...), nil, exitBadConfig},
		{"a configuration the plugin refuses", append([]string{"plan", refused}, viaVar...), nil, exitBadConfig},
		{"a plugin crash", append([]string{"run", crashing}, viaVar...), nil, exitInternal},
		{"convert --key", []string{"convert", f.HF, filepath.Join(out, "convert", "m.gguf"), "--key", plantedSecret}, nil, exitOK},
		{"convert --key --json", []string{"convert", f.HF, filepath.Join(out, "convertjson", "m.apsim"), "--key", plantedSecret, "--json"}, nil, exitOK},
		{"convert --key-file", []string{"convert", f.HF, filepath.Join(out, "keyfile", "m.apsim"), "--key-file", keyFile}, nil, exitOK},
		{"convert --print-pipeline", []string{"convert", f.HF, filepath.Join(out, "printed", "m.apsim"), "--key", plantedSecret, "--print-pipeline"}, nil, exitOK},
		{"convert --plan", []string{"convert", f.HF, filepath.Join(out, "planned", "m.apsim"), "--key", plantedSecret, "--plan"}, nil, exitOK},
		{"convert of a damaged input", []string{"convert", damaged, filepath.Join(out, "bad", "m.apsim"), "--key", plantedSecret}, nil, exitBadInput},
		{"verify with the right key", []string{"verify", filepath.Join(out, "convert", "m.gguf"), "--key", plantedSecret}, nil, exitOK},
		{"verify with a wrong key", []string{"verify", f.Apsim, "--key", plantedSecret}, nil, exitBadInput},
		{"verify --json with a wrong key", []string{"verify", f.Apsim, "--key", plantedSecret, "--json"}, nil, exitBadInput},
	}
	for _, r := range runs {
		t.Run(r.name, func(t *testing.T) {
			c := startCLI(t, r.env, r.args...)
			code := c.wait(t, 2*time.Minute)
			if r.code >= 0 && code != r.code {
				t.Errorf("exit %d, want %d:\n%s", code, r.code, c.stderr.String())
			}
			grepSecret(t, "stderr", c.stderr.String())
			grepSecret(t, "stdout", c.stdout())
		})
	}
	if n := grepFiles(t, out); n < 10 {
		t.Errorf("only %d files written; the runs did not all write", n)
	}
}
