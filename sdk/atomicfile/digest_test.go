package atomicfile

import (
	"crypto/sha256"
	"encoding/hex"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/sluice-ml/sluice/internal/testwait"
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

// TestRelayedDigestTellsHowFarTheBytesAreFinal hands a file's digest over
// after its first piece is final, then checks that the relay hears every
// advance of the final bytes and nothing past them, that a follower
// started elsewhere on the same file (NewFollower, told what the relay
// heard) computes the file's SHA-256, and that the file itself then reports
// no digest.
func TestRelayedDigestTellsHowFarTheBytesAreFinal(t *testing.T) {
	const pieces, pieceSize = 8, 300_007
	data := make([]byte, pieces*pieceSize)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	out := filepath.Join(t.TempDir(), "out.bin")
	f, err := Create(out, int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	f.StartDigest()
	if _, err := f.WriteAt(data[:pieceSize], 0); err != nil {
		t.Fatal(err)
	}
	f.Final(0, pieceSize)

	r, err := os.Open(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	host := NewFollower(r, out, sha256.New(), 0)
	heard := make(chan int64, 2*pieces)
	var last int64 = -1
	if !f.RelayDigest(func(end int64) {
		host.Final(0, end)
		heard <- end
	}) {
		t.Fatal("RelayDigest refused a file whose digest runs")
	}
	if got := <-heard; got != pieceSize {
		t.Fatalf("RelayDigest first told %d, want %d, the final bytes then", got, pieceSize)
	}
	if f.RelayDigest(func(int64) {}) {
		t.Error("a second RelayDigest was taken")
	}
	// The rest, last piece first: the final bytes end where the first gap
	// begins, so nothing is relayed until the second piece is written.
	for i := pieces - 1; i >= 1; i-- {
		off := int64(i * pieceSize)
		if _, err := f.WriteAt(data[off:off+pieceSize], off); err != nil {
			t.Fatal(err)
		}
		f.Final(off, pieceSize)
	}
	for last != int64(len(data)) {
		end := <-heard
		if end <= last || end > int64(len(data)) {
			t.Fatalf("relayed %d after %d, in a file of %d bytes", end, last, len(data))
		}
		if end != pieceSize && end != int64(len(data)) {
			t.Fatalf("relayed %d: the bytes were final up to %d, then up to %d", end, pieceSize, len(data))
		}
		last = end
	}
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := f.Digest(); ok {
		t.Error("a file whose digest was relayed reported one")
	}
	if err := host.Finish(int64(len(data))); err != nil {
		t.Fatal(err)
	}
	want := sha256.Sum256(data)
	if got := host.Sum(nil); hex.EncodeToString(got) != hex.EncodeToString(want[:]) {
		t.Errorf("the follower computed %x, the file's SHA-256 is %x", got, want)
	}
}

// TestRelayDigestWithoutADigest checks that a file with no digest, or one
// that has ended, relays nothing.
func TestRelayDigestWithoutADigest(t *testing.T) {
	dir := t.TempDir()
	f, err := Create(filepath.Join(dir, "plain"), 10)
	if err != nil {
		t.Fatal(err)
	}
	called := false
	if f.RelayDigest(func(int64) { called = true }) || called {
		t.Error("a file without a digest relayed one")
	}
	f.Abort()
	g, err := Create(filepath.Join(dir, "ended"), 10)
	if err != nil {
		t.Fatal(err)
	}
	g.StartDigest()
	if err := g.Commit(); err != nil {
		t.Fatal(err)
	}
	if g.RelayDigest(func(int64) { called = true }) || called {
		t.Error("a committed file relayed its digest")
	}
}

// TestDigestReadsWholePieces checks that the follower hashes only whole
// reads until Commit tells it the end: a header smaller than a read waits
// for the bytes after it, and the digest is the file's all the same.
func TestDigestReadsWholePieces(t *testing.T) {
	data := make([]byte, 2*digestRead+300)
	for i := range data {
		data[i] = byte(i * 7)
	}
	f, err := Create(filepath.Join(t.TempDir(), "out.bin"), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	f.StartDigest()
	hashed := func() int64 { return f.dig.hashed.Load() }
	write := func(off, n int) {
		if _, err := f.WriteAt(data[off:off+n], int64(off)); err != nil {
			t.Fatal(err)
		}
		f.Final(int64(off), int64(n))
	}
	write(0, 300) // a header
	write(300, digestRead)
	testwait.Until(t, "the first whole read hashed", func() bool { return hashed() == digestRead })
	write(300+digestRead, digestRead)
	testwait.Until(t, "the second whole read hashed", func() bool { return hashed() == 2*digestRead })
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	sha, n, ok := f.Digest()
	want := sha256.Sum256(data)
	if !ok || n != int64(len(data)) || sha != hex.EncodeToString(want[:]) {
		t.Errorf("digest %s of %d bytes (ok %v), want %x of %d", sha, n, ok, want, len(data))
	}
}
