package apr

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"hash/crc64"
	"io"

	"github.com/sluice-ml/sluice/sdk/binio"
)

// ErrChecksum is matched (errors.Is) by every integrity failure: a header
// CRC or footer checksum that does not match, a footer total size that
// does not match the file, compressed data that does not decompress to
// what the file declares.
var ErrChecksum = errors.New("checksum mismatch")

// ErrNotAPR is matched by the error for a file whose magic is no APR v2
// magic.
var ErrNotAPR = errors.New("not an APR v2 file")

func checksumError(file string, off int64, format string, args ...any) error {
	return &binio.FormatError{File: file, Offset: off, Msg: fmt.Sprintf(format, args...), Err: ErrChecksum}
}

// seqReader reads a file front to back, knowing its offset for errors. Over
// an io.ReaderAt it may also move backwards.
type seqReader struct {
	file string
	ra   io.ReaderAt // nil for a plain stream
	size int64       // -1 when unknown
	br   *bufio.Reader
	off  int64
}

func newSeqStream(r io.Reader, file string) *seqReader {
	return &seqReader{file: file, size: -1, br: bufio.NewReaderSize(r, 64<<10)}
}

func newSeqAt(r io.ReaderAt, size int64, file string) *seqReader {
	s := &seqReader{file: file, ra: r, size: size}
	s.br = bufio.NewReaderSize(io.NewSectionReader(r, 0, size), 64<<10)
	return s
}

func (s *seqReader) errorf(off int64, format string, args ...any) *binio.FormatError {
	return binio.Errorf(s.file, off, format, args...)
}

// seekTo moves to off: anywhere over a ReaderAt, only forward over a stream.
func (s *seqReader) seekTo(off uint64, what string) error {
	if s.size >= 0 && off > uint64(s.size) {
		return s.errorf(s.off, "%s at byte %d lies past the end of the %d-byte file", what, off, s.size)
	}
	if off > 1<<62 {
		return s.errorf(s.off, "%s at byte %d is out of range", what, off)
	}
	if int64(off) == s.off {
		return nil
	}
	if s.ra != nil {
		s.br.Reset(io.NewSectionReader(s.ra, int64(off), s.size-int64(off)))
		s.off = int64(off)
		return nil
	}
	if int64(off) < s.off {
		return s.errorf(s.off, "%s at byte %d lies before the current position %d; reading a stream needs the sections in file order", what, off, s.off)
	}
	return s.skip(uint64(int64(off)-s.off), what)
}

func (s *seqReader) skip(n uint64, what string) error {
	m, err := io.CopyN(io.Discard, s.br, int64(n))
	s.off += m
	if err != nil {
		return s.eof(err, what)
	}
	return nil
}

func (s *seqReader) eof(err error, what string) error {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return s.errorf(s.off, "%s: the file ends early (truncated?)", what)
	}
	var fe *binio.FormatError
	if errors.As(err, &fe) {
		return err
	}
	return &binio.FormatError{File: s.file, Offset: s.off, Msg: what, Err: err}
}

// full reads exactly len(p) bytes.
func (s *seqReader) full(p []byte, what string) error {
	n, err := io.ReadFull(s.br, p)
	s.off += int64(n)
	if err != nil {
		return s.eof(err, what)
	}
	return nil
}

func (s *seqReader) u8(what string) (uint8, error) {
	b, err := s.br.ReadByte()
	if err != nil {
		return 0, s.eof(err, what)
	}
	s.off++
	return b, nil
}

func (s *seqReader) u16(what string) (uint16, error) {
	var b [2]byte
	err := s.full(b[:], what)
	return binary.LittleEndian.Uint16(b[:]), err
}

func (s *seqReader) u64(what string) (uint64, error) {
	var b [8]byte
	err := s.full(b[:], what)
	return binary.LittleEndian.Uint64(b[:]), err
}

// bytes reads n bytes, n checked against the file size (when known) and
// limit; over a stream the buffer grows with the data actually read.
func (s *seqReader) bytes(n, limit uint64, what string) ([]byte, error) {
	if n > limit {
		return nil, s.errorf(s.off, "%s: %d bytes is over the limit of %d", what, n, limit)
	}
	if s.size >= 0 && n > uint64(s.size-s.off) {
		return nil, s.errorf(s.off, "%s: %d bytes claimed, only %d left in the file", what, n, s.size-s.off)
	}
	if s.size >= 0 || n <= 1<<20 {
		b := make([]byte, n)
		return b, s.full(b, what)
	}
	var buf []byte
	chunk := make([]byte, 1<<20)
	for left := n; left > 0; {
		c := chunk[:min(left, uint64(len(chunk)))]
		if err := s.full(c, what); err != nil {
			return nil, err
		}
		buf = append(buf, c...)
		left -= uint64(len(c))
	}
	return buf, nil
}

// trailerHash hashes everything written to it except the last k bytes,
// which it keeps: at the end of a file they are its footer.
type trailerHash struct {
	h     hash.Hash
	k     int
	held  []byte
	total int64
	// magic, when set, replaces the first four bytes in the hash.
	magic *[4]byte
}

func newTrailerHash(layout Layout) *trailerHash {
	if layout == LayoutSpec {
		return &trailerHash{h: crc64.New(crc64Table), k: specFooterSize}
	}
	return &trailerHash{h: crc32.NewIEEE(), k: aprenderFooterSize}
}

func (t *trailerHash) Write(p []byte) (int, error) {
	n := len(p)
	if t.magic != nil && t.total < 4 {
		q := append([]byte(nil), p...)
		for i := 0; i < len(q) && t.total+int64(i) < 4; i++ {
			q[i] = t.magic[t.total+int64(i)]
		}
		p = q
	}
	t.total += int64(n)
	if len(p) >= t.k {
		t.h.Write(t.held)
		t.h.Write(p[:len(p)-t.k])
		t.held = append(t.held[:0], p[len(p)-t.k:]...)
		return n, nil
	}
	t.held = append(t.held, p...)
	if over := len(t.held) - t.k; over > 0 {
		t.h.Write(t.held[:over])
		t.held = append(t.held[:0], t.held[over:]...)
	}
	return n, nil
}

// check compares the footer held with the hash of everything before it.
func (t *trailerHash) check(file string) error {
	if len(t.held) < t.k {
		return checksumError(file, 0, "the file is %d bytes, too short to hold its %d-byte footer", t.total, t.k)
	}
	footerAt := t.total - int64(t.k)
	if t.k == specFooterSize {
		sum := t.h.(hash.Hash64).Sum64()
		stored := binary.LittleEndian.Uint64(t.held)
		size := binary.LittleEndian.Uint64(t.held[8:])
		if size != uint64(t.total) {
			return checksumError(file, footerAt+8, "footer total size says %d bytes, the file has %d", size, t.total)
		}
		if stored != sum {
			return checksumError(file, footerAt, "footer CRC-64 is %016x, the file's bytes give %016x", stored, sum)
		}
		return nil
	}
	sum := t.h.(hash.Hash32).Sum32()
	stored := binary.LittleEndian.Uint32(t.held)
	if stored != sum {
		return checksumError(file, footerAt, "footer CRC32 is %08x, the file's bytes give %08x", stored, sum)
	}
	return nil
}

// verifyFooter hashes a whole file and checks its footer.
func verifyFooter(r io.Reader, layout Layout, magic *[4]byte, file string) error {
	th := newTrailerHash(layout)
	th.magic = magic
	if _, err := io.CopyBuffer(th, r, make([]byte, 1<<20)); err != nil {
		return fmt.Errorf("%s: reading to verify the checksum: %w", file, err)
	}
	return th.check(file)
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
