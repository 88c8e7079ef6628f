package apr

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"
	"hash/crc32"
	"hash/crc64"
	"io"
	"os"
	"sort"
	"strings"
	"sync"

	"github.com/sluice-ml/sluice/sdk/atomicfile"
	"github.com/sluice-ml/sluice/sdk/plugin"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// SinkConfig is the configuration of sink "apr".
type SinkConfig struct {
	Path             string `hcl:"path" doc:"The output file. A sharded model (a shard stage upstream) becomes NAME-00001-of-0000N.apr beside it."`
	Layout           string `hcl:"layout,optional" doc:"\"aprender\" (default): the layout aprender's code reads and writes; \"spec\": the layout of aprender's format page (APR\\x02, 32-byte header, 16-byte footer), which aprender does not read."`
	Compression      string `hcl:"compression,optional" doc:"\"none\" (default), \"lz4\" or \"zstd\". In the aprender layout everything after the header is one compressed stream, which only aprender's inference reader (aprender-serve) decodes; in the spec layout each tensor is compressed on its own."`
	CompressionLevel int    `hcl:"compression_level,optional" doc:"zstd level 1-22 or LZ4 high-compression level 1-9; 0 (default) is the fast default of each."`
}

// options validates the configuration.
func (c *SinkConfig) options() (WriteOptions, error) {
	o := WriteOptions{Layout: LayoutAprender, Compression: CompressionNone, Level: c.CompressionLevel}
	if c.Path == "" {
		return o, plugin.ConfigErrorf("path", "the output path is empty")
	}
	switch c.Layout {
	case "", "aprender":
	case "spec":
		o.Layout = LayoutSpec
	default:
		return o, plugin.ConfigErrorf("layout", "%q is not a layout; use \"aprender\" or \"spec\"", c.Layout)
	}
	switch c.Compression {
	case "", "none":
	case "lz4":
		o.Compression = CompressionLZ4
	case "zstd":
		o.Compression = CompressionZstd
	default:
		return o, plugin.ConfigErrorf("compression", "%q is not a compression; use \"none\", \"lz4\" or \"zstd\"", c.Compression)
	}
	switch {
	case c.CompressionLevel < 0:
		return o, plugin.ConfigErrorf("compression_level", "the level must not be negative")
	case o.Compression == CompressionLZ4 && c.CompressionLevel > 9:
		return o, plugin.ConfigErrorf("compression_level", "LZ4 levels are 1 to 9")
	case o.Compression == CompressionZstd && c.CompressionLevel > 22:
		return o, plugin.ConfigErrorf("compression_level", "zstd levels are 1 to 22")
	}
	return o, nil
}

// Sink writes one APR file, or one file per shard.
type Sink struct {
	path string
	opts WriteOptions

	mu       sync.Mutex
	files    []*outFile
	slots    map[string]slot
	meta     *aprMeta
	begun    bool
	finished bool
	cache    *metaCache
	// noFsync is set when Begin was told the outputs need no fsync.
	noFsync bool
}

// createFile starts an output (or a spool file) under a temporary name,
// unsynced at its commit when Begin was told so. No digest: the sink
// computes each output's SHA-256 itself as it seals it, reading the file
// back, so the file keeps its pages in the page cache until then.
func (s *Sink) createFile(path string, size int64) (*atomicfile.File, error) {
	return plugin.CreateOutput(path, size, plugin.BeginOptions{NoFsync: s.noFsync, KeepCache: true})
}

// metaCache keeps the metadata derived in Plan for Begin, which gets the
// same manifest (deriving a large tokenizer twice costs seconds).
type metaCache struct {
	md            tensor.Metadata
	total, params uint64
	meta          *aprMeta
}

// metaFor derives the output metadata of m, reusing Plan's work.
func (s *Sink) metaFor(m *tensor.Manifest) (*aprMeta, error) {
	if c := s.cache; c != nil && c.total == m.TotalSize() && c.params == m.Params() && c.md.Equal(&m.Metadata) {
		return c.meta, nil
	}
	meta, err := buildMeta(m)
	if err != nil {
		return nil, err
	}
	s.cache = &metaCache{md: m.Metadata.Clone(), total: m.TotalSize(), params: m.Params(), meta: meta}
	return meta, nil
}

type slot struct {
	f *outFile
	i int
}

// outFile is one output being written.
type outFile struct {
	plan *filePlan
	// out is the output under its temporary name. For the compressed
	// layouts it is created at Commit.
	out *atomicfile.File
	// spool holds, for the aprender layout with compression, the whole
	// uncompressed file; for the spec layout with compression, every
	// tensor's compressed bytes in chunks.
	spool   *atomicfile.File
	spoolAt int64
	chunks  [][]region
	state   []writeState
}

type writeState uint8

const (
	notWritten writeState = iota
	writing
	written
)

type region struct{ off, n int64 }

// NewSink returns a sink writing path with opts.
func NewSink(path string, opts WriteOptions) *Sink {
	if opts.Layout == "" {
		opts.Layout = LayoutAprender
	}
	if opts.Compression == "" {
		opts.Compression = CompressionNone
	}
	return &Sink{path: path, opts: opts}
}

func openSink(_ context.Context, cfg *SinkConfig) (plugin.Sink, error) {
	opts, err := cfg.options()
	if err != nil {
		return nil, err
	}
	return NewSink(cfg.Path, opts), nil
}

// conversion says what becomes of a dtype the writer does not store.
func conversion(d tensor.DType) (tensor.DType, string, error) {
	info, ok := d.Info()
	if !ok {
		return "", "", fmt.Errorf("unknown dtype %q", d)
	}
	switch {
	case d == tensor.F64:
		return tensor.F32, "f64 → f32: aprender's readers share no f64 id", nil
	case d == tensor.F8E4M3 || d == tensor.F8E5M2:
		return tensor.F16, fmt.Sprintf("%s → f16 (exact): APR has no 8-bit float", d), nil
	case info.IsQuantized():
		return tensor.F32, fmt.Sprintf("%s → f32 (dequantized, exact): aprender reads only q4_K and q6_K of the block types (quantize upstream to either for a small file)", d), nil
	}
	return "", "", fmt.Errorf("dtype %s: APR's integer ids (4 i32, 5 i64, 6 i8, 7 u8) mean other things to aprender's inference reader, so the sink does not write them; drop the tensor with a filter stage or cast it upstream", d)
}

// Plan decides conversions and output files from the manifest alone.
func (s *Sink) Plan(_ context.Context, in *tensor.Manifest) (*plugin.SinkPlan, error) {
	// Every shard is a complete file with its own sharding metadata and
	// there is no index, so separate runs can write the shards of a set
	// (protocol 1.1) and finalizing writes nothing.
	p := &plugin.SinkPlan{Partitions: true}
	conv := in.Clone()
	var refused []string
	for i := range conv.Tensors {
		t := &conv.Tensors[i]
		if Writable(t.DType) {
			continue
		}
		to, why, err := conversion(t.DType)
		if err != nil {
			refused = append(refused, fmt.Sprintf("%q: %v", t.Name, err))
			continue
		}
		size, err := to.ShapeByteSize(t.Shape)
		if err != nil {
			refused = append(refused, fmt.Sprintf("%q: %v", t.Name, err))
			continue
		}
		p.Convert = append(p.Convert, plugin.Conversion{Tensor: t.Name, To: to, Reason: why})
		p.Notes = append(p.Notes, plugin.Decision{Tensor: t.Name, Msg: "converted " + why})
		t.DType, t.Size = to, size
	}
	if len(refused) > 0 {
		return nil, &plugin.InputError{File: s.path, Msg: "tensors the APR sink refuses: " + strings.Join(refused, "; ")}
	}
	meta, err := s.metaFor(conv)
	if err != nil {
		return nil, err
	}
	plans, err := planFiles(s.path, s.opts, conv, meta)
	if err != nil {
		return nil, &plugin.InputError{File: s.path, Msg: err.Error()}
	}
	if err := s.checkLimits(plans); err != nil {
		return nil, err
	}
	for _, fp := range plans {
		size := fp.size
		if s.opts.Compression != CompressionNone {
			size = 0
		}
		p.Files = append(p.Files, plugin.PlannedFile{Path: fp.path, Size: size, Tensors: len(fp.tensors)})
	}
	for _, n := range meta.notes {
		p.Notes = append(p.Notes, plugin.Decision{Msg: n})
	}
	p.Notes = append(p.Notes, plugin.Decision{Msg: s.layoutNote(len(plans))})
	return p, nil
}

func (s *Sink) layoutNote(files int) string {
	var msg string
	switch {
	case s.opts.Layout == LayoutSpec:
		msg = fmt.Sprintf("layout \"spec\" (APR\\x02, 32-byte header, CRC-64 footer, tensors compressed: %s); aprender does not read this layout", s.opts.Compression)
	case s.opts.Compression == CompressionNone:
		msg = "aprender layout (APR\\0, 64-byte header, CRC32 footer), readable by aprender and its inference reader"
	default:
		msg = fmt.Sprintf("aprender layout with everything after the header %s-compressed: only aprender's inference reader (aprender-serve, feature apr-compression) decodes it; aprender's own reader and apr tools do not", s.opts.Compression)
	}
	if files > 1 {
		msg += fmt.Sprintf("; %d shards, each a complete file with the SHARDED flag and sharding metadata", files)
	}
	return msg
}

func (s *Sink) checkLimits(plans []*filePlan) error {
	if s.opts.Layout == LayoutAprender && s.opts.Compression == CompressionLZ4 {
		for _, fp := range plans {
			if fp.size-aprenderHeaderSize > 1<<32-1 {
				return plugin.ConfigErrorf("compression", "%s would hold %d bytes after its header; aprender-serve's LZ4 framing declares the size in 32 bits (4 GiB); use zstd or shards", fp.path, fp.size-aprenderHeaderSize)
			}
		}
	}
	return nil
}

// Begin creates the outputs under temporary names and writes everything
// but the tensor data and the footer: every shard, those opts.Shards names,
// or none for a finalize run.
func (s *Sink) Begin(_ context.Context, m *tensor.Manifest, opts plugin.BeginOptions) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.begun {
		return fmt.Errorf("%s: Begin called twice", s.path)
	}
	s.begun = true
	s.noFsync = opts.NoFsync
	for i := range m.Tensors {
		if !Writable(m.Tensors[i].DType) {
			return &plugin.InputError{File: s.path, Tensor: m.Tensors[i].Name, Msg: fmt.Sprintf("dtype %s arrived unconverted; the APR sink writes only f32, f16, bf16, q4_K, q6_K, apr_q4 and apr_q8", m.Tensors[i].DType)}
		}
	}
	meta, err := s.metaFor(m)
	if err != nil {
		return err
	}
	plans, err := planFiles(s.path, s.opts, m, meta)
	if err != nil {
		return &plugin.InputError{File: s.path, Msg: err.Error()}
	}
	if err := s.checkLimits(plans); err != nil {
		return err
	}
	s.meta = meta
	s.slots = map[string]slot{}
	want := map[int]bool{}
	for _, i := range opts.Shards {
		if i < 1 || i > len(plans) {
			return fmt.Errorf("%s: shard %d asked for, the set has %d", s.path, i, len(plans))
		}
		want[i-1] = true
	}
	for gi, fp := range plans {
		if opts.Finalize || (len(want) > 0 && !want[gi]) {
			continue
		}
		f := &outFile{plan: fp, state: make([]writeState, len(fp.tensors)), chunks: make([][]region, len(fp.tensors))}
		s.files = append(s.files, f)
		for i := range fp.tensors {
			s.slots[fp.tensors[i].Name] = slot{f, i}
		}
		if err := s.create(f); err != nil {
			s.abortLocked()
			return err
		}
	}
	return nil
}

func (s *Sink) create(f *outFile) error {
	fp := f.plan
	var err error
	switch {
	case s.opts.Compression == CompressionNone:
		if f.out, err = s.createFile(fp.path, int64(fp.size)); err != nil {
			return err
		}
		_, err = f.out.WriteAt(fp.prologue(s.opts.Layout), 0)
	case s.opts.Layout == LayoutAprender:
		if f.spool, err = s.createFile(fp.path+".uncompressed", int64(fp.size)); err != nil {
			return err
		}
		_, err = f.spool.WriteAt(fp.prologue(s.opts.Layout), 0)
	default:
		f.spool, err = s.createFile(fp.path+".chunks", 0)
	}
	if err != nil {
		return fmt.Errorf("%s: writing the header: %w", fp.path, err)
	}
	return nil
}

// Write stores one tensor's bytes. Calls for different tensors may run
// concurrently.
func (s *Sink) Write(ctx context.Context, name string, data plugin.TensorData) error {
	s.mu.Lock()
	sl, ok := s.slots[name]
	switch {
	case !s.begun || s.finished:
		s.mu.Unlock()
		return fmt.Errorf("%s: Write outside Begin and Commit", s.path)
	case !ok:
		s.mu.Unlock()
		return fmt.Errorf("%s: tensor %q is not in the manifest given to Begin", s.path, name)
	case sl.f.state[sl.i] != notWritten:
		s.mu.Unlock()
		return fmt.Errorf("%s: tensor %q written twice", s.path, name)
	}
	sl.f.state[sl.i] = writing
	s.mu.Unlock()

	err := s.write(ctx, sl, data)
	s.mu.Lock()
	if err != nil {
		sl.f.state[sl.i] = notWritten
	} else {
		sl.f.state[sl.i] = written
	}
	s.mu.Unlock()
	if err != nil {
		return fmt.Errorf("%s: tensor %q: %w", sl.f.plan.path, name, err)
	}
	return nil
}

func (s *Sink) write(ctx context.Context, sl slot, data plugin.TensorData) error {
	fp := sl.f.plan
	t := &fp.tensors[sl.i]
	if data.Size() != t.Size {
		return fmt.Errorf("%d bytes arrived, %s %v needs %d", data.Size(), t.DType, t.Shape, t.Size)
	}
	at := int64(fp.dataOffset + fp.offsets[sl.i])
	switch {
	case s.opts.Compression == CompressionNone:
		return plugin.CopyToFile(sl.f.out, at, data)
	case s.opts.Layout == LayoutAprender:
		return plugin.CopyToFile(sl.f.spool, at, data)
	}
	cw := &chunkWriter{s: s, f: sl.f, buf: make([]byte, 0, 1<<20)}
	var enc io.WriteCloser
	var err error
	if s.opts.Compression == CompressionZstd {
		enc, err = newZstdWriter(cw, s.opts.Level, int64(t.Size), false)
	} else {
		enc, err = newLZ4FrameWriter(cw, s.opts.Level, t.Size)
	}
	if err != nil {
		return err
	}
	n, err := io.Copy(enc, &ctxReader{ctx: ctx, r: data})
	if cerr := enc.Close(); err == nil {
		err = cerr
	}
	if err == nil && uint64(n) != t.Size {
		err = fmt.Errorf("tensor data ended after %d of %d bytes", n, t.Size)
	}
	if err == nil {
		err = cw.flush()
	}
	if err != nil {
		return err
	}
	s.mu.Lock()
	sl.f.chunks[sl.i] = cw.regions
	s.mu.Unlock()
	return nil
}

// ctxReader stops a copy when its context is cancelled.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// chunkWriter collects one tensor's compressed bytes in 1 MiB chunks
// appended to the file's spool, so concurrent tensors interleave there
// without holding more than a chunk each in memory.
type chunkWriter struct {
	s       *Sink
	f       *outFile
	buf     []byte
	regions []region
}

func (w *chunkWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		c := min(len(p), cap(w.buf)-len(w.buf))
		w.buf = append(w.buf, p[:c]...)
		p = p[c:]
		if len(w.buf) == cap(w.buf) {
			if err := w.flush(); err != nil {
				return 0, err
			}
		}
	}
	return n, nil
}

func (w *chunkWriter) flush() error {
	if len(w.buf) == 0 {
		return nil
	}
	w.s.mu.Lock()
	off := w.f.spoolAt
	w.f.spoolAt += int64(len(w.buf))
	w.s.mu.Unlock()
	if _, err := w.f.spool.WriteAt(w.buf, off); err != nil {
		return err
	}
	if k := len(w.regions) - 1; k >= 0 && w.regions[k].off+w.regions[k].n == off {
		w.regions[k].n += int64(len(w.buf))
	} else {
		w.regions = append(w.regions, region{off, int64(len(w.buf))})
	}
	w.buf = w.buf[:0]
	return nil
}

// Commit writes the footers (and compresses), then renames every output
// into place.
func (s *Sink) Commit(ctx context.Context) ([]plugin.Artifact, error) {
	s.mu.Lock()
	if !s.begun || s.finished {
		s.mu.Unlock()
		return nil, fmt.Errorf("%s: Commit without Begin, or twice", s.path)
	}
	var missing []string
	for _, f := range s.files {
		for i, st := range f.state {
			if st != written {
				missing = append(missing, f.plan.tensors[i].Name)
			}
		}
	}
	s.finished = true
	s.mu.Unlock()
	if len(missing) > 0 {
		sort.Strings(missing)
		s.Abort(ctx)
		if len(missing) > 5 {
			missing = append(missing[:5], fmt.Sprintf("and %d more", len(missing)-5))
		}
		return nil, fmt.Errorf("%s: tensors never written: %s", s.path, strings.Join(missing, ", "))
	}
	arts := make([]plugin.Artifact, 0, len(s.files))
	for _, f := range s.files {
		a, err := s.finish(ctx, f)
		if err != nil {
			s.Abort(ctx)
			return nil, fmt.Errorf("%s: %w", f.plan.path, err)
		}
		arts = append(arts, a)
	}
	for _, f := range s.files {
		if err := f.out.Commit(); err != nil {
			s.Abort(ctx)
			return nil, err
		}
		if f.spool != nil {
			f.spool.Abort()
		}
	}
	return arts, nil
}

// finish completes one output under its temporary name.
func (s *Sink) finish(ctx context.Context, f *outFile) (plugin.Artifact, error) {
	fp := f.plan
	switch {
	case s.opts.Compression == CompressionNone:
		return sealInPlace(f.out.File, fp.path, int64(fp.size), s.opts.Layout)
	case s.opts.Layout == LayoutAprender:
		return s.finishWholeFile(f)
	}
	return s.finishPerTensor(ctx, f)
}

// footer returns the footer of a file whose bytes before it hash to sum.
func footer(layout Layout, sum uint64, size int64) []byte {
	if layout == LayoutSpec {
		b := binary.LittleEndian.AppendUint64(nil, sum)
		return binary.LittleEndian.AppendUint64(b, uint64(size))
	}
	return binary.LittleEndian.AppendUint32(nil, uint32(sum))
}

func newSum(layout Layout) hash.Hash {
	if layout == LayoutSpec {
		return crc64.New(crc64Table)
	}
	return crc32.NewIEEE()
}

func sumOf(h hash.Hash) uint64 {
	if h64, ok := h.(hash.Hash64); ok {
		return h64.Sum64()
	}
	return uint64(h.(hash.Hash32).Sum32())
}

// sealInPlace reads back a complete file but for its footer, writes the
// footer, and returns the artifact with its SHA-256.
func sealInPlace(f *os.File, path string, size int64, layout Layout) (plugin.Artifact, error) {
	fsize := int64(aprenderFooterSize)
	if layout == LayoutSpec {
		fsize = specFooterSize
	}
	sum, sha := newSum(layout), sha256.New()
	if _, err := io.CopyBuffer(io.MultiWriter(sum, sha), io.NewSectionReader(f, 0, size-fsize), make([]byte, 1<<20)); err != nil {
		return plugin.Artifact{}, fmt.Errorf("reading back for the checksum: %w", err)
	}
	ft := footer(layout, sumOf(sum), size)
	if _, err := f.WriteAt(ft, size-fsize); err != nil {
		return plugin.Artifact{}, fmt.Errorf("writing the footer: %w", err)
	}
	sha.Write(ft)
	return plugin.Artifact{Path: path, Size: uint64(size), SHA256: hex.EncodeToString(sha.Sum(nil))}, nil
}

// finishWholeFile seals the uncompressed spool, then writes the output:
// the 64-byte header, everything after it as one LZ4 block or zstd frame,
// and the payload CRC in the header's reserved bytes.
func (s *Sink) finishWholeFile(f *outFile) (plugin.Artifact, error) {
	fp := f.plan
	size := int64(fp.size)
	if _, err := sealInPlace(f.spool.File, fp.path, size, LayoutAprender); err != nil {
		return plugin.Artifact{}, err
	}
	out, err := s.createFile(fp.path, 0)
	if err != nil {
		return plugin.Artifact{}, err
	}
	f.out = out
	cw := &countWriter{w: out.File}
	cw.Write(make([]byte, aprenderHeaderSize)) // the header is written last
	crc, err := encodeWholeFile(cw, f.spool.File, size, s.opts.Compression, s.opts.Level)
	if err == nil {
		err = cw.err
	}
	if err != nil {
		return plugin.Artifact{}, fmt.Errorf("compressing: %w", err)
	}
	if _, err := out.WriteAt(payloadHeader(fp.header, crc), 0); err != nil {
		return plugin.Artifact{}, err
	}
	sha := sha256.New()
	if _, err := io.Copy(sha, io.NewSectionReader(out.File, 0, cw.n)); err != nil {
		return plugin.Artifact{}, fmt.Errorf("reading back: %w", err)
	}
	return plugin.Artifact{Path: fp.path, Size: uint64(cw.n), SHA256: hex.EncodeToString(sha.Sum(nil))}, nil
}

// payloadHeader returns a sealed header carrying the payload CRC.
func payloadHeader(header []byte, crc uint32) []byte {
	h := parseAprenderHeader(header)
	binary.LittleEndian.PutUint32(h.Reserved[0:], crc)
	copy(h.Reserved[4:8], payloadTag[:])
	return h.sealed()
}

// encodeWholeFile compresses src[64, size) (a complete uncompressed file)
// to w and returns the CRC32 of the compressed bytes.
func encodeWholeFile(w io.Writer, src io.ReaderAt, size int64, c Compression, level int) (uint32, error) {
	crc := crc32.NewIEEE()
	w = io.MultiWriter(w, crc)
	var err error
	switch c {
	case CompressionLZ4:
		err = writeLZ4Block(w, src, aprenderHeaderSize, size-aprenderHeaderSize)
	case CompressionZstd:
		var enc io.WriteCloser
		enc, err = newZstdWriter(w, level, size-aprenderHeaderSize, true)
		if err == nil {
			_, err = io.Copy(enc, io.NewSectionReader(src, aprenderHeaderSize, size-aprenderHeaderSize))
			if cerr := enc.Close(); err == nil {
				err = cerr
			}
		}
	default:
		err = fmt.Errorf("no whole-file compression %q", c)
	}
	return crc.Sum32(), err
}

// finishPerTensor lays the file out with the compressed sizes and copies
// every tensor's chunks from the spool into place.
func (s *Sink) finishPerTensor(ctx context.Context, f *outFile) (plugin.Artifact, error) {
	fp := f.plan
	stored := make([]uint64, len(fp.tensors))
	quantized := false
	for i := range fp.tensors {
		for _, r := range f.chunks[i] {
			stored[i] += uint64(r.n)
		}
		if info, _ := fp.tensors[i].DType.Info(); info.IsQuantized() {
			quantized = true
		}
	}
	fp.layOutSizes(s.opts, s.meta, quantized, stored)
	out, err := s.createFile(fp.path, int64(fp.size))
	if err != nil {
		return plugin.Artifact{}, err
	}
	f.out = out
	if _, err := out.WriteAt(fp.prologue(s.opts.Layout), 0); err != nil {
		return plugin.Artifact{}, err
	}
	spoolPath := f.spool.Name()
	for i := range fp.tensors {
		at := int64(fp.dataOffset + fp.offsets[i])
		for _, r := range f.chunks[i] {
			if err := ctx.Err(); err != nil {
				return plugin.Artifact{}, err
			}
			ref := tensor.FileRef{Path: spoolPath, Offset: uint64(r.off), Length: uint64(r.n)}
			if err := plugin.CopyToFile(out, at, plugin.FileData(ref)); err != nil {
				return plugin.Artifact{}, err
			}
			at += r.n
		}
	}
	return sealInPlace(out.File, fp.path, int64(fp.size), LayoutSpec)
}

type countWriter struct {
	w   io.Writer
	n   int64
	err error
}

func (c *countWriter) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.w.Write(p)
	c.n += int64(n)
	c.err = err
	return n, err
}

// Abort removes every temporary output.
func (s *Sink) Abort(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.abortLocked()
}

func (s *Sink) abortLocked() error {
	s.finished = true
	var first error
	for _, f := range s.files {
		if err := atomicfile.AbortAll(f.out, f.spool); err != nil && first == nil {
			first = err
		}
	}
	return first
}
