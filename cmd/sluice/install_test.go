package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-ml/sluice/core/host"
	"github.com/sluice-ml/sluice/core/run"
	"github.com/sluice-ml/sluice/sdk/plugin"
)

// writePipelineIn writes pipeline.hcl into dir.
func writePipelineIn(t *testing.T, dir, src string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "pipeline.hcl")
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// The third-party example plugin, built from its own module, installed
// with `sluice plugins install`, locked, and used by pipelines in both
// directions.
func TestNPZPluginInstalledLockedAndRun(t *testing.T) {
	exampleDir := filepath.Join(repoRoot(t), "examples", "plugin-npz")
	built := goBuild(t, exampleDir, ".", "plugin-npz")
	rebuilt := goBuild(t, exampleDir, ".", "plugin-npz-stripped", "-s -w")
	root := t.TempDir()
	plugins := filepath.Join(root, "plugins")
	t.Setenv(host.PluginPathEnv, plugins)
	out := filepath.Join(root, "out")
	toNPZ := filepath.Join(root, "to-npz")
	fromNPZ := filepath.Join(root, "from-npz")
	writePipelineIn(t, toNPZ, fmt.Sprintf("source \"safetensors\" \"hf\" { path = %q }\nsink \"npz\" \"arrays\" {\n  input = source.hf\n  path  = %q\n}\n", sampleDir(t), filepath.Join(out, "sample.npz")))
	writePipelineIn(t, fromNPZ, fmt.Sprintf("source \"npz\" \"arrays\" { path = %q }\nsink \"safetensors\" \"back\" {\n  input = source.arrays\n  path  = %q\n}\n", filepath.Join(out, "sample.npz"), filepath.Join(out, "back.safetensors")))

	stdout := mustRun(t, "plugins", "install", built, "--pipeline", toNPZ)
	installed := filepath.Join(plugins, host.BinaryPrefix+"npz")
	sum := fileSHA256(t, built)
	protocol := fmt.Sprintf("%d.%d", plugin.ProtocolVersion, plugin.ProtocolMinor)
	for _, want := range []string{"installed plugin npz 0.1.0 (protocol " + protocol + ")", installed, sum, host.LockFileName} {
		if !strings.Contains(stdout, want) {
			t.Errorf("install output lacks %q:\n%s", want, stdout)
		}
	}
	if fi, err := os.Stat(installed); err != nil || fi.Mode().Perm() != 0o755 || fileSHA256(t, installed) != sum {
		t.Fatalf("installed binary: %v %v", fi, err)
	}
	lock, err := host.ReadLock(toNPZ)
	if err != nil {
		t.Fatal(err)
	}
	if e := lock.Plugins["npz"]; e == nil || e.Version != "0.1.0" || e.Protocol != protocol || e.SHA256[host.Platform()] != sum {
		t.Fatalf("lock entry: %+v", e)
	}
	mustRun(t, "plugins", "install", built, "--pipeline", fromNPZ, "--quiet")
	if list := mustRun(t, "plugins", "list", "--pipeline", toNPZ); !strings.Contains(list, installed) || !strings.Contains(list, "locked 0.1.0") {
		t.Errorf("plugins list does not show the installed, locked plugin:\n%s", list)
	}

	mustRun(t, "run", toNPZ, "--quiet")
	mustRun(t, "run", fromNPZ, "--quiet")
	// bf16 → float32 in the archive → back: every value is the same.
	if _, stderr, code := sluice(t, "diff", sampleDir(t), filepath.Join(out, "back.safetensors"), "--max-abs", "0", "--ignore-metadata", "--quiet"); code != 0 {
		t.Errorf("values changed through the npz plugin (exit %d):\n%s", code, stderr)
	}
	m := readRunManifest(t, filepath.Join(out, "sample.npz"+run.ManifestSuffix))
	var rec *run.PluginRecord
	for i := range m.Plugins {
		if m.Plugins[i].Name == "npz" {
			rec = &m.Plugins[i]
		}
	}
	if rec == nil || rec.Builtin || rec.SHA256 != sum || rec.Version != "0.1.0" {
		t.Errorf("the run manifest records the npz plugin as %+v", rec)
	}

	// Another build under the installed name is not started.
	b, _ := os.ReadFile(rebuilt)
	os.WriteFile(installed, b, 0o755)
	_, stderr, code := sluice(t, "run", toNPZ, "--skip-unchanged")
	flat := strings.Join(strings.Fields(stderr), " ")
	if code != exitBadConfig || !strings.Contains(flat, "does not match the lock file") || !strings.Contains(flat, sum) || !strings.Contains(flat, fileSHA256(t, rebuilt)) {
		t.Errorf("a binary that does not match the lock: exit %d\n%s", code, stderr)
	}
	// Installing it records it; the next scheduled run notices the change.
	if list := mustRun(t, "plugins", "list", "--pipeline", toNPZ); !strings.Contains(list, "MISMATCH") {
		t.Errorf("plugins list does not flag the binary that does not match the lock:\n%s", list)
	}
	mustRun(t, "plugins", "install", rebuilt, "--pipeline", toNPZ, "--quiet")
	if stdout := mustRun(t, "run", toNPZ, "--skip-unchanged"); !strings.Contains(stdout, "the binary of plugin npz changed") {
		t.Errorf("the run after a reinstall:\n%s", stdout)
	}

	// A lock without this platform's digest refuses the plugin.
	other := &host.Lock{Path: filepath.Join(fromNPZ, host.LockFileName), Plugins: map[string]*host.LockedPlugin{
		"npz": {Name: "npz", Version: "0.1.0", SHA256: map[string]string{"plan9_arm": sum}},
	}}
	if err := other.Write(); err != nil {
		t.Fatal(err)
	}
	_, stderr, code = sluice(t, "run", fromNPZ)
	if code != exitBadConfig || !strings.Contains(stderr, "not locked for this platform") {
		t.Errorf("a lock for another platform: exit %d\n%s", code, stderr)
	}

	// A pin in the pipeline that contradicts the lock.
	pinned := writePipelineIn(t, filepath.Join(root, "pinned"), fmt.Sprintf("sluice {\n  plugin \"npz\" {\n    sha256 = %q\n  }\n}\n", strings.Repeat("ab", 32))+
		fmt.Sprintf("source \"npz\" \"arrays\" { path = %q }\nsink \"safetensors\" \"back\" {\n  input = source.arrays\n  path  = %q\n}\n", filepath.Join(out, "sample.npz"), filepath.Join(out, "pinned.safetensors")))
	mustRun(t, "plugins", "install", rebuilt, "--pipeline", filepath.Dir(pinned), "--quiet")
	_, stderr, code = sluice(t, "run", pinned)
	if code != exitBadConfig || !strings.Contains(stderr, "contradicts the lock file") {
		t.Errorf("a pin that contradicts the lock: exit %d\n%s", code, stderr)
	}
}

// Without SLUICE_PLUGIN_PATH, plugins go to and are found in the user's
// configuration directory.
func TestInstallIntoTheDefaultDirectory(t *testing.T) {
	built := goBuild(t, filepath.Join(repoRoot(t), "examples", "plugin-npz"), ".", "npz")
	config := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", config)
	t.Setenv(host.PluginPathEnv, "")
	stdout := mustRun(t, "plugins", "install", built, "--no-lock")
	want := filepath.Join(config, "sluice", "plugins", host.BinaryPrefix+"npz")
	if _, err := os.Stat(want); err != nil || !strings.Contains(stdout, want) {
		t.Fatalf("not installed at %s:\n%s", want, stdout)
	}
	if _, err := os.Stat(host.LockFileName); err == nil {
		t.Errorf("--no-lock wrote a lock file")
	}
	if list := mustRun(t, "plugins", "list"); !strings.Contains(list, want) {
		t.Errorf("plugins list does not find the default directory:\n%s", list)
	}

	// Something that is not a plugin is refused and nothing is copied.
	script := filepath.Join(t.TempDir(), "not-a-plugin")
	os.WriteFile(script, []byte("#!/bin/sh\necho hello\n"), 0o755)
	if _, stderr, code := sluice(t, "plugins", "install", script, "--no-lock"); code == 0 {
		t.Errorf("installing a script succeeded:\n%s", stderr)
	}
	entries, _ := os.ReadDir(filepath.Dir(want))
	if len(entries) != 1 {
		t.Errorf("the plugin directory holds %d files", len(entries))
	}
}

// The example plugin's own tests (the SDK's conformance kit among them) run
// in its module, which `go test ./...` here does not enter.
func TestNPZExampleModule(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the example module's tests build and run a plugin")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	cmd := exec.Command("go", "test", "-count=1", "./...")
	cmd.Dir = filepath.Join(repoRoot(t), "examples", "plugin-npz")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go test in examples/plugin-npz: %v\n%s", err, out)
	}
}
