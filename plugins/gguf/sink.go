package gguf

import (
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"

	"github.com/sluice-ml/sluice/sdk/atomicfile"
	"github.com/sluice-ml/sluice/sdk/codec"
	"github.com/sluice-ml/sluice/sdk/layout"
	"github.com/sluice-ml/sluice/sdk/plugin"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// SinkConfig configures the "gguf" sink.
type SinkConfig struct {
	Path         string `hcl:"path" doc:"Output file. With a shard stage upstream, NAME.gguf becomes NAME-00001-of-0000N.gguf … as gguf-split names them."`
	DType        string `hcl:"dtype,optional" doc:"Tensor type to write: f32, f16, bf16, q8_0, q4_0 or another ggml type Sluice can encode. 1-D tensors and rows that are not a whole number of blocks fall back to f32/f16; integer tensors keep their type. Default: keep each tensor's dtype (bf16 is never narrowed)."`
	Architecture string `hcl:"architecture,optional" doc:"Sets general.architecture. \"auto\" (or llama, mistral, qwen2, qwen3) on a Hugging Face source writes what llama.cpp's converter writes: hyperparameters, tokenizer, chat template, blk.N.* names, Q/K permutation."`
	Alignment    int    `hcl:"alignment,optional" doc:"Data alignment in bytes, a power of two. Default: the input's general.alignment, else 32. Written as general.alignment (u32) when not 32."`
}

// SinkType is the "gguf" sink component.
func SinkType() plugin.SinkType {
	st := plugin.NewSinkType("gguf",
		"Writes GGUF v3 that ggml, llama.cpp and Ollama load, byte-identical to ggml's writer for the same content; split sets as gguf-split writes them; Hugging Face checkpoints converted as llama.cpp's converter does (architecture = \"auto\").",
		func(ctx context.Context, cfg *SinkConfig) (plugin.Sink, error) { return NewSink(cfg) })
	st.Extensions = []string{".gguf"}
	return st
}

// Sink writes a GGUF file or split set.
type Sink struct {
	cfg   SinkConfig
	dtype tensor.DType // "" keeps each tensor's dtype
	// dtypeInfo describes dtype, and asked is the plan's reason for a
	// tensor converted to it: the same for every tensor of a model of tens
	// of thousands, so made once.
	dtypeInfo tensor.Info
	asked     string

	// planned is the last Plan's input and output, which Begin reuses when
	// its manifest is that input as the plan converts it.
	planned *plannedOutput

	mu      sync.Mutex
	files   []*atomicfile.File
	targets map[string]*target
	done    bool
	// finalize is set by a Begin that asked for the whole-set files only: a
	// split set has none, so Commit writes nothing.
	finalize bool
}

// target is where one incoming tensor goes.
type target struct {
	file    int
	offset  uint64
	size    uint64
	extent  int64 // size and the padding up to the next tensor
	written bool
	permute *permuteSpec
}

type permuteSpec struct {
	rows, heads int
}

// NewSink checks the configuration; Begin creates files.
func NewSink(cfg *SinkConfig) (*Sink, error) {
	if cfg.Path == "" {
		return nil, plugin.ConfigErrorf("path", "an output path is required")
	}
	s := &Sink{cfg: *cfg}
	if cfg.DType != "" {
		d, err := tensor.ParseDType(cfg.DType)
		if err != nil {
			return nil, plugin.ConfigErrorf("dtype", "%v", err)
		}
		info, _ := d.Info()
		if info.GGML == tensor.NoGGML || !canEncode(d) {
			return nil, plugin.ConfigErrorf("dtype", "%s cannot be written to GGUF by Sluice; choose one of %s", d, strings.Join(writableDTypes(), ", "))
		}
		s.dtype, s.dtypeInfo, s.asked = d, info, fmt.Sprintf("dtype = %q", d)
	}
	if cfg.Alignment != 0 && (cfg.Alignment < 0 || !ValidAlignment(uint64(cfg.Alignment))) {
		return nil, plugin.ConfigErrorf("alignment", "%d is not a power of two (1, 2, 4, … 2^31)", cfg.Alignment)
	}
	if a := cfg.Architecture; a != "" && a != "auto" && strings.TrimSpace(a) != a {
		return nil, plugin.ConfigErrorf("architecture", "%q has surrounding spaces", a)
	}
	return s, nil
}

// canEncode reports whether the core's codec can produce d.
func canEncode(d tensor.DType) bool { return codec.CanEncode(d) }

func writableDTypes() []string {
	var out []string
	for _, n := range tensor.Names() {
		d := tensor.DType(n)
		if info, _ := d.Info(); info.GGML != tensor.NoGGML && canEncode(d) {
			out = append(out, n)
		}
	}
	return out
}

// outFile is one planned output file.
type outFile struct {
	path    string
	md      tensor.Metadata
	specs   []TensorSpec
	inNames []string // incoming tensor names; "" for generated ones
	layout  *Layout
	// generated holds the bytes of tensors the sink makes itself, by index.
	generated map[int][]byte
}

// output is the whole planned output for one manifest.
type output struct {
	files    []*outFile
	convert  []plugin.Conversion
	notes    []plugin.Decision
	drops    []plugin.Decision
	permutes map[string]*permuteSpec
}

// build decides everything from the manifest: target dtypes, names, metadata,
// files and byte layouts. Plan calls it, and Begin too unless it can reuse
// the plan (plannedOutput.reuse); for a manifest that already arrives in the
// planned dtypes it asks for no conversion.
func (s *Sink) build(in *tensor.Manifest) (*output, error) {
	out := &output{permutes: map[string]*permuteSpec{}}
	conv, err := newHFConversion(s.cfg.Architecture, in)
	if err != nil {
		return nil, err
	}
	if conv == nil && s.cfg.Architecture == "" {
		if _, ok := in.Metadata.Get(tensor.MetaHFConfig); ok {
			out.notes = append(out.notes, plugin.Decision{Msg: "the input is a Hugging Face checkpoint; set architecture = \"auto\" to write what llama.cpp needs (hyperparameters, tokenizer, blk.N.* names)"})
		}
	}

	type planned struct {
		in    *tensor.TensorInfo // nil for a tensor the sink generates
		gen   []byte             // the bytes of a generated tensor
		spec  TensorSpec
		shard int
	}
	// Sized once: a model of tens of thousands of tensors would otherwise
	// grow these by doubling, each time into fresh memory.
	tensors := make([]planned, 0, len(in.Tensors))
	shards := 0
	if conv != nil {
		out.notes = append(out.notes, plugin.Decision{Msg: fmt.Sprintf("converted as llama.cpp's converter converts %s: general.architecture %q, hyperparameters from config.json, tokenizer keys, tensors renamed (model.layers.N.* → blk.N.*, model.embed_tokens → token_embd, lm_head → output)", conv.family, conv.arch)})
		// Tensors llama.cpp's converter generates come first, as it writes them.
		extra, err := conv.extraTensors()
		if err != nil {
			return nil, err
		}
		for _, g := range extra {
			tensors = append(tensors, planned{spec: g.spec, gen: g.data})
			out.notes = append(out.notes, plugin.Decision{Tensor: g.spec.Name, Msg: g.why})
		}
	}
	for i := range in.Tensors {
		t := &in.Tensors[i]
		name := t.Name
		if conv != nil {
			var skip string
			name, skip, err = conv.rename(t.Name)
			if err != nil {
				return nil, err
			}
			if skip != "" {
				out.drops = append(out.drops, plugin.Decision{Tensor: t.Name, Msg: skip})
				continue
			}
			if heads := conv.permuteHeads(t.Name); heads > 0 {
				if len(t.Shape) == 0 {
					return nil, fmt.Errorf("tensor %q: a scalar cannot be permuted", t.Name)
				}
				out.permutes[t.Name] = &permuteSpec{rows: int(t.Shape[0]), heads: heads}
				out.notes = append(out.notes, plugin.Decision{Tensor: t.Name, Msg: fmt.Sprintf("written as %s, rows permuted for llama.cpp's interleaved RoPE (%d heads)", name, heads)})
			}
		}
		to, reason, err := s.decide(t, conv != nil && conv.keepF32(t.Name, t.Shape))
		if err != nil {
			return nil, err
		}
		if to != t.DType {
			if out.convert == nil {
				// Sized once, at the first, for every tensor left: a dtype
				// converts most of them.
				out.convert = make([]plugin.Conversion, 0, len(in.Tensors)-i)
			}
			out.convert = append(out.convert, plugin.Conversion{Tensor: t.Name, To: to, Reason: reason})
		} else if reason != "" {
			out.notes = append(out.notes, plugin.Decision{Tensor: t.Name, Msg: reason})
		}
		p := planned{in: t, spec: TensorSpec{Name: name, DType: to, Shape: t.Shape}}
		if attr := t.Attr(tensor.AttrShard); attr != "" {
			i, n, ok := tensor.ParseShard(attr)
			if !ok {
				return nil, &plugin.InputError{Tensor: t.Name, Msg: fmt.Sprintf("shard attribute %q is not i/N", attr)}
			}
			if shards != 0 && n != shards {
				return nil, &plugin.InputError{Tensor: t.Name, Msg: fmt.Sprintf("shard attribute %q disagrees with other tensors' count %d", attr, shards)}
			}
			shards, p.shard = n, i
		}
		tensors = append(tensors, p)
	}
	if shards > 0 {
		for i, p := range tensors {
			if p.in == nil {
				tensors[i].shard = 1
				continue
			}
			if p.shard == 0 {
				return nil, &plugin.InputError{Tensor: p.in.Name, Msg: "has no shard assignment while other tensors have one"}
			}
		}
	} else {
		shards = 1
		for i := range tensors {
			tensors[i].shard = 1
		}
	}

	// Metadata: the conversion's keys first, then the input's own keys
	// (without Hugging Face files and split layout keys), then units.
	var md tensor.Metadata
	if conv != nil {
		var specs []TensorSpec
		for _, p := range tensors {
			specs = append(specs, p.spec)
		}
		cm, err := conv.metadata(specs, s.dtype)
		if err != nil {
			return nil, err
		}
		md = cm
		if conv.note != "" {
			out.notes = append(out.notes, plugin.Decision{Msg: conv.note})
		}
	} else if a := s.cfg.Architecture; a != "" && a != "auto" {
		md.Set("general.architecture", tensor.StringValue(a))
	}
	in.Metadata.All(func(k string, v tensor.Value) bool {
		if strings.HasPrefix(k, tensor.MetaHFPrefix) || IsSplitKey(k) {
			return true
		}
		if conv != nil && !strings.Contains(k, ".") {
			// Plain safetensors __metadata__ entries (format = "pt") are
			// not model metadata; GGUF keys are namespaced.
			return true
		}
		if _, dup := md.Get(k); !dup {
			md.Set(k, v)
		}
		return true
	})
	// A dtype option re-types the model: keep general.file_type truthful.
	if v, ok := md.Get(KeyFileType); ok && conv == nil && s.dtype != "" {
		if ft, known := fileTypes[s.dtype]; known && v.Type() == tensor.TypeU32 {
			md.Set(KeyFileType, tensor.U32Value(ft))
		}
	}
	for _, p := range tensors {
		if p.in == nil {
			continue
		}
		if u := p.in.Attr(tensor.AttrUnit); u != "" {
			md.Set(UnitKeyPrefix+p.spec.Name, tensor.StringValue(u))
		}
	}
	align := uint64(DefaultAlignment)
	if s.cfg.Alignment > 0 {
		align = uint64(s.cfg.Alignment)
	} else if v, ok := md.Get(KeyAlignment); ok {
		if a, ok := v.Uint(); ok && v.Type() == tensor.TypeU32 && ValidAlignment(a) {
			align = a
		}
	}
	if _, ok := md.Get(KeyAlignment); ok || align != DefaultAlignment {
		md.Set(KeyAlignment, tensor.U32Value(uint32(align)))
	}

	base := s.cfg.Path
	prefix := strings.TrimSuffix(base, ".gguf")
	for i := 1; i <= shards; i++ {
		f := &outFile{path: base}
		if shards > 1 {
			f.path = SplitPath(prefix, i, shards)
			if i == 1 {
				f.md = md.Clone()
			} else if align != DefaultAlignment {
				f.md.Set(KeyAlignment, tensor.U32Value(uint32(align)))
			}
			f.md.Set(KeySplitNo, tensor.U16Value(uint16(i-1)))
			f.md.Set(KeySplitCount, tensor.U16Value(uint16(shards)))
			f.md.Set(KeySplitTensorsCount, tensor.I32Value(int32(len(tensors))))
		} else {
			f.md = md
			f.specs = make([]TensorSpec, 0, len(tensors))
			f.inNames = make([]string, 0, len(tensors))
		}
		for _, p := range tensors {
			if p.shard != i {
				continue
			}
			if p.in == nil {
				if f.generated == nil {
					f.generated = map[int][]byte{}
				}
				f.generated[len(f.specs)] = p.gen
				f.inNames = append(f.inNames, "")
			} else {
				f.inNames = append(f.inNames, p.in.Name)
			}
			f.specs = append(f.specs, p.spec)
		}
		out.files = append(out.files, f)
	}
	if shards > 1<<16-1 {
		return nil, &plugin.InputError{Msg: fmt.Sprintf("%d shards: split.count is a u16", shards)}
	}
	for _, f := range out.files {
		l, err := PlanFile(&f.md, f.specs, align)
		if err != nil {
			return nil, &plugin.InputError{File: f.path, Msg: "cannot be written as GGUF", Err: err}
		}
		f.layout = l
	}
	if shards > 1 {
		out.notes = append(out.notes, plugin.Decision{Msg: fmt.Sprintf("split set of %d files named as gguf-split names them; metadata in the first", shards)})
	}
	return out, nil
}

// decide picks the dtype a tensor is written in, and says why when it is not
// the obvious one.
func (s *Sink) decide(t *tensor.TensorInfo, keepF32 bool) (tensor.DType, string, error) {
	info, ok := t.DType.Info()
	if !ok {
		return "", "", &plugin.InputError{Tensor: t.Name, Msg: fmt.Sprintf("unknown dtype %q", t.DType)}
	}
	if info.IsInteger() {
		if info.GGML != tensor.NoGGML {
			return t.DType, "", nil
		}
		switch t.DType {
		case tensor.Bool:
			return tensor.I8, "GGUF has no bool type; written as i8 (0/1)", nil
		case tensor.U8:
			return tensor.I16, "GGUF has no u8 type; widened to i16", nil
		case tensor.U16:
			return tensor.I32, "GGUF has no u16 type; widened to i32", nil
		}
		// The codec converts through float32, exact only up to 2^24.
		return "", "", &plugin.InputError{Tensor: t.Name, Msg: fmt.Sprintf("GGUF has no %s type, and widening it exactly is not supported; cast it to a GGUF integer type (i8, i16, i32, i64) first", t.DType)}
	}
	if keepF32 {
		if t.DType == tensor.F32 {
			return tensor.F32, "", nil
		}
		return tensor.F32, "norms, biases and 1-D tensors stay f32, as llama.cpp's converter keeps them", nil
	}
	want := s.dtype
	if want == "" {
		switch {
		case info.GGML != tensor.NoGGML:
			return t.DType, "", nil
		case info.Kind == tensor.KindFloat:
			return tensor.F16, fmt.Sprintf("GGUF has no %s type; widened to f16, which holds every value", t.DType), nil
		default:
			return tensor.F32, fmt.Sprintf("GGUF cannot hold %s; expanded to f32", t.DType), nil
		}
	}
	winfo := s.dtypeInfo
	if winfo.Kind == tensor.KindBlock {
		ne := NeFromShape(t.Shape)
		if len(ne) == 1 {
			return tensor.F32, fmt.Sprintf("1-D tensor is not block-quantized to %s; written as f32", want), nil
		}
		if ne[0]%winfo.BlockSize != 0 {
			fb := tensor.F16
			why := ""
			if t.DType == tensor.BF16 {
				fb, why = tensor.BF16, " (bf16 kept: f16 could overflow)"
			}
			return fb, fmt.Sprintf("rows of %d are not a multiple of the %s block size %d; written as %s%s", ne[0], want, winfo.BlockSize, fb, why), nil
		}
	}
	if want == t.DType {
		return want, "", nil
	}
	if t.DType == tensor.BF16 && want == tensor.F16 {
		return want, "bf16 → f16 as asked: values beyond ±65504 become infinite", nil
	}
	return want, s.asked, nil
}

// Plan decides dtypes, names and files from the manifest alone.
func (s *Sink) Plan(ctx context.Context, in *tensor.Manifest) (*plugin.SinkPlan, error) {
	out, err := s.build(in)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.planned = &plannedOutput{in: in, out: out}
	s.mu.Unlock()
	// Every file of a split set stands alone (split.* keys in each, no
	// index), so shards can be written by separate runs.
	p := &plugin.SinkPlan{Convert: out.convert, Drop: out.drops, Notes: out.notes, Partitions: true}
	for _, f := range out.files {
		p.Files = append(p.Files, plugin.PlannedFile{Path: f.path, Size: f.layout.FileSize, Tensors: len(f.specs)})
	}
	return p, nil
}

// Begin creates every output under a temporary name, sized to its final
// size (so the padding is zeros), and writes each header.
func (s *Sink) Begin(ctx context.Context, m *tensor.Manifest, opts plugin.BeginOptions) error {
	s.mu.Lock()
	planned := s.planned
	s.planned = nil
	s.mu.Unlock()
	out := planned.reuse(m)
	if out == nil {
		var err error
		if out, err = s.build(m); err != nil {
			return err
		}
	}
	if len(out.convert) > 0 {
		c := out.convert[0]
		t, _ := m.Tensor(c.Tensor)
		return fmt.Errorf("gguf sink %s: tensor %q arrives as %s but must be written as %s (%s); the planned conversion did not happen", s.cfg.Path, c.Tensor, t.DType, c.To, c.Reason)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.files != nil || s.finalize {
		return fmt.Errorf("gguf sink %s: Begin called twice", s.cfg.Path)
	}
	if opts.Finalize {
		// A split set has no index: every shard already carries split.*.
		s.finalize = true
		return nil
	}
	// Sized once, and the targets made in one block per file: a model of
	// tens of thousands of tensors would otherwise make as many small
	// allocations, and grow the map and the lists by doubling.
	n := 0
	for _, f := range out.files {
		n += len(f.inNames)
	}
	s.targets = make(map[string]*target, n)
	want := map[int]bool{}
	for _, i := range opts.Shards {
		if i < 1 || i > len(out.files) {
			return fmt.Errorf("gguf sink %s: shard %d asked for, the set has %d", s.cfg.Path, i, len(out.files))
		}
		want[i-1] = true
	}
	for k, f := range out.files {
		if len(want) > 0 && !want[k] {
			continue
		}
		fi := len(s.files)
		af, err := plugin.CreateOutput(f.path, int64(f.layout.FileSize), opts)
		if err != nil {
			s.abortLocked()
			return err
		}
		s.files = append(s.files, af)
		// extents[0] is the header's, extents[i+1] tensor i's.
		starts, sizes := make([]int64, 1, len(f.layout.Offsets)+1), make([]int64, 1, len(f.layout.Offsets)+1)
		sizes[0] = int64(len(f.layout.Header))
		for i, off := range f.layout.Offsets {
			starts = append(starts, int64(off))
			sizes = append(sizes, int64(f.layout.Sizes[i]))
		}
		extents := atomicfile.Extents(starts, sizes, int64(f.layout.FileSize))
		if _, err := af.WriteAt(f.layout.Header, 0); err != nil {
			s.abortLocked()
			return fmt.Errorf("writing the header of %s: %w", f.path, err)
		}
		af.Final(0, extents[0])
		for i, b := range f.generated {
			if _, err := af.WriteAt(b, int64(f.layout.Offsets[i])); err != nil {
				s.abortLocked()
				return fmt.Errorf("writing tensor %q of %s: %w", f.specs[i].Name, f.path, err)
			}
			af.Final(int64(f.layout.Offsets[i]), extents[i+1])
		}
		block := make([]target, len(f.inNames))
		for i, name := range f.inNames {
			if name == "" {
				continue
			}
			block[i] = target{file: fi, offset: f.layout.Offsets[i], size: f.layout.Sizes[i], extent: extents[i+1], permute: out.permutes[name]}
			s.targets[name] = &block[i]
		}
	}
	return nil
}

// Write places one tensor's bytes at its planned offset. Calls may run
// concurrently and in any order.
func (s *Sink) Write(ctx context.Context, name string, data plugin.TensorData) error {
	t, f, err := s.claim(name)
	if err != nil {
		return err
	}
	fail := func(err error) error {
		s.mu.Lock()
		t.written = false
		s.mu.Unlock()
		return fmt.Errorf("gguf sink %s: tensor %q: %w", f.FinalPath(), name, err)
	}
	if data.Size() != t.size {
		return fail(fmt.Errorf("%d bytes arrived, %d planned", data.Size(), t.size))
	}
	if t.permute == nil {
		if err := plugin.CopyToFile(f, int64(t.offset), data); err != nil {
			return fail(err)
		}
		f.Final(int64(t.offset), t.extent)
		return nil
	}
	rows := t.permute.rows
	if rows == 0 || t.size%uint64(rows) != 0 {
		return fail(fmt.Errorf("%d bytes are not %d equal rows", t.size, rows))
	}
	w := &sectionWriter{f: f.File, off: int64(t.offset), limit: int64(t.offset + t.size)}
	qk, err := layout.NewQKWriter(w, rows, t.permute.heads, int(t.size/uint64(rows)), false)
	if err != nil {
		return fail(err)
	}
	n, err := io.Copy(qk, data)
	if err == nil {
		err = qk.Close()
	}
	if err != nil {
		return fail(err)
	}
	if uint64(n) != t.size {
		return fail(fmt.Errorf("%d bytes arrived, %d planned", n, t.size))
	}
	f.Final(int64(t.offset), t.extent)
	return nil
}

// DirectTargets lists every tensor whose bytes go to its file unchanged:
// all but those whose rows the sink permutes.
func (s *Sink) DirectTargets() []plugin.DirectTarget {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]plugin.DirectTarget, 0, len(s.targets))
	for name, t := range s.targets {
		if t.permute == nil && !t.written {
			out = append(out, plugin.DirectTarget{Tensor: name, File: s.files[t.file], Offset: t.offset, Size: t.size})
		}
	}
	return out
}

// WrittenDirect records that the host wrote tensor name in place.
func (s *Sink) WrittenDirect(name string) error {
	t, f, err := s.claim(name)
	if err != nil {
		return err
	}
	f.Final(int64(t.offset), t.extent)
	return nil
}

// claim marks tensor name written and returns its target and file; a
// tensor not planned, or written already, is an error.
func (s *Sink) claim(name string) (*target, *atomicfile.File, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.targets[name]
	switch {
	case !ok:
		return nil, nil, fmt.Errorf("gguf sink %s: tensor %q was not planned", s.cfg.Path, name)
	case t.written:
		return nil, nil, fmt.Errorf("gguf sink %s: tensor %q written twice", s.cfg.Path, name)
	}
	t.written = true
	return t, s.files[t.file], nil
}

// sectionWriter writes sequentially from an offset, never past limit.
type sectionWriter struct {
	f     *os.File
	off   int64
	limit int64
}

func (w *sectionWriter) Write(p []byte) (int, error) {
	if w.off+int64(len(p)) > w.limit {
		return 0, fmt.Errorf("tensor data is longer than planned")
	}
	n, err := w.f.WriteAt(p, w.off)
	w.off += int64(n)
	return n, err
}

// Commit checks every tensor arrived, then syncs and renames each file.
func (s *Sink) Commit(ctx context.Context) ([]plugin.Artifact, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.finalize && !s.done {
		s.done = true
		return nil, nil
	}
	if s.files == nil || s.done {
		return nil, fmt.Errorf("gguf sink %s: Commit without Begin", s.cfg.Path)
	}
	var missing []string
	for name, t := range s.targets {
		if !t.written {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		if len(missing) > 5 {
			missing = append(missing[:5], "…")
		}
		return nil, fmt.Errorf("gguf sink %s: %d tensors never arrived: %s", s.cfg.Path, len(missing), strings.Join(missing, ", "))
	}
	var arts []plugin.Artifact
	for i, f := range s.files {
		st, err := f.Stat()
		if err != nil {
			s.abortFrom(i)
			return nil, err
		}
		if err := f.Commit(); err != nil {
			s.abortFrom(i + 1)
			return nil, err
		}
		arts = append(arts, plugin.Committed(f, uint64(st.Size())))
	}
	s.done = true
	return arts, nil
}

func (s *Sink) abortFrom(i int) {
	for _, f := range s.files[i:] {
		f.Abort()
	}
}

// Abort removes every temporary file.
func (s *Sink) Abort(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.abortLocked()
}

func (s *Sink) abortLocked() error {
	return atomicfile.AbortAll(s.files...)
}
