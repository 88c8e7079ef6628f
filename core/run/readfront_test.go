package run

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluice-ml/sluice/internal/testwait"
)

// frontFile writes n patterned bytes to a file and returns its path and
// contents.
func frontFile(t *testing.T, n int) (string, []byte) {
	t.Helper()
	data := make([]byte, n)
	for i := range data {
		data[i] = byte(i*7 + i>>8)
	}
	path := filepath.Join(t.TempDir(), "model.safetensors")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path, data
}

// pacedFile opens a file of n patterned bytes for reading behind a read
// front that paces the files paced(path) names, and returns the reader, the
// file's path and its contents.
func pacedFile(t *testing.T, ctx context.Context, n int, paced func(path string) map[string]bool) (*pacedReader, string, []byte) {
	t.Helper()
	path, data := frontFile(t, n)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return &pacedReader{ctx: ctx, f: f, path: path, size: int64(n), front: newReadFront(paced(path))}, path, data
}

func itself(path string) map[string]bool { return map[string]bool{path: true} }

type readResult struct {
	n   int
	err error
}

// readAsync starts one Read of r into buf.
func readAsync(r io.Reader, buf []byte) chan readResult {
	ch := make(chan readResult, 1)
	go func() {
		n, err := r.Read(buf)
		ch <- readResult{n, err}
	}()
	return ch
}

// stillWaiting fails the test when the read has returned within a while.
func stillWaiting(t *testing.T, ch chan readResult, what string) {
	t.Helper()
	select {
	case res := <-ch:
		t.Fatalf("%s: the read returned (%d bytes, %v) before the run got there", what, res.n, res.err)
	case <-time.After(50 * time.Millisecond):
	}
}

func returned(t *testing.T, ch chan readResult, what string) readResult {
	t.Helper()
	select {
	case res := <-ch:
		return res
	case <-time.After(testwait.Timeout):
		t.Fatalf("%s: the read never returned", what)
		return readResult{}
	}
}

func TestPacedReaderReadsNoFurtherThanTheRun(t *testing.T) {
	r, path, data := pacedFile(t, context.Background(), 10_000, itself)
	front := r.front
	buf := make([]byte, 4096)

	pending := readAsync(r, buf)
	stillWaiting(t, pending, "nothing read by the run yet")
	front.advance(path, 1000)
	if res := returned(t, pending, "run at 1000"); res.n != 1000 || res.err != nil {
		t.Fatalf("read %d bytes (%v) with the run at offset 1000, want 1000", res.n, res.err)
	}
	got := append([]byte(nil), buf[:1000]...)

	pending = readAsync(r, buf)
	stillWaiting(t, pending, "run still at 1000")
	front.advance(path, 600) // an earlier tensor finishing later moves nothing
	stillWaiting(t, pending, "run back at 600")
	front.advance(path, 2500)
	res := returned(t, pending, "run at 2500")
	if res.n != 1500 {
		t.Fatalf("read %d bytes with the run at offset 2500 after 1000, want 1500", res.n)
	}
	got = append(got, buf[:res.n]...)

	front.release()
	rest, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, rest...)
	if !bytes.Equal(got, data) {
		t.Errorf("read %d bytes that differ from the file's %d", len(got), len(data))
	}
}

func TestPacedReaderStopsWithTheRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	r, _, _ := pacedFile(t, ctx, 1000, itself)
	pending := readAsync(r, make([]byte, 100))
	stillWaiting(t, pending, "nothing read by the run")
	cancel()
	if res := returned(t, pending, "run cancelled"); !errors.Is(res.err, context.Canceled) {
		t.Errorf("a read waiting for a failed run returned %d bytes and %v, want context.Canceled", res.n, res.err)
	}
}

func TestUnpacedFilesAreReadAtOnce(t *testing.T) {
	other, _ := frontFile(t, 10)
	r, _, data := pacedFile(t, context.Background(), 5000, func(string) map[string]bool { return itself(other) })
	got, err := io.ReadAll(r)
	if err != nil || !bytes.Equal(got, data) {
		t.Errorf("an unpaced file read %d of %d bytes (%v)", len(got), len(data), err)
	}
}

func TestInputDigestFollowsTheRunToTheEnd(t *testing.T) {
	path, data := frontFile(t, 3<<20)
	d := DigestInputs(context.Background(), []string{path}, map[string]bool{path: true}, map[string]bool{path: true}, DigestCache{}, 1)
	done := make(chan struct{})
	go func() { d.Wait(); close(done) }()
	d.Read(path, 1<<20)
	select {
	case <-done:
		t.Fatal("the digest finished with the run a third of the way through its input")
	case <-time.After(50 * time.Millisecond):
	}
	d.Read(path, 3<<20) // the last tensor ends the file
	select {
	case <-done:
	case <-time.After(testwait.Timeout):
		t.Fatal("the digest did not finish when the run had read the whole file")
	}
	recs, err := d.Wait()
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	if len(recs) != 1 || recs[0].SHA256 != hex.EncodeToString(sum[:]) || recs[0].Size != uint64(len(data)) {
		t.Errorf("records %+v, want one of %d bytes with SHA-256 %x", recs, len(data), sum)
	}
	d.RunEnded() // after the end: nothing left to release
}
