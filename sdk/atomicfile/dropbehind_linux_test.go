package atomicfile

import (
	"crypto/sha256"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sluice-ml/sluice/internal/pagecache"
)

// A file written past an early sync leaves the pages that sync made
// durable out of the page cache, and every byte on the disk.
func TestDropBehindLeavesThePagesOnDisk(t *testing.T) {
	if !writebackHints {
		t.Skip("no writeback hints on this system")
	}
	dir := t.TempDir()
	pagecache.SkipUnlessDropping(t, dir)
	drops := recordDrops(t, true)
	const size = EarlySyncStep + WritebackStep
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(i*131 + i>>20)
	}
	path := filepath.Join(dir, "out")
	f, err := Create(path, size)
	if err != nil {
		t.Fatal(err)
	}
	const piece = 1 << 20
	for off := int64(0); off < size; off += piece {
		if _, err := f.WriteAt(data[off:off+piece], off); err != nil {
			t.Fatal(err)
		}
		f.Written(off, piece)
	}
	if err := f.writeback.Wait(); err != nil {
		t.Fatal(err)
	}
	if got := drops(); !slices.Equal(got, []int64{EarlySyncStep}) {
		t.Fatalf("the early sync dropped up to %v, want [%d]: what was written back when it began", got, EarlySyncStep)
	}
	if n := residentPages(t, f.File, EarlySyncStep); n > 0 {
		t.Errorf("%d pages of the file's first %d bytes still cached after the early sync dropped them", n, EarlySyncStep)
	}
	if n := residentPages(t, f.File, size); n == 0 {
		t.Error("no page written after the early sync is cached: the test sees nothing")
	}
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if sha256.Sum256(got) != sha256.Sum256(data) {
		t.Fatal("the file read back from the disk differs from what was written")
	}
}

// residentPages returns how many of the pages of f's first n bytes are in
// the page cache.
func residentPages(t *testing.T, f *os.File, n int64) int {
	t.Helper()
	r, err := pagecache.Resident(f, n)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
