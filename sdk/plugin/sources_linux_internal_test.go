//go:build linux

package plugin

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluice-ml/sluice/sdk/atomicfile"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// kept returns the paths an output keeps open, oldest first.
func kept(dst OutputFile) []string {
	outputSources.mu.Lock()
	fs := outputSources.byOf[dst]
	outputSources.mu.Unlock()
	if fs == nil {
		return nil
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	var paths []string
	for _, s := range fs.files {
		paths = append(paths, s.path)
	}
	return paths
}

// isClosed reports whether f was closed (os.File.Fd returns ^uintptr(0)
// then).
func isClosed(f *os.File) bool { return f.Fd() == ^uintptr(0) }

// An output keeps the sources of its file references open between copies,
// the last keptSources of them, and closes them when it is committed or
// aborted, a copy still running keeping its own open until it ends. The
// bytes copied are the references' bytes throughout.
func TestOutputsKeepTheirSourcesOpen(t *testing.T) {
	dir := t.TempDir()
	var sources []string
	for i, name := range []string{"a", "b", "c"} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, bytes.Repeat([]byte{byte('a' + i)}, 64), 0o644); err != nil {
			t.Fatal(err)
		}
		sources = append(sources, p)
	}
	for _, end := range []string{"commit", "abort"} {
		out, err := atomicfile.Create(filepath.Join(dir, "out-"+end), 6*16)
		if err != nil {
			t.Fatal(err)
		}
		copyAt := func(i int, src string) {
			t.Helper()
			if err := CopyToFile(out, int64(16*i), FileData(tensor.FileRef{Path: src, Offset: 8, Length: 16})); err != nil {
				t.Fatal(err)
			}
		}
		copyAt(0, sources[0])
		copyAt(1, sources[0])
		first, done, err := openSource(out, sources[0])
		if err != nil {
			t.Fatal(err)
		}
		done()
		if got := kept(out); len(got) != 1 || got[0] != sources[0] {
			t.Fatalf("%s: after two copies from a, the output keeps %v", end, got)
		}
		copyAt(2, sources[1])
		copyAt(3, sources[2]) // a, the oldest, is closed for c
		if got := kept(out); len(got) != 2 || got[0] != sources[1] || got[1] != sources[2] {
			t.Fatalf("%s: after copies from a, b and c, the output keeps %v", end, got)
		}
		if !isClosed(first) {
			t.Fatalf("%s: a was not closed when c took its place", end)
		}
		copyAt(4, sources[1]) // b again, from the file kept open
		running, done, err := openSource(out, sources[2])
		if err != nil {
			t.Fatal(err)
		}
		copyAt(5, sources[2])
		var keptOpen []*os.File
		fs := outputSources.byOf[out]
		for _, s := range fs.files {
			keptOpen = append(keptOpen, s.f)
		}
		if end == "commit" {
			err = out.Commit()
		} else {
			err = out.Abort()
		}
		if err != nil {
			t.Fatal(err)
		}
		if got := kept(out); got != nil {
			t.Fatalf("%s: the ended output still keeps %v", end, got)
		}
		for _, f := range keptOpen {
			if f != running && !isClosed(f) {
				t.Errorf("%s: %s is still open after the output ended", end, f.Name())
			}
		}
		if isClosed(running) {
			t.Fatalf("%s: c was closed under a copy still running", end)
		}
		done()
		if !isClosed(running) {
			t.Fatalf("%s: c stayed open after its last copy ended", end)
		}
		if end == "commit" {
			got, err := os.ReadFile(filepath.Join(dir, "out-commit"))
			if err != nil {
				t.Fatal(err)
			}
			want := []byte("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaabbbbbbbbbbbbbbbbccccccccccccccccbbbbbbbbbbbbbbbbcccccccccccccccc")
			if !bytes.Equal(got, want) {
				t.Fatalf("output %q, want %q", got, want)
			}
		}
	}
}
