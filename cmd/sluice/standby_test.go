package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/sluice-ml/sluice/internal/standby"
)

// TestRunServesItsPluginsFromProcessesStartedAhead runs a pipeline of three
// formats: its three plugin processes are the ones sluice started as it
// started (their command line is still `plugin standby`), the run
// completes, and no process is left. With SLUICE_STANDBY=off they are
// started as `plugin serve NAME` once the pipeline is read, and the outputs
// are the same.
func TestRunServesItsPluginsFromProcessesStartedAhead(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	if _, err := os.Stat("/proc/self/cmdline"); err != nil {
		t.Skip("no /proc to read command lines from")
	}
	dir := t.TempDir()
	run := func(out string, env []string) (cmdlines []string, files map[string][32]byte) {
		t.Helper()
		c := startSlowRun(t, out, "50ms", env)
		plugins := c.plugins()
		for _, pid := range plugins {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			if err != nil {
				continue
			}
			args := bytes.Split(bytes.TrimSuffix(b, []byte{0}), []byte{0})
			cmdlines = append(cmdlines, string(bytes.Join(args[1:], []byte(" "))))
		}
		if code := c.wait(t, time.Minute); code != 0 {
			t.Fatalf("exit %d:\n%s", code, c.stderr.String())
		}
		if alive := allGone(plugins, 10*time.Second); len(alive) > 0 {
			t.Errorf("plugin processes %v still run after sluice exited", alive)
		}
		files, temps := outputs(t, out)
		if len(temps) > 0 {
			t.Errorf("temporary files left: %v", temps)
		}
		return cmdlines, files
	}

	ahead, aheadFiles := run(filepath.Join(dir, "ahead"), nil)
	slices.Sort(ahead)
	child := fmt.Sprint(standby.ChildArgs[0], " ", standby.ChildArgs[1])
	if want := []string{child, child, child}; !slices.Equal(ahead, want) {
		t.Errorf("the plugin processes ran %q, want three processes started ahead (%q)", ahead, child)
	}

	late, lateFiles := run(filepath.Join(dir, "late"), []string{standby.EnvSwitch + "=off"})
	slices.Sort(late)
	if want := []string{"plugin serve gguf", "plugin serve safetensors", "plugin serve slowsink"}; !slices.Equal(late, want) {
		t.Errorf("with %s=off the plugin processes ran %q, want %q", standby.EnvSwitch, late, want)
	}
	if len(aheadFiles) < 2 {
		t.Fatalf("the run wrote %d files", len(aheadFiles))
	}
	for name, sum := range aheadFiles {
		if lateFiles[name] != sum {
			t.Errorf("%s differs between the runs", name)
		}
	}
}
