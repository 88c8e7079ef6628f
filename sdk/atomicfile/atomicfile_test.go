package atomicfile

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/sluice-ml/sluice/internal/testwait"
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

// Writeback gathers small writes and hands out their span once they add
// up to WritebackStep, then starts over; one write of the step or more is
// handed out at once.
func TestWritebackGathersSmallWritesIntoSpans(t *testing.T) {
	const u = WritebackStep / 128
	type call struct {
		off, n     int64
		from, size int64
		due        bool
	}
	var w Writeback
	for i, c := range []call{
		{off: 100 * u, n: 10 * u},
		{off: 40 * u, n: 20 * u}, // 30 units gathered over [40, 110)
		{off: 200 * u, n: 0},     // nothing written
		{off: 300 * u, n: 98 * u, from: 40 * u, size: 358 * u, due: true}, // 128: [40, 398)
		{off: 500 * u, n: 127 * u},
		{off: 700 * u, n: u, from: 500 * u, size: 201 * u, due: true}, // anew from 500
		{off: 0, n: 250 * u, from: 0, size: 250 * u, due: true},
	} {
		if c.n == 0 {
			continue // Written ignores it
		}
		from, size, due := w.gather(c.off, c.n)
		if due != c.due || from != c.from || size != c.size {
			t.Errorf("call %d: gather(%d, %d) = %d, %d, %v; want %d, %d, %v", i, c.off, c.n, from, size, due, c.from, c.size, c.due)
		}
	}
}

// fakeDataSyncs replaces syncData for a test: each call is counted, waits
// for release (when not nil) and returns err.
func fakeDataSyncs(t *testing.T, release chan struct{}, err error) *atomic.Int32 {
	var calls atomic.Int32
	old := syncData
	syncData = func(*os.File) error {
		calls.Add(1)
		if release != nil {
			<-release
		}
		return err
	}
	t.Cleanup(func() { syncData = old })
	return &calls
}

// A file written with its writeback tracked syncs its data in the
// background once per EarlySyncStep bytes, one sync at a time, and not at
// all when it will not be synced at Commit.
func TestWritebackSyncsEarlyOneAtATime(t *testing.T) {
	if !writebackHints {
		t.Skip("no writeback hints on this system")
	}
	release := make(chan struct{})
	calls := fakeDataSyncs(t, release, nil)
	dir := t.TempDir()
	f, err := Create(filepath.Join(dir, "out"), 0)
	if err != nil {
		t.Fatal(err)
	}
	var off int64
	write := func(n int64) {
		for ; n > 0; n -= WritebackStep {
			f.Written(off, WritebackStep)
			off += WritebackStep
		}
	}
	write(EarlySyncStep - WritebackStep)
	if n := calls.Load(); n != 0 {
		t.Fatalf("%d early syncs before %d bytes were written back", n, EarlySyncStep)
	}
	write(WritebackStep)
	testwait.Until(t, "the first early sync", func() bool { return calls.Load() == 1 })
	write(3 * EarlySyncStep) // while the first one runs
	close(release)
	if err := f.writeback.Wait(); err != nil {
		t.Fatal(err)
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("%d early syncs started while one ran, want none", n-1)
	}
	write(WritebackStep) // what gathered meanwhile is due
	testwait.Until(t, "the second early sync", func() bool { return calls.Load() == 2 })
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}

	skipped, err := Create(filepath.Join(dir, "unsynced"), 0)
	if err != nil {
		t.Fatal(err)
	}
	skipped.SkipFsync()
	for off := int64(0); off < 2*EarlySyncStep; off += WritebackStep {
		skipped.Written(off, WritebackStep)
	}
	if err := skipped.Commit(); err != nil {
		t.Fatal(err)
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("%d early syncs after a file told SkipFsync, want none", n-2)
	}
}

// An early sync's error fails the Commit, and leaves nothing under the
// output's name: the final fsync would not have seen it.
func TestWritebackEarlySyncErrorFailsCommit(t *testing.T) {
	if !writebackHints {
		t.Skip("no writeback hints on this system")
	}
	fakeDataSyncs(t, nil, syscall.EIO)
	path := filepath.Join(t.TempDir(), "out")
	f, err := Create(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	for off := int64(0); off < EarlySyncStep; off += WritebackStep {
		f.Written(off, WritebackStep)
	}
	err = f.Commit()
	if !errors.Is(err, syscall.EIO) || !strings.Contains(err.Error(), "syncing "+path) {
		t.Fatalf("Commit after a failed early sync = %v, want the sync's error naming %s", err, path)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the output exists after its failed commit: %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".*")); len(left) > 0 {
		t.Errorf("left behind: %v", left)
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
