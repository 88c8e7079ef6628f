// Package safetensors is Sluice's safetensors format plugin: a source that
// reads a .safetensors file or a Hugging Face checkpoint directory (sharded
// through model.safetensors.index.json, with config.json and the tokenizer
// files carried in the manifest), and a sink that writes a single file or a
// Hugging Face shard set.
package safetensors

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/sluice-ml/sluice/sdk/binio"
	"github.com/sluice-ml/sluice/sdk/hfdir"
	"github.com/sluice-ml/sluice/sdk/localpath"
	"github.com/sluice-ml/sluice/sdk/plugin"
	"github.com/sluice-ml/sluice/sdk/resident"
	st "github.com/sluice-ml/sluice/sdk/safetensors"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// Version is the plugin's version.
const Version = "0.1.0"

// IndexName is the Hugging Face index of a sharded checkpoint.
const IndexName = "model.safetensors.index.json"

// Plugin returns the safetensors plugin.
func Plugin() *plugin.Plugin {
	src := plugin.NewSourceType("safetensors",
		"Reads a .safetensors file, a model.safetensors.index.json shard set, or a Hugging Face checkpoint directory "+
			"(its config.json, generation_config.json and tokenizer files travel in the manifest).",
		func(ctx context.Context, cfg *SourceConfig) (plugin.Source, error) { return OpenSource(cfg) })
	src.Extensions = []string{".safetensors", ".safetensors.index.json"}
	src.Probe = Probe
	sink := plugin.NewSinkType("safetensors",
		"Writes one .safetensors file, or NAME-0000i-of-0000N.safetensors shards plus NAME.safetensors.index.json when a shard stage assigns tensors to shards.",
		func(ctx context.Context, cfg *SinkConfig) (plugin.Sink, error) { return NewSink(cfg) })
	sink.Extensions = []string{".safetensors"}
	return &plugin.Plugin{Name: "safetensors", Version: Version, Sources: []plugin.SourceType{src}, Sinks: []plugin.SinkType{sink}}
}

// SourceConfig configures the source.
type SourceConfig struct {
	Path string   `hcl:"path" doc:"A .safetensors file, a model.safetensors.index.json, or a Hugging Face checkpoint directory."`
	Only []string `hcl:"only,optional" doc:"Read only the tensors whose names match one of these globs (path.Match syntax); the others are never read."`
}

// Source reads one file or a shard set.
type Source struct {
	cfg      SourceConfig
	manifest *tensor.Manifest
	// byName indexes the manifest's tensors by name, built by the first
	// Open, so that info, which opens nothing, does not pay for it. Names
	// are unique: a header has no name twice, and of a shard set's each
	// shard gives only the tensors the index places in it.
	byName    map[string]int
	indexOnce sync.Once
}

// OpenSource checks that the path exists; Describe reads it.
func OpenSource(cfg *SourceConfig) (*Source, error) {
	if cfg.Path == "" {
		return nil, plugin.ConfigErrorf("path", "must not be empty")
	}
	if _, err := os.Stat(cfg.Path); err != nil {
		return nil, &plugin.InputError{File: cfg.Path, Msg: "cannot open", Err: err}
	}
	if g, err := tensor.Selection(cfg.Only).Check(); err != nil {
		return nil, plugin.ConfigErrorf("only", "bad glob %q: %v", g, err)
	}
	return &Source{cfg: *cfg}, nil
}

// Probe recognises safetensors files and Hugging Face directories.
func Probe(p string) int {
	fi, err := os.Stat(p)
	if err != nil {
		return 0
	}
	if fi.IsDir() {
		if _, err := os.Stat(filepath.Join(p, IndexName)); err == nil {
			return 90
		}
		if _, err := os.Stat(filepath.Join(p, "model.safetensors")); err == nil {
			return 90
		}
		return 0
	}
	if strings.HasSuffix(p, ".safetensors.index.json") {
		return 80
	}
	f, err := os.Open(p)
	if err != nil {
		return 0
	}
	defer f.Close()
	var head [9]byte
	if n, _ := io.ReadFull(f, head[:]); n < 9 {
		return 0
	}
	n := uint64(head[0]) | uint64(head[1])<<8 | uint64(head[2])<<16 | uint64(head[3])<<24 |
		uint64(head[4])<<32 | uint64(head[5])<<40 | uint64(head[6])<<48 | uint64(head[7])<<56
	if n < 2 || n > st.MaxHeaderSize || int64(n)+8 > fi.Size() || head[8] != '{' {
		return 0
	}
	return 60
}

// Describe reads the header (or every shard's header) and returns the manifest.
func (s *Source) Describe(ctx context.Context) (*tensor.Manifest, error) {
	if s.manifest != nil {
		return s.manifest, nil
	}
	files, dir, err := s.files()
	if err != nil {
		return nil, err
	}
	m := &tensor.Manifest{}
	for i, f := range files {
		h, err := readHeader(f.path)
		if err != nil {
			return nil, err
		}
		if i == 0 {
			keys := make([]string, 0, len(h.Metadata))
			for k := range h.Metadata {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				m.Metadata.Set(k, tensor.StringValue(h.Metadata[k]))
			}
		}
		listed := 0
		m.Tensors = slices.Grow(m.Tensors, len(h.Tensors))
		resident.Slice(m.Tensors[len(m.Tensors):])
		refs := make([]tensor.FileRef, len(h.Tensors)) // one allocation for the file's references
		resident.Slice(refs)
		if f.index == nil && len(s.cfg.Only) == 0 { // every tensor of the file
			base := len(m.Tensors)
			m.Tensors = m.Tensors[:base+len(h.Tensors)]
			describeEntries(m.Tensors[base:], refs, h, f.abs)
			continue
		}
		for i := range h.Tensors {
			e := &h.Tensors[i]
			if f.index != nil {
				if file, ok := f.index[e.Name]; ok && file == f.name {
					listed++
				} else {
					continue
				}
			}
			if !tensor.Selection(s.cfg.Only).Selects(e.Name) {
				continue
			}
			m.Tensors = append(m.Tensors, tensorInfo(e, &refs[i], h, f.abs))
		}
		if f.index != nil && listed != f.listed {
			for name, file := range f.index {
				if _, ok := h.Tensor(name); file == f.name && !ok {
					return nil, &plugin.InputError{File: f.path, Tensor: name, Msg: "the index places this tensor in this shard, but the shard does not hold it"}
				}
			}
		}
	}
	// A tensor is taken only from the shard the index places it in, so no
	// name comes twice; Open indexes the names when it is first called.
	if dir != "" {
		if err := hfdir.Carry(&m.Metadata, dir); err != nil {
			return nil, err
		}
	}
	s.manifest = m
	return m, nil
}

// tensorInfo describes the tensor of entry e of header h, in the file at
// path, with ref as its location.
func tensorInfo(e *st.Entry, ref *tensor.FileRef, h *st.Header, path string) tensor.TensorInfo {
	*ref = tensor.FileRef{Path: path, Offset: uint64(h.DataOffset) + e.Begin, Length: e.Size()}
	return tensor.TensorInfo{Name: e.Name, DType: e.DType, Shape: e.Shape, Size: e.Size(), Location: ref}
}

// describeEntries sets ts[i] and refs[i] from h's entry i, for every entry.
// From parallelDescribeFrom entries it works in two halves at once: the
// first writes to fresh memory are most of the cost.
func describeEntries(ts []tensor.TensorInfo, refs []tensor.FileRef, h *st.Header, path string) {
	fill := func(from, to int) {
		for i := from; i < to; i++ {
			ts[i] = tensorInfo(&h.Tensors[i], &refs[i], h, path)
		}
	}
	n := len(ts)
	if n < parallelDescribeFrom || runtime.GOMAXPROCS(0) < 2 {
		fill(0, n)
		return
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fill(n/2, n)
	}()
	fill(0, n/2)
	<-done
}

// parallelDescribeFrom is the number of tensors from which describeEntries
// works in two halves.
const parallelDescribeFrom = 4096

type shardFile struct {
	path string
	abs  string
	// index is the index's weight map (tensor name to file name), nil for a
	// lone file: the shard's tensors are those it maps to name, of which
	// there are listed.
	index  map[string]string
	name   string
	listed int
}

// files resolves the configured path to the safetensors files to read and,
// for a Hugging Face directory, the directory whose side files to carry.
func (s *Source) files() ([]shardFile, string, error) {
	p := s.cfg.Path
	fi, err := os.Stat(p)
	if err != nil {
		return nil, "", &plugin.InputError{File: p, Msg: "cannot open", Err: err}
	}
	if fi.IsDir() {
		if _, err := os.Stat(filepath.Join(p, IndexName)); err == nil {
			files, err := readIndex(filepath.Join(p, IndexName))
			return files, p, err
		}
		single := filepath.Join(p, "model.safetensors")
		if _, err := os.Stat(single); err == nil {
			if err := checkInside(p, single); err != nil {
				return nil, "", &plugin.InputError{File: single, Msg: err.Error()}
			}
			abs, _ := filepath.Abs(single)
			return []shardFile{{path: single, abs: abs}}, p, nil
		}
		return nil, "", &plugin.InputError{File: p, Msg: "directory holds neither " + IndexName + " nor model.safetensors"}
	}
	if strings.HasSuffix(p, ".index.json") {
		files, err := readIndex(p)
		return files, filepath.Dir(p), err
	}
	abs, _ := filepath.Abs(p)
	return []shardFile{{path: p, abs: abs}}, "", nil
}

func readHeader(p string) (*st.Header, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, &plugin.InputError{File: p, Msg: "cannot open", Err: err}
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, &plugin.InputError{File: p, Msg: "cannot stat", Err: err}
	}
	return st.ReadHeader(f, fi.Size(), p)
}

// hfIndex is the Hugging Face index file.
type hfIndex struct {
	Metadata  map[string]any    `json:"metadata"`
	WeightMap map[string]string `json:"weight_map"`
}

// readIndex reads an index and returns its shards in name order, each with
// the tensors it must hold. Shard names must stay inside the index's
// directory.
func readIndex(indexPath string) ([]shardFile, error) {
	b, err := hfdir.ReadFile(indexPath)
	if err != nil {
		return nil, err
	}
	var idx hfIndex
	if wm, ok := st.IndexWeightMap(b); ok { // an index as Hugging Face writes it, read fast
		idx.WeightMap = wm
	} else if err := json.Unmarshal(b, &idx); err != nil {
		return nil, &binio.FormatError{File: indexPath, Offset: -1, Msg: "index is not valid JSON", Err: err}
	}
	if len(idx.WeightMap) == 0 {
		return nil, &binio.FormatError{File: indexPath, Offset: -1, Msg: "index has no weight_map"}
	}
	dir := filepath.Dir(indexPath)
	listed := map[string]int{} // by file
	for name, file := range idx.WeightMap {
		n, seen := listed[file]
		if !seen { // a file's name is checked once, not once per tensor
			if err := CheckLocalName(file); err != nil {
				return nil, &binio.FormatError{File: indexPath, Offset: -1, Tensor: name, Msg: err.Error()}
			}
		}
		listed[file] = n + 1
	}
	names := make([]string, 0, len(listed))
	for f := range listed {
		names = append(names, f)
	}
	sort.Strings(names)
	out := make([]shardFile, 0, len(names))
	for _, n := range names {
		p := filepath.Join(dir, n)
		if err := checkInside(dir, p); err != nil {
			return nil, &binio.FormatError{File: indexPath, Offset: -1, Msg: err.Error()}
		}
		abs, _ := filepath.Abs(p)
		out = append(out, shardFile{path: p, abs: abs, index: idx.WeightMap, name: n, listed: listed[n]})
	}
	return out, nil
}

// CheckLocalName refuses a file name from an index that could leave the
// index's directory: absolute paths, "..", separators.
func CheckLocalName(name string) error {
	if name == "" || !filepath.IsLocal(name) || strings.ContainsAny(name, `/\`) || name != filepath.Clean(name) {
		return fmt.Errorf("shard file name %q must be a plain file name in the index's directory", name)
	}
	return nil
}

// checkInside refuses p when it is a symlink that resolves outside dir
// (links inside a Hugging Face cache repository excepted; see sdk/localpath).
func checkInside(dir, p string) error {
	return localpath.Inside(dir, p)
}

// Open returns a reader of one tensor's bytes.
func (s *Source) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	m, err := s.Describe(ctx)
	if err != nil {
		return nil, err
	}
	s.indexOnce.Do(func() {
		s.byName = m.Index()
	})
	i, ok := s.byName[name]
	if !ok {
		return nil, &plugin.InputError{File: s.cfg.Path, Tensor: name, Msg: "no such tensor"}
	}
	t := &m.Tensors[i]
	f, err := os.Open(t.Location.Path)
	if err != nil {
		return nil, &plugin.InputError{File: t.Location.Path, Tensor: name, Msg: "cannot open", Err: err}
	}
	return &sectionCloser{io.NewSectionReader(f, int64(t.Location.Offset), int64(t.Location.Length)), f}, nil
}

type sectionCloser struct {
	*io.SectionReader
	f *os.File
}

func (s *sectionCloser) Close() error { return s.f.Close() }

// Close releases nothing: files are opened per read.
func (s *Source) Close() error { return nil }
