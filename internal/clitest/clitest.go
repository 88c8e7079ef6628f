// Package clitest runs the real sluice command in tests: it builds the
// binary from this module and runs it as a child process with a time bound,
// measuring its peak memory (with its plugin processes), so a test can check
// exit codes, messages and files exactly as a user would meet them.
package clitest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-ml/sluice/internal/refdata"
)

// ModuleRoot returns the directory of the go.mod above the working directory.
func ModuleRoot(t testing.TB) string {
	t.Helper()
	return refdata.ModuleRoot(t)
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
	// MaxRSS is the largest peak resident memory (VmHWM) in bytes of the
	// process and of every process it started (its plugins), sampled every
	// few milliseconds; 0 where /proc is not available. (The rusage of a
	// child cannot be used: on Linux it starts from the high-water mark of
	// the test process that forked it.)
	MaxRSS int64
	// TotalRSS is the sum of those peaks. It counts the pages the processes
	// share (the binary, the shared arena) once per process.
	TotalRSS int64
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
	err := cmd.Start()
	var peak, total int64
	if err == nil {
		done := make(chan struct{})
		watched := make(chan [2]int64)
		go func() { p, t := watchRSS(cmd.Process.Pid, done); watched <- [2]int64{p, t} }()
		err = cmd.Wait()
		close(done)
		w := <-watched
		peak, total = w[0], w[1]
	}
	r := Result{Stdout: out.String(), Stderr: errb.String(), Elapsed: time.Since(start), TimedOut: ctx.Err() != nil, MaxRSS: peak, TotalRSS: total}
	if cmd.ProcessState != nil {
		r.Code = cmd.ProcessState.ExitCode()
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
// caller's configuration. XDG_CACHE_HOME is passed on so that a test binary
// that points it at a directory of its own keeps the runs' input digest
// cache out of the user's.
func BaseEnv() []string {
	var env []string
	for _, k := range []string{"PATH", "HOME", "TMPDIR", "GOCOVERDIR", "XDG_CACHE_HOME"} {
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

// watchRSS samples the peak resident memory (VmHWM, a high-water mark, so a
// late sample still sees an early peak) of pid and its descendants until
// done is closed, and returns the largest peak and the sum of the peaks.
func watchRSS(pid int, done <-chan struct{}) (largest, sum int64) {
	peaks := map[int]int64{}
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		for _, p := range Descendants(pid) {
			if hwm := vmHWM(p); hwm > peaks[p] {
				peaks[p] = hwm
			}
		}
		select {
		case <-done:
			for _, v := range peaks {
				sum += v
				largest = max(largest, v)
			}
			return largest, sum
		case <-tick.C:
		}
	}
}

// Descendants returns pid and every process below it, through
// /proc/PID/task/TID/children (Linux).
func Descendants(pid int) []int {
	out := []int{pid}
	for i := 0; i < len(out); i++ {
		tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", out[i]))
		for _, task := range tasks {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", out[i], task.Name()))
			if err != nil {
				continue
			}
			for _, f := range strings.Fields(string(b)) {
				if c, err := strconv.Atoi(f); err == nil {
					out = append(out, c)
				}
			}
		}
	}
	return out
}

// vmHWM reads a process's peak resident set size in bytes, or 0.
func vmHWM(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb * 1024
		}
	}
	return 0
}

// Running reports whether pid is a running process: it exists and is not a
// zombie waiting for its parent to reap it.
func Running(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) == 0 || f[0] != "Z"
}
