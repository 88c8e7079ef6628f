// Package binio reads binary headers of untrusted files safely: every length
// taken from a file is checked against the bytes left and against a cap
// before anything is allocated, offsets are overflow-checked, and every
// problem is a *FormatError that names the file and the byte offset.
//
// It is for parsing headers and indexes, the way debug/elf and archive/zip do.
// It is not for moving tensor data: hand out io.SectionReaders for that.
package binio

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"os"
)

// ErrFormat is matched by every *FormatError through errors.Is.
var ErrFormat = errors.New("malformed file")

// FormatError reports malformed input: the file, the byte offset where the
// problem was found, the tensor when one is concerned, and what was wrong.
type FormatError struct {
	File   string // path or name of the file; may be empty
	Offset int64  // byte offset of the problem; -1 when it has none
	Tensor string // tensor concerned, if any
	Msg    string
	Err    error // underlying cause, if any
}

func (e *FormatError) Error() string {
	s := ""
	if e.File != "" {
		s = e.File + ": "
	}
	if e.Offset >= 0 {
		s += fmt.Sprintf("at byte %d (0x%x): ", e.Offset, e.Offset)
	}
	if e.Tensor != "" {
		s += fmt.Sprintf("tensor %q: ", e.Tensor)
	}
	s += e.Msg
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the underlying cause.
func (e *FormatError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrFormat) true.
func (e *FormatError) Is(target error) bool { return target == ErrFormat }

// BadInput marks the error as caused by the input file, not by Sluice.
func (e *FormatError) BadInput() bool { return true }

// Errorf returns a *FormatError for file at offset.
func Errorf(file string, offset int64, format string, args ...any) *FormatError {
	return &FormatError{File: file, Offset: offset, Msg: fmt.Sprintf(format, args...)}
}

// DefaultMaxAlloc is the largest single allocation a Reader makes for one
// length read from a file unless its MaxAlloc says otherwise: 1 GiB, ggml's cap on
// a GGUF string.
const DefaultMaxAlloc = 1 << 30

// Reader reads little-endian values from an io.ReaderAt, front to back,
// through a small buffer. It never reads past size.
type Reader struct {
	r    io.ReaderAt
	size int64
	off  int64
	// File names the input in errors.
	File string
	// MaxAlloc caps any single allocation; 0 means DefaultMaxAlloc.
	MaxAlloc uint64

	buf    []byte
	bufOff int64 // file offset of buf[0]

	file      *os.File // r, when it is a file: View may map it
	mapped    []byte   // the file's first bytes mapped read-only, once a view asked for them
	mapFailed bool
}

const bufSize = 64 << 10

// NewReader returns a Reader over the first size bytes of r, starting at 0.
// When r is an *os.File, large views (View) may come from a read-only
// mapping of it.
func NewReader(r io.ReaderAt, size int64, file string) *Reader {
	f, _ := r.(*os.File)
	return &Reader{r: r, size: size, File: file, file: f}
}

// Offset returns the current position.
func (r *Reader) Offset() int64 { return r.off }

// Size returns the size the reader was given.
func (r *Reader) Size() int64 { return r.size }

// Remaining returns the bytes between the position and the end.
func (r *Reader) Remaining() int64 { return r.size - r.off }

// SeekTo moves to an absolute offset, which must lie within [0, size].
func (r *Reader) SeekTo(off int64) error {
	if off < 0 || off > r.size {
		return r.errAt(r.off, "offset %d lies outside the file of %d bytes", off, r.size)
	}
	r.off = off
	return nil
}

// Errorf returns a *FormatError at the current offset.
func (r *Reader) Errorf(format string, args ...any) *FormatError {
	return r.errAt(r.off, format, args...)
}

// ErrorAt returns a *FormatError at an explicit offset.
func (r *Reader) ErrorAt(off int64, format string, args ...any) *FormatError {
	return r.errAt(off, format, args...)
}

func (r *Reader) errAt(off int64, format string, args ...any) *FormatError {
	return &FormatError{File: r.File, Offset: off, Msg: fmt.Sprintf(format, args...)}
}

// peek returns n bytes at the position without consuming them; n ≤ bufSize.
func (r *Reader) peek(n int, what string) ([]byte, error) {
	if int64(n) > r.Remaining() {
		return nil, r.errAt(r.off, "%s: needs %d bytes, only %d left in the file (truncated?)", what, n, r.Remaining())
	}
	if r.off >= r.bufOff && r.off+int64(n) <= r.bufOff+int64(len(r.buf)) {
		start := r.off - r.bufOff
		return r.buf[start : start+int64(n)], nil
	}
	want := int64(bufSize)
	if want < int64(n) {
		want = int64(n)
	}
	if want > r.Remaining() {
		want = r.Remaining()
	}
	if cap(r.buf) < int(want) {
		r.buf = make([]byte, want)
	}
	r.buf = r.buf[:want]
	m, err := r.r.ReadAt(r.buf, r.off)
	if m < n {
		if err == nil || err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		r.buf = r.buf[:0]
		return nil, &FormatError{File: r.File, Offset: r.off, Msg: what, Err: err}
	}
	r.buf = r.buf[:m]
	r.bufOff = r.off
	return r.buf[:n], nil
}

func (r *Reader) fixed(n int, what string) ([]byte, error) {
	b, err := r.peek(n, what)
	if err != nil {
		return nil, err
	}
	r.off += int64(n)
	return b, nil
}

// U8 reads one byte.
func (r *Reader) U8(what string) (uint8, error) {
	b, err := r.fixed(1, what)
	if err != nil {
		return 0, err
	}
	return b[0], nil
}

// U16 reads a little-endian uint16.
func (r *Reader) U16(what string) (uint16, error) {
	b, err := r.fixed(2, what)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint16(b), nil
}

// U32 reads a little-endian uint32.
func (r *Reader) U32(what string) (uint32, error) {
	b, err := r.fixed(4, what)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b), nil
}

// U64 reads a little-endian uint64.
func (r *Reader) U64(what string) (uint64, error) {
	b, err := r.fixed(8, what)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b), nil
}

func (r *Reader) maxAlloc() uint64 {
	if r.MaxAlloc == 0 {
		return DefaultMaxAlloc
	}
	return r.MaxAlloc
}

// CheckLength verifies that n units of unit bytes each fit in the rest of the
// file and under the allocation cap, without allocating.
func (r *Reader) CheckLength(n, unit uint64, what string) error {
	hi, total := bits.Mul64(n, unit)
	if hi != 0 || total > uint64(r.Remaining()) {
		return r.errAt(r.off, "%s: length %d claims more bytes than the %d left in the file", what, n, r.Remaining())
	}
	if total > r.maxAlloc() {
		return r.errAt(r.off, "%s: length %d is over the limit of %d bytes", what, n, r.maxAlloc())
	}
	return nil
}

// Bytes reads n bytes into a new slice, after checking n against the bytes
// left and the cap.
func (r *Reader) Bytes(n uint64, what string) ([]byte, error) {
	if err := r.CheckLength(n, 1, what); err != nil {
		return nil, err
	}
	out := make([]byte, n)
	if n <= bufSize {
		b, err := r.fixed(int(n), what)
		if err != nil {
			return nil, err
		}
		copy(out, b)
		return out, nil
	}
	m, err := r.r.ReadAt(out, r.off)
	if uint64(m) < n {
		if err == nil || err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, &FormatError{File: r.File, Offset: r.off, Msg: what, Err: err}
	}
	r.off += int64(n)
	return out, nil
}

// MinMappedView is the smallest view that View serves from a mapping of the
// file: below it, a copy costs less than the mapping it would keep.
const MinMappedView = 64 << 10

// View returns the next n bytes, which the caller must never modify, after
// checking n as Bytes does. From a Reader over an *os.File, a view of at
// least MinMappedView bytes is a slice of the file mapped read-only: it costs
// neither a copy nor fresh memory, only the page cache's pages, which matters
// where a fresh page costs more than copying 4 KiB into it (virtual machines
// among them). The Reader maps the start of the file, to twice the end of
// the view (at least minMapping bytes), and maps it again, further, when a
// later view reaches past that; a mapping is never unmapped, since what is
// built on a view can outlive the Reader. A header of any size so costs
// mappings of a few times its size, not of the file's. If another process
// truncates the file while a view is in use, touching the pages it lost
// faults (SIGBUS), as in every program that maps its input. Where mapping is
// unavailable or fails, View copies, as Bytes does.
func (r *Reader) View(n uint64, what string) ([]byte, error) {
	if err := r.CheckLength(n, 1, what); err != nil {
		return nil, err
	}
	end := r.off + int64(n)
	if n >= MinMappedView && r.file != nil && !r.mapFailed && int64(len(r.mapped)) < end {
		m, err := mapReadOnly(r.file, min(r.size, max(2*end, minMapping)))
		if err != nil {
			r.mapFailed = true
		} else {
			r.mapped = m
		}
	}
	if n >= MinMappedView && int64(len(r.mapped)) >= end {
		b := r.mapped[r.off:end:end]
		r.off = end
		return b, nil
	}
	return r.Bytes(n, what)
}

// minMapping is the least View maps of a file at once.
const minMapping = 16 << 20

// String reads n bytes as a string.
func (r *Reader) String(n uint64, what string) (string, error) {
	if n <= bufSize {
		if err := r.CheckLength(n, 1, what); err != nil {
			return "", err
		}
		b, err := r.fixed(int(n), what)
		if err != nil {
			return "", err
		}
		return string(b), nil
	}
	b, err := r.Bytes(n, what)
	return string(b), err
}

// Skip advances n bytes, which must lie within the file.
func (r *Reader) Skip(n uint64, what string) error {
	if n > uint64(r.Remaining()) {
		return r.errAt(r.off, "%s: skipping %d bytes passes the end of the file (%d left)", what, n, r.Remaining())
	}
	r.off += int64(n)
	return nil
}

// AddOffsets adds two file offsets or sizes, reporting overflow past MaxInt64.
func AddOffsets(a, b uint64) (uint64, bool) {
	s, carry := bits.Add64(a, b, 0)
	if carry != 0 || s > math.MaxInt64 {
		return 0, false
	}
	return s, true
}

// AlignUp rounds n up to a multiple of align (a power of two), reporting overflow.
func AlignUp(n, align uint64) (uint64, bool) {
	if align == 0 || align&(align-1) != 0 {
		return 0, false
	}
	s, ok := AddOffsets(n, align-1)
	if !ok {
		return 0, false
	}
	return s &^ (align - 1), true
}
