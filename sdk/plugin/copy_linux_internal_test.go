//go:build linux

package plugin

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/sluice-ml/sluice/internal/testwait"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// countCopyCalls counts the copy_file_range calls of a test.
func countCopyCalls(t *testing.T) *atomic.Int32 {
	var calls atomic.Int32
	old := copyFileRangeCall
	copyFileRangeCall = func(rfd int, roff *int64, wfd int, woff *int64, n int, flags int) (int, error) {
		calls.Add(1)
		return old(rfd, roff, wfd, woff, n, flags)
	}
	t.Cleanup(func() { copyFileRangeCall = old })
	return &calls
}

// randomFile writes n random bytes to a file of dir and returns its path
// and bytes.
func randomFile(t *testing.T, dir, name string, n int) (string, []byte) {
	b := make([]byte, n)
	r := rand.NewChaCha8([32]byte{byte(n)})
	r.Read(b)
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p, b
}

// copyWaiting starts a CopyToFile of each reference into out at its
// offset, each waiting for the turn the test holds, and returns a function
// that waits for their errors.
func copyWaiting(t *testing.T, out OutputFile, offs []int64, refs []tensor.FileRef) func() []error {
	errs := make([]error, len(refs))
	var wg sync.WaitGroup
	before := waiters(writeTurns, out)
	for i, ref := range refs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = CopyToFile(out, offs[i], FileData(ref))
		}()
	}
	testwait.Until(t, "the copies waiting for their turn", func() bool { return waiters(writeTurns, out) == before+len(refs) })
	return func() []error { wg.Wait(); return errs }
}

// Copies that wait for a turn are made by the writer ending it, those that
// lie end to end in the output and in their source in one call; a write
// of lower offset that is not a copy still gets its turn first.
func TestWaitingCopiesAreMadeTogether(t *testing.T) {
	dir := t.TempDir()
	src, data := randomFile(t, dir, "src", 64<<10)
	out := newGatedOutput(t)
	calls := countCopyCalls(t)

	release := holdTurn(t, writeTurns, out, 0)
	var offs []int64
	var refs []tensor.FileRef
	for i := range 8 {
		offs = append(offs, int64(8192+i*4096))
		refs = append(refs, tensor.FileRef{Path: src, Offset: uint64(1000 + i*4096), Length: 4096})
	}
	wait := copyWaiting(t, out, offs, refs)
	seen := make([]byte, 32<<10)
	out.during = func(off int64) {
		if off == 4096 {
			out.ReadAt(seen, 8192)
		}
	}
	waitWrite := writeWaiting(t, writeTurns, out, 4096) // of lower offset, after the copies queued
	release()
	if j := waitWrite()[0]; j.err != nil || j.written != 1 {
		t.Errorf("the write at 4096: %d bytes, %v", j.written, j.err)
	}
	if !bytes.Equal(seen, make([]byte, len(seen))) {
		t.Error("copies of higher offset were made before the write of lower offset")
	}
	for i, err := range wait() {
		if err != nil {
			t.Errorf("copy %d: %v", i, err)
		}
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("%d copy_file_range calls for 8 copies end to end, want 1", n)
	}
	got := make([]byte, 32<<10)
	if _, err := out.ReadAt(got, 8192); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data[1000:1000+32<<10]) {
		t.Error("the copies' bytes differ from their source's")
	}
}

// Waiting copies that do not follow each other (another source, a gap) are
// made in calls of their own; a copy made together with others whose
// source ends early fails on its own, with its own error, and the copies
// before it stand.
func TestWaitingCopiesFailOnTheirOwn(t *testing.T) {
	dir := t.TempDir()
	short, shortData := randomFile(t, dir, "short", 3<<10)
	other, otherData := randomFile(t, dir, "other", 8<<10)
	out := newGatedOutput(t)
	calls := countCopyCalls(t)

	release := holdTurn(t, writeTurns, out, 0)
	const k = 1 << 10
	offs := []int64{1 * k, 2 * k, 3 * k, 5 * k, 6 * k, 20 * k}
	refs := []tensor.FileRef{
		{Path: short, Offset: 0, Length: k},
		{Path: short, Offset: k, Length: k},
		{Path: short, Offset: 2 * k, Length: 2 * k}, // 1 KiB past the end
		{Path: short, Offset: 4 * k, Length: k},     // wholly past it
		{Path: other, Offset: 0, Length: 4 * k},     // another source
		{Path: other, Offset: 4 * k, Length: k},     // after a gap
	}
	wait := copyWaiting(t, out, offs, refs)
	release()
	errs := wait()
	for i, err := range errs {
		wantErr := i == 2 || i == 3
		if wantErr != (err != nil) || wantErr && !strings.Contains(err.Error(), fmt.Sprintf("copying %s: source ended %d bytes early", short, k)) {
			t.Errorf("copy %d: %v", i, err)
		}
	}
	got := make([]byte, 21*k)
	out.ReadAt(got, 0)
	for _, c := range []struct {
		at   int64
		want []byte
	}{{k, shortData[:3*k]}, {6 * k, otherData[:4*k]}, {20 * k, otherData[4*k : 5*k]}} {
		if !bytes.Equal(got[c.at:c.at+int64(len(c.want))], c.want) {
			t.Errorf("the bytes at %d differ from their source's", c.at)
		}
	}
	// short's four copies together (3 KiB, then nothing), the third and
	// fourth again on their own (1 KiB then nothing; nothing), other's two.
	if n := calls.Load(); n != 2+3+2 {
		t.Errorf("%d copy_file_range calls, want 7", n)
	}
}

// Writes of bytes that wait for a turn to write a file, end to end, are
// made in one pwritev by the writer whose turn ends.
func TestWaitingWritesAreMadeTogether(t *testing.T) {
	src, _ := randomFile(t, t.TempDir(), "src", 4096)
	out := tempOutput(t, "out")
	var writes atomic.Int32
	oldPwritev := pwritevCall
	pwritevCall = func(fd int, iovs [][]byte, off int64) (int, error) {
		writes.Add(1)
		return oldPwritev(fd, iovs, off)
	}
	t.Cleanup(func() { pwritevCall = oldPwritev })
	gate := make(chan struct{})
	oldCopy := copyFileRangeCall
	copyFileRangeCall = func(rfd int, roff *int64, wfd int, woff *int64, n int, flags int) (int, error) {
		<-gate // the copy holds the turn
		return oldCopy(rfd, roff, wfd, woff, n, flags)
	}
	t.Cleanup(func() { copyFileRangeCall = oldCopy })

	holder := make(chan error)
	go func() { holder <- CopyToFile(out, 0, FileData(tensor.FileRef{Path: src, Length: 4096})) }()
	testwait.Until(t, "the copy holding the turn", func() bool { return turnHeld(writeTurns, out) })
	var offs []int64
	for i := range 8 {
		offs = append(offs, int64(4096+i))
	}
	wait := writeWaiting(t, writeTurns, out, offs...)
	close(gate)
	if err := <-holder; err != nil {
		t.Fatal(err)
	}
	for _, j := range wait() {
		if !j.made || j.err != nil || j.written != 1 {
			t.Errorf("the write at %d: made %v, %d bytes, %v", j.off, j.made, j.written, j.err)
		}
	}
	if n := writes.Load(); n != 1 {
		t.Errorf("%d pwritev calls for 8 writes end to end, want 1", n)
	}
	got := make([]byte, 8)
	out.ReadAt(got, 4096)
	if want := []byte{0, 1, 2, 3, 4, 5, 6, 7}; !bytes.Equal(got, want) {
		t.Errorf("bytes %v written, want %v", got, want)
	}
}
