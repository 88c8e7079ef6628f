//go:build linux

package standby

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestMain runs this test binary as a process started ahead when it is
// given ChildArgs: it waits, then prints what it was told and what its
// descriptor 3 holds, and writes "written" to its descriptor 4.
func TestMain(m *testing.M) {
	if IsChild(os.Args[1:]) {
		args, err := Await()
		if errors.Is(err, ErrNotNeeded) {
			os.Exit(0)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		held, err := io.ReadAll(os.NewFile(3, "three"))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(4)
		}
		if _, err := os.NewFile(4, "four").WriteString("written"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(5)
		}
		fmt.Printf("args=%q value=%q path=%q fd3=%q\n", args, os.Getenv("STANDBY_TEST_VALUE"), os.Getenv("PATH"), held)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func testBinary(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// waitExit waits for p to exit, failing the test after a minute.
func waitExit(t *testing.T, p *Process) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- p.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(time.Minute):
		p.Kill()
		t.Fatal("the process did not exit")
		return nil
	}
}

func TestStartRunsTheCommandWithItsEnvironmentAndFiles(t *testing.T) {
	p, err := Spawn(testBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	held := filepath.Join(t.TempDir(), "held")
	if err := os.WriteFile(held, []byte("arena bytes"), 0o644); err != nil {
		t.Fatal(err)
	}
	f3, err := os.Open(held)
	if err != nil {
		t.Fatal(err)
	}
	defer f3.Close()
	r4, w4, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r4.Close()
	args := []string{"plugin", "serve", "gguf"}
	env := []string{"STANDBY_TEST_VALUE=a=b c", "PATH=/nowhere"}
	if err := p.Start(args, env, []*os.File{f3, w4}); err != nil {
		t.Fatal(err)
	}
	w4.Close() // the process has its own copy
	out, err := io.ReadAll(p.Stdout())
	if err != nil {
		t.Fatal(err)
	}
	stderr, _ := io.ReadAll(p.Stderr())
	if err := waitExit(t, p); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	want := fmt.Sprintf("args=%q value=%q path=%q fd3=%q\n", args, "a=b c", "/nowhere", "arena bytes")
	if string(out) != want {
		t.Errorf("the process printed %q, want %q", out, want)
	}
	written, err := io.ReadAll(r4)
	if err != nil || string(written) != "written" {
		t.Errorf("descriptor 4 got %q (%v), want %q", written, err, "written")
	}
}

func TestAnAbandonedProcessExits(t *testing.T) {
	p, err := Spawn(testBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	p.Abandon()
	if err := waitExit(t, p); err != nil {
		t.Errorf("an abandoned process exited with %v, want status 0", err)
	}
}

func TestStartOfAnEndedProcessIsErrGone(t *testing.T) {
	p, err := Spawn(testBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := waitExit(t, p); err == nil {
		t.Fatal("a killed process exited with status 0")
	}
	err = p.Start([]string{"plugin", "serve", "gguf"}, nil, nil)
	if !errors.Is(err, ErrGone) {
		t.Fatalf("Start of a killed process: %v, want ErrGone", err)
	}
	if !strings.Contains(err.Error(), "standby process") {
		t.Errorf("error %q does not say what failed", err)
	}
}

func TestTakeHandsOutEachProcessOnceAndReleaseEndsTheRest(t *testing.T) {
	exe := testBinary(t)
	startAhead(exe, 3)
	mu.Lock()
	all := slices.Clone(waiting)
	mu.Unlock()
	if len(all) != 3 {
		t.Fatalf("%d processes waiting, want 3", len(all))
	}
	if p := Take(exe + ".other"); p != nil {
		t.Error("Take of another binary returned a process")
	}
	a, b := Take(exe), Take(exe)
	if a == nil || b == nil || a == b {
		t.Fatalf("Take twice: %p and %p, want two processes", a, b)
	}
	a.Abandon()
	b.Abandon()
	Release()
	if p := Take(exe); p != nil {
		t.Error("Take after Release returned a process")
	}
	for _, p := range all {
		if err := waitExit(t, p); err != nil {
			t.Errorf("pid %d: %v, want status 0", p.Pid(), err)
		}
	}
}

func TestStartMessageRoundTrips(t *testing.T) {
	args := []string{"plugin", "serve", "", "x=y"}
	env := []string{"A=1", "B=", "C=with\nnewline"}
	body, err := encodeStart(args, env)
	if err != nil {
		t.Fatal(err)
	}
	gotArgs, gotEnv, err := decodeStart(body)
	if err != nil || !slices.Equal(gotArgs, args) || !slices.Equal(gotEnv, env) {
		t.Errorf("decodeStart = %q, %q, %v; want %q, %q", gotArgs, gotEnv, err, args, env)
	}
	if _, err := encodeStart([]string{"a\x00b"}, nil); err == nil {
		t.Error("an argument holding a NUL was encoded")
	}
	for _, bad := range []string{"", "x", "2\x00a\x00", "-1\x00", "x\x00"} {
		if _, _, err := decodeStart([]byte(bad)); err == nil {
			t.Errorf("decodeStart(%q) accepted it", bad)
		}
	}
}

// FuzzDecodeStart checks that any message decodes without a panic, and that
// what decodes encodes back to the same message.
func FuzzDecodeStart(f *testing.F) {
	f.Add([]byte("3\x00plugin\x00serve\x00gguf\x00A=1\x00"))
	f.Add([]byte("0\x00"))
	f.Add([]byte("9\x00a\x00"))
	f.Fuzz(func(t *testing.T, body []byte) {
		args, env, err := decodeStart(body)
		if err != nil {
			return
		}
		again, err := encodeStart(args, env)
		if err != nil {
			t.Fatalf("decoded %q, %q does not encode: %v", args, env, err)
		}
		a2, e2, err := decodeStart(again)
		if err != nil || !slices.Equal(a2, args) || !slices.Equal(e2, env) {
			t.Fatalf("round trip of %q: %q, %q, %v", body, a2, e2, err)
		}
	})
}
