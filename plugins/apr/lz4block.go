package apr

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/pierrec/lz4/v4"
)

// The aprender layout's LZ4 compression is what aprender's inference reader
// decodes with lz4_flex's decompress_size_prepended: a 4-byte little-endian
// uncompressed length, then ONE LZ4 block (not the LZ4 frame format) holding
// everything after the header. A block has no size limit of its own, but its
// sequences carry the length of their literal run before the literals, so
// both directions here work on the whole file without holding it in memory:
// the encoder reads its input through an io.ReaderAt, the decoder keeps a
// 64 KiB window.

const (
	lz4Window = 64 << 10  // largest match offset
	lz4Chunk  = 4 << 20   // encoder input per pierrec call
	lz4MaxLen = 1 << 40   // refuse literal or match lengths beyond this
	lz4Step   = 256 << 10 // decoder output per step
)

var errLZ4Corrupt = errors.New("corrupt LZ4 block")

// writeLZ4Block writes src[start, start+n) as a size-prefixed LZ4 block.
// It compresses 4 MiB chunks independently with pierrec/lz4 and joins their
// sequences into one block: a chunk's trailing literal run (the
// literal-only sequence that ends a block) is carried over and becomes the
// head of the next chunk's first literal run. Matches never reach across a
// chunk boundary, so their offsets stay valid in the joined block.
func writeLZ4Block(w io.Writer, src io.ReaderAt, start, n int64) error {
	if n > math.MaxUint32 {
		return fmt.Errorf("lz4: %d bytes is over the 4 GiB an LZ4 size prefix can declare", n)
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	var prefix [4]byte
	binary.LittleEndian.PutUint32(prefix[:], uint32(n))
	bw.Write(prefix[:])

	var comp lz4.Compressor
	in := make([]byte, lz4Chunk)
	out := make([]byte, lz4.CompressBlockBound(lz4Chunk))
	var pendStart, pendEnd int64 // carried literal run, as source positions
	pendStart, pendEnd = start, start

	for cs := start; cs < start+n; cs += lz4Chunk {
		size := min(int64(lz4Chunk), start+n-cs)
		chunk := in[:size]
		if _, err := src.ReadAt(chunk, cs); err != nil && !(err == io.EOF && len(chunk) > 0) {
			return fmt.Errorf("lz4: reading input: %w", err)
		}
		m, err := comp.CompressBlock(chunk, out)
		if err != nil || m == 0 {
			return fmt.Errorf("lz4: compressing: %v", err)
		}
		block := out[:m]
		pos, inPos := 0, cs
		for {
			token := block[pos]
			pos++
			lit, p, err := lz4ReadLen(block, pos, int64(token>>4))
			if err != nil {
				return err
			}
			pos = p
			literals := block[pos : pos+int(lit)]
			pos += int(lit)
			if pos == len(block) {
				// The chunk's final, literal-only sequence: carry it.
				if pendEnd != inPos {
					pendStart = inPos
				}
				pendEnd = inPos + lit
				break
			}
			offset := block[pos : pos+2]
			pos += 2
			ml, p, err := lz4ReadLen(block, pos, int64(token&15))
			if err != nil {
				return err
			}
			pos = p
			carried := pendEnd - pendStart
			if carried > 0 && pendEnd != inPos {
				return fmt.Errorf("lz4: internal error: carried literals do not precede the sequence")
			}
			if err := lz4WriteSequence(bw, src, pendStart, carried, literals, offset, ml, token&15); err != nil {
				return err
			}
			pendStart, pendEnd = inPos+lit+ml+4, inPos+lit+ml+4
			inPos += lit + ml + 4
		}
	}
	// The last sequence: the carried literals alone.
	litTotal := pendEnd - pendStart
	if err := lz4WriteLiteralsOnly(bw, src, pendStart, litTotal); err != nil {
		return err
	}
	return bw.Flush()
}

// lz4ReadLen completes a 4-bit length with its 255-extension bytes.
func lz4ReadLen(b []byte, pos int, n int64) (int64, int, error) {
	if n != 15 {
		return n, pos, nil
	}
	for {
		if pos >= len(b) {
			return 0, pos, errLZ4Corrupt
		}
		c := b[pos]
		pos++
		n += int64(c)
		if c != 255 {
			return n, pos, nil
		}
	}
}

func lz4AppendLen(b []byte, n int64) []byte {
	for n >= 255 {
		b = append(b, 255)
		n -= 255
	}
	return append(b, byte(n))
}

// lz4WriteSequence writes one sequence whose literals are `carried` bytes
// of src from pendStart followed by lits, then the match (offset bytes as
// encoded, match length ml beyond the minimum 4; mlNibble its token part).
func lz4WriteSequence(w *bufio.Writer, src io.ReaderAt, pendStart, carried int64, lits, offset []byte, ml int64, mlNibble byte) error {
	total := carried + int64(len(lits))
	hdr := make([]byte, 0, 16)
	hdr = append(hdr, byte(min(total, 15))<<4|mlNibble)
	if total >= 15 {
		hdr = lz4AppendLen(hdr, total-15)
	}
	w.Write(hdr)
	if err := copyFromAt(w, src, pendStart, carried); err != nil {
		return err
	}
	w.Write(lits)
	w.Write(offset)
	if mlNibble == 15 {
		_, err := w.Write(lz4AppendLen(nil, ml-15))
		return err
	}
	return nil
}

func lz4WriteLiteralsOnly(w *bufio.Writer, src io.ReaderAt, start, n int64) error {
	hdr := []byte{byte(min(n, 15)) << 4}
	if n >= 15 {
		hdr = lz4AppendLen(hdr, n-15)
	}
	w.Write(hdr)
	return copyFromAt(w, src, start, n)
}

func copyFromAt(w io.Writer, src io.ReaderAt, start, n int64) error {
	if n == 0 {
		return nil
	}
	_, err := io.Copy(w, io.NewSectionReader(src, start, n))
	if err != nil {
		return fmt.Errorf("lz4: reading input: %w", err)
	}
	return nil
}

// lz4BlockReader decodes one LZ4 block from a stream, front to back, in a
// 64 KiB window. The block ends where its input ends.
type lz4BlockReader struct {
	src  *bufio.Reader
	hist []byte // window and output not yet read
	r    int    // next byte of hist to hand out

	litLeft   int64
	matchLeft int64
	matchOff  int
	produced  int64
	state     int
	done      bool
	err       error
}

const (
	lz4StateToken = iota
	lz4StateLiterals
	lz4StateOffset
	lz4StateMatch
)

func newLZ4BlockReader(r io.Reader) *lz4BlockReader {
	return &lz4BlockReader{src: bufio.NewReaderSize(r, 64<<10), hist: make([]byte, 0, 2*lz4Window+lz4Step)}
}

func (z *lz4BlockReader) Read(p []byte) (int, error) {
	for z.r == len(z.hist) && !z.done && z.err == nil {
		z.step()
	}
	n := copy(p, z.hist[z.r:])
	z.r += n
	if n == 0 {
		if z.err != nil {
			return 0, z.err
		}
		return 0, io.EOF
	}
	return n, nil
}

// step decodes at most lz4Step bytes of output into hist.
func (z *lz4BlockReader) step() {
	if len(z.hist) > lz4Window+lz4Step {
		keep := z.hist[len(z.hist)-lz4Window:]
		z.hist = append(z.hist[:0], keep...)
		z.r = len(z.hist)
	}
	switch z.state {
	case lz4StateToken:
		token, err := z.src.ReadByte()
		if err != nil {
			z.fail(err)
			return
		}
		lit, err := z.readLen(int64(token >> 4))
		if err != nil {
			z.fail(err)
			return
		}
		z.litLeft = lit
		z.matchLeft = int64(token & 15)
		z.state = lz4StateLiterals
	case lz4StateLiterals:
		if z.litLeft == 0 {
			z.state = lz4StateOffset
			return
		}
		n := min(z.litLeft, lz4Step)
		start := len(z.hist)
		z.hist = slices.Grow(z.hist, int(n))[:start+int(n)]
		if _, err := io.ReadFull(z.src, z.hist[start:]); err != nil {
			z.hist = z.hist[:start]
			z.fail(err)
			return
		}
		z.litLeft -= n
		z.produced += n
	case lz4StateOffset:
		lo, err := z.src.ReadByte()
		if err == io.EOF {
			z.done = true // the block ends after a literal-only sequence
			return
		}
		if err != nil {
			z.fail(err)
			return
		}
		hi, err := z.src.ReadByte()
		if err != nil {
			z.fail(err)
			return
		}
		off := int(lo) | int(hi)<<8
		if off == 0 || int64(off) > z.produced {
			z.err = fmt.Errorf("%w: match offset %d with %d bytes decoded", errLZ4Corrupt, off, z.produced)
			return
		}
		ml, err := z.readLen(z.matchLeft)
		if err != nil {
			z.fail(err)
			return
		}
		z.matchOff = off
		z.matchLeft = ml + 4
		z.state = lz4StateMatch
	case lz4StateMatch:
		n := min(z.matchLeft, lz4Step)
		z.matchLeft -= n
		z.produced += n
		for n > 0 {
			from := len(z.hist) - z.matchOff
			c := min(n, int64(z.matchOff))
			z.hist = append(z.hist, z.hist[from:from+int(c)]...)
			n -= c
		}
		if z.matchLeft == 0 {
			z.state = lz4StateToken
		}
	}
}

func (z *lz4BlockReader) readLen(n int64) (int64, error) {
	if n != 15 {
		return n, nil
	}
	for {
		c, err := z.src.ReadByte()
		if err != nil {
			return 0, err
		}
		n += int64(c)
		if n > lz4MaxLen {
			return 0, fmt.Errorf("%w: length over %d", errLZ4Corrupt, int64(lz4MaxLen))
		}
		if c != 255 {
			return n, nil
		}
	}
}

func (z *lz4BlockReader) fail(err error) {
	if err == io.EOF {
		err = fmt.Errorf("%w: the block ends inside a sequence", errLZ4Corrupt)
	}
	z.err = err
}
