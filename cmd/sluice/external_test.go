package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-ml/sluice/core/host"
)

// buildExternal builds the test's third-party plugin into a plugin directory.
func buildExternal(t *testing.T) (dir, sum string) {
	t.Helper()
	dir = t.TempDir()
	bin := filepath.Join(dir, host.BinaryPrefix+"extst")
	cmd := exec.Command("go", "build", "-o", bin, "./testdata/extplugin")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("cannot build the test plugin: %v\n%s", err, out)
	}
	sum, err := host.FileSHA256(bin)
	if err != nil {
		t.Fatal(err)
	}
	return dir, sum
}

func TestThirdPartyPluginOnThePluginPath(t *testing.T) {
	dir, sum := buildExternal(t)
	t.Setenv(host.PluginPathEnv, dir)
	out, stderr, code := sluice(t, "plugins", "list")
	if code != 0 || !strings.Contains(out, "extst") || !strings.Contains(out, "9.9.9") {
		t.Fatalf("plugins list (exit %d) does not show the installed plugin:\n%s%s", code, out, stderr)
	}
	sampleDir := filepath.Join(repoRoot(t), "testdata", "sample")
	outDir := t.TempDir()
	body := fmt.Sprintf(`
source "safetensors" "hf" { path = %q }
sink "extst" "out" {
  input = source.hf
  path  = "%s/model.safetensors"
}
`, sampleDir, outDir)
	p := writePipeline(t, body)
	if _, stderr, code := sluice(t, "run", p, "--quiet"); code != 0 {
		t.Fatalf("run through the third-party plugin: exit %d\n%s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(outDir, "model.safetensors")); err != nil {
		t.Fatal(err)
	}

	// Pinned to its own digest it runs; pinned to another it is not started.
	pinned := writePipeline(t, fmt.Sprintf("sluice {\n  plugin \"extst\" {\n    sha256 = %q\n  }\n}\n%s", sum, body))
	if _, stderr, code := sluice(t, "run", pinned, "--quiet"); code != 0 {
		t.Fatalf("run with the right pin: exit %d\n%s", code, stderr)
	}
	wrong := strings.Repeat("0", 64)
	bad := writePipeline(t, fmt.Sprintf("sluice {\n  plugin \"extst\" {\n    sha256 = %q\n  }\n}\n%s", wrong, body))
	_, stderr, code = sluice(t, "run", bad, "--quiet")
	if flat := strings.Join(strings.Fields(stderr), " "); code == 0 || !strings.Contains(flat, "does not match its pinned sha256; it was not started") {
		t.Errorf("a binary that does not match its pin ran (exit %d):\n%s", code, stderr)
	}
}
