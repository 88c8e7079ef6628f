package safetensors

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/sluice-ml/sluice/sdk/atomicfile"
	"github.com/sluice-ml/sluice/sdk/plugin"
	st "github.com/sluice-ml/sluice/sdk/safetensors"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// SinkConfig configures the sink.
type SinkConfig struct {
	Path    string `hcl:"path" doc:"Output file, e.g. out/model.safetensors. Shards are named out/model-00001-of-0000N.safetensors, with out/model.safetensors.index.json."`
	DType   string `hcl:"dtype,optional" doc:"Cast every floating-point tensor to this dtype (f32, f16, bf16, f64, f8_e4m3, f8_e5m2)."`
	HFFiles *bool  `hcl:"hf_files,optional" doc:"Write the Hugging Face side files the source carried (config.json, tokenizer files) next to the output. Default true."`
}

// Sink writes one file or a shard set.
type Sink struct {
	cfg   SinkConfig
	dtype tensor.DType

	plan *sinkPlan
	// outIdx holds, for each file being written, its index in plan.outputs.
	outIdx []int
	// partial is set when Begin was asked for some shards only: the index
	// and side files are left to a finalize run.
	partial bool
	// finalize is set when Begin was asked for the whole-set files only.
	finalize bool
	// ties maps each tied tensor the plan drops to the tensor kept; like
	// Hugging Face's conversion, they are recorded in the metadata.
	ties map[string]string
	// begin is what Begin was asked for (digests, fsync), for the outputs
	// Commit writes too.
	begin  plugin.BeginOptions
	mu     sync.Mutex
	files  []*atomicfile.File
	places map[string]place
	side   []*atomicfile.File
	done   bool
}

type place struct {
	file *atomicfile.File
	off  int64
	size uint64
}

// sinkPlan is the layout decided from a manifest.
type sinkPlan struct {
	outputs  []output
	index    []byte            // index.json contents for shard sets
	sideJSON map[string][]byte // file name → contents
}

type output struct {
	path   string
	layout *st.Layout
}

// NewSink validates the configuration.
func NewSink(cfg *SinkConfig) (*Sink, error) {
	if cfg.Path == "" {
		return nil, plugin.ConfigErrorf("path", "must not be empty")
	}
	s := &Sink{cfg: *cfg}
	if cfg.DType != "" {
		d, err := tensor.ParseDType(cfg.DType)
		if err != nil {
			return nil, plugin.ConfigErrorf("dtype", "%v", err)
		}
		info, _ := d.Info()
		if info.Kind != tensor.KindFloat {
			return nil, plugin.ConfigErrorf("dtype", "%s is not a floating-point dtype safetensors holds", d)
		}
		s.dtype = d
	}
	return s, nil
}

func (s *Sink) writeHFFiles() bool { return s.cfg.HFFiles == nil || *s.cfg.HFFiles }

// Plan decides conversions, drops and the files to write.
func (s *Sink) Plan(ctx context.Context, in *tensor.Manifest) (*plugin.SinkPlan, error) {
	p := &plugin.SinkPlan{Partitions: true}
	out := in.Clone()
	kept := out.Tensors[:0]
	s.ties = map[string]string{}
	for _, t := range out.Tensors {
		if tied := t.Attr(tensor.AttrTiedTo); tied != "" {
			p.Drop = append(p.Drop, plugin.Decision{Tensor: t.Name, Msg: fmt.Sprintf("shares its storage with %s; written once, as Hugging Face's conversion does, and recorded in the metadata", tied)})
			s.ties[t.Name] = tied
			continue
		}
		info, known := t.DType.Info()
		switch {
		case !known || info.Safetensors == "":
			p.Convert = append(p.Convert, plugin.Conversion{Tensor: t.Name, To: tensor.F32, Reason: fmt.Sprintf("safetensors has no %s; expanded to f32", t.DType)})
			t.DType = tensor.F32
		case s.dtype != "" && info.Kind == tensor.KindFloat && t.DType != s.dtype:
			p.Convert = append(p.Convert, plugin.Conversion{Tensor: t.Name, To: s.dtype, Reason: "dtype = " + string(s.dtype)})
			t.DType = s.dtype
		}
		if err := resize(&t); err != nil {
			return nil, err
		}
		kept = append(kept, t)
	}
	out.Tensors = kept
	sp, notes, err := s.layout(out)
	if err != nil {
		return nil, err
	}
	p.Notes = append(p.Notes, notes...)
	for _, o := range sp.outputs {
		p.Files = append(p.Files, plugin.PlannedFile{Path: o.path, Size: o.layout.FileSize(), Tensors: len(o.layout.Tensors)})
	}
	if sp.index != nil {
		p.Files = append(p.Files, plugin.PlannedFile{Path: indexPath(s.cfg.Path), Size: uint64(len(sp.index))})
	}
	for _, n := range sortedKeys(sp.sideJSON) {
		p.Files = append(p.Files, plugin.PlannedFile{Path: filepath.Join(filepath.Dir(s.cfg.Path), n), Size: uint64(len(sp.sideJSON[n]))})
	}
	return p, nil
}

func resize(t *tensor.TensorInfo) error {
	n, err := t.DType.ShapeByteSize(t.Shape)
	if err != nil {
		return fmt.Errorf("tensor %q: %w", t.Name, err)
	}
	t.Size = n
	return nil
}

// layout assigns tensors to files and lays each file out.
func (s *Sink) layout(m *tensor.Manifest) (*sinkPlan, []plugin.Decision, error) {
	var notes []plugin.Decision
	meta := map[string]string{}
	var dropped []string
	m.Metadata.All(func(k string, v tensor.Value) bool {
		if strings.HasPrefix(k, tensor.MetaHFPrefix) {
			return true
		}
		if str, ok := v.Str(); ok {
			meta[k] = str
		} else {
			dropped = append(dropped, k)
		}
		return true
	})
	for name, kept := range s.ties {
		if _, set := meta[name]; !set {
			meta[name] = kept
		}
	}
	if len(dropped) > 0 {
		notes = append(notes, plugin.Decision{Msg: fmt.Sprintf("%d metadata keys that are not strings are left out (safetensors metadata holds strings only): %s", len(dropped), abbreviate(dropped, 6))})
	}
	if len(meta) == 0 {
		meta = nil
	}

	shards := 0
	entries := make([]st.Tensor, len(m.Tensors))
	shardOf := make([]int, len(m.Tensors))
	for k, t := range m.Tensors {
		entries[k] = st.Tensor{Name: t.Name, DType: t.DType, Shape: t.Shape, Size: t.Size}
		i, n, ok := t.Shard()
		if raw := t.Attr(tensor.AttrShard); raw != "" && !ok {
			return nil, nil, fmt.Errorf("tensor %q: malformed shard assignment %q", t.Name, raw)
		}
		if !ok {
			i, n = 1, 1
		}
		if shards == 0 {
			shards = n
		} else if n != shards {
			return nil, nil, fmt.Errorf("tensor %q is assigned to shard %d/%d but others to a set of %d", t.Name, i, n, shards)
		}
		shardOf[k] = i
	}
	if shards == 0 {
		shards = 1
	}
	groups := map[int][]st.Tensor{1: entries}
	if shards > 1 {
		groups = map[int][]st.Tensor{}
		for k, e := range entries {
			groups[shardOf[k]] = append(groups[shardOf[k]], e)
		}
	}
	sp := &sinkPlan{sideJSON: map[string][]byte{}}
	weightMap := map[string]string{}
	var total uint64
	for i := 1; i <= shards; i++ {
		p := s.cfg.Path
		if shards > 1 {
			p = shardPath(s.cfg.Path, i, shards)
		}
		l, err := st.PlanLayout(groups[i], meta)
		if err != nil {
			return nil, nil, err
		}
		sp.outputs = append(sp.outputs, output{path: p, layout: l})
		if shards > 1 {
			for _, e := range l.Tensors {
				weightMap[e.Name] = filepath.Base(p)
			}
			total += l.DataSize
		}
	}
	if shards > 1 {
		idx, err := encodeIndex(total, weightMap)
		if err != nil {
			return nil, nil, err
		}
		sp.index = idx
		notes = append(notes, plugin.Decision{Msg: fmt.Sprintf("%d shards and %s", shards, filepath.Base(indexPath(s.cfg.Path)))})
	}
	if s.writeHFFiles() {
		for file, key := range tensor.HFFiles {
			if v, ok := m.Metadata.Get(key); ok {
				if str, ok := v.Str(); ok {
					sp.sideJSON[file] = []byte(str)
				}
			}
		}
	}
	return sp, notes, nil
}

func abbreviate(list []string, n int) string {
	sort.Strings(list)
	if len(list) <= n {
		return strings.Join(list, ", ")
	}
	return strings.Join(list[:n], ", ") + fmt.Sprintf(", … (%d more)", len(list)-n)
}

func sortedKeys(m map[string][]byte) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// stem returns the output path without its .safetensors suffix.
func stem(p string) string { return strings.TrimSuffix(p, ".safetensors") }

func shardPath(p string, i, n int) string {
	return fmt.Sprintf("%s-%05d-of-%05d.safetensors", stem(p), i, n)
}

func indexPath(p string) string { return stem(p) + ".safetensors.index.json" }

// encodeIndex writes the index as Hugging Face does: sorted keys, two-space
// indentation, a final newline.
func encodeIndex(total uint64, weightMap map[string]string) ([]byte, error) {
	idx := map[string]any{
		"metadata":   map[string]any{"total_size": total},
		"weight_map": weightMap,
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(idx); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Begin creates every output under a temporary name and writes the headers.
// With opts.Shards it creates only those shards' files; with opts.Finalize
// none: Commit then writes the index and side files of a set whose shards
// earlier runs wrote.
func (s *Sink) Begin(ctx context.Context, m *tensor.Manifest, opts plugin.BeginOptions) error {
	sp, _, err := s.layout(m)
	if err != nil {
		return err
	}
	s.plan = sp
	s.places = map[string]place{}
	s.begin = plugin.BeginOptions{Digests: opts.Digests, NoFsync: opts.NoFsync} // not the signing key
	want, err := s.selectShards(opts)
	if err != nil {
		return err
	}
	for i, o := range sp.outputs {
		if !want[i] {
			continue
		}
		f, err := plugin.CreateOutput(o.path, int64(o.layout.FileSize()), opts)
		if err != nil {
			s.Abort(ctx)
			return err
		}
		s.files = append(s.files, f)
		s.outIdx = append(s.outIdx, i)
		if _, err := f.WriteAt(o.layout.Prefix, 0); err != nil {
			s.Abort(ctx)
			return fmt.Errorf("writing header of %s: %w", o.path, err)
		}
		f.Final(0, int64(len(o.layout.Prefix)))
		for _, e := range o.layout.Tensors {
			s.places[e.Name] = place{file: f, off: o.layout.EntryOffset(e), size: e.Size()}
		}
	}
	return nil
}

// selectShards returns which planned outputs Begin creates (by index in
// plan.outputs). For a finalize run it checks that every shard file is in
// place with its planned size.
func (s *Sink) selectShards(opts plugin.BeginOptions) (map[int]bool, error) {
	outs := s.plan.outputs
	want := map[int]bool{}
	switch {
	case opts.Finalize:
		if len(opts.Shards) > 0 {
			return nil, fmt.Errorf("safetensors sink %s: a finalize run writes no shards, but shards %v were asked for", s.cfg.Path, opts.Shards)
		}
		s.finalize = true
		for _, o := range outs {
			fi, err := os.Stat(o.path)
			if err != nil {
				return nil, &plugin.InputError{File: o.path, Msg: "cannot finalize the shard set: this shard was not written (run every partition first)", Err: err}
			}
			if uint64(fi.Size()) != o.layout.FileSize() {
				return nil, &plugin.InputError{File: o.path, Msg: fmt.Sprintf("cannot finalize the shard set: this shard has %d bytes, the plan says %d", fi.Size(), o.layout.FileSize())}
			}
		}
	case len(opts.Shards) > 0:
		s.partial = true
		for _, i := range opts.Shards {
			if i < 1 || i > len(outs) {
				return nil, fmt.Errorf("safetensors sink %s: shard %d asked for, the set has %d", s.cfg.Path, i, len(outs))
			}
			want[i-1] = true
		}
	default:
		for i := range outs {
			want[i] = true
		}
	}
	return want, nil
}

// Write copies one tensor to its planned place.
func (s *Sink) Write(ctx context.Context, name string, data plugin.TensorData) error {
	pl, ok := s.places[name]
	if !ok {
		return fmt.Errorf("safetensors sink: tensor %q was not planned", name)
	}
	if data.Size() != pl.size {
		return fmt.Errorf("safetensors sink: tensor %q arrives with %d bytes, planned %d", name, data.Size(), pl.size)
	}
	if err := plugin.CopyToFile(pl.file, pl.off, data); err != nil {
		return fmt.Errorf("writing tensor %q to %s: %w", name, pl.file.FinalPath(), err)
	}
	pl.file.Final(pl.off, int64(pl.size)) // the data is contiguous: no padding follows
	return nil
}

// DirectTargets lists every tensor: each goes to its place unchanged.
func (s *Sink) DirectTargets() []plugin.DirectTarget {
	out := make([]plugin.DirectTarget, 0, len(s.places))
	for name, pl := range s.places {
		out = append(out, plugin.DirectTarget{Tensor: name, File: pl.file, Offset: uint64(pl.off), Size: pl.size})
	}
	return out
}

// WrittenDirect records that the host wrote tensor name in place.
func (s *Sink) WrittenDirect(name string) error {
	pl, ok := s.places[name]
	if !ok {
		return fmt.Errorf("safetensors sink: tensor %q was not planned", name)
	}
	pl.file.Final(pl.off, int64(pl.size))
	return nil
}

// Commit renames every output into place, then the index and side files.
func (s *Sink) Commit(ctx context.Context) ([]plugin.Artifact, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var arts []plugin.Artifact
	for i, f := range s.files {
		if err := f.Commit(); err != nil {
			s.abortLocked()
			return nil, err
		}
		arts = append(arts, plugin.Committed(f, s.plan.outputs[s.outIdx[i]].layout.FileSize()))
	}
	if s.partial {
		s.done = true
		return arts, nil
	}
	extra := map[string][]byte{}
	if s.plan.index != nil {
		extra[indexPath(s.cfg.Path)] = s.plan.index
	}
	for n, b := range s.plan.sideJSON {
		extra[filepath.Join(filepath.Dir(s.cfg.Path), n)] = b
	}
	for _, p := range sortedKeys(extra) {
		art, err := plugin.WriteOutput(p, extra[p], s.begin)
		if err != nil {
			return nil, err
		}
		arts = append(arts, art)
	}
	s.done = true
	return arts, nil
}

// Abort removes every temporary output.
func (s *Sink) Abort(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.abortLocked()
}

func (s *Sink) abortLocked() error {
	return atomicfile.AbortAll(s.files...)
}
