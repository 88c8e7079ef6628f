// Package clitest runs the real sluice command in tests: it builds the
// binary from this module and runs it as a child process with a time bound,
// measuring its peak memory (with its plugin processes), so a test can check
// exit codes, messages and files exactly as a user would meet them.
package clitest

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// ModuleRoot returns the directory of the go.mod above the working directory.
func ModuleRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test directory")
		}
		dir = parent
	}
}

// Build builds cmd/sluice into a temporary directory of t and returns the
// binary's path. It skips the test when the go command is unavailable.
func Build(t testing.TB) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not on PATH; cannot build sluice")
	}
	bin := filepath.Join(t.TempDir(), "sluice")
	cmd := exec.Command(goBin, "build", "-o", bin, "./cmd/sluice")
	cmd.Dir = ModuleRoot(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building sluice: %v\n%s", err, out)
	}
	return bin
}

// Result is what one run of a command gave.
type Result struct {
	Code           int
	Stdout, Stderr string
	// MaxRSS is the peak resident memory in bytes of the process and of the
	// children it waited for (its plugin processes).
	MaxRSS   int64
	Elapsed  time.Duration
	TimedOut bool
	// Signal is the signal that ended the process, if one did.
	Signal syscall.Signal
}

// Run runs bin with args in its own process group, killing the group after
// timeout. env is added to a minimal environment (PATH, HOME, TMPDIR).
func Run(bin string, timeout time.Duration, env []string, args ...string) Result {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(BaseEnv(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	r := Result{Stdout: out.String(), Stderr: errb.String(), Elapsed: time.Since(start), TimedOut: ctx.Err() != nil}
	if cmd.ProcessState != nil {
		r.Code = cmd.ProcessState.ExitCode()
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			r.MaxRSS = ru.Maxrss * 1024
		}
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			r.Signal = ws.Signal()
		}
	} else if err != nil {
		r.Code = -1
		r.Stderr += err.Error()
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) && r.Code == 0 {
		r.Code = -1
	}
	return r
}

// BaseEnv is the environment Run starts from: enough to run, nothing of the
// caller's configuration.
func BaseEnv() []string {
	var env []string
	for _, k := range []string{"PATH", "HOME", "TMPDIR", "GOCOVERDIR"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// Crashed reports whether stderr shows a Go panic or a runtime fatal error.
func Crashed(stderr string) bool {
	return strings.Contains(stderr, "panic:") || strings.Contains(stderr, "fatal error:") || strings.Contains(stderr, "goroutine ")
}
