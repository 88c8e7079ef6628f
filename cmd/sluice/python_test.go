package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/sluice-ml/sluice/core/host"
)

// pythonWith returns a python3 on PATH that imports every module, or skips.
func pythonWith(t *testing.T, modules string) string {
	t.Helper()
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		py := filepath.Join(dir, "python3")
		if fi, err := os.Stat(py); err != nil || fi.IsDir() {
			continue
		}
		if exec.Command(py, "-c", "import "+modules).Run() == nil {
			return py
		}
	}
	t.Skipf("no python3 on PATH imports %s (Debian: apt-get install python3-grpcio python3-protobuf python3-cryptography)", modules)
	return ""
}

// The Python plugin speaks the protocol with grpcio alone: the sample goes
// through its sink and back through its source unchanged, and its errors
// keep their kind.
func TestPythonPlugin(t *testing.T) {
	py := pythonWith(t, "grpc, cryptography, google.protobuf.internal.builder")
	script := filepath.Join(repoRoot(t), "examples", "plugin-python", "sluice_plugin_pydir.py")
	plugins := t.TempDir()
	wrapper := filepath.Join(plugins, host.BinaryPrefix+"pydir")
	if err := os.WriteFile(wrapper, []byte(fmt.Sprintf("#!/bin/sh\nexec %q %q \"$@\"\n", py, script)), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(host.PluginPathEnv, plugins)
	work := t.TempDir()
	dir := filepath.Join(work, "pydir")
	back := filepath.Join(work, "back.safetensors")
	write := writePipeline(t, fmt.Sprintf("source \"safetensors\" \"hf\" { path = %q }\nsink \"pydir\" \"py\" {\n  input = source.hf\n  path  = %q\n}\n", sampleDir(t), dir))
	read := writePipeline(t, fmt.Sprintf("source \"pydir\" \"py\" { path = %q }\nsink \"safetensors\" \"back\" {\n  input = source.py\n  path  = %q\n}\n", dir, back))
	mustRun(t, "run", write, "--quiet")
	mustRun(t, "run", read, "--quiet")
	if _, stderr, code := sluice(t, "diff", sampleDir(t), back, "--strict", "--ignore-metadata", "--quiet"); code != 0 {
		t.Errorf("the sample changed through the Python plugin (exit %d):\n%s", code, stderr)
	}
	os.WriteFile(filepath.Join(dir, "manifest.json"), []byte(`{"tensors": 5}`), 0o644)
	if _, stderr, code := sluice(t, "run", read, "--quiet"); code != exitBadInput {
		t.Errorf("a damaged pydir: exit %d, want %d\n%s", code, exitBadInput, stderr)
	}
}
