package plugin

import (
	"bytes"
	"fmt"
	"io"
	"os"

	"github.com/sluice-ml/sluice/sdk/atomicfile"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// BytesData returns TensorData over an in-memory buffer.
func BytesData(b []byte) TensorData { return &bytesData{r: bytes.NewReader(b), n: uint64(len(b))} }

type bytesData struct {
	r *bytes.Reader
	n uint64
}

func (d *bytesData) Read(p []byte) (int, error)              { return d.r.Read(p) }
func (d *bytesData) WriteTo(w io.Writer) (int64, error)      { return d.r.WriteTo(w) }
func (d *bytesData) Size() uint64                            { return d.n }
func (d *bytesData) File() (tensor.FileRef, bool)            { return tensor.FileRef{}, false }
func (d *bytesData) ReadAt(p []byte, off int64) (int, error) { return d.r.ReadAt(p, off) }
func (d *bytesData) String() string                          { return fmt.Sprintf("%d bytes in memory", d.n) }

// FileData returns TensorData over bytes that lie in a local file. Reading
// opens the file lazily; File reports the reference, so a sink may copy the
// range itself with CopyToFile.
func FileData(ref tensor.FileRef) TensorData { return &fileData{ref: ref} }

type fileData struct {
	ref tensor.FileRef
	f   *os.File
	sr  *io.SectionReader
	err error
}

func (d *fileData) open() error {
	if d.sr != nil || d.err != nil {
		return d.err
	}
	f, err := os.Open(d.ref.Path)
	if err != nil {
		d.err = err
		return err
	}
	d.f = f
	d.sr = io.NewSectionReader(f, int64(d.ref.Offset), int64(d.ref.Length))
	return nil
}

func (d *fileData) Read(p []byte) (int, error) {
	if err := d.open(); err != nil {
		return 0, err
	}
	n, err := d.sr.Read(p)
	if err == io.EOF {
		d.f.Close()
	}
	return n, err
}

func (d *fileData) Size() uint64                 { return d.ref.Length }
func (d *fileData) File() (tensor.FileRef, bool) { return d.ref, true }

// CopyToFile writes all of data into dst at offset off. When data lies in a
// local file it uses copy_file_range (no bytes pass through user space);
// otherwise it copies chunk by chunk with positioned writes. It returns an
// error when data yields more or fewer bytes than its Size.
//
// The written range is handed to the kernel's writeback as it is written,
// so the disk works while the run goes on and the fsync of a sink's Commit
// finds little left to do: an output that tracks its writeback (an
// *atomicfile.File, the host's view of a directly written file) is told,
// and decides; any other file has its writeback started at once
// (sync_file_range on Linux, without waiting).
func CopyToFile(dst OutputFile, off int64, data TensorData) error {
	if ref, ok := data.File(); ok {
		if err := copyFileRange(dst, off, ref); err == nil {
			written(dst, off, int64(ref.Length))
			return nil
		} else if !errorsIsUnsupported(err) {
			return err
		}
	}
	w := &offsetWriter{f: dst, off: off, limit: off + int64(data.Size()), flushed: off}
	n, err := io.Copy(w, data)
	w.writeback()
	if err != nil {
		return err
	}
	if uint64(n) != data.Size() {
		return fmt.Errorf("tensor data ended after %d of %d bytes", n, data.Size())
	}
	return nil
}

// OutputFile is what CopyToFile writes to: an output's *atomicfile.File (or
// any *os.File).
type OutputFile interface {
	io.WriterAt
	Fd() uintptr
}

// offsetWriter writes sequentially from an offset with pwrite and refuses to
// pass its limit, so a producer that sends too much cannot overwrite the
// next tensor.
type offsetWriter struct {
	f       OutputFile
	off     int64
	limit   int64
	flushed int64 // told written up to here
}

func (w *offsetWriter) Write(p []byte) (int, error) {
	if w.off+int64(len(p)) > w.limit {
		return 0, fmt.Errorf("tensor data is longer than its declared size")
	}
	job := &writeJob{off: w.off, n: int64(len(p)), data: p}
	writeTurns.inTurn(w.f, job)
	n, err := job.written, job.err
	w.off += int64(n)
	if w.off-w.flushed >= atomicfile.WritebackStep {
		w.writeback()
	}
	return n, err
}

// writeback tells the file what was written since the last call.
func (w *offsetWriter) writeback() {
	if w.off > w.flushed {
		written(w.f, w.flushed, w.off-w.flushed)
		w.flushed = w.off
	}
}

// written tells f that bytes [off, off+n) were just written: an output that
// tracks its writeback gathers them (atomicfile.Writeback); any other file
// has their writeback started at once.
func written(f OutputFile, off, n int64) {
	if t, ok := f.(interface{ Written(off, n int64) }); ok {
		t.Written(off, n)
		return
	}
	atomicfile.StartWriteback(f.Fd(), off, n)
}
