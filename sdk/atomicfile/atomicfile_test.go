package atomicfile

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

func TestCommitRenamesAndAbortRemoves(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "model.bin")
	f, err := Create(out, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Fatalf("final name exists before commit: %v", err)
	}
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil || string(b) != "hello" {
		t.Fatalf("after commit: %q, %v", b, err)
	}

	g, err := Create(filepath.Join(dir, "other.bin"), 1024)
	if err != nil {
		t.Fatal(err)
	}
	tmp := g.Name()
	if err := g.Abort(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Fatalf("temporary file survives Abort: %v", err)
	}
	if err := g.Abort(); err != nil {
		t.Fatalf("second Abort: %v", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("directory holds %d entries, want only model.bin", len(entries))
	}
}

func TestCleanStaleRemovesDeadProcessesFilesOnly(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "m.gguf")
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skip("no `true` command to obtain a dead pid")
	}
	dead := cmd.Process.Pid
	stale := filepath.Join(dir, ".m.gguf"+tmpMarker+strconv.Itoa(dead)+"-123")
	live := filepath.Join(dir, ".m.gguf"+tmpMarker+strconv.Itoa(os.Getppid())+"-456")
	for _, p := range []string{stale, live} {
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	removed := CleanStale(out)
	if len(removed) != 1 || removed[0] != stale {
		t.Fatalf("removed %v, want only %s", removed, stale)
	}
	if _, err := os.Stat(live); err != nil {
		t.Fatalf("a live process's temp file was removed: %v", err)
	}
}

func TestAbortAllRemovesEveryFile(t *testing.T) {
	dir := t.TempDir()
	var files []*File
	for _, name := range []string{"a.bin", "b.bin"} {
		f, err := Create(filepath.Join(dir, name), 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	if err := AbortAll(files[0], nil, files[1]); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("%d files left after AbortAll", len(entries))
	}
}

// TestSkipFsync counts the syncs of a commit with and without SkipFsync.
func TestSkipFsync(t *testing.T) {
	calls := 0
	defer func(orig func(*os.File) error) { fsync = orig }(fsync)
	fsync = func(f *os.File) error { calls++; return f.Sync() }
	dir := t.TempDir()
	for _, skip := range []bool{false, true} {
		calls = 0
		out := filepath.Join(dir, "out-"+strconv.FormatBool(skip))
		f, err := Create(out, 4)
		if err != nil {
			t.Fatal(err)
		}
		if skip {
			f.SkipFsync()
		}
		if f.Fsyncs() == skip {
			t.Errorf("skip %v: Fsyncs() = %v", skip, f.Fsyncs())
		}
		if _, err := f.WriteAt([]byte("data"), 0); err != nil {
			t.Fatal(err)
		}
		if err := f.Commit(); err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(out); err != nil || string(b) != "data" {
			t.Fatalf("skip %v: committed %q, %v", skip, b, err)
		}
		if want := map[bool]int{false: 2, true: 0}[skip]; calls != want {
			t.Errorf("skip %v: %d syncs, want %d (the file and its directory, or none)", skip, calls, want)
		}
	}
}

// Dirty gathers small writes and hands out their span once they add up to
// the step, then starts over; one write of the step or more is handed out
// at once.
func TestDirtyGathersSmallWritesIntoSpans(t *testing.T) {
	f, err := Create(filepath.Join(t.TempDir(), "out"), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Abort()
	type call struct {
		off, n     int64
		from, size int64
		due        bool
	}
	for i, c := range []call{
		{off: 100, n: 10},
		{off: 40, n: 20}, // 30 bytes gathered over [40, 110)
		{off: 200, n: 0}, // nothing written
		{off: 300, n: 70, from: 40, size: 330, due: true}, // 100: [40, 370)
		{off: 500, n: 99},
		{off: 600, n: 1, from: 500, size: 101, due: true}, // anew from 500
		{off: 0, n: 250, from: 0, size: 250, due: true},
	} {
		from, size, due := f.Dirty(c.off, c.n, 100)
		if due != c.due || from != c.from || size != c.size {
			t.Errorf("call %d: Dirty(%d, %d) = %d, %d, %v; want %d, %d, %v", i, c.off, c.n, from, size, due, c.from, c.size, c.due)
		}
	}
}

// OnDone's functions run once, when the file is committed or aborted,
// whichever ends it; one given after the end runs at once.
func TestOnDoneRunsOnceAtTheEnd(t *testing.T) {
	dir := t.TempDir()
	for _, end := range []string{"commit", "abort", "failed commit"} {
		f, err := Create(filepath.Join(dir, end), 0)
		if err != nil {
			t.Fatal(err)
		}
		runs := 0
		f.OnDone(func() { runs++ })
		if runs != 0 {
			t.Fatalf("%s: ran before the end", end)
		}
		switch end {
		case "commit":
			err = f.Commit()
		case "abort":
			err = f.Abort()
		case "failed commit": // the final name is a directory: the rename fails
			if err := os.Mkdir(filepath.Join(dir, end), 0o755); err != nil {
				t.Fatal(err)
			}
			if f.Commit() == nil {
				t.Fatal("a commit onto a directory succeeded")
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		f.Abort() // after the end: nothing more runs
		if runs != 1 {
			t.Fatalf("%s: ran %d times, want once", end, runs)
		}
		late := false
		f.OnDone(func() { late = true })
		if !late {
			t.Fatalf("%s: a function given after the end did not run", end)
		}
	}
}
