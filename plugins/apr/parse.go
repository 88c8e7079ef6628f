package apr

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"sort"
	"unicode/utf8"

	"github.com/sluice-ml/sluice/sdk/binio"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// maxTensorSize bounds any tensor's size so that offset arithmetic stays
// far from overflow (2^62 bytes: 4 EiB).
const maxTensorSize = 1 << 62

// MaxMetadataSize caps the metadata section (its size field allows 4 GiB).
const MaxMetadataSize = 1 << 30

// Tensor is one entry of an APR file's tensor index.
type Tensor struct {
	Name string
	// ID is the dtype byte of the index entry; DType is what it means.
	ID    uint8
	DType tensor.DType
	// Shape is row-major, outermost dimension first.
	Shape []uint64
	// Offset is where the stored bytes start, relative to the data section.
	Offset uint64
	// Size is the number of bytes stored; RawSize the bytes of the tensor
	// itself. They differ only when the spec layout compresses tensors.
	Size, RawSize uint64
}

// Info describes an APR file: its header and what its metadata and index
// say.
type Info struct {
	Layout Layout
	// Version is major.minor for the aprender layout, the u16 version of
	// the spec layout.
	Version string
	// Flags holds the header's flag bits (u16 for aprender, u32 for spec).
	Flags uint32
	// Compression is how tensor bytes are compressed. In the aprender
	// layout it covers everything after the header as one stream; in the
	// spec layout each tensor is compressed on its own.
	Compression Compression
	// Section offsets and the metadata's size, in the uncompressed file.
	MetadataOffset, MetadataSize, IndexOffset, DataOffset uint64
	Metadata                                              tensor.Metadata
	// Tensors in index order.
	Tensors []Tensor
}

// Tensor returns the index entry called name.
func (in *Info) Tensor(name string) (*Tensor, bool) {
	for i := range in.Tensors {
		if in.Tensors[i].Name == name {
			return &in.Tensors[i], true
		}
	}
	return nil, false
}

// dataEnd returns where the last tensor's bytes end (the data section's
// start when there are none).
func (in *Info) dataEnd() uint64 {
	end := in.DataOffset
	for i := range in.Tensors {
		end = max(end, in.DataOffset+in.Tensors[i].Offset+in.Tensors[i].Size)
	}
	return end
}

// checkTail checks what follows the last tensor in a file of total bytes
// (uncompressed): its zero padding to 64 bytes (absent in some hand-made
// files) and the footer (absent in some old aprender files, so optional
// unless verify). trailer holds the last 16 bytes of the file.
func (in *Info) checkTail(total int64, trailer []byte, verify bool, file string) error {
	end := in.dataEnd()
	footer := uint64(aprenderFooterSize)
	if in.Layout == LayoutSpec {
		footer = specFooterSize
		if len(trailer) >= 16 {
			if size := binary.LittleEndian.Uint64(trailer[len(trailer)-8:]); size != uint64(total) {
				return checksumError(file, total-8, "footer total size says %d bytes, the file has %d", size, total)
			}
		}
	}
	pad := align64(end) - end
	rest := uint64(total) - end
	ok := rest == footer || rest == pad+footer
	if !verify && in.Layout == LayoutAprender {
		ok = ok || rest == 0 || rest == pad
	}
	if uint64(total) < end || !ok {
		return binio.Errorf(file, total, "the file ends %d bytes after its last tensor; a complete file has %d bytes of padding and a %d-byte footer there (truncated or extended?)", int64(total)-int64(end), pad, footer)
	}
	return nil
}

// wholeFile reports whether compression covers everything after the header.
func (in *Info) wholeFile() bool {
	return in.Layout == LayoutAprender && in.Compression != CompressionNone
}

// identify checks the four magic bytes. For a file whose magic is off by a
// byte it calls damaged to ask whether the rest of the file proves it an
// APR file with a corrupted magic (then the result is a checksum error).
func identify(m [4]byte, file string, damaged func(Layout, [4]byte) bool) (Layout, error) {
	switch m {
	case magicAprender, magicAprender2:
		return LayoutAprender, nil
	case magicSpec:
		return LayoutSpec, nil
	}
	near := func(want [4]byte) bool {
		same := 0
		for i := range m {
			if m[i] == want[i] {
				same++
			}
		}
		return same >= 3
	}
	if near(magicAprender) && damaged(LayoutAprender, magicAprender) {
		return "", checksumError(file, 0, "magic bytes % x are damaged: with the magic APR\\0 the header CRC matches", m[:])
	}
	if near(magicSpec) && m != magicV1 && m != magicJSON && damaged(LayoutSpec, magicSpec) {
		return "", checksumError(file, 0, "magic bytes % x are damaged: with the magic APR\\x02 the footer checksum matches", m[:])
	}
	var msg string
	switch m {
	case magicV1:
		msg = "found magic APRN: an APR v1 file (aprender's classic-model container), which is not supported; only APR v2 is read (magic APR\\0 or APR\\x02)"
	case magicJSON:
		msg = "found magic APR1: a legacy JSON APR file, which is not supported; only APR v2 is read (magic APR\\0 or APR\\x02)"
	default:
		msg = fmt.Sprintf("found magic % x (%q); an APR v2 file starts with APR\\0 (41 50 52 00) or APR\\x02 (41 50 52 02)", m[:], string(m[:]))
	}
	return "", &binio.FormatError{File: file, Offset: 0, Msg: msg, Err: ErrNotAPR}
}

// checkAprenderHeader validates a 64-byte aprender header.
func checkAprenderHeader(b []byte, file string) (aprenderHeader, error) {
	h := parseAprenderHeader(b)
	if sum := headerCRC(b); sum != h.Checksum {
		return h, checksumError(file, 40, "header CRC32 is %08x, the header's bytes give %08x", h.Checksum, sum)
	}
	if h.Major != 2 {
		return h, binio.Errorf(file, 4, "APR version %d.%d is not supported (2.x is)", h.Major, h.Minor)
	}
	if h.Flags&FlagLayoutColMajor != 0 {
		return h, binio.Errorf(file, 6, "the file is flagged LAYOUT_COLUMN_MAJOR (0x0800); APR tensors must be row-major and aprender refuses it too")
	}
	if h.Flags&FlagEncrypted != 0 {
		return h, binio.Errorf(file, 6, "the file is flagged ENCRYPTED (0x0004); encrypted APR files are not supported")
	}
	if h.Flags&aprenderCompressed == aprenderCompressed {
		return h, binio.Errorf(file, 6, "the file is flagged both LZ4 and ZSTD compressed")
	}
	return h, nil
}

func aprenderCompression(flags uint16) Compression {
	switch {
	case flags&FlagLZ4 != 0:
		return CompressionLZ4
	case flags&FlagZstd != 0:
		return CompressionZstd
	}
	return CompressionNone
}

// parseAprender reads the metadata and index of an aprender-layout file
// whose (uncompressed) bytes s reads; limit is where tensor data must end
// (-1 when unknown).
func parseAprender(s *seqReader, h aprenderHeader, limit int64) (*Info, error) {
	in := &Info{
		Layout:         LayoutAprender,
		Version:        fmt.Sprintf("%d.%d", h.Major, h.Minor),
		Flags:          uint32(h.Flags),
		Compression:    aprenderCompression(h.Flags),
		MetadataOffset: h.MetadataOffset,
		MetadataSize:   uint64(h.MetadataSize),
		IndexOffset:    h.IndexOffset,
		DataOffset:     h.DataOffset,
	}
	switch {
	case h.MetadataOffset < aprenderHeaderSize:
		return nil, s.errorf(12, "metadata offset %d lies inside the 64-byte header", h.MetadataOffset)
	case h.IndexOffset < aprenderHeaderSize:
		return nil, s.errorf(24, "tensor index offset %d lies inside the 64-byte header", h.IndexOffset)
	case h.DataOffset < h.IndexOffset:
		return nil, s.errorf(32, "data offset %d lies before the tensor index at %d", h.DataOffset, h.IndexOffset)
	case limit >= 0 && h.DataOffset > uint64(limit):
		return nil, s.errorf(32, "data offset %d lies past the end of the file's data at %d", h.DataOffset, limit)
	case uint64(h.TensorCount) > (h.DataOffset-h.IndexOffset)/20:
		return nil, s.errorf(8, "%d tensors cannot fit in a %d-byte tensor index (20 bytes each at least)", h.TensorCount, h.DataOffset-h.IndexOffset)
	}
	if err := readMetadata(s, in, limit); err != nil {
		return nil, err
	}
	if err := s.seekTo(h.IndexOffset, "tensor index"); err != nil {
		return nil, err
	}
	for i := 0; i < int(h.TensorCount); i++ {
		at := s.off
		t, err := readEntry(s, h.DataOffset, true)
		if err != nil {
			return nil, err
		}
		if t.Name == "" {
			return nil, s.errorf(at, "tensor index entry %d has an empty name (the header claims %d tensors; is the count wrong?)", i, h.TensorCount)
		}
		in.Tensors = append(in.Tensors, t)
	}
	return in, checkTensors(s, in, limit)
}

func readMetadata(s *seqReader, in *Info, limit int64) error {
	end, ok := binio.AddOffsets(in.MetadataOffset, in.MetadataSize)
	if !ok || (limit >= 0 && end > uint64(limit)) {
		return s.errorf(int64(min(in.MetadataOffset, 1<<62)), "metadata [%d, +%d) lies past the end of the file's data", in.MetadataOffset, in.MetadataSize)
	}
	if err := s.seekTo(in.MetadataOffset, "metadata"); err != nil {
		return err
	}
	at := s.off
	raw, err := s.bytes(in.MetadataSize, MaxMetadataSize, "metadata")
	if err != nil {
		return err
	}
	md, err := parseMetadataJSON(raw)
	if err != nil {
		return s.errorf(at, "%v", err)
	}
	in.Metadata = md
	return nil
}

// readEntry reads one index entry. end bounds the index (0: none). With
// sized, the entry's size is the tensor's real size (no per-tensor
// compression). A zero name length is returned as an entry with no name.
func readEntry(s *seqReader, end uint64, sized bool) (Tensor, error) {
	at := s.off
	var t Tensor
	nameLen, err := s.u16("tensor index entry")
	if err != nil {
		return t, err
	}
	if nameLen == 0 {
		return t, nil
	}
	if end > 0 && uint64(at)+indexEntrySize(int(nameLen), 0) > end {
		return t, s.errorf(at, "tensor index entry runs past the index end at %d", end)
	}
	name := make([]byte, nameLen)
	if err := s.full(name, "tensor name"); err != nil {
		return t, err
	}
	if !utf8.Valid(name) {
		// aprender's names are Rust Strings: always UTF-8.
		return t, s.errorf(at, "tensor name %q is not valid UTF-8", name)
	}
	t.Name = string(name)
	fail := func(format string, args ...any) error {
		return &binio.FormatError{File: s.file, Offset: at, Tensor: t.Name, Msg: fmt.Sprintf(format, args...)}
	}
	var pair [2]byte
	if err := s.full(pair[:], "tensor dtype and ndim"); err != nil {
		return t, err
	}
	t.ID = pair[0]
	ndim := int(pair[1])
	if end > 0 && uint64(at)+indexEntrySize(int(nameLen), ndim) > end {
		return t, fail("tensor index entry of %d dims runs past the index end at %d", ndim, end)
	}
	t.Shape = make([]uint64, ndim)
	for i := range t.Shape {
		if t.Shape[i], err = s.u64("tensor dim"); err != nil {
			return t, err
		}
	}
	if t.Offset, err = s.u64("tensor offset"); err != nil {
		return t, err
	}
	if t.Size, err = s.u64("tensor size"); err != nil {
		return t, err
	}
	if t.DType, err = resolveDType(t.ID, t.Shape, t.Size, sized); err != nil {
		return t, fail("%v", err)
	}
	t.RawSize = t.Size
	if !sized {
		if t.RawSize, err = dtypeSize(t.DType, t.Shape); err != nil {
			return t, fail("%v", err)
		}
	}
	if t.RawSize > maxTensorSize || t.Size > maxTensorSize {
		return t, fail("%s %v: %d bytes is over the limit of %d", t.DType, t.Shape, t.RawSize, int64(maxTensorSize))
	}
	return t, nil
}

// checkTensors checks names and extents: names unique and non-empty, every
// tensor inside the data section (and before limit when known), no two
// tensors overlapping.
func checkTensors(s *seqReader, in *Info, limit int64) error {
	seen := make(map[string]bool, len(in.Tensors))
	for i := range in.Tensors {
		t := &in.Tensors[i]
		if seen[t.Name] {
			return &binio.FormatError{File: s.file, Offset: int64(in.IndexOffset), Tensor: t.Name, Msg: "tensor name appears twice in the index"}
		}
		seen[t.Name] = true
		start, ok1 := binio.AddOffsets(in.DataOffset, t.Offset)
		end, ok2 := binio.AddOffsets(start, t.Size)
		if !ok1 || !ok2 || (limit >= 0 && end > uint64(limit)) {
			return &binio.FormatError{File: s.file, Offset: int64(in.IndexOffset), Tensor: t.Name,
				Msg: fmt.Sprintf("data [%d, +%d) lies past the end of the file's data at %d", in.DataOffset+t.Offset, t.Size, limit)}
		}
	}
	order := fileOrder(in.Tensors)
	var prevEnd uint64
	prev := ""
	for _, i := range order {
		t := &in.Tensors[i]
		if t.Size == 0 {
			continue
		}
		if t.Offset < prevEnd {
			return &binio.FormatError{File: s.file, Offset: int64(in.IndexOffset), Tensor: t.Name,
				Msg: fmt.Sprintf("data at offset %d overlaps tensor %q, which ends at %d", t.Offset, prev, prevEnd)}
		}
		prevEnd, prev = t.Offset+t.Size, t.Name
	}
	return nil
}

// fileOrder returns tensor positions sorted by data offset.
func fileOrder(ts []Tensor) []int {
	order := make([]int, len(ts))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return ts[order[a]].Offset < ts[order[b]].Offset })
	return order
}

// checkSpecHeader validates the fields of a spec-layout header.
func checkSpecHeader(b []byte, file string) (specHeader, error) {
	h := parseSpecHeader(b)
	if h.Version != specVersion {
		return h, binio.Errorf(file, 4, "spec-layout version %d is not supported (%d is)", h.Version, specVersion)
	}
	if h.Flags&(SpecFlagLZ4|SpecFlagZstd) == SpecFlagLZ4|SpecFlagZstd {
		return h, binio.Errorf(file, 6, "the file is flagged both LZ4 and ZSTD compressed")
	}
	if h.MetadataOffset < specHeaderSize {
		return h, binio.Errorf(file, 10, "metadata offset %d lies inside the 32-byte header", h.MetadataOffset)
	}
	if h.MetadataSize > MaxMetadataSize {
		return h, binio.Errorf(file, 18, "metadata size %d is over the limit of %d", h.MetadataSize, MaxMetadataSize)
	}
	return h, nil
}

func specCompression(flags uint32) Compression {
	switch {
	case flags&SpecFlagLZ4 != 0:
		return CompressionLZ4
	case flags&SpecFlagZstd != 0:
		return CompressionZstd
	}
	return CompressionNone
}

// parseSpec reads the metadata and index of a spec-layout file.
func parseSpec(s *seqReader, h specHeader, limit int64) (*Info, error) {
	in := &Info{
		Layout:         LayoutSpec,
		Version:        fmt.Sprint(h.Version),
		Flags:          h.Flags,
		Compression:    specCompression(h.Flags),
		MetadataOffset: h.MetadataOffset,
		MetadataSize:   h.MetadataSize,
	}
	if err := readMetadata(s, in, limit); err != nil {
		return nil, err
	}
	in.IndexOffset = align64(in.MetadataOffset + in.MetadataSize)
	if err := s.seekTo(in.IndexOffset, "tensor index"); err != nil {
		return nil, err
	}
	end := uint64(0)
	if limit >= 0 {
		end = uint64(limit)
	}
	sized := in.Compression == CompressionNone
	for {
		t, err := readEntry(s, end, sized)
		if err != nil {
			return nil, err
		}
		if t.Name == "" {
			break
		}
		in.Tensors = append(in.Tensors, t)
	}
	in.DataOffset = align64(uint64(s.off))
	if limit >= 0 && in.DataOffset > uint64(limit) {
		return nil, s.errorf(s.off, "data section at %d lies past the end of the file's data at %d", in.DataOffset, limit)
	}
	return in, checkTensors(s, in, limit)
}

// headerBytes reads a file's magic and as much of its header as it has.
func headerBytes(r io.ReaderAt, size int64) ([]byte, error) {
	n := min(size, aprenderHeaderSize)
	b := make([]byte, n)
	if n == 0 {
		return b, nil
	}
	if _, err := r.ReadAt(b, 0); err != nil && err != io.EOF {
		return nil, err
	}
	return b, nil
}

// damagedAt builds the damaged-magic check of a file read through r.
func damagedAt(r io.ReaderAt, size int64, file string) func(Layout, [4]byte) bool {
	return func(l Layout, magic [4]byte) bool {
		if l == LayoutAprender {
			if size < aprenderHeaderSize {
				return false
			}
			b := make([]byte, aprenderHeaderSize)
			if _, err := r.ReadAt(b, 0); err != nil {
				return false
			}
			copy(b, magic[:])
			return headerCRC(b) == binary.LittleEndian.Uint32(b[40:])
		}
		if size < specHeaderSize+specFooterSize {
			return false
		}
		return verifyFooter(io.NewSectionReader(r, 0, size), LayoutSpec, &magic, file) == nil
	}
}

// damagedHeader is the aprender part of the damaged-magic check for a
// header already read.
func damagedHeader(head []byte, magic [4]byte) bool {
	if len(head) < aprenderHeaderSize {
		return false
	}
	b := bytes.Clone(head[:aprenderHeaderSize])
	copy(b, magic[:])
	return headerCRC(b) == binary.LittleEndian.Uint32(b[40:])
}
