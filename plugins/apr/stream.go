package apr

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/sluice-ml/sluice/sdk/binio"
)

// StreamReader reads an APR file from a plain io.Reader, front to back,
// without seeking or mapping it (the seed's WASM constraint), in bounded
// memory: the metadata and index, then each tensor in file order.
//
// The footer comes last, so unless NoVerify the checksum is known only
// when Next returns io.EOF: a consumer must treat the tensors it received
// as unverified until then, and discard them when Next returns an error
// (errors.Is(err, ErrChecksum) for damage). A problem found while parsing
// is reported as ErrChecksum when the footer does not match either.
type StreamReader struct {
	Info
	file   string
	verify bool
	s      *seqReader
	th     *trailerHash
	dec    io.Closer
	order  []int
	next   int
	cur    io.Reader
	curDec io.Closer
	err    error
}

// NewStreamReader reads the header, metadata and index of an APR file
// from r.
func NewStreamReader(r io.Reader, opts ReadOptions) (*StreamReader, error) {
	sr := &StreamReader{file: opts.Name, verify: !opts.NoVerify}
	if err := sr.start(r); err != nil {
		sr.closeDecoders()
		return nil, err
	}
	return sr, nil
}

func (sr *StreamReader) start(r io.Reader) error {
	file := sr.file
	var head [aprenderHeaderSize]byte
	n, err := io.ReadFull(r, head[:4])
	if err != nil {
		return &binio.FormatError{File: file, Offset: 0, Msg: fmt.Sprintf("the stream is %d bytes, too short for an APR magic", n), Err: ErrNotAPR}
	}
	var rest io.Reader = r
	damaged := func(l Layout, magic [4]byte) bool {
		if l == LayoutAprender {
			m, _ := io.ReadFull(r, head[4:])
			rest = io.MultiReader(bytes.NewReader(head[4:4+m]), r)
			return damagedHeader(head[:4+m], magic)
		}
		th := newTrailerHash(LayoutSpec)
		th.magic = &magic
		th.Write(head[:4])
		if _, err := io.Copy(th, rest); err != nil {
			return false
		}
		return th.check(file) == nil
	}
	layout, err := identify([4]byte(head[:4]), file, damaged)
	if err != nil {
		return err
	}
	sr.th = newTrailerHash(layout)
	if layout == LayoutSpec {
		sr.s = newSeqStream(io.TeeReader(io.MultiReader(bytes.NewReader(head[:4]), rest), sr.th), file)
		var hb [specHeaderSize]byte
		if err := sr.s.full(hb[:], "header"); err != nil {
			return sr.integrity(err)
		}
		h, err := checkSpecHeader(hb[:], file)
		if err != nil {
			return sr.integrity(err)
		}
		in, err := parseSpec(sr.s, h, -1)
		if err != nil {
			return sr.integrity(err)
		}
		sr.Info = *in
	} else {
		if _, err := io.ReadFull(rest, head[4:]); err != nil {
			return binio.Errorf(file, 4, "the stream ends inside the 64-byte header (truncated?)")
		}
		h, err := checkAprenderHeader(head[:], file)
		if err != nil {
			return err
		}
		logical := rest
		if c := aprenderCompression(h.Flags); c != CompressionNone {
			dec, err := wholeFileDecoder(c, rest, head[:], sr.verify, file)
			if err != nil {
				return err
			}
			sr.dec = dec
			logical = dec
		}
		sr.th.Write(footerView(head[:]))
		sr.s = newSeqStream(io.MultiReader(bytes.NewReader(head[:]), io.TeeReader(logical, sr.th)), file)
		if err := sr.s.skip(aprenderHeaderSize, "header"); err != nil {
			return err
		}
		in, err := parseAprender(sr.s, h, -1)
		if err != nil {
			return sr.integrity(err)
		}
		sr.Info = *in
	}
	sr.order = fileOrder(sr.Tensors)
	return nil
}

// integrity turns a problem found while reading into a checksum error when
// the footer does not match (the file is damaged), else returns it.
func (sr *StreamReader) integrity(err error) error {
	if !sr.verify || errors.Is(err, ErrChecksum) {
		return err
	}
	var fe *binio.FormatError
	if !errors.As(err, &fe) {
		return err
	}
	if _, derr := io.Copy(io.Discard, sr.s.br); derr != nil {
		if errors.Is(derr, ErrChecksum) {
			return derr
		}
		return err
	}
	if cerr := sr.th.check(sr.file); cerr != nil {
		return fmt.Errorf("%w (the first problem seen: %v)", cerr, err)
	}
	return err
}

// Next returns the next tensor in file order and a reader of its bytes
// (decompressed when the file compresses tensors), valid until the next
// call. After the last tensor it reads the rest of the stream, checks the
// footer and returns io.EOF.
func (sr *StreamReader) Next() (*Tensor, io.Reader, error) {
	if sr.err != nil {
		return nil, nil, sr.err
	}
	t, r, err := sr.advance()
	if err != nil {
		sr.err = err
		sr.closeDecoders()
	}
	return t, r, err
}

func (sr *StreamReader) advance() (*Tensor, io.Reader, error) {
	if sr.cur != nil {
		_, err := io.Copy(io.Discard, sr.cur)
		sr.cur = nil
		if sr.curDec != nil {
			sr.curDec.Close()
			sr.curDec = nil
		}
		if err != nil {
			return nil, nil, sr.integrity(err)
		}
	}
	if sr.next == len(sr.order) {
		if _, err := io.Copy(io.Discard, sr.s.br); err != nil {
			return nil, nil, sr.integrity(err)
		}
		if sr.verify {
			if err := sr.th.check(sr.file); err != nil {
				return nil, nil, err
			}
		}
		if err := sr.checkTail(sr.th.total, sr.th.held, sr.verify, sr.file); err != nil {
			return nil, nil, err
		}
		return nil, nil, io.EOF
	}
	t := &sr.Tensors[sr.order[sr.next]]
	sr.next++
	start := sr.DataOffset + t.Offset
	if err := sr.s.seekTo(start, "tensor data"); err != nil {
		return nil, nil, sr.integrity(err)
	}
	data := &sectionStream{s: sr.s, left: int64(t.Size), tensor: t.Name}
	if sr.Layout == LayoutSpec && sr.Compression != CompressionNone {
		dec, err := tensorDecoder(sr.Compression, data, t.RawSize, sr.file, int64(start), t.Name)
		if err != nil {
			return nil, nil, err
		}
		sr.cur, sr.curDec = &drainOnEOF{r: dec, rest: data}, dec
	} else {
		sr.cur = data
	}
	return t, sr.cur, nil
}

func (sr *StreamReader) closeDecoders() {
	if sr.curDec != nil {
		sr.curDec.Close()
		sr.curDec = nil
	}
	if sr.dec != nil {
		sr.dec.Close()
		sr.dec = nil
	}
}

// Close releases the decoders. It does not close the underlying reader.
func (sr *StreamReader) Close() error {
	sr.closeDecoders()
	if sr.err == nil {
		sr.err = errors.New("apr: stream reader closed")
	}
	return nil
}

// sectionStream reads the next left bytes of a seqReader.
type sectionStream struct {
	s      *seqReader
	left   int64
	tensor string
}

func (d *sectionStream) Read(p []byte) (int, error) {
	if d.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > d.left {
		p = p[:d.left]
	}
	n, err := d.s.br.Read(p)
	d.s.off += int64(n)
	d.left -= int64(n)
	if err == io.EOF && d.left > 0 {
		return n, &binio.FormatError{File: d.s.file, Offset: d.s.off, Tensor: d.tensor, Msg: fmt.Sprintf("the file ends %d bytes before the end of the tensor (truncated?)", d.left)}
	}
	if err != nil && err != io.EOF {
		return n, err
	}
	return n, nil
}

// drainOnEOF reads r; at its end it checks that the compressed section
// was consumed entirely.
type drainOnEOF struct {
	r    io.Reader
	rest *sectionStream
}

func (d *drainOnEOF) Read(p []byte) (int, error) {
	n, err := d.r.Read(p)
	if err == io.EOF && d.rest.left > 0 {
		if _, derr := io.Copy(io.Discard, d.rest); derr != nil {
			return n, derr
		}
	}
	return n, err
}
