package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-ml/sluice/core/host"
	"github.com/sluice-ml/sluice/sdk/plugin"
)

// Protocol compatibility: testdata/oldplugin is built from the frozen
// sluice_plugin_1.0.proto alone (no current SDK), standing for software
// released against protocol 1.0.

// A plugin that speaks only 1.0 runs under this host, which speaks 1.1:
// a pipeline writes the sample through its sink and reads it back through
// its source, bytes unchanged.
func TestPluginBuiltAgainstProtocol10RunsUnderThisHost(t *testing.T) {
	dir := t.TempDir()
	goBuildInto(t, "", "./testdata/oldplugin", filepath.Join(dir, host.BinaryPrefix+"legacy"))
	t.Setenv(host.PluginPathEnv, dir)
	out, _, code := sluice(t, "plugins", "list")
	if code != 0 || !strings.Contains(out, "legacy") || !strings.Contains(out, "1.0") {
		t.Fatalf("plugins list does not show the 1.0 plugin:\n%s", out)
	}
	work := t.TempDir()
	legacy := filepath.Join(work, "legacy")
	back := filepath.Join(work, "back.safetensors")
	write := writePipeline(t, fmt.Sprintf("source \"safetensors\" \"hf\" { path = %q }\nsink \"legacy\" \"old\" {\n  input = source.hf\n  path  = %q\n}\n", sampleDir(t), legacy))
	read := writePipeline(t, fmt.Sprintf("source \"legacy\" \"old\" { path = %q }\nsink \"safetensors\" \"back\" {\n  input = source.old\n  path  = %q\n}\n", legacy, back))
	for _, mode := range [][]string{nil, {"--in-process"}} {
		mustRun(t, append([]string{"run", write, "--quiet"}, mode...)...)
		mustRun(t, append([]string{"run", read, "--quiet"}, mode...)...)
		if _, stderr, code := sluice(t, "diff", sampleDir(t), back, "--strict", "--ignore-metadata", "--quiet"); code != 0 {
			t.Errorf("the sample differs after a round trip through the 1.0 plugin (exit %d):\n%s", code, stderr)
		}
	}
}

// A plugin built with this SDK (1.1) serves a host that speaks only 1.0.
func TestProtocol10HostDrivesThisSDKsPlugin(t *testing.T) {
	oldHost := goBuild(t, "", "./testdata/oldplugin", "oldhost")
	npz := goBuild(t, filepath.Join(repoRoot(t), "examples", "plugin-npz"), ".", "sluice-plugin-npz")
	for _, tc := range []struct {
		component string
		argv      []string
	}{
		{"npz", []string{npz}},
		{"safetensors", []string{os.Args[0], "plugin", "serve", "safetensors"}},
	} {
		cmd := exec.Command(oldHost, append([]string{"host", t.TempDir(), tc.component}, tc.argv...)...)
		cmd.Env = os.Environ()
		out, err := cmd.Output()
		if err != nil {
			stderr := ""
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = lastLines(string(ee.Stderr), 5)
			}
			t.Errorf("a 1.0 host driving %s: %v\n%s%s", tc.component, err, out, stderr)
			continue
		}
		want := fmt.Sprintf("speaks 1.%d", plugin.ProtocolMinor)
		if !strings.Contains(string(out), want) || !strings.HasSuffix(strings.TrimSpace(string(out)), "OK") {
			t.Errorf("a 1.0 host driving %s:\n%s", tc.component, out)
		}
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// A plugin of another protocol major is not started, and the error names
// both versions.
func TestOtherProtocolMajorIsRefusedByName(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, host.BinaryPrefix+"legacy")
	goBuildInto(t, "", "./testdata/oldplugin", bin, "-X main.protocol=2")
	t.Setenv(host.PluginPathEnv, dir)
	p := writePipeline(t, fmt.Sprintf("source \"safetensors\" \"hf\" { path = %q }\nsink \"legacy\" \"old\" {\n  input = source.hf\n  path  = %q\n}\n", sampleDir(t), t.TempDir()))
	_, stderr, code := sluice(t, "run", p)
	if code != exitBadConfig {
		t.Errorf("exit %d, want %d", code, exitBadConfig)
	}
	flat := strings.Join(strings.Fields(stderr), " ") // diagnostics wrap lines
	for _, want := range []string{"speaks Sluice plugin protocol 2", "this host speaks protocol 1", bin, "not started"} {
		if !strings.Contains(flat, want) {
			t.Errorf("the error lacks %q:\n%s", want, stderr)
		}
	}
	out, _, _ := sluice(t, "plugins", "list")
	if !strings.Contains(out, "failed to start") {
		t.Errorf("plugins list does not flag the plugin:\n%s", out)
	}
}

// goBuildInto builds a main package to an exact path.
func goBuildInto(t *testing.T, dir, pkg, bin string, ldflags ...string) {
	t.Helper()
	built := goBuild(t, dir, pkg, filepath.Base(bin), ldflags...)
	b, err := os.ReadFile(built)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
}
