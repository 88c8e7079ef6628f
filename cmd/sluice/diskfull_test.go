package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// tmpfsEnv names, for the test binary run as the CLI (runAsCLI), a
// directory to mount a tiny tmpfs on first — inside the user and mount
// namespace the test starts it in: DIR:SIZE.
const tmpfsEnv = "SLUICE_TEST_TMPFS"

// runAsCLI is main for the test binary run as the sluice command.
func runAsCLI() int {
	dir := ""
	if v := os.Getenv(tmpfsEnv); v != "" {
		d, size, _ := strings.Cut(v, ":")
		if err := syscall.Mount("tmpfs", d, "tmpfs", 0, "size="+size); err != nil {
			fmt.Fprintln(os.Stderr, "SETUP:", err)
			return 99
		}
		dir = d
	}
	code := runMain(os.Args[1:], os.Stdout, os.Stderr)
	if dir != "" {
		// The tmpfs vanishes with the namespace: say what is left on it.
		entries, _ := os.ReadDir(dir)
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		fmt.Fprintf(os.Stderr, "LEFT ON THE DEVICE: %q\n", names)
	}
	return code
}

// diskFullPipeline writes a pipeline with one sink into out: gguf reserves
// its file's space in Begin; filesink does not, so its failure comes in the
// middle of a write. extra adds sink attributes.
func diskFullPipeline(t *testing.T, sink, out, extra string) string {
	p := filepath.Join(t.TempDir(), "pipeline.hcl")
	os.WriteFile(p, []byte(fmt.Sprintf(`
source "safetensors" "hf" { path = %q }
sink %q "out" {
  input = source.hf
  path  = "%s/model.bin"
  %s
}
`, filepath.Join(repoRoot(t), "testdata", "sample"), sink, out, extra)), 0o644)
	return p
}

// checkDiskFull checks a run that ran out of space: exit 1, one error that
// names the output and the bytes it needs, nothing left.
func checkDiskFull(t *testing.T, c *child, code int, out, limit string) {
	t.Helper()
	stderr := c.stderr.String()
	if strings.Contains(stderr, "SETUP:") {
		t.Skipf("cannot simulate a full disk here: %s", stderr)
	}
	if code != exitInternal {
		t.Fatalf("exit %d, want %d:\n%s", code, exitInternal, stderr)
	}
	for _, w := range []string{filepath.Join(out, "model.bin"), limit, "it needs", "bytes", "nothing was left under its name", "Hint: free space on the device"} {
		if !strings.Contains(stderr, w) {
			t.Errorf("the error lacks %q:\n%s", w, stderr)
		}
	}
	if strings.Contains(stderr, "sluice-tmp") {
		t.Errorf("the error names the temporary file, not the output:\n%s", stderr)
	}
	t.Logf("%s", stderr)
}

// TestSimulatedFullDiskAbortsCleanly runs everywhere: the filesink plugin's
// writes fail with ENOSPC past 64 KiB, as a full disk makes os.File's fail
// (a fault-injecting writer in the plugin process). The error crosses the
// plugin protocol; the run aborts every sink, names the output (not the
// temporary file) and the bytes it needs, and leaves nothing.
// (sdk/atomicfile's tests cover a reservation that fails, with RLIMIT_FSIZE.)
func TestSimulatedFullDiskAbortsCleanly(t *testing.T) {
	out := t.TempDir()
	c := startCLI(t, nil, "run", diskFullPipeline(t, "filesink", out, "device_size = 65536"), "--quiet")
	code := c.wait(t, time.Minute)
	checkDiskFull(t, c, code, out, "no space left on the device")
	if entries, _ := os.ReadDir(out); len(entries) != 0 {
		t.Errorf("left behind: %v", entries)
	}
}

// TestNoSpaceAbortsCleanly runs out of space for real: the CLI and its
// plugins run in a user and mount namespace with a 128 KiB tmpfs as the
// output directory. It skips where unprivileged user namespaces are off
// (TestFileSizeLimitAbortsCleanly covers the same paths everywhere).
func TestNoSpaceAbortsCleanly(t *testing.T) {
	for _, sink := range []string{"gguf", "filesink"} {
		t.Run(sink, func(t *testing.T) {
			out := t.TempDir()
			c := &child{done: make(chan struct{})}
			c.cmd = execSelf("run", diskFullPipeline(t, sink, out, ""), "--quiet")
			c.cmd.Env = append(c.cmd.Env, tmpfsEnv+"="+out+":128k")
			c.cmd.SysProcAttr = &syscall.SysProcAttr{
				Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS,
				UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
				GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
			}
			c.cmd.Stderr = &c.stderr
			c.cmd.Stdout = &c.out
			if err := c.cmd.Start(); err != nil {
				t.Skipf("cannot start a process in a user namespace: %v", err)
			}
			go func() { c.cmd.Wait(); close(c.done) }()
			code := c.wait(t, time.Minute)
			checkDiskFull(t, c, code, out, "no space left on the device")
			if !strings.Contains(c.stderr.String(), `LEFT ON THE DEVICE: []`) {
				t.Errorf("files left on the full device:\n%s", c.stderr.String())
			}
		})
	}
}
