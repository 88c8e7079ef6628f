package onnx

import (
	"encoding/binary"
	"io"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/sluice-ml/sluice/sdk/binio"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// typedReader decodes an initializer's typed data fields (float_data,
// int32_data, int64_data, double_data, uint64_data) into little-endian
// elements of its dtype, front to back, one element at a time.
type typedReader struct {
	w     *wire
	loc   *located
	segs  []segment
	seg   int
	in    bool // positioned inside segs[seg]
	width int
	index uint64 // element index, for errors
	left  uint64 // bytes still to produce
	pend  [8]byte
	pn    int // bytes in pend
	po    int // bytes of pend already returned
}

func newTypedReader(r *binio.Reader, loc *located) *typedReader {
	info, _ := loc.typ.dtype.Info()
	return &typedReader{w: &wire{r: r}, loc: loc, segs: loc.init.typed, width: int(info.BlockBytes), left: loc.size}
}

func (t *typedReader) Close() error { return nil }

func (t *typedReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if t.po == t.pn {
			if t.left == 0 {
				if n == 0 {
					return 0, io.EOF
				}
				return n, nil
			}
			if err := t.decode(); err != nil {
				return n, err
			}
		}
		k := copy(p[n:], t.pend[t.po:t.pn])
		n += k
		t.po += k
		t.left -= uint64(k)
	}
	return n, nil
}

func (t *typedReader) fail(format string, args ...any) error {
	e := t.w.r.Errorf(format, args...)
	e.Tensor = t.loc.init.name
	return e
}

// decode reads the next element into pend.
func (t *typedReader) decode() error {
	for {
		if t.seg >= len(t.segs) {
			return t.fail("typed data ends after %d elements", t.index)
		}
		s := t.segs[t.seg]
		if !t.in {
			if err := t.w.r.SeekTo(s.off); err != nil {
				return err
			}
			t.w.end = s.end
			t.in = true
		}
		if t.w.more() {
			break
		}
		t.seg++
		t.in = false
	}
	s := t.segs[t.seg]
	var v uint64
	var err error
	if s.packed {
		v, err = t.scalar(s.field)
	} else {
		var f field
		if f, err = t.w.next(); err == nil {
			v = f.u
		}
	}
	if err != nil {
		return err
	}
	typ := t.loc.typ
	switch s.field {
	case tensorInt32Data:
		// Protobuf writes a negative int32 sign-extended to 64 bits; a
		// value that is neither that nor 32 bits wide is corrupt.
		x := int64(int32(uint32(v)))
		if uint64(x) != v && v > 0xffffffff {
			return t.fail("int32_data element %d (%d) is not a 32-bit value", t.index, v)
		}
		switch {
		case typ.dtype == tensor.Bool:
			if x != 0 {
				x = 1
			}
		case x < typ.lo || x > typ.hi:
			return t.fail("int32_data element %d is %d, outside %s's range [%d, %d]", t.index, x, typ.name, typ.lo, typ.hi)
		}
		v = uint64(x)
	case tensorUint64Data:
		if typ.dtype == tensor.U32 && v > uint64(typ.hi) {
			return t.fail("uint64_data element %d is %d, outside UINT32's range", t.index, v)
		}
	}
	binary.LittleEndian.PutUint64(t.pend[:], v)
	t.pn, t.po = t.width, 0
	t.index++
	return nil
}

// scalar reads one packed value of a typed field.
func (t *typedReader) scalar(num protowire.Number) (uint64, error) {
	switch wireFor[num] {
	case protowire.Fixed32Type:
		v, err := t.w.r.U32("float_data")
		return uint64(v), err
	case protowire.Fixed64Type:
		return t.w.r.U64("double_data")
	}
	return t.w.varint(fieldNames[num])
}
