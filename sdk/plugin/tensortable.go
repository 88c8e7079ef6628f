package plugin

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"slices"
	"unicode/utf8"
	"unsafe"

	"github.com/sluice-ml/sluice/sdk/tensor"
)

// A packed tensor table (protocol 1.8, Manifest.packed_tensors) carries a
// manifest's tensors as one block instead of a message per tensor: a model
// of 20,000 tensors then crosses as one field to copy, not 20,000 messages,
// strings and maps to encode, allocate and check one by one, and each file
// path, dtype and attribute crosses once however many tensors name it.
//
// Every number is an unsigned varint as protobuf writes one (LEB128, at most
// ten bytes):
//
//	strings   the count, then each string's byte length and bytes (UTF-8):
//	          every distinct dtype, attribute key, attribute value and file
//	          path, in the order of first use
//	tensors   the count, then for each tensor:
//	            name           its byte length and bytes (UTF-8)
//	            dtype          an index into the strings
//	            rank           then each dimension, outermost first
//	            size           the tensor's bytes as it flows
//	            attributes     the count, then a key index and a value index
//	                           for each, keys in byte order, none twice
//	            location       0 when the tensor lies in no file; otherwise
//	                           1 + the path's index, then offset and length
//
// Nothing may follow the last tensor.

// appendTensorTable appends ts as a packed tensor table to b.
func appendTensorTable(b []byte, ts []tensor.TensorInfo) []byte {
	// A first pass numbers the strings and sizes the table, so that the
	// second writes it in place, strings first, with no buffer between: a
	// fresh megabyte costs more in page faults than the work.
	var st stringTable
	var keys []string
	size := uvarintLen(uint64(len(ts)))
	for i := range ts {
		t := &ts[i]
		size += uvarintLen(uint64(len(t.Name))) + len(t.Name) + uvarintLen(st.number(string(t.DType))) + uvarintLen(uint64(len(t.Shape)))
		for _, d := range t.Shape {
			size += uvarintLen(d)
		}
		keys = sortedKeys(keys, t.Attrs)
		size += uvarintLen(t.Size) + uvarintLen(uint64(len(keys)))
		for _, k := range keys {
			size += uvarintLen(st.number(k)) + uvarintLen(st.number(t.Attrs[k]))
		}
		if t.Location == nil {
			size++ // the location's 0
		} else {
			size += uvarintLen(1+st.number(t.Location.Path)) + uvarintLen(t.Location.Offset) + uvarintLen(t.Location.Length)
		}
	}
	b = slices.Grow(b, size+st.size())
	b = st.appendTo(b)
	b = binary.AppendUvarint(b, uint64(len(ts)))
	for i := range ts {
		t := &ts[i]
		b = binary.AppendUvarint(b, uint64(len(t.Name)))
		b = append(b, t.Name...)
		b = binary.AppendUvarint(b, st.number(string(t.DType)))
		b = binary.AppendUvarint(b, uint64(len(t.Shape)))
		for _, d := range t.Shape {
			b = binary.AppendUvarint(b, d)
		}
		b = binary.AppendUvarint(b, t.Size)
		keys = sortedKeys(keys, t.Attrs)
		b = binary.AppendUvarint(b, uint64(len(keys)))
		for _, k := range keys {
			b = binary.AppendUvarint(b, st.number(k))
			b = binary.AppendUvarint(b, st.number(t.Attrs[k]))
		}
		if t.Location == nil {
			b = append(b, 0)
			continue
		}
		b = binary.AppendUvarint(b, 1+st.number(t.Location.Path))
		b = binary.AppendUvarint(b, t.Location.Offset)
		b = binary.AppendUvarint(b, t.Location.Length)
	}
	return b
}

// stringTable numbers the strings of a packed tensor table in the order of
// their first use.
type stringTable struct {
	index map[string]uint64
	strs  []string
	// last is the string numbered last: tensors in a row mostly share their
	// dtype and file.
	last      string
	lastIndex uint64
}

// number returns s's number, numbering it if it is new.
func (st *stringTable) number(s string) uint64 {
	if len(st.strs) > 0 && s == st.last {
		return st.lastIndex
	}
	i, ok := st.index[s]
	if !ok {
		if st.index == nil {
			st.index = map[string]uint64{}
		}
		i = uint64(len(st.strs))
		st.index[s] = i
		st.strs = append(st.strs, s)
	}
	st.last, st.lastIndex = s, i
	return i
}

// size is the byte size of the string table as appendTo writes it.
func (st *stringTable) size() int {
	n := uvarintLen(uint64(len(st.strs)))
	for _, s := range st.strs {
		n += uvarintLen(uint64(len(s))) + len(s)
	}
	return n
}

// appendTo appends the string table: the count, then each string's byte
// length and bytes.
func (st *stringTable) appendTo(b []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(st.strs)))
	for _, s := range st.strs {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	return b
}

// uvarintLen is the number of bytes binary.AppendUvarint writes for v.
func uvarintLen(v uint64) int { return (bits.Len64(v|1) + 6) / 7 }

// sortedKeys returns attrs' keys in byte order, in keys' array.
func sortedKeys(keys []string, attrs map[string]string) []string {
	keys = keys[:0]
	for k := range attrs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// tableReader reads the varints of a packed tensor table, keeping the first
// error, which names what was being read and at which byte.
type tableReader struct {
	b   []byte
	off int
	err error
}

// fail keeps the first error, at byte off of the block.
func (r *tableReader) fail(off int, format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("byte %d: %s", off, fmt.Sprintf(format, args...))
	}
}

// uvarint reads a varint; what names it in an error.
func (r *tableReader) uvarint(what string) uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b[r.off:])
	switch {
	case n == 0:
		r.fail(r.off, "%s: the table ends", what)
		return 0
	case n < 0:
		r.fail(r.off, "%s: a varint longer than 64 bits", what)
		return 0
	}
	r.off += n
	return v
}

// str reads a string given as its byte length and bytes, as a piece of all,
// which holds r.b's bytes, or as a copy of its own when all is "".
func (r *tableReader) str(all string, what string) string {
	off := r.off
	n := r.uvarint(what)
	if r.err != nil {
		return ""
	}
	if n > uint64(len(r.b)-r.off) {
		r.fail(off, "%s of %d bytes: the table ends", what, n)
		return ""
	}
	var s string
	if all == "" {
		s = string(r.b[r.off : r.off+int(n)])
	} else {
		s = all[r.off : r.off+int(n)]
	}
	if !utf8.ValidString(s) {
		r.fail(r.off, "%s is not valid UTF-8", what)
		return ""
	}
	r.off += int(n)
	return s
}

// end returns the first error, or one for bytes after the last item.
func (r *tableReader) end(item string) error {
	if r.err != nil {
		return r.err
	}
	if r.off != len(r.b) {
		return fmt.Errorf("byte %d: %d bytes follow the last %s", r.off, len(r.b)-r.off, item)
	}
	return nil
}

// strings reads a string table, the strings pieces of all (see str).
func (r *tableReader) strings(all string) []string {
	strs := make([]string, r.count("string count", 1))
	for i := range strs {
		strs[i] = r.str(all, fmt.Sprintf("string %d", i))
	}
	return strs
}

// pick reads an index into strs and returns that string.
func (r *tableReader) pick(what string, strs []string) string {
	i := r.index(what, "string", len(strs))
	if r.err != nil {
		return ""
	}
	return strs[i]
}

// index reads an index of one of n things.
func (r *tableReader) index(what, thing string, n int) int {
	off := r.off
	i := r.uvarint(what)
	if r.err == nil && i >= uint64(n) {
		r.fail(off, "%s: %s %d of %d", what, thing, i, n)
		return 0
	}
	return int(i)
}

// count reads a count of items that take at least min bytes each, refusing
// one the rest of the table cannot hold, so that nothing is allocated for
// items that are not there.
func (r *tableReader) count(what string, min int) int {
	off := r.off
	n := r.uvarint(what)
	if r.err == nil && n > uint64(len(r.b)-r.off)/uint64(min) {
		r.fail(off, "%s %d: the %d bytes left cannot hold them", what, n, len(r.b)-r.off)
		return 0
	}
	return int(n)
}

// parseTensorTable reads a packed tensor table. Errors name the byte at
// fault and, past the strings, the tensor. The tensors' strings are pieces
// of b, read in place, so b must not change afterwards: the tables it reads
// are fields protobuf has just decoded into memory of their own, and a copy
// (1.1 MB for 20,000 tensors) would be fresh memory, which a plugin process
// or a host that has just started pays for by the page.
func parseTensorTable(b []byte) ([]tensor.TensorInfo, error) {
	all := unsafe.String(unsafe.SliceData(b), len(b))
	r := &tableReader{b: b}
	strs := r.strings(all)
	str := func(what string) string { return r.pick(what, strs) }
	// A tensor takes six bytes at least: a name's length, dtype, rank, size,
	// attributes, location.
	ts := make([]tensor.TensorInfo, r.count("tensor count", 6))
	// The shapes share one array, sized as they are read.
	var dims []uint64
	var locations []tensor.FileRef
	for i := range ts {
		t := &ts[i]
		t.Name = r.str(all, "name")
		t.DType = tensor.DType(str("dtype"))
		if rank := r.count("rank", 1); rank > 0 {
			if len(dims)+rank > cap(dims) {
				dims = make([]uint64, 0, max(rank, (len(ts)-i)*2))
			}
			start := len(dims)
			for range rank {
				dims = append(dims, r.uvarint("dimension"))
			}
			t.Shape = dims[start:len(dims):len(dims)]
		}
		t.Size = r.uvarint("size")
		if nattr := r.count("attribute count", 2); nattr > 0 {
			t.Attrs = make(map[string]string, nattr)
			prev := ""
			for j := range nattr {
				off := r.off
				k, v := str("attribute key"), str("attribute value")
				if r.err == nil && j > 0 && k <= prev {
					r.fail(off, "attribute %q: keys out of order or repeated", k)
				}
				t.Attrs[k], prev = v, k
			}
		}
		off := r.off
		if loc := r.uvarint("location"); loc > 0 && r.err == nil {
			if loc-1 >= uint64(len(strs)) {
				r.fail(off, "location: string %d of %d", loc-1, len(strs))
			} else {
				if locations == nil {
					locations = make([]tensor.FileRef, 0, len(ts)-i)
				}
				locations = append(locations, tensor.FileRef{Path: strs[loc-1], Offset: r.uvarint("offset"), Length: r.uvarint("length")})
				t.Location = &locations[len(locations)-1]
			}
		}
		if r.err != nil {
			return nil, fmt.Errorf("tensor %d (%q): %w", i, t.Name, r.err)
		}
	}
	if err := r.end("tensor"); err != nil {
		return nil, err
	}
	return ts, nil
}
