package atomicfile

import (
	"crypto/sha256"
	"encoding/hex"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// TestDigestFollowsTheWriter writes a file in pieces, in a random order and
// from several goroutines, declares some pieces final and leaves gaps, and
// checks the digest Commit reports is the SHA-256 of the committed bytes.
func TestDigestFollowsTheWriter(t *testing.T) {
	for _, tc := range []struct {
		name  string
		final func(i int) bool // which pieces are declared final
	}{
		{"every piece final", func(int) bool { return true }},
		{"a gap holds the digest back", func(i int) bool { return i != 3 }},
		{"nothing final before commit", func(int) bool { return false }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const pieces, pieceSize = 40, 100_003
			data := make([]byte, pieces*pieceSize+17) // the tail is never written: zeros
			rng := rand.New(rand.NewPCG(1, 2))
			for i := range pieces * pieceSize {
				data[i] = byte(rng.Uint32())
			}
			out := filepath.Join(t.TempDir(), "out.bin")
			f, err := Create(out, int64(len(data)))
			if err != nil {
				t.Fatal(err)
			}
			f.StartDigest()
			f.Final(int64(pieces*pieceSize), 17)
			order := rng.Perm(pieces)
			var wg sync.WaitGroup
			for w := range 3 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for k := w; k < pieces; k += 3 {
						i := order[k]
						off := int64(i * pieceSize)
						if _, err := f.WriteAt(data[off:off+pieceSize], off); err != nil {
							t.Error(err)
							return
						}
						if tc.final(i) {
							f.Final(off, pieceSize)
						}
					}
				}()
			}
			wg.Wait()
			if err := f.Commit(); err != nil {
				t.Fatal(err)
			}
			sha, size, ok := f.Digest()
			if !ok {
				t.Fatal("no digest after Commit")
			}
			want := sha256.Sum256(data)
			if sha != hex.EncodeToString(want[:]) || size != int64(len(data)) {
				t.Fatalf("digest %s of %d bytes, want %x of %d", sha, size, want, len(data))
			}
			got, err := os.ReadFile(out)
			if err != nil || sha256.Sum256(got) != want {
				t.Fatalf("committed file differs from what was written (%v)", err)
			}
		})
	}
}

// TestDigestStopsOnAbort aborts a file whose digest waits for bytes and
// checks that nothing is left and nothing hangs.
func TestDigestStopsOnAbort(t *testing.T) {
	dir := t.TempDir()
	f, err := Create(filepath.Join(dir, "out.bin"), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	f.StartDigest()
	f.Final(0, 4096)
	if err := f.Abort(); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := f.Digest(); ok {
		t.Fatal("an aborted file reports a digest")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("Abort left %d files", len(entries))
	}
}

// TestNoDigestWithoutStart checks that a file committed without StartDigest
// reports none.
func TestNoDigestWithoutStart(t *testing.T) {
	f, err := Create(filepath.Join(t.TempDir(), "out.bin"), 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Final(0, 1) // ignored
	if _, err := f.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := f.Digest(); ok {
		t.Fatal("digest reported without StartDigest")
	}
}

func TestExtents(t *testing.T) {
	// Four pieces with padding, and an empty one where the third starts.
	got := Extents([]int64{64, 0, 32, 96, 32}, []int64{30, 20, 32, 4, 0}, 100)
	want := []int64{32, 32, 32, 4, 0}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("Extents = %v, want %v", got, want)
		}
	}
}
