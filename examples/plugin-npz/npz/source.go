package npz

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/sluice-ml/sluice/sdk/binio"
	"github.com/sluice-ml/sluice/sdk/plugin"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// SourceConfig configures the npz source.
type SourceConfig struct {
	Path string `hcl:"path" doc:"The .npz archive to read."`
}

// maxEntries bounds the arrays of one archive.
const maxEntries = 1 << 20

// Source reads one .npz archive.
type Source struct {
	path    string
	f       *os.File
	entries map[string]*entry
}

// entry is one array of the archive.
type entry struct {
	zf  *zip.File
	hdr *npyHeader
	// stored entries are read in place from this offset of the archive.
	stored  bool
	dataOff int64
}

// OpenSource checks the configuration; Describe reads the archive.
func OpenSource(cfg *SourceConfig) (*Source, error) {
	if cfg.Path == "" {
		return nil, plugin.ConfigErrorf("path", "must not be empty")
	}
	if _, err := os.Stat(cfg.Path); err != nil {
		return nil, &plugin.InputError{File: cfg.Path, Msg: "cannot open", Err: err}
	}
	return &Source{path: cfg.Path}, nil
}

// Probe recognises a ZIP archive whose first entry is an .npy array.
func Probe(path string) int {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0
	}
	zr, err := zip.NewReader(f, fi.Size())
	if err != nil || len(zr.File) == 0 || !strings.HasSuffix(zr.File[0].Name, ".npy") {
		return 0
	}
	return 90
}

// Describe reads the ZIP central directory and each entry's .npy header.
// Stored entries (numpy.savez) get a file reference, so the core copies
// their bytes itself.
func (s *Source) Describe(ctx context.Context) (*tensor.Manifest, error) {
	if s.f == nil {
		f, err := os.Open(s.path)
		if err != nil {
			return nil, &plugin.InputError{File: s.path, Msg: "cannot open", Err: err}
		}
		s.f = f
	}
	fi, err := s.f.Stat()
	if err != nil {
		return nil, err
	}
	size := fi.Size()
	zr, err := zip.NewReader(s.f, size)
	if err != nil {
		return nil, &binio.FormatError{File: s.path, Offset: -1, Msg: "not a ZIP archive (an .npz file is one)", Err: err}
	}
	if len(zr.File) > maxEntries {
		return nil, &binio.FormatError{File: s.path, Offset: -1, Msg: fmt.Sprintf("%d entries; at most %d are read", len(zr.File), maxEntries)}
	}
	m := &tensor.Manifest{}
	s.entries = map[string]*entry{}
	for _, zf := range zr.File {
		if strings.HasSuffix(zf.Name, "/") {
			continue
		}
		name, ok := strings.CutSuffix(zf.Name, ".npy")
		if !ok {
			return nil, &binio.FormatError{File: s.path, Offset: -1, Tensor: zf.Name, Msg: "entry is not an .npy array"}
		}
		if _, dup := s.entries[name]; dup {
			return nil, &binio.FormatError{File: s.path, Offset: -1, Tensor: name, Msg: "appears twice in the archive"}
		}
		e, err := s.readEntry(zf, name, size)
		if err != nil {
			return nil, err
		}
		s.entries[name] = e
		info := tensor.TensorInfo{Name: name, DType: e.hdr.dtype, Shape: e.hdr.shape, Size: e.hdr.size}
		if e.stored {
			info.Location = &tensor.FileRef{Path: s.path, Offset: uint64(e.dataOff), Length: e.hdr.size}
		}
		m.Tensors = append(m.Tensors, info)
	}
	return m, nil
}

// readEntry reads one entry's .npy header.
func (s *Source) readEntry(zf *zip.File, name string, fileSize int64) (*entry, error) {
	usize := zf.UncompressedSize64
	if usize > 1<<62 {
		return nil, &binio.FormatError{File: s.path, Offset: -1, Tensor: name, Msg: fmt.Sprintf("entry claims %d bytes", usize)}
	}
	switch zf.Method {
	case zip.Store:
		off, err := zf.DataOffset()
		if err != nil {
			return nil, &binio.FormatError{File: s.path, Offset: -1, Tensor: name, Msg: "bad local header", Err: err}
		}
		end, ok := binio.AddOffsets(uint64(off), usize)
		if zf.CompressedSize64 != usize || !ok || end > uint64(fileSize) {
			return nil, &binio.FormatError{File: s.path, Offset: off, Tensor: name,
				Msg: fmt.Sprintf("stored entry of %d bytes (compressed %d) does not fit the %d-byte file", usize, zf.CompressedSize64, fileSize)}
		}
		hdr, err := readHeader(io.NewSectionReader(s.f, off, int64(usize)), int64(usize), s.path, name)
		if err != nil {
			return nil, shift(err, off)
		}
		return &entry{zf: zf, hdr: hdr, stored: true, dataOff: off + hdr.dataOffset}, nil
	case zip.Deflate:
		rc, err := zf.Open()
		if err != nil {
			return nil, &binio.FormatError{File: s.path, Offset: -1, Tensor: name, Msg: "cannot inflate", Err: err}
		}
		defer rc.Close()
		prefix, err := io.ReadAll(io.LimitReader(rc, int64(min(usize, 12+maxHeaderLen))))
		if err != nil {
			return nil, &binio.FormatError{File: s.path, Offset: -1, Tensor: name, Msg: "cannot inflate the .npy header", Err: err}
		}
		hdr, err := readHeader(bytes.NewReader(prefix), int64(usize), s.path+" (inflated entry "+zf.Name+")", name)
		if err != nil {
			return nil, err
		}
		return &entry{zf: zf, hdr: hdr}, nil
	}
	return nil, &binio.FormatError{File: s.path, Offset: -1, Tensor: name, Msg: fmt.Sprintf("compression method %d is not supported (stored and deflated are)", zf.Method)}
}

// shift moves a format error's offset from the entry to the archive.
func shift(err error, base int64) error {
	var fe *binio.FormatError
	if errors.As(err, &fe) && fe.Offset >= 0 {
		fe.Offset += base
	}
	return err
}

// Open returns one array's bytes. Inflated entries are checked against
// their CRC-32 once read to the end.
func (s *Source) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	e, ok := s.entries[name]
	if !ok {
		return nil, &plugin.InputError{File: s.path, Tensor: name, Msg: "no such array"}
	}
	if e.stored {
		return io.NopCloser(io.NewSectionReader(s.f, e.dataOff, int64(e.hdr.size))), nil
	}
	rc, err := e.zf.Open()
	if err != nil {
		return nil, err
	}
	if _, err := io.CopyN(io.Discard, rc, e.hdr.dataOffset); err != nil {
		rc.Close()
		return nil, &binio.FormatError{File: s.path, Offset: -1, Tensor: name, Msg: "cannot inflate", Err: err}
	}
	return &inflated{rc: rc, left: e.hdr.size, path: s.path, name: name}, nil
}

// inflated reads an array from a deflated entry and, at its end, makes
// archive/zip check the entry's CRC-32.
type inflated struct {
	rc   io.ReadCloser
	left uint64
	path string
	name string
}

func (r *inflated) Read(p []byte) (int, error) {
	if r.left == 0 {
		var one [1]byte
		n, err := r.rc.Read(one[:])
		switch {
		case n > 0:
			return 0, &binio.FormatError{File: r.path, Offset: -1, Tensor: r.name, Msg: "entry holds more bytes than its header says"}
		case errors.Is(err, zip.ErrChecksum):
			return 0, &binio.FormatError{File: r.path, Offset: -1, Tensor: r.name, Msg: "CRC-32 mismatch: the entry is damaged", Err: err}
		case err != nil && err != io.EOF:
			return 0, &binio.FormatError{File: r.path, Offset: -1, Tensor: r.name, Msg: "cannot inflate", Err: err}
		}
		return 0, io.EOF
	}
	if uint64(len(p)) > r.left {
		p = p[:r.left]
	}
	n, err := r.rc.Read(p)
	r.left -= uint64(n)
	if err == io.EOF && r.left > 0 {
		return n, &binio.FormatError{File: r.path, Offset: -1, Tensor: r.name, Msg: "entry ends early", Err: io.ErrUnexpectedEOF}
	}
	if err != nil && err != io.EOF {
		return n, &binio.FormatError{File: r.path, Offset: -1, Tensor: r.name, Msg: "cannot inflate", Err: err}
	}
	return n, nil
}

func (r *inflated) Close() error { return r.rc.Close() }

// Close closes the archive.
func (s *Source) Close() error {
	if s.f == nil {
		return nil
	}
	err := s.f.Close()
	s.f = nil
	return err
}
