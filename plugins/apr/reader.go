package apr

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/sluice-ml/sluice/sdk/binio"
)

// ReadOptions says how a file is read.
type ReadOptions struct {
	// NoVerify skips the footer checksum, for trusted storage. The
	// aprender layout's header CRC is checked regardless.
	NoVerify bool
	// TempDir receives the decompressed copy of a file whose whole content
	// is compressed (aprender layout with the LZ4 or ZSTD flag); empty
	// means os.TempDir().
	TempDir string
	// Name names the input in errors (NewReader, NewStreamReader).
	Name string
}

// Reader reads an APR file through an io.ReaderAt. Creating it reads the
// header, metadata and index and, unless NoVerify, checks the footer
// checksum over the whole file first, so that a damaged byte anywhere is
// reported as ErrChecksum before anything else is believed. A file whose
// content after the header is compressed as one stream is decompressed
// into a temporary file (bounded memory); Close removes it.
type Reader struct {
	Info
	file  string
	data  io.ReaderAt // where tensor bytes are: the input or the temporary copy
	spool spoolFile
	owned io.Closer
}

// OpenFile opens and reads the APR file at path.
func OpenFile(path string, opts ReadOptions) (*Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if opts.Name == "" {
		opts.Name = path
	}
	r, err := NewReader(f, st.Size(), opts)
	if err != nil {
		f.Close()
		return nil, err
	}
	r.owned = f
	return r, nil
}

// NewReader reads an APR file of size bytes through r.
func NewReader(r io.ReaderAt, size int64, opts ReadOptions) (*Reader, error) {
	file := opts.Name
	head, err := headerBytes(r, size)
	if err != nil {
		return nil, fmt.Errorf("%s: reading the header: %w", file, err)
	}
	if len(head) < 4 {
		return nil, &binio.FormatError{File: file, Offset: 0, Msg: fmt.Sprintf("the file is %d bytes, too short for an APR magic", size), Err: ErrNotAPR}
	}
	layout, err := identify([4]byte(head[:4]), file, damagedAt(r, size, file))
	if err != nil {
		return nil, err
	}
	rd := &Reader{file: file, data: r}
	if layout == LayoutSpec {
		if size < specHeaderSize+specFooterSize {
			return nil, binio.Errorf(file, 0, "the file is %d bytes, too short for a spec-layout header and footer", size)
		}
		limit := size
		if !opts.NoVerify {
			if err := verifyFooter(io.NewSectionReader(r, 0, size), LayoutSpec, nil, file); err != nil {
				return nil, err
			}
			limit -= specFooterSize
		}
		h, err := checkSpecHeader(head[:specHeaderSize], file)
		if err != nil {
			return nil, err
		}
		in, err := parseSpec(newSeqAt(r, size, file), h, limit)
		if err != nil {
			return nil, err
		}
		trailer := make([]byte, specFooterSize)
		if _, err := r.ReadAt(trailer, size-specFooterSize); err != nil {
			return nil, fmt.Errorf("%s: reading the footer: %w", file, err)
		}
		if err := in.checkTail(size, trailer, !opts.NoVerify, file); err != nil {
			return nil, err
		}
		rd.Info = *in
		return rd, nil
	}

	if size < aprenderHeaderSize {
		return nil, binio.Errorf(file, 0, "the file is %d bytes, too short for the 64-byte header (truncated?)", size)
	}
	h, err := checkAprenderHeader(head, file)
	if err != nil {
		return nil, err
	}
	var logical io.ReaderAt = r
	logicalSize := size
	if c := aprenderCompression(h.Flags); c != CompressionNone {
		spool, n, err := decompressToSpool(c, head, io.NewSectionReader(r, aprenderHeaderSize, size-aprenderHeaderSize), !opts.NoVerify, opts.TempDir, file)
		if err != nil {
			return nil, err
		}
		rd.spool = spool
		rd.data = spool
		logical, logicalSize = spool, n
	} else if !opts.NoVerify {
		if err := verifyFooter(io.NewSectionReader(r, 0, size), LayoutAprender, nil, file); err != nil {
			return nil, err
		}
	}
	limit := logicalSize
	if !opts.NoVerify {
		limit -= aprenderFooterSize
	}
	in, err := parseAprender(newSeqAt(logical, logicalSize, file), h, limit)
	if err == nil {
		err = in.checkTail(logicalSize, nil, !opts.NoVerify, file)
	}
	if err != nil {
		rd.Close()
		return nil, err
	}
	rd.Info = *in
	return rd, nil
}

// spoolFile holds the decompressed copy of a file.
type spoolFile interface {
	io.Writer
	io.ReaderAt
	io.Closer
}

// newSpool creates an unlinked temporary file (a variable so the fuzz test
// can keep it in memory).
var newSpool = func(dir string) (spoolFile, error) {
	f, err := os.CreateTemp(dir, "sluice-apr-*")
	if err != nil {
		return nil, err
	}
	os.Remove(f.Name()) // gone when closed
	return f, nil
}

// decompressToSpool writes the header and the decompressed rest of a
// whole-file-compressed file to a temporary file, checking its footer when
// verify. It returns the file and its (logical) size.
func decompressToSpool(c Compression, head []byte, rest io.Reader, verify bool, dir, file string) (spoolFile, int64, error) {
	dec, err := wholeFileDecoder(c, rest, head, verify, file)
	if err != nil {
		return nil, 0, err
	}
	defer dec.Close()
	spool, err := newSpool(dir)
	if err != nil {
		return nil, 0, fmt.Errorf("%s: creating the decompressed copy: %w", file, err)
	}
	th := newTrailerHash(LayoutAprender)
	th.Write(footerView(head))
	if _, err := spool.Write(head[:aprenderHeaderSize]); err != nil {
		spool.Close()
		return nil, 0, fmt.Errorf("%s: writing the decompressed copy: %w", file, err)
	}
	n, err := io.CopyBuffer(io.MultiWriter(spool, th), dec, make([]byte, 1<<20))
	if err != nil {
		spool.Close()
		var fe *binio.FormatError
		if errors.As(err, &fe) {
			return nil, 0, err
		}
		return nil, 0, fmt.Errorf("%s: writing the decompressed copy: %w", file, err)
	}
	if verify {
		if err := th.check(file); err != nil {
			spool.Close()
			return nil, 0, err
		}
	}
	return spool, aprenderHeaderSize + n, nil
}

// Open returns the bytes of a tensor as the index describes them,
// decompressed when the file compresses tensors.
func (r *Reader) Open(t *Tensor) (io.ReadCloser, error) {
	sr := io.NewSectionReader(r.data, int64(r.DataOffset+t.Offset), int64(t.Size))
	if r.Layout == LayoutSpec && r.Compression != CompressionNone {
		return tensorDecoder(r.Compression, sr, t.RawSize, r.file, int64(r.DataOffset+t.Offset), t.Name)
	}
	return io.NopCloser(sr), nil
}

// Section returns where a tensor's bytes lie unchanged in the input, when
// they do (no compression).
func (r *Reader) Section(t *Tensor) (offset int64, ok bool) {
	if r.Compression != CompressionNone {
		return 0, false
	}
	return int64(r.DataOffset + t.Offset), true
}

// Close releases the temporary copy and, for OpenFile, the file.
func (r *Reader) Close() error {
	var err error
	if r.spool != nil {
		err = r.spool.Close()
		r.spool = nil
	}
	if r.owned != nil {
		if e := r.owned.Close(); err == nil {
			err = e
		}
		r.owned = nil
	}
	return err
}
