package apr

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/sluice-ml/sluice/sdk/tensor"
)

// WriteOptions says what the writer produces.
type WriteOptions struct {
	Layout      Layout
	Compression Compression
	// Level is the compression level: zstd's 1-22, LZ4 1-9 (high
	// compression); 0 is each library's default.
	Level int
}

// filePlan is the planned content of one output file.
type filePlan struct {
	path    string
	shard   *shardMeta
	tensors []tensor.TensorInfo // sorted by name
	ids     []uint8
	meta    []byte

	header      []byte   // with the checksum for the aprender layout
	index       []byte   // uncompressed-size index (offsets final unless per-tensor compressed)
	indexOffset uint64   // where the index starts
	dataOffset  uint64   // where tensor data starts
	offsets     []uint64 // relative to dataOffset
	size        uint64   // total uncompressed file size, footer included
}

// shardFileName returns NAME-0000i-of-0000N.EXT for shard i (1-based) of n.
func shardFileName(path string, i, n int) string {
	ext := filepath.Ext(path)
	return fmt.Sprintf("%s-%05d-of-%05d%s", strings.TrimSuffix(path, ext), i, n, ext)
}

// shardPattern is the sharding.pattern aprender's metadata carries: the
// file name with the shard numbers as {:05d} placeholders (number i+1 for
// shard_index i).
func shardPattern(path string) string {
	base := filepath.Base(path)
	ext := filepath.Ext(base)
	return strings.TrimSuffix(base, ext) + "-{:05d}-of-{:05d}" + ext
}

// shardsOf groups tensors by their shard attribute: one group when no
// tensor has one (or every one says 1/1).
func shardsOf(ts []tensor.TensorInfo) ([][]tensor.TensorInfo, error) {
	n, with := 0, 0
	for i := range ts {
		if _, ok := ts[i].Attrs[tensor.AttrShard]; !ok {
			continue
		}
		with++
		si, sn, ok := ts[i].Shard()
		if !ok {
			return nil, fmt.Errorf("tensor %q: shard attribute %q is not \"i/N\"", ts[i].Name, ts[i].Attr(tensor.AttrShard))
		}
		if n != 0 && sn != n {
			return nil, fmt.Errorf("tensor %q: shard %d/%d disagrees with other tensors' %d shards", ts[i].Name, si, sn, n)
		}
		n = sn
	}
	if with == 0 || n == 1 {
		return [][]tensor.TensorInfo{ts}, nil
	}
	if with != len(ts) {
		return nil, fmt.Errorf("%d of %d tensors carry a shard assignment; all or none must", with, len(ts))
	}
	groups := make([][]tensor.TensorInfo, n)
	for i := range ts {
		si, _, _ := ts[i].Shard()
		groups[si-1] = append(groups[si-1], ts[i])
	}
	return groups, nil
}

// planFiles lays out every output file for a manifest whose tensors all
// have writable dtypes.
func planFiles(path string, opts WriteOptions, m *tensor.Manifest, meta *aprMeta) ([]*filePlan, error) {
	groups, err := shardsOf(m.Tensors)
	if err != nil {
		return nil, err
	}
	total := m.TotalSize()
	plans := make([]*filePlan, len(groups))
	for gi, group := range groups {
		fp := &filePlan{path: path}
		if len(groups) > 1 {
			fp.path = shardFileName(path, gi+1, len(groups))
			fp.shard = &shardMeta{count: len(groups), index: gi, totalSize: total, pattern: shardPattern(path)}
		}
		fp.tensors = append([]tensor.TensorInfo(nil), group...)
		sort.Slice(fp.tensors, func(i, j int) bool { return fp.tensors[i].Name < fp.tensors[j].Name })
		quantized := false
		for i := range fp.tensors {
			t := &fp.tensors[i]
			id, ok := writeIDs[t.DType]
			if !ok {
				return nil, fmt.Errorf("tensor %q: dtype %s is not written by the APR sink", t.Name, t.DType)
			}
			if len(t.Name) == 0 || len(t.Name) > 0xffff {
				return nil, fmt.Errorf("tensor %q: a name must be 1 to 65535 bytes", t.Name)
			}
			if len(t.Shape) > 255 {
				return nil, fmt.Errorf("tensor %q: %d dims is over the 255 an index entry holds", t.Name, len(t.Shape))
			}
			want, err := dtypeSize(t.DType, t.Shape)
			if err != nil {
				return nil, fmt.Errorf("tensor %q: %w", t.Name, err)
			}
			if want != t.Size {
				return nil, fmt.Errorf("tensor %q: %s %v needs %d bytes, the manifest says %d", t.Name, t.DType, t.Shape, want, t.Size)
			}
			fp.ids = append(fp.ids, id)
			if info, _ := t.DType.Info(); info.IsQuantized() {
				quantized = true
			}
		}
		for i := 1; i < len(fp.tensors); i++ {
			if fp.tensors[i].Name == fp.tensors[i-1].Name {
				return nil, fmt.Errorf("tensor %q appears twice", fp.tensors[i].Name)
			}
		}
		fp.meta = meta.render(fp.shard, fp.tensors)
		if len(fp.meta) > MaxMetadataSize {
			return nil, fmt.Errorf("%s: the metadata JSON is %d bytes, over the limit of %d", fp.path, len(fp.meta), MaxMetadataSize)
		}
		fp.layOut(opts, meta, quantized)
		plans[gi] = fp
	}
	return plans, nil
}

// layOut computes offsets, index and header. With per-tensor compression
// (spec layout) the offsets and index are provisional: Commit redoes them
// with the compressed sizes.
func (fp *filePlan) layOut(opts WriteOptions, meta *aprMeta, quantized bool) {
	sizes := make([]uint64, len(fp.tensors))
	for i := range fp.tensors {
		sizes[i] = fp.tensors[i].Size
	}
	fp.layOutSizes(opts, meta, quantized, sizes)
}

func (fp *filePlan) layOutSizes(opts WriteOptions, meta *aprMeta, quantized bool, sizes []uint64) {
	fp.offsets = make([]uint64, len(fp.tensors))
	var data uint64
	for i := range fp.tensors {
		fp.offsets[i] = data
		data += align64(sizes[i])
	}
	fp.index = fp.index[:0]
	for i := range fp.tensors {
		t := &fp.tensors[i]
		fp.index = appendIndexEntry(fp.index, t.Name, fp.ids[i], t.Shape, fp.offsets[i], sizes[i])
	}
	if opts.Layout == LayoutSpec {
		fp.index = append(fp.index, 0, 0) // the index ends with a zero name length
		fp.indexOffset = align64(specHeaderSize + uint64(len(fp.meta)))
		fp.dataOffset = align64(fp.indexOffset + uint64(len(fp.index)))
		fp.size = fp.dataOffset + data + specFooterSize
		var flags uint32
		switch opts.Compression {
		case CompressionLZ4:
			flags |= SpecFlagLZ4
		case CompressionZstd:
			flags |= SpecFlagZstd
		}
		if fp.shard != nil {
			flags |= SpecFlagSharded
		}
		if quantized {
			flags |= SpecFlagQuantized
		}
		h := specHeader{Version: specVersion, Flags: flags, MetadataOffset: specHeaderSize, MetadataSize: uint64(len(fp.meta))}
		fp.header = h.marshal()
		return
	}
	fp.indexOffset = aprenderHeaderSize + align64(uint64(len(fp.meta)))
	fp.dataOffset = fp.indexOffset + align64(uint64(len(fp.index)))
	fp.size = fp.dataOffset + data + aprenderFooterSize
	flags := FlagLayoutRowMajor
	switch opts.Compression {
	case CompressionLZ4:
		flags |= FlagLZ4
	case CompressionZstd:
		flags |= FlagZstd
	}
	if fp.shard != nil {
		flags |= FlagSharded
	}
	if quantized {
		flags |= FlagQuantized
	}
	if meta.hasVocab {
		flags |= FlagHasVocab
	}
	h := aprenderHeader{
		Major: 2, Minor: 0, Flags: flags, TensorCount: uint32(len(fp.tensors)),
		MetadataOffset: aprenderHeaderSize, MetadataSize: uint32(len(fp.meta)),
		IndexOffset: fp.indexOffset, DataOffset: fp.dataOffset,
	}
	fp.header = h.sealed()
}

// prologue returns the bytes from the start of the file to the data
// section: header, metadata and index with their zero padding.
func (fp *filePlan) prologue(layout Layout) []byte {
	b := make([]byte, fp.dataOffset)
	copy(b, fp.header)
	metaAt := uint64(aprenderHeaderSize)
	if layout == LayoutSpec {
		metaAt = specHeaderSize
	}
	copy(b[metaAt:], fp.meta)
	copy(b[fp.indexOffset:], fp.index)
	return b
}
