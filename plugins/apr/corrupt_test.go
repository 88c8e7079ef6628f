package apr

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"testing"

	"github.com/sluice-ml/sluice/internal/clitest"
	"github.com/sluice-ml/sluice/sdk/plugintest"
)

// aprSections finds the parts of an aprender-layout file from its header
// (the spec layout's parts follow its metadata).
func aprSections(b []byte) []plugintest.Section {
	if len(b) < aprenderHeaderSize {
		return nil
	}
	secs := []plugintest.Section{{Offset: 4, Name: "the magic"}}
	if [4]byte(b[:4]) == magicSpec {
		h := parseSpecHeader(b)
		return append(secs, plugintest.Section{Offset: specHeaderSize, Name: "the header"},
			plugintest.Section{Offset: int64(h.MetadataOffset + h.MetadataSize), Name: "the metadata"},
			plugintest.Section{Offset: int64(len(b) - specFooterSize), Name: "the data"})
	}
	h := parseAprenderHeader(b)
	secs = append(secs, plugintest.Section{Offset: aprenderHeaderSize, Name: "the header"})
	if aprenderCompression(h.Flags) != CompressionNone {
		return append(secs, plugintest.Section{Offset: int64(len(b) - aprenderFooterSize), Name: "the compressed payload"})
	}
	// Not the end of the data: the footer is optional (old aprender files
	// have none), so a file cut there is a valid footer-less file.
	return append(secs,
		plugintest.Section{Offset: int64(h.MetadataOffset + uint64(h.MetadataSize)), Name: "the metadata"},
		plugintest.Section{Offset: int64(h.DataOffset), Name: "the tensor index"})
}

// craftedAPR damages an uncompressed aprender-layout file read with verify
// = false, resealing the header CRC (which is checked even then), so every
// damage reaches the header, index and extent checks.
func craftedAPR(t testing.TB, valid []byte) []plugintest.Damage {
	h0 := parseAprenderHeader(valid)
	header := func(edit func(h *aprenderHeader)) []byte {
		b := append([]byte(nil), valid...)
		h := parseAprenderHeader(b)
		edit(&h)
		copy(b, h.sealed())
		return b
	}
	// entry edits the index entry of the first tensor (bias [1] f32):
	// name_len u16, name, dtype u8, ndim u8, dims u64..., offset u64, size u64.
	entry := func(edit func(e []byte)) []byte {
		b := append([]byte(nil), valid...)
		edit(b[h0.IndexOffset:h0.DataOffset])
		return b
	}
	const (
		nameAt  = 2
		dtypeAt = 2 + 4 // after "bias"
		ndimAt  = dtypeAt + 1
		dimAt   = ndimAt + 1
		offAt   = dimAt + 8
		sizeAt  = offAt + 8
	)
	if string(valid[h0.IndexOffset+nameAt:h0.IndexOffset+dtypeAt]) != "bias" {
		t.Fatalf("the specimen's first index entry is not bias")
	}
	u64 := func(e []byte, at int, v uint64) { binary.LittleEndian.PutUint64(e[at:], v) }
	lz4 := writeBytes(t, WriteOptions{Compression: CompressionLZ4}, goldenModel())
	binary.LittleEndian.PutUint32(lz4[64:], 0xfffffff0)
	hl := parseAprenderHeader(lz4)
	binary.LittleEndian.PutUint32(hl.Reserved[:], crc32.ChecksumIEEE(lz4[64:]))
	copy(lz4, hl.sealed())
	return []plugintest.Damage{
		{Name: "tensor count claims 2^31", Data: header(func(h *aprenderHeader) { h.TensorCount = 1 << 31 }), MaxAlloc: 16 << 20, Want: "tensors cannot fit"},
		{Name: "tensor count claims 2^32-1", Data: header(func(h *aprenderHeader) { h.TensorCount = 1<<32 - 1 }), MaxAlloc: 16 << 20},
		{Name: "metadata size claims 2^31", Data: header(func(h *aprenderHeader) { h.MetadataSize = 1 << 31 }), MaxAlloc: 16 << 20},
		{Name: "metadata offset claims 2^63", Data: header(func(h *aprenderHeader) { h.MetadataOffset = 1 << 63 })},
		{Name: "metadata offset claims -1", Data: header(func(h *aprenderHeader) { h.MetadataOffset = 1<<64 - 1 })},
		{Name: "index offset claims 2^63", Data: header(func(h *aprenderHeader) { h.IndexOffset = 1 << 63 })},
		{Name: "data offset claims -1", Data: header(func(h *aprenderHeader) { h.DataOffset = 1<<64 - 1 })},
		{Name: "data offset before the index", Data: header(func(h *aprenderHeader) { h.DataOffset = h.IndexOffset - 1 })},
		{Name: "version 3", Data: header(func(h *aprenderHeader) { h.Major = 3 })},
		{Name: "flagged encrypted", Data: header(func(h *aprenderHeader) { h.Flags |= FlagEncrypted })},
		{Name: "flagged LZ4 and zstd", Data: header(func(h *aprenderHeader) { h.Flags |= FlagLZ4 | FlagZstd })},
		{Name: "header CRC wrong", Data: func() []byte { b := append([]byte(nil), valid...); b[40] ^= 1; return b }()},
		{Name: "name length claims 65535", Data: entry(func(e []byte) { binary.LittleEndian.PutUint16(e, 0xffff) })},
		{Name: "255 dimensions", Data: entry(func(e []byte) { e[ndimAt] = 255 })},
		{Name: "dimension claims 2^63", Data: entry(func(e []byte) { u64(e, dimAt, 1<<63) })},
		{Name: "dimension -1", Data: entry(func(e []byte) { u64(e, dimAt, 1<<64-1) })},
		{Name: "tensor claims 1 TB", Data: entry(func(e []byte) { u64(e, dimAt, 1<<38); u64(e, sizeAt, 1<<40) }), MaxAlloc: 16 << 20},
		{Name: "size that disagrees with the shape", Data: entry(func(e []byte) { u64(e, sizeAt, 8) })},
		{Name: "offset out of bounds", Data: entry(func(e []byte) { u64(e, offAt, 1<<20) })},
		{Name: "offset near 2^64", Data: entry(func(e []byte) { u64(e, offAt, 1<<64-8) })},
		{Name: "offsets overlapping", Data: entry(func(e []byte) { u64(e, offAt, 64+2) })},
		{Name: "unknown dtype id", Data: entry(func(e []byte) { e[dtypeAt] = 200 })},
		{Name: "duplicate tensor name", Data: entry(func(e []byte) {
			// The second entry, "weights", renamed "bias" (its fields move
			// up three bytes; the index keeps its size).
			second := sizeAt + 8
			binary.LittleEndian.PutUint16(e[second:], 4)
			copy(e[second+2:], "bias")
			copy(e[second+2+4:], e[second+2+7:second+2+7+2+8+16])
		}), Want: "appears twice"},
		{Name: "tensor name of invalid UTF-8", Data: entry(func(e []byte) { e[nameAt+1] = 0xff }), Want: "UTF-8"},
		// Names are names, never paths: no reader or writer of Sluice turns
		// one into a file path.
		{Name: "tensor name with path separators (legal)", Data: entry(func(e []byte) { copy(e[nameAt:], "../b") }), MayRead: true},
		{Name: "LZ4 payload claiming 4 GiB", Data: lz4, MaxAlloc: 64 << 20},
	}
}

func TestCorruptFiles(t *testing.T) {
	var suites []plugintest.CorruptSuite
	for _, opts := range allLayouts {
		b := writeBytes(t, opts, goldenModel())
		for _, verify := range []bool{true, false} {
			s := plugintest.CorruptSuite{
				Plugin: Plugin(), Source: "apr", File: "model.apr", Valid: b, Sections: aprSections(b),
				SourceConfig: map[string]any{"verify": verify}, NameFileInErrors: true,
			}
			if opts.Layout == LayoutAprender && opts.Compression == CompressionNone && !verify {
				s.Crafted = craftedAPR(t, b)
			}
			// Every byte of the uncompressed files read without the
			// checksum (what the parser itself sees); every fifth byte
			// elsewhere, where the checksums catch nearly every flip.
			if opts.Compression != CompressionNone || verify {
				s.FlipStride = 5
			}
			t.Run(fmt.Sprintf("%s/verify=%v", optsName(opts), verify), func(t *testing.T) {
				plugintest.Corrupt(t, s)
			})
			suites = append(suites, s)
		}
	}
	if testing.Short() {
		t.Skip("-short: the CLI runs are skipped")
	}
	bin := clitest.Build(t)
	for _, s := range suites {
		if s.Crafted != nil {
			clitest.CorruptCLI(t, bin, s, clitest.CorruptOptions{ConvertTo: "out.safetensors"})
		}
	}
}
