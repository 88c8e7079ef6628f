package gguf

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/sluice-ml/sluice/sdk/plugin"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// UnitKeyPrefix starts the metadata key that keeps a tensor's physical unit
// (tensor.AttrUnit): apsi.units.<tensor>, a string.
const UnitKeyPrefix = "apsi.units."

// SourceConfig configures the "gguf" source.
type SourceConfig struct {
	Path string   `hcl:"path" doc:"A GGUF file, or any shard of a split set (NAME-00001-of-00003.gguf): all shards are read as one model."`
	Only []string `hcl:"only,optional" doc:"Tensor names or globs (path.Match syntax) to read; tensors left out are absent from the manifest and never read. Every pattern must match a tensor."`
}

// SourceType is the "gguf" source component.
func SourceType() plugin.SourceType {
	st := plugin.NewSourceType("gguf",
		"Reads a GGUF file or a split set (given any shard): metadata of every GGUF type, tensors of every ggml type. Only the header is read to describe it; tensor bytes are referenced in place.",
		func(ctx context.Context, cfg *SourceConfig) (plugin.Source, error) { return NewSource(cfg) })
	st.Extensions = []string{".gguf"}
	st.Probe = Probe
	return st
}

// Probe returns 100 when path starts with the GGUF magic, else 0.
func Probe(path string) int {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	var b [4]byte
	if _, err := io.ReadFull(f, b[:]); err != nil || string(b[:]) != Magic {
		return 0
	}
	return 100
}

// Source reads a GGUF model as a Sluice source.
type Source struct {
	cfg SourceConfig

	mu      sync.Mutex
	set     *Set
	located map[string]located
}

type located struct {
	file *File
	path string
	t    *Tensor
}

// NewSource checks the configuration; Describe opens the files.
func NewSource(cfg *SourceConfig) (*Source, error) {
	if cfg.Path == "" {
		return nil, plugin.ConfigErrorf("path", "a GGUF file path is required")
	}
	if p, err := tensor.Selection(cfg.Only).Check(); err != nil {
		return nil, plugin.ConfigErrorf("only", "pattern %q: %v", p, err)
	}
	return &Source{cfg: *cfg}, nil
}

func (s *Source) open() (*Set, error) {
	if s.set != nil {
		return s.set, nil
	}
	set, err := OpenSet(s.cfg.Path)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, &plugin.InputError{File: s.cfg.Path, Msg: "no such file", Err: err}
		}
		return nil, err
	}
	s.set = set
	return set, nil
}

// Describe reads the header(s) and returns the manifest. It refuses a file
// whose tensor data or trailing padding runs past its end, as ggml's loader
// does. Every tensor carries
// its Location (absolute offset in its shard), so the core can read it in
// place. Keys apsi.units.<tensor> become the tensor's AttrUnit attribute; the
// split keys are dropped.
func (s *Source) Describe(ctx context.Context) (*tensor.Manifest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	set, err := s.open()
	if err != nil {
		return nil, err
	}
	// ggml refuses to load the data of a file whose last tensor lacks its
	// trailing padding; so does the source (a truncated file is an error).
	for _, f := range set.Files {
		if err := f.CheckPadding(); err != nil {
			return nil, err
		}
	}
	m := &tensor.Manifest{Metadata: set.Metadata()}
	s.located = map[string]located{}
	only := tensor.Selection(s.cfg.Only)
	matched := make([]bool, len(only))
	for i, f := range set.Files {
		abs, err := filepath.Abs(set.Paths[i])
		if err != nil {
			return nil, err
		}
		for j := range f.Tensors {
			t := &f.Tensors[j]
			if !only.Mark(t.Name, matched) {
				continue
			}
			ti := tensor.TensorInfo{
				Name:     t.Name,
				DType:    t.DType,
				Shape:    t.Shape(),
				Size:     t.Size,
				Location: &tensor.FileRef{Path: abs, Offset: f.AbsOffset(t), Length: t.Size},
			}
			if v, ok := m.Metadata.Get(UnitKeyPrefix + t.Name); ok {
				if u, ok := v.Str(); ok {
					ti.SetAttr(tensor.AttrUnit, u)
					m.Metadata.Delete(UnitKeyPrefix + t.Name)
				}
			}
			m.Tensors = append(m.Tensors, ti)
			s.located[t.Name] = located{file: f, path: set.Paths[i], t: t}
		}
	}
	if unmatched := only.Unmatched(matched); len(unmatched) > 0 {
		return nil, plugin.ConfigErrorf("only", "pattern %q matches no tensor of %s", unmatched[0], s.cfg.Path)
	}
	// Unit keys of tensors left out by only go too: they describe nothing here.
	if len(s.cfg.Only) > 0 {
		inSet := set.tensorNames()
		for _, k := range append([]string(nil), m.Metadata.Keys()...) {
			if name, ok := strings.CutPrefix(k, UnitKeyPrefix); ok {
				if _, in := s.located[name]; !in && inSet[name] {
					m.Metadata.Delete(k)
				}
			}
		}
	}
	return m, nil
}

// tensorNames returns the names of the tensors of every file of the set.
func (s *Set) tensorNames() map[string]bool {
	names := map[string]bool{}
	for _, f := range s.Files {
		for i := range f.Tensors {
			names[f.Tensors[i].Name] = true
		}
	}
	return names
}

// Open returns a reader over one tensor's bytes.
func (s *Source) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.located == nil {
		return nil, fmt.Errorf("gguf source %s: Open(%q) before Describe", s.cfg.Path, name)
	}
	l, ok := s.located[name]
	if !ok {
		return nil, &plugin.InputError{File: s.cfg.Path, Tensor: name, Msg: "no such tensor in this source"}
	}
	return io.NopCloser(l.file.Section(l.t)), nil
}

// Close closes the files.
func (s *Source) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.set == nil {
		return nil
	}
	err := s.set.Close()
	s.set = nil
	return err
}
