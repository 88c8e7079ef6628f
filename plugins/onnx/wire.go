package onnx

import (
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/sluice-ml/sluice/sdk/binio"
)

// wire reads protobuf fields from a window [start, end) of a file through a
// bounds-checked binio.Reader. Length-delimited fields are located (offset
// and length), not loaded, so a model's raw tensor bytes are never read
// while its structure is parsed.
type wire struct {
	r   *binio.Reader
	end int64
}

// field is one decoded field header, plus its scalar value or its payload's
// position.
type field struct {
	num  protowire.Number
	typ  protowire.Type
	at   int64  // offset of the tag
	u    uint64 // varint, fixed32 or fixed64 value
	off  int64  // payload offset of a length-delimited field
	size int64  // payload length of a length-delimited field
}

func (w *wire) more() bool { return w.r.Offset() < w.end }

// varint reads one varint with protowire, at most 10 bytes.
func (w *wire) varint(what string) (uint64, error) {
	var buf [binary10]byte
	n := 0
	for {
		if w.r.Offset() >= w.end {
			return 0, w.r.Errorf("%s: varint runs past the end of its message", what)
		}
		b, err := w.r.U8(what)
		if err != nil {
			return 0, err
		}
		buf[n] = b
		n++
		if b < 0x80 || n == binary10 {
			break
		}
	}
	v, m := protowire.ConsumeVarint(buf[:n])
	if m < 0 {
		return 0, w.r.ErrorAt(w.r.Offset()-int64(n), "%s: malformed varint", what)
	}
	return v, nil
}

const binary10 = 10

// next reads the next field header and its scalar value, or locates its
// payload and skips it.
func (w *wire) next() (field, error) {
	f := field{at: w.r.Offset()}
	tag, err := w.varint("field tag")
	if err != nil {
		return f, err
	}
	num, typ := protowire.DecodeTag(tag)
	if num < protowire.MinValidNumber || num > protowire.MaxValidNumber {
		return f, w.r.ErrorAt(f.at, "invalid protobuf field number %d", num)
	}
	f.num, f.typ = num, typ
	switch typ {
	case protowire.VarintType:
		f.u, err = w.varint("varint field")
	case protowire.Fixed32Type:
		if w.end-w.r.Offset() < 4 {
			return f, w.r.ErrorAt(f.at, "fixed32 field %d runs past the end of its message", num)
		}
		var v uint32
		v, err = w.r.U32("fixed32 field")
		f.u = uint64(v)
	case protowire.Fixed64Type:
		if w.end-w.r.Offset() < 8 {
			return f, w.r.ErrorAt(f.at, "fixed64 field %d runs past the end of its message", num)
		}
		f.u, err = w.r.U64("fixed64 field")
	case protowire.BytesType:
		var n uint64
		if n, err = w.varint("length"); err != nil {
			return f, err
		}
		if n > uint64(w.end-w.r.Offset()) {
			return f, w.r.ErrorAt(f.at, "field %d claims %d bytes, only %d left in its message", num, n, w.end-w.r.Offset())
		}
		f.off, f.size = w.r.Offset(), int64(n)
		err = w.r.Skip(n, "bytes field")
	default:
		return f, w.r.ErrorAt(f.at, "field %d has unsupported wire type %d (groups are not used by ONNX)", num, typ)
	}
	return f, err
}

// sub returns a reader over a length-delimited field's payload. The parent
// must not be used until the child is done; afterwards the parent resumes
// after the field.
func (w *wire) sub(f field) *wire {
	return &wire{r: w.r, end: f.off + f.size}
}

// enter positions the shared reader at a field's payload.
func (w *wire) enter(f field) (*wire, error) {
	if err := w.r.SeekTo(f.off); err != nil {
		return nil, err
	}
	return w.sub(f), nil
}

// leave puts the shared reader back after a field.
func (w *wire) leave(f field) error { return w.r.SeekTo(f.off + f.size) }

// str reads a length-delimited field as a string of at most limit bytes.
func (w *wire) str(f field, limit int64, what string) (string, error) {
	if f.typ != protowire.BytesType {
		return "", w.r.ErrorAt(f.at, "%s: wire type %d, want length-delimited", what, f.typ)
	}
	if f.size > limit {
		return "", w.r.ErrorAt(f.at, "%s of %d bytes is over the limit of %d", what, f.size, limit)
	}
	back := w.r.Offset()
	if err := w.r.SeekTo(f.off); err != nil {
		return "", err
	}
	s, err := w.r.String(uint64(f.size), what)
	if err != nil {
		return "", err
	}
	return s, w.r.SeekTo(back)
}
