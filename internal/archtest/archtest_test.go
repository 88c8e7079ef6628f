// Package archtest checks the import rules of the repository with go list:
// plugins import only sdk/…, sdk/… imports neither core/ nor plugins/, and
// only cmd/sluice names the built-in plugins.
package archtest

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/sluice-ml/sluice"

type pkg struct {
	ImportPath string
	Deps       []string
}

func listAll(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", module+"/...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// deps returns a package's transitive dependencies within the module.
func deps(p pkg) []string {
	var in []string
	for _, l := range p.Deps {
		if strings.HasPrefix(l, module+"/") {
			in = append(in, strings.TrimPrefix(l, module+"/"))
		}
	}
	return in
}

func TestImportRules(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command is not on PATH")
	}
	for _, p := range listAll(t) {
		rel := strings.TrimPrefix(p.ImportPath, module+"/")
		for _, d := range deps(p) {
			switch {
			case strings.HasPrefix(rel, "sdk/") && (strings.HasPrefix(d, "core/") || strings.HasPrefix(d, "plugins/") || strings.HasPrefix(d, "internal/") || strings.HasPrefix(d, "cmd/")):
				t.Errorf("%s depends on %s: sdk/ imports neither core/ nor plugins/", rel, d)
			case strings.HasPrefix(rel, "plugins/") && !strings.HasPrefix(d, "sdk/") && !strings.HasPrefix(d, "plugins/"+pluginName(rel)):
				t.Errorf("%s depends on %s: a plugin imports only sdk/ (and its own packages)", rel, d)
			case strings.HasPrefix(d, "plugins/") && !strings.HasPrefix(rel, "plugins/") && !strings.HasPrefix(rel, "cmd/sluice") && !strings.HasPrefix(rel, "bench"):
				t.Errorf("%s depends on %s: only cmd/sluice names the built-in plugins", rel, d)
			}
		}
	}
}

func pluginName(rel string) string {
	parts := strings.Split(rel, "/")
	if len(parts) < 2 {
		return ""
	}
	return parts[1]
}
