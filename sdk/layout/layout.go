// Package layout rearranges tensor rows without looking at their values: the
// bytes of a row are moved whole, so the functions work for any dtype,
// block-quantized ones included (ggml quantizes each row on its own).
//
// Its first use is the query/key permutation llama.cpp's converter applies to
// llama-family checkpoints: Hugging Face stores each attention head's rows in
// "rotate-half" order (first the rows of the even rotary pairs' first halves,
// then the second halves), ggml's non-NeoX RoPE wants the two halves
// interleaved. Within each head of hd rows, PermuteQK moves source row
// a·hd/2 + b to row 2·b + a (a ∈ {0,1}, b < hd/2); UnpermuteQK moves it back.
//
// The package does not read files and does not decode numbers.
package layout

import (
	"errors"
	"fmt"
	"io"
)

// checkHeads validates a tensor of rows rows split into heads heads of an
// even number of rows each, and returns the rows per head.
func checkHeads(rows, heads, rowBytes int) (int, error) {
	if heads <= 0 || rowBytes <= 0 || rows < 0 {
		return 0, fmt.Errorf("layout: %d heads, %d-byte rows: both must be positive", heads, rowBytes)
	}
	if rows%heads != 0 {
		return 0, fmt.Errorf("layout: %d rows do not split into %d heads", rows, heads)
	}
	hd := rows / heads
	if hd%2 != 0 {
		return 0, fmt.Errorf("layout: heads of %d rows cannot be permuted: the rotary halves need an even head size", hd)
	}
	return hd, nil
}

// PermuteHead writes to dst the rows of one head in src (len(src)/rowBytes
// rows, an even number) interleaved: dst row 2b+a = src row a·hd/2+b.
func PermuteHead(dst, src []byte, rowBytes int) error { return head(dst, src, rowBytes, false) }

// UnpermuteHead undoes PermuteHead: dst row a·hd/2+b = src row 2b+a.
func UnpermuteHead(dst, src []byte, rowBytes int) error { return head(dst, src, rowBytes, true) }

func head(dst, src []byte, rowBytes int, inverse bool) error {
	if rowBytes <= 0 || len(src)%rowBytes != 0 || len(dst) != len(src) {
		return fmt.Errorf("layout: head of %d bytes (dst %d) is not a whole number of %d-byte rows", len(src), len(dst), rowBytes)
	}
	hd := len(src) / rowBytes
	if hd%2 != 0 {
		return fmt.Errorf("layout: a head of %d rows cannot be permuted: the rotary halves need an even head size", hd)
	}
	half := hd / 2
	for a := 0; a < 2; a++ {
		for b := 0; b < half; b++ {
			from, to := a*half+b, 2*b+a
			if inverse {
				from, to = to, from
			}
			copy(dst[to*rowBytes:(to+1)*rowBytes], src[from*rowBytes:(from+1)*rowBytes])
		}
	}
	return nil
}

// PermuteQK permutes a whole query or key tensor (or bias) of heads heads:
// src holds rows of rowBytes bytes each, outermost dimension the output
// features, as Hugging Face stores them. For keys pass the key/value head
// count. dst and src must not overlap.
func PermuteQK(dst, src []byte, heads, rowBytes int) error {
	return whole(dst, src, heads, rowBytes, false)
}

// UnpermuteQK undoes PermuteQK.
func UnpermuteQK(dst, src []byte, heads, rowBytes int) error {
	return whole(dst, src, heads, rowBytes, true)
}

func whole(dst, src []byte, heads, rowBytes int, inverse bool) error {
	if rowBytes <= 0 || len(src)%rowBytes != 0 || len(dst) != len(src) {
		return fmt.Errorf("layout: tensor of %d bytes (dst %d) is not a whole number of %d-byte rows", len(src), len(dst), rowBytes)
	}
	hd, err := checkHeads(len(src)/rowBytes, heads, rowBytes)
	if err != nil {
		return err
	}
	step := hd * rowBytes
	for off := 0; off < len(src); off += step {
		if err := head(dst[off:off+step], src[off:off+step], rowBytes, inverse); err != nil {
			return err
		}
	}
	return nil
}

// QKWriter applies PermuteQK (or UnpermuteQK) to a stream: it buffers one
// head's rows, writes them rearranged, and needs two head-sized buffers
// whatever the size of the tensor.
type QKWriter struct {
	w        io.Writer
	rowBytes int
	inverse  bool
	buf, out []byte
	n        int // bytes in buf
	left     int // bytes still expected
}

// NewQKWriter returns a writer that expects rows·rowBytes bytes of a tensor of
// heads heads and writes them to w permuted (inverse: unpermuted).
func NewQKWriter(w io.Writer, rows, heads, rowBytes int, inverse bool) (*QKWriter, error) {
	hd, err := checkHeads(rows, heads, rowBytes)
	if err != nil {
		return nil, err
	}
	step := hd * rowBytes
	return &QKWriter{w: w, rowBytes: rowBytes, inverse: inverse, buf: make([]byte, step), out: make([]byte, step), left: rows * rowBytes}, nil
}

// ErrTooLong reports more bytes than the tensor holds.
var ErrTooLong = errors.New("layout: more bytes than the tensor holds")

// Write buffers p and writes every completed head.
func (q *QKWriter) Write(p []byte) (int, error) {
	if len(p) > q.left {
		return 0, ErrTooLong
	}
	written := 0
	for len(p) > 0 {
		c := copy(q.buf[q.n:], p)
		q.n += c
		p = p[c:]
		written += c
		q.left -= c
		if q.n == len(q.buf) {
			if err := head(q.out, q.buf, q.rowBytes, q.inverse); err != nil {
				return written, err
			}
			if _, err := q.w.Write(q.out); err != nil {
				return written, err
			}
			q.n = 0
		}
	}
	return written, nil
}

// Close reports an error when the tensor ended before its last head.
func (q *QKWriter) Close() error {
	if q.left != 0 || q.n != 0 {
		return fmt.Errorf("layout: tensor ended %d bytes early", q.left+q.n)
	}
	return nil
}
