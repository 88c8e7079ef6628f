package plugin

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"unsafe"

	"github.com/sluice-ml/sluice/sdk/tensor"
)

// Packed lists (protocol 1.8) carry a plan's conversions and a direct lane's
// targets as one block each, in the varints and string table of a packed
// tensor table (tensortable.go), for a host that announced it takes them:
// a model of 20,000 tensors otherwise answers Plan with 20,000 messages and
// a direct lane with 20,000 more.
//
// Conversions (PlanResponse.packed_convert):
//
//	strings       every distinct dtype and reason, as in a tensor table
//	conversions   the count, then for each: the tensor's index among the
//	              tensors of the manifest planned, the dtype's index and the
//	              reason's index
//
// Direct targets (DirectTargets.packed_tensors):
//
//	targets       the count, then for each: the tensor's name (byte length
//	              and bytes), its file, offset and size
//
// Nothing may follow the last item of either.

// appendConversions appends cs as a packed list, each tensor by its index
// in m. ok is false when one names a tensor m does not hold, which only a
// message per conversion can carry (the host then says which).
func appendConversions(b []byte, cs []Conversion, m *tensor.Manifest) (_ []byte, ok bool) {
	find := tensorFinder{m: m}
	at := make([]int, len(cs))
	var st stringTable
	size := uvarintLen(uint64(len(cs)))
	for i, c := range cs {
		if at[i], ok = find.index(c.Tensor); !ok {
			return b, false
		}
		size += uvarintLen(uint64(at[i])) + uvarintLen(st.number(string(c.To))) + uvarintLen(st.number(c.Reason))
	}
	b = slices.Grow(b, size+st.size())
	b = st.appendTo(b)
	b = binary.AppendUvarint(b, uint64(len(cs)))
	for i, c := range cs {
		b = binary.AppendUvarint(b, uint64(at[i]))
		b = binary.AppendUvarint(b, st.number(string(c.To)))
		b = binary.AppendUvarint(b, st.number(c.Reason))
	}
	return b, true
}

// parseConversions reads a packed list of conversions of m's tensors.
func parseConversions(b []byte, m *tensor.Manifest) ([]Conversion, error) {
	r := &tableReader{b: b}
	strs := r.strings("")
	// A conversion takes three bytes at least.
	cs := make([]Conversion, r.count("conversion count", 3))
	for i := range cs {
		t := r.index("tensor", "tensor", len(m.Tensors))
		to, reason := r.pick("dtype", strs), r.pick("reason", strs)
		if r.err != nil {
			return nil, fmt.Errorf("conversion %d: %w", i, r.err)
		}
		cs[i] = Conversion{Tensor: m.Tensors[t].Name, To: tensor.DType(to), Reason: reason}
	}
	if err := r.end("conversion"); err != nil {
		return nil, err
	}
	return cs, nil
}

// tensorFinder finds tensors of a manifest by name: the one after the last
// found first, as a sink decides in the manifest's order, and through an
// index of the names, made the first time that guess misses.
type tensorFinder struct {
	m      *tensor.Manifest
	next   int
	byName map[string]int
}

func (f *tensorFinder) index(name string) (int, bool) {
	if ts := f.m.Tensors; f.next < len(ts) && ts[f.next].Name == name {
		f.next++
		return f.next - 1, true
	}
	if f.byName == nil {
		f.byName = f.m.Index()
	}
	i, ok := f.byName[name]
	if ok {
		f.next = i + 1
	}
	return i, ok
}

// packedTarget is a direct target as a packed list carries it: its file by
// index.
type packedTarget struct {
	tensor       string
	file         uint32
	offset, size uint64
}

// appendDirectTargets appends targets as a packed list.
func appendDirectTargets(b []byte, targets []packedTarget) []byte {
	size := uvarintLen(uint64(len(targets)))
	for _, t := range targets {
		size += uvarintLen(uint64(len(t.tensor))) + len(t.tensor) + uvarintLen(uint64(t.file)) + uvarintLen(t.offset) + uvarintLen(t.size)
	}
	b = slices.Grow(b, size)
	b = binary.AppendUvarint(b, uint64(len(targets)))
	for _, t := range targets {
		b = binary.AppendUvarint(b, uint64(len(t.tensor)))
		b = append(b, t.tensor...)
		b = binary.AppendUvarint(b, uint64(t.file))
		b = binary.AppendUvarint(b, t.offset)
		b = binary.AppendUvarint(b, t.size)
	}
	return b
}

// parseDirectTargets reads a packed list of direct targets. Files are not
// checked here: the host checks every target as it takes them. As
// parseTensorTable does, it reads the names in place: b must not change
// afterwards.
func parseDirectTargets(b []byte) ([]packedTarget, error) {
	r := &tableReader{b: b}
	all := unsafe.String(unsafe.SliceData(b), len(b))
	// A target takes four bytes at least: a name's length, file, offset,
	// size.
	targets := make([]packedTarget, r.count("target count", 4))
	for i := range targets {
		t := &targets[i]
		t.tensor = r.str(all, "name")
		off := r.off
		file := r.uvarint("file")
		if r.err == nil && file > uint64(^uint32(0)) {
			r.fail(off, "file %d", file)
		}
		t.offset, t.size = r.uvarint("offset"), r.uvarint("size")
		if r.err != nil {
			return nil, fmt.Errorf("target %d (%q): %w", i, t.tensor, r.err)
		}
		t.file = uint32(file)
	}
	if err := r.end("target"); err != nil {
		return nil, err
	}
	return targets, nil
}

// errBothForms refuses a message that lists items both ways: as a message
// each and as one packed block.
var errBothForms = errors.New("sent both as messages and as a packed block")
