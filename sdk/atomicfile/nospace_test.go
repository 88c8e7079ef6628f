//go:build linux

package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// withFileSizeLimit runs f with RLIMIT_FSIZE set to n: writes and
// reservations past n bytes fail with EFBIG (Go ignores SIGXFSZ).
func withFileSizeLimit(t *testing.T, n uint64, f func()) {
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		t.Skip(err)
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: n, Max: old.Max}); err != nil {
		t.Skip(err)
	}
	defer syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old)
	f()
}

// TestFileSizeLimitNamesTheOutput: a reservation past the file size limit
// fails as a *NoSpaceError that names the output and the bytes it needs,
// and leaves nothing behind; so does a write past it, once AsNoSpace maps
// the temporary file back to its output.
func TestFileSizeLimitNamesTheOutput(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "model.bin")
	withFileSizeLimit(t, 64<<10, func() {
		_, err := Create(out, 1<<20)
		var ns *NoSpaceError
		if !errors.As(err, &ns) || ns.Path != out || ns.Needed != 1<<20 || !errors.Is(err, syscall.EFBIG) {
			t.Fatalf("reservation: got %v", err)
		}
		for _, w := range []string{out, "1048576 bytes", "ulimit -f"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("the error lacks %q: %v", w, err)
			}
		}
		f, err := Create(out, 0)
		if err != nil {
			t.Fatal(err)
		}
		_, err = f.WriteAt(make([]byte, 128<<10), 0)
		f.Abort()
		err = AsNoSpace(err, 128<<10)
		if !errors.As(err, &ns) || ns.Path != out || ns.Needed != 128<<10 {
			t.Fatalf("write: got %v", err)
		}
	})
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("left behind: %v", entries)
	}
}

func TestFinalName(t *testing.T) {
	for temp, want := range map[string]string{
		"/d/.model.gguf.sluice-tmp-123-456": "/d/model.gguf",
		".a.sluice-tmp-1-2":                 "a",
		"/d/model.gguf":                     "",
		"/d/.sluice-tmp-1-2":                "",
	} {
		got, ok := FinalName(temp)
		if got != want || ok != (want != "") {
			t.Errorf("FinalName(%q) = %q, %v; want %q", temp, got, ok, want)
		}
	}
}
