package atomicfile

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/sluice-ml/sluice/internal/testwait"
)

// recordDrops replaces dropCached for a test: each call's end is recorded,
// and the pages are dropped as they would be when really is set.
func recordDrops(t *testing.T, really bool) func() []int64 {
	var mu sync.Mutex
	var ends []int64
	old := dropCached
	dropCached = func(f *os.File, end int64) {
		mu.Lock()
		ends = append(ends, end)
		mu.Unlock()
		if really {
			old(f, end)
		}
	}
	t.Cleanup(func() { dropCached = old })
	return func() []int64 {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(ends)
	}
}

// Each early sync drops the pages before the furthest bytes whose
// writeback had started when it began, and before what the file's
// followers have still to read: nothing while a digest waits for its first
// bytes or was relayed to another process, which reads the file from the
// start.
func TestEarlySyncsDropWhatNobodyReads(t *testing.T) {
	if !writebackHints {
		t.Skip("no writeback hints on this system")
	}
	fakeDataSyncs(t, nil, nil)
	writeBack := func(f *File, from, to int64) {
		for off := from; off < to; off += WritebackStep {
			f.Written(off, WritebackStep)
			if err := f.writeback.Wait(); err != nil { // one sync ends before the next is due
				t.Fatal(err)
			}
		}
	}
	dir := t.TempDir()
	create := func(t *testing.T, name string) *File {
		f, err := Create(filepath.Join(dir, name), 0)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}

	t.Run("no followers", func(t *testing.T) {
		drops := recordDrops(t, false)
		f := create(t, "plain")
		writeBack(f, 0, 2*EarlySyncStep)
		if err := f.Commit(); err != nil {
			t.Fatal(err)
		}
		if got, want := drops(), []int64{EarlySyncStep, 2 * EarlySyncStep}; !slices.Equal(got, want) {
			t.Errorf("early syncs dropped up to %v, want %v", got, want)
		}
	})

	t.Run("a digest that has read nothing", func(t *testing.T) {
		drops := recordDrops(t, false)
		f := create(t, "waiting")
		f.StartDigest() // nothing is final: it reads nothing before Commit
		writeBack(f, 0, 2*EarlySyncStep)
		if got := drops(); len(got) != 0 {
			t.Errorf("early syncs dropped up to %v before the digest read a byte", got)
		}
		f.Abort()
	})

	t.Run("a digest part of the way", func(t *testing.T) {
		drops := recordDrops(t, false)
		f := create(t, "hashing")
		const hashed = 3 * digestRead
		if _, err := f.WriteAt(bytes.Repeat([]byte{7}, hashed), 0); err != nil {
			t.Fatal(err)
		}
		f.StartDigest()
		f.Final(0, hashed)
		testwait.Until(t, "the digest to read the final bytes", func() bool { return f.dig.ReadFront() == hashed })
		writeBack(f, 0, EarlySyncStep)
		if got, want := drops(), []int64{hashed}; !slices.Equal(got, want) {
			t.Errorf("early syncs dropped up to %v, want %v: the digest read no further", got, want)
		}
		f.Abort()
	})

	t.Run("kept cached", func(t *testing.T) {
		drops := recordDrops(t, false)
		f := create(t, "kept")
		f.KeepCached() // its writer reads it back at Commit
		writeBack(f, 0, 2*EarlySyncStep)
		if got := drops(); len(got) != 0 {
			t.Errorf("early syncs dropped up to %v of a file told KeepCached", got)
		}
		f.Abort()
	})

	t.Run("a relayed digest", func(t *testing.T) {
		drops := recordDrops(t, false)
		f := create(t, "relayed")
		f.StartDigest()
		f.RelayDigest(func(int64) {})
		f.Final(0, 2*EarlySyncStep)
		writeBack(f, 0, 2*EarlySyncStep)
		if got := drops(); len(got) != 0 {
			t.Errorf("early syncs dropped up to %v of a file whose digest another reader computes", got)
		}
		f.Abort()
	})
}
