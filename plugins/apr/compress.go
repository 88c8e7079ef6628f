package apr

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"runtime"

	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"

	"github.com/sluice-ml/sluice/sdk/binio"
)

// Decompression limits.
const (
	// MaxCompressionRatio caps decompressed output at this many times the
	// compressed input read so far; beyond it the data is refused as a
	// decompression bomb. Model weights compress by less than 2×; an
	// all-zero tensor can exceed the cap, hence the allowance below.
	MaxCompressionRatio = 1024
	// MaxZstdWindow is the largest zstd window accepted (what `zstd --ultra
	// -22` uses); it bounds a decoder's memory.
	MaxZstdWindow = 128 << 20
)

// ratioAllowance is the output any stream may produce before the ratio cap
// applies (a variable so tests can lower it).
var ratioAllowance int64 = 64 << 20

// checkedReader guards a decompressor: it never hands out more than the
// declared size, reports a short or long stream and any decoder failure
// as ErrChecksum, and refuses output beyond the ratio cap.
type checkedReader struct {
	r  io.Reader
	in *countingReader
	// payload, when set, is the CRC32 of the compressed bytes, which must
	// equal wantCRC at the end.
	payload hash.Hash32
	wantCRC uint32
	want    int64 // declared output; -1 when unknown
	got     int64
	file    string
	off     int64 // file offset of the compressed data
	tensor  string
	close   func()
	err     error // sticky
}

func (c *checkedReader) fail(format string, args ...any) error {
	return &binio.FormatError{File: c.file, Offset: c.off, Tensor: c.tensor, Msg: fmt.Sprintf(format, args...), Err: ErrChecksum}
}

func (c *checkedReader) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.read(p)
	if err != nil && err != io.EOF {
		c.err = err
	}
	return n, err
}

func (c *checkedReader) read(p []byte) (int, error) {
	if c.want >= 0 && int64(len(p)) > c.want-c.got+1 {
		p = p[:c.want-c.got+1] // one byte more than declared reveals a long stream
	}
	n, err := c.r.Read(p)
	c.got += int64(n)
	if c.want >= 0 && c.got > c.want {
		n -= int(c.got - c.want)
		c.got = c.want
		return n, c.fail("compressed data decompresses to more than the declared %d bytes", c.want)
	}
	if c.got > ratioAllowance && c.got > MaxCompressionRatio*c.in.n {
		return n, &binio.FormatError{File: c.file, Offset: c.off, Tensor: c.tensor,
			Msg: fmt.Sprintf("refused as a decompression bomb: %d bytes of output from %d compressed bytes is over the %d:1 limit", c.got, c.in.n, MaxCompressionRatio)}
	}
	if err == io.EOF {
		if c.want >= 0 && c.got < c.want {
			return n, c.fail("compressed data ends after %d of the declared %d bytes", c.got, c.want)
		}
		if c.payload != nil {
			if _, err := io.Copy(io.Discard, c.in); err != nil {
				return n, c.fail("reading the compressed data: %v", err)
			}
			if sum := c.payload.Sum32(); sum != c.wantCRC {
				return n, c.fail("the compressed data's CRC32 is %08x, the header says %08x", sum, c.wantCRC)
			}
			c.payload = nil
		}
		return n, io.EOF
	}
	if err != nil {
		var fe *binio.FormatError
		if errors.As(err, &fe) {
			return n, err
		}
		return n, c.fail("compressed data is corrupt: %v", err)
	}
	return n, nil
}

func (c *checkedReader) Close() error {
	if c.close != nil {
		c.close()
		c.close = nil
	}
	return nil
}

func zstdDecoder(r io.Reader, verify bool) (*zstd.Decoder, error) {
	return zstd.NewReader(r, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
		zstd.WithDecoderMaxWindow(MaxZstdWindow), zstd.WithDecoderMaxMemory(MaxZstdWindow), zstd.IgnoreChecksum(!verify))
}

// wholeFileDecoder decodes what follows the header of a compressed
// aprender-layout file: an LZ4 block behind a 4-byte size, or zstd frames.
// With verify, the payload CRC the header may carry is checked at the end.
func wholeFileDecoder(c Compression, r io.Reader, head []byte, verify bool, file string) (*checkedReader, error) {
	in := &countingReader{r: r}
	cr := &checkedReader{in: in, want: -1, file: file, off: aprenderHeaderSize}
	if verify && hasPayloadCRC(head) {
		cr.payload = crc32.NewIEEE()
		cr.wantCRC = binary.LittleEndian.Uint32(head[44:])
		in.r = io.TeeReader(r, cr.payload)
	}
	switch c {
	case CompressionLZ4:
		var prefix [4]byte
		if _, err := io.ReadFull(in, prefix[:]); err != nil {
			return nil, checksumError(file, aprenderHeaderSize, "LZ4 data ends before its 4-byte size")
		}
		cr.want = int64(binary.LittleEndian.Uint32(prefix[:]))
		cr.r = newLZ4BlockReader(in)
	case CompressionZstd:
		d, err := zstdDecoder(in, verify)
		if err != nil {
			return nil, fmt.Errorf("%s: zstd: %w", file, err)
		}
		cr.r = d
		cr.close = d.Close
	}
	return cr, nil
}

// tensorDecoder decodes one tensor of a compressed spec-layout file: an LZ4
// frame or a zstd frame that must give exactly raw bytes.
func tensorDecoder(c Compression, r io.Reader, raw uint64, file string, off int64, name string) (*checkedReader, error) {
	in := &countingReader{r: r}
	cr := &checkedReader{in: in, want: int64(raw), file: file, off: off, tensor: name}
	switch c {
	case CompressionLZ4:
		zr := lz4.NewReader(in)
		if err := zr.Apply(lz4.ConcurrencyOption(1)); err != nil {
			return nil, err
		}
		cr.r = zr
	case CompressionZstd:
		d, err := zstdDecoder(in, true)
		if err != nil {
			return nil, fmt.Errorf("%s: zstd: %w", file, err)
		}
		cr.r = d
		cr.close = d.Close
	default:
		return nil, fmt.Errorf("no decoder for compression %q", c)
	}
	return cr, nil
}

// zstdLevel maps compression_level to klauspost's levels (0 = default).
func zstdLevel(level int) zstd.EncoderLevel {
	if level <= 0 {
		return zstd.SpeedDefault
	}
	return zstd.EncoderLevelFromZstd(level)
}

// lz4Level maps compression_level to pierrec's levels: 0 is the fast
// compressor, 1-9 the high-compression one.
func lz4Level(level int) lz4.CompressionLevel {
	if level <= 0 {
		return lz4.Fast
	}
	return lz4.CompressionLevel(1 << (8 + min(level, 9) - 1))
}

// newZstdWriter returns a zstd encoder for one stream of known size.
func newZstdWriter(w io.Writer, level int, size int64, concurrent bool) (*zstd.Encoder, error) {
	n := 1
	if concurrent {
		n = min(4, runtime.GOMAXPROCS(0))
	}
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstdLevel(level)), zstd.WithEncoderConcurrency(n),
		zstd.WithWindowSize(8<<20), zstd.WithEncoderCRC(true), zstd.WithLowerEncoderMem(true))
	if err != nil {
		return nil, err
	}
	enc.ResetContentSize(w, size)
	return enc, nil
}

// newLZ4FrameWriter returns an LZ4 frame encoder for one tensor.
func newLZ4FrameWriter(w io.Writer, level int, size uint64) (*lz4.Writer, error) {
	zw := lz4.NewWriter(w)
	err := zw.Apply(lz4.ConcurrencyOption(1), lz4.BlockSizeOption(lz4.Block4Mb), lz4.ChecksumOption(true),
		lz4.BlockChecksumOption(false), lz4.SizeOption(size), lz4.CompressionLevelOption(lz4Level(level)))
	return zw, err
}
