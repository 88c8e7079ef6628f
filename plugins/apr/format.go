package apr

import (
	"encoding/binary"
	"hash/crc32"
	"hash/crc64"
)

// Layout names one of the two byte layouts this package reads and writes.
type Layout string

// The two layouts.
const (
	// LayoutAprender is the layout aprender's code writes and reads: magic
	// "APR\0", a 64-byte header with a CRC32, a 4-byte CRC32 footer.
	LayoutAprender Layout = "aprender"
	// LayoutSpec is the layout of aprender's format specification page:
	// magic "APR\x02", a 32-byte header, a 16-byte footer (checksum and
	// total size), tensors compressed one by one.
	LayoutSpec Layout = "spec"
)

// Compression names how tensor bytes are compressed.
type Compression string

// Compressions.
const (
	CompressionNone Compression = "none"
	CompressionLZ4  Compression = "lz4"
	CompressionZstd Compression = "zstd"
)

// Sizes and alignment of both layouts.
const (
	// Alignment is the boundary of every section after the header and of
	// every tensor's bytes.
	Alignment = 64

	aprenderHeaderSize = 64
	aprenderFooterSize = 4
	specHeaderSize     = 32
	specFooterSize     = 16
)

// Magic numbers.
var (
	magicAprender = [4]byte{'A', 'P', 'R', 0}
	// magicAprender2 is an older spelling that aprender's inference reader
	// still accepts; it is read, never written.
	magicAprender2 = [4]byte{'A', 'P', 'R', '2'}
	magicSpec      = [4]byte{'A', 'P', 'R', 2}
	magicV1        = [4]byte{'A', 'P', 'R', 'N'}
	magicJSON      = [4]byte{'A', 'P', 'R', '1'}
)

// Header flags of the aprender layout (u16 at offset 6).
const (
	FlagLZ4            uint16 = 1 << 0  // everything after the header is one LZ4 block
	FlagZstd           uint16 = 1 << 1  // everything after the header is zstd
	FlagEncrypted      uint16 = 1 << 2  // refused
	FlagSigned         uint16 = 1 << 3  // informational
	FlagSharded        uint16 = 1 << 4  // one shard of several files
	FlagQuantized      uint16 = 1 << 5  // holds quantized tensors (informational)
	FlagHasFilterbank  uint16 = 1 << 6  // informational
	FlagHasModelCard   uint16 = 1 << 7  // informational
	FlagStreaming      uint16 = 1 << 8  // informational
	FlagHasVocab       uint16 = 1 << 9  // tokenizer.vocabulary is in the metadata
	FlagLayoutRowMajor uint16 = 1 << 10 // tensors are row-major (always written)
	FlagLayoutColMajor uint16 = 1 << 11 // refused
	aprenderCompressed        = FlagLZ4 | FlagZstd
)

// Header flags of the spec layout (u32 at offset 6).
const (
	SpecFlagLZ4       uint32 = 1 << 0 // every tensor is an LZ4 frame
	SpecFlagZstd      uint32 = 1 << 1 // every tensor is a zstd frame
	SpecFlagSharded   uint32 = 1 << 2
	SpecFlagQuantized uint32 = 1 << 3
)

// payloadTag, in header bytes 48..52 of a compressed aprender-layout file,
// says that bytes 44..48 hold the CRC32 of every byte after the header (the
// compressed payload). This is Sluice's use of the reserved bytes, which
// aprender writes as zero and never reads; the header CRC covers them. The
// footer inside the compressed payload then checksums the header as it was
// before: bytes 44..52 zero and the header CRC computed over that (the
// footer cannot cover a checksum of itself).
var payloadTag = [4]byte{'Z', 'C', 'R', 'C'}

// hasPayloadCRC reports whether a header carries a payload CRC.
func hasPayloadCRC(h []byte) bool { return [4]byte(h[48:52]) == payloadTag }

// footerView returns the header bytes as the footer checksum covers them:
// for a header with a payload CRC, the header as it was before the CRC was
// added (bytes 44..52 zero, header CRC recomputed).
func footerView(h []byte) []byte {
	v := append([]byte(nil), h[:aprenderHeaderSize]...)
	if hasPayloadCRC(v) {
		clear(v[44:52])
		binary.LittleEndian.PutUint32(v[40:], headerCRC(v))
	}
	return v
}

// crc64Table is CRC-64/XZ: the ECMA-182 polynomial, reflected, with
// all-ones initial value and final xor (Go's hash/crc64 with crc64.ECMA).
var crc64Table = crc64.MakeTable(crc64.ECMA)

// aprenderHeader is the 64-byte header of the aprender layout.
type aprenderHeader struct {
	Major, Minor   uint8
	Flags          uint16
	TensorCount    uint32
	MetadataOffset uint64
	MetadataSize   uint32
	IndexOffset    uint64
	DataOffset     uint64
	Checksum       uint32
	Reserved       [20]byte
}

// marshal returns the header bytes, checksum field as stored in h.
func (h *aprenderHeader) marshal() []byte {
	b := make([]byte, aprenderHeaderSize)
	copy(b, magicAprender[:])
	b[4], b[5] = h.Major, h.Minor
	binary.LittleEndian.PutUint16(b[6:], h.Flags)
	binary.LittleEndian.PutUint32(b[8:], h.TensorCount)
	binary.LittleEndian.PutUint64(b[12:], h.MetadataOffset)
	binary.LittleEndian.PutUint32(b[20:], h.MetadataSize)
	binary.LittleEndian.PutUint64(b[24:], h.IndexOffset)
	binary.LittleEndian.PutUint64(b[32:], h.DataOffset)
	binary.LittleEndian.PutUint32(b[40:], h.Checksum)
	copy(b[44:], h.Reserved[:])
	return b
}

// sealed returns the header bytes with the header checksum computed.
func (h *aprenderHeader) sealed() []byte {
	b := h.marshal()
	h.Checksum = headerCRC(b)
	binary.LittleEndian.PutUint32(b[40:], h.Checksum)
	return b
}

func parseAprenderHeader(b []byte) aprenderHeader {
	var h aprenderHeader
	h.Major, h.Minor = b[4], b[5]
	h.Flags = binary.LittleEndian.Uint16(b[6:])
	h.TensorCount = binary.LittleEndian.Uint32(b[8:])
	h.MetadataOffset = binary.LittleEndian.Uint64(b[12:])
	h.MetadataSize = binary.LittleEndian.Uint32(b[20:])
	h.IndexOffset = binary.LittleEndian.Uint64(b[24:])
	h.DataOffset = binary.LittleEndian.Uint64(b[32:])
	h.Checksum = binary.LittleEndian.Uint32(b[40:])
	copy(h.Reserved[:], b[44:64])
	return h
}

// headerCRC is the CRC32-IEEE of header bytes [0,40) followed by [44,64):
// the header without its checksum field.
func headerCRC(b []byte) uint32 {
	c := crc32.Update(0, crc32.IEEETable, b[:40])
	return crc32.Update(c, crc32.IEEETable, b[44:64])
}

// specHeader is the 32-byte header of the spec layout.
type specHeader struct {
	Version        uint16
	Flags          uint32
	MetadataOffset uint64
	MetadataSize   uint64
	Reserved       [6]byte
}

func (h *specHeader) marshal() []byte {
	b := make([]byte, specHeaderSize)
	copy(b, magicSpec[:])
	binary.LittleEndian.PutUint16(b[4:], h.Version)
	binary.LittleEndian.PutUint32(b[6:], h.Flags)
	binary.LittleEndian.PutUint64(b[10:], h.MetadataOffset)
	binary.LittleEndian.PutUint64(b[18:], h.MetadataSize)
	copy(b[26:], h.Reserved[:])
	return b
}

func parseSpecHeader(b []byte) specHeader {
	var h specHeader
	h.Version = binary.LittleEndian.Uint16(b[4:])
	h.Flags = binary.LittleEndian.Uint32(b[6:])
	h.MetadataOffset = binary.LittleEndian.Uint64(b[10:])
	h.MetadataSize = binary.LittleEndian.Uint64(b[18:])
	copy(h.Reserved[:], b[26:32])
	return h
}

// specVersion is the version the spec layout's header carries.
const specVersion = 2

// align64 rounds n up to a multiple of 64. Callers keep n far below 2^63.
func align64(n uint64) uint64 { return (n + Alignment - 1) &^ (Alignment - 1) }

// indexEntrySize is the encoded size of one tensor index entry.
func indexEntrySize(nameLen, ndim int) uint64 {
	return 2 + uint64(nameLen) + 1 + 1 + 8*uint64(ndim) + 8 + 8
}

// appendIndexEntry encodes one index entry: name_len u16, name, dtype u8,
// ndim u8, dims u64 × ndim, offset u64, size u64, all little-endian.
func appendIndexEntry(b []byte, name string, id uint8, shape []uint64, offset, size uint64) []byte {
	b = binary.LittleEndian.AppendUint16(b, uint16(len(name)))
	b = append(b, name...)
	b = append(b, id, uint8(len(shape)))
	for _, d := range shape {
		b = binary.LittleEndian.AppendUint64(b, d)
	}
	b = binary.LittleEndian.AppendUint64(b, offset)
	return binary.LittleEndian.AppendUint64(b, size)
}
