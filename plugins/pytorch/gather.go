package pytorch

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"errors"
	"fmt"
	"io"

	"github.com/sluice-ml/sluice/sdk/binio"
)

// Memory bounds for gathering a non-contiguous view: its storage span is
// read into memory up to maxSpanInMemory (up to maxInflate for a compressed
// storage); past that a stored span is read through a window.
const (
	maxSpanInMemory = 256 << 20
	maxInflate      = 1 << 30
	windowSize      = 1 << 20
)

// open returns the bytes of one tensor, contiguous and little-endian.
func (a *archive) open(nt namedTensor, l layout) (io.ReadCloser, error) {
	if l.elements == 0 {
		return io.NopCloser(bytes.NewReader(nil)), nil
	}
	e, err := a.entry(nt.ref.storage, nt.name)
	if err != nil {
		return nil, err
	}
	var r, tail io.Reader
	var closer io.Closer
	switch {
	case l.contiguous && e.stored:
		r = io.NewSectionReader(a.f, e.offset+int64(l.start), int64(l.size))
	case l.contiguous:
		rc, err := e.file.Open()
		if err != nil {
			return nil, a.dataError(nt, e, err)
		}
		if _, err := io.CopyN(io.Discard, rc, int64(l.start)); err != nil {
			rc.Close()
			return nil, a.dataError(nt, e, err)
		}
		r, closer = io.LimitReader(rc, int64(l.size)), rc
		if l.start+l.size == e.file.UncompressedSize64 {
			// The tensor reads the entry to its end: check that it ends
			// there, with its CRC (a deflate stream that goes on is a bomb
			// or damage).
			tail = rc
		}
	default:
		src, err := a.spanReader(nt, e, l)
		if err != nil {
			return nil, err
		}
		r = newGather(src, l.start, l.elemSize, nt.ref)
	}
	if a.bigEndian && l.elemSize > 1 {
		r = &swapReader{r: r, size: int(l.elemSize)}
	}
	return &exactReader{r: r, left: l.size, closer: closer, a: a, name: nt.name, tail: tail, entry: e.file.Name}, nil
}

func (a *archive) dataError(nt namedTensor, e *storageEntry, err error) error {
	return &binio.FormatError{File: a.path, Offset: -1, Tensor: nt.name, Msg: "reading zip entry " + e.file.Name, Err: err}
}

// spanReader returns a ReaderAt whose offset 0 is byte l.start of the
// storage and which covers [l.start, l.stop).
func (a *archive) spanReader(nt namedTensor, e *storageEntry, l layout) (io.ReaderAt, error) {
	span := l.stop - l.start
	if e.stored {
		sec := io.NewSectionReader(a.f, e.offset+int64(l.start), int64(span))
		if span > maxSpanInMemory {
			return &windowReader{r: sec, size: int64(span)}, nil
		}
		buf := make([]byte, span)
		if _, err := sec.ReadAt(buf, 0); err != nil {
			return nil, a.dataError(nt, e, err)
		}
		return bytes.NewReader(buf), nil
	}
	if span > maxInflate {
		return nil, &binio.FormatError{File: a.path, Offset: -1, Tensor: nt.name,
			Msg: fmt.Sprintf("a non-contiguous view spanning %d bytes of compressed entry %s is over the limit of %d", span, e.file.Name, maxInflate)}
	}
	rc, err := e.file.Open()
	if err != nil {
		return nil, a.dataError(nt, e, err)
	}
	defer rc.Close()
	if _, err := io.CopyN(io.Discard, rc, int64(l.start)); err != nil {
		return nil, a.dataError(nt, e, err)
	}
	buf := make([]byte, span)
	if _, err := io.ReadFull(rc, buf); err != nil {
		return nil, a.dataError(nt, e, err)
	}
	return bytes.NewReader(buf), nil
}

// gather reads a strided view front to back in row-major order. Runs of
// contiguous elements (innermost stride 1) are read with one ReadAt each.
type gather struct {
	src    io.ReaderAt
	base   uint64 // storage byte offset of src's offset 0
	es     uint64
	offset uint64
	shape  []uint64
	stride []uint64
	outer  int      // dimensions walked by idx
	idx    []uint64 // position over the outer dimensions
	runLen uint64   // bytes per run
	runPos uint64
	done   bool
}

func newGather(src io.ReaderAt, base, es uint64, t *tensorRef) *gather {
	g := &gather{src: src, base: base, es: es, offset: t.offset, shape: t.shape, stride: t.stride}
	n := len(t.shape)
	if n > 0 && t.stride[n-1] == 1 {
		g.outer = n - 1
		g.runLen = t.shape[n-1] * es
	} else {
		g.outer = n
		g.runLen = es
	}
	g.idx = make([]uint64, g.outer)
	return g
}

func (g *gather) runStart() uint64 {
	el := g.offset
	for i := 0; i < g.outer; i++ {
		el += g.idx[i] * g.stride[i]
	}
	return el*g.es - g.base
}

func (g *gather) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if g.done {
			if n == 0 {
				return 0, io.EOF
			}
			return n, nil
		}
		k := min(uint64(len(p)-n), g.runLen-g.runPos)
		m, err := g.src.ReadAt(p[n:n+int(k)], int64(g.runStart()+g.runPos))
		n += m
		g.runPos += uint64(m)
		if err != nil && uint64(m) < k {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return n, err
		}
		if g.runPos == g.runLen {
			g.runPos = 0
			g.next()
		}
	}
	return n, nil
}

// next advances idx like an odometer.
func (g *gather) next() {
	for i := g.outer - 1; i >= 0; i-- {
		g.idx[i]++
		if g.idx[i] < g.shape[i] {
			return
		}
		g.idx[i] = 0
	}
	g.done = true
}

// windowReader serves ReadAt through one cached window of the underlying
// reader, for spans too large to hold in memory.
type windowReader struct {
	r    io.ReaderAt
	size int64
	buf  []byte
	off  int64
}

func (w *windowReader) ReadAt(p []byte, off int64) (int, error) {
	n := 0
	for n < len(p) {
		pos := off + int64(n)
		if pos >= w.size {
			return n, io.EOF
		}
		if w.buf == nil || pos < w.off || pos >= w.off+int64(len(w.buf)) {
			start := pos - pos%windowSize
			length := min(int64(windowSize), w.size-start)
			if cap(w.buf) < int(length) {
				w.buf = make([]byte, windowSize)
			}
			w.buf = w.buf[:length]
			if _, err := w.r.ReadAt(w.buf, start); err != nil {
				w.buf = nil
				return n, err
			}
			w.off = start
		}
		n += copy(p[n:], w.buf[pos-w.off:])
	}
	return n, nil
}

// swapReader reverses the bytes of each element, turning big-endian
// storages little-endian.
type swapReader struct {
	r     io.Reader
	size  int
	carry []byte // swapped bytes not yet returned
}

func (s *swapReader) Read(p []byte) (int, error) {
	if len(s.carry) > 0 {
		n := copy(p, s.carry)
		s.carry = s.carry[n:]
		return n, nil
	}
	if len(p) < s.size {
		elem := make([]byte, s.size)
		if _, err := io.ReadFull(s.r, elem); err != nil {
			return 0, err
		}
		reverse(elem)
		n := copy(p, elem)
		s.carry = elem[n:]
		return n, nil
	}
	k := len(p) / s.size * s.size
	n, err := io.ReadAtLeast(s.r, p[:k], s.size)
	if n%s.size != 0 {
		m, err2 := io.ReadFull(s.r, p[n:n+s.size-n%s.size])
		n += m
		if err2 != nil {
			return n, io.ErrUnexpectedEOF
		}
	}
	for i := 0; i+s.size <= n; i += s.size {
		reverse(p[i : i+s.size])
	}
	if err == io.ErrUnexpectedEOF && n > 0 {
		err = nil
	}
	return n, err
}

func reverse(b []byte) {
	for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
		b[i], b[j] = b[j], b[i]
	}
}

// exactReader yields exactly left bytes and reports a short tensor as an
// error naming it.
type exactReader struct {
	r      io.Reader
	left   uint64
	closer io.Closer
	a      *archive
	name   string
	// tail, when set, must be at its end once the tensor is read (zip
	// entry entry, whose CRC is then checked).
	tail  io.Reader
	entry string
}

func (e *exactReader) Read(p []byte) (int, error) {
	if e.left == 0 {
		return 0, io.EOF
	}
	if uint64(len(p)) > e.left {
		p = p[:e.left]
	}
	n, err := e.r.Read(p)
	e.left -= uint64(n)
	if isZipDamage(err) {
		// Withheld with the bytes read, as below.
		return 0, &binio.FormatError{File: e.a.path, Offset: -1, Tensor: e.name, Msg: "reading tensor data", Err: err}
	}
	if err == io.EOF && e.left > 0 {
		return n, &binio.FormatError{File: e.a.path, Offset: -1, Tensor: e.name,
			Msg: fmt.Sprintf("tensor data ends %d bytes early", e.left)}
	}
	if e.left == 0 && (err == nil || err == io.EOF) {
		err = io.EOF
		if e.tail != nil {
			var one [1]byte
			m, terr := e.tail.Read(one[:])
			e.tail = nil
			// The last bytes are withheld with the error, so a caller that
			// stops once it has what it asked for (io.ReadFull) sees it.
			switch {
			case m > 0 || terr == nil:
				return 0, &binio.FormatError{File: e.a.path, Offset: -1, Tensor: e.name, Msg: "zip entry " + e.entry + " holds more data than its directory says"}
			case terr != io.EOF:
				return 0, &binio.FormatError{File: e.a.path, Offset: -1, Tensor: e.name, Msg: "reading zip entry " + e.entry, Err: terr}
			}
		}
	}
	return n, err
}

// isZipDamage reports an error that damaged zip data gives: a CRC that does
// not match, a malformed entry, a corrupt deflate stream.
func isZipDamage(err error) bool {
	var ce flate.CorruptInputError
	return errors.Is(err, zip.ErrChecksum) || errors.Is(err, zip.ErrFormat) || errors.As(err, &ce)
}

func (e *exactReader) Close() error {
	if e.closer != nil {
		return e.closer.Close()
	}
	return nil
}
