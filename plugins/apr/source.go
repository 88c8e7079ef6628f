package apr

import (
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/sluice-ml/sluice/sdk/plugin"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// SourceConfig is the configuration of source "apr".
type SourceConfig struct {
	Path    string   `hcl:"path" doc:"The APR v2 file to read (either layout)."`
	Verify  *bool    `hcl:"verify,optional" doc:"Check the footer checksum over the whole file before anything is read (default true). false trusts the storage: only headers are read up front. The aprender layout's header CRC is always checked."`
	Only    []string `hcl:"only,optional" doc:"Read only the tensors whose names match one of these names or globs (path.Match syntax, e.g. \"model.layers.0.*\")."`
	TempDir string   `hcl:"temp_dir,optional" doc:"Directory for the decompressed copy of a file compressed as a whole (aprender layout with LZ4 or ZSTD); default: the system temporary directory."`
}

// Source reads one APR file.
type Source struct {
	cfg    SourceConfig
	path   string // absolute
	r      *Reader
	byName map[string]*Tensor
}

func openSource(_ context.Context, cfg *SourceConfig) (plugin.Source, error) {
	return NewSource(*cfg)
}

// NewSource returns a source for cfg. It only checks that the file exists;
// Describe reads it.
func NewSource(cfg SourceConfig) (*Source, error) {
	if cfg.Path == "" {
		return nil, plugin.ConfigErrorf("path", "the input path is empty")
	}
	for _, p := range cfg.Only {
		if _, err := path.Match(p, ""); err != nil {
			return nil, plugin.ConfigErrorf("only", "pattern %q: %v", p, err)
		}
	}
	abs, err := filepath.Abs(cfg.Path)
	if err != nil {
		return nil, plugin.ConfigErrorf("path", "%v", err)
	}
	if _, err := os.Stat(abs); err != nil {
		return nil, &plugin.InputError{File: cfg.Path, Msg: "cannot read the input", Err: err}
	}
	return &Source{cfg: cfg, path: abs}, nil
}

// Describe reads the header, metadata and index (and, unless verify is
// false, checks the footer checksum over the whole file) and returns the
// manifest. Uncompressed tensors carry their file location.
func (s *Source) Describe(context.Context) (*tensor.Manifest, error) {
	if s.r == nil {
		r, err := OpenFile(s.path, ReadOptions{NoVerify: s.cfg.Verify != nil && !*s.cfg.Verify, TempDir: s.cfg.TempDir, Name: s.cfg.Path})
		if err != nil {
			return nil, err
		}
		s.r = r
	}
	matched := make([]bool, len(s.cfg.Only))
	m := &tensor.Manifest{Metadata: s.r.Metadata.Clone()}
	s.byName = map[string]*Tensor{}
	for i := range s.r.Tensors {
		t := &s.r.Tensors[i]
		if !s.selected(t.Name, matched) {
			continue
		}
		s.byName[t.Name] = t
		ti := tensor.TensorInfo{Name: t.Name, DType: t.DType, Shape: append([]uint64(nil), t.Shape...), Size: t.RawSize}
		if off, ok := s.r.Section(t); ok {
			ti.Location = &tensor.FileRef{Path: s.path, Offset: uint64(off), Length: t.Size}
		}
		m.Tensors = append(m.Tensors, ti)
	}
	var unmatched []string
	for i, ok := range matched {
		if !ok {
			unmatched = append(unmatched, fmt.Sprintf("%q", s.cfg.Only[i]))
		}
	}
	if len(unmatched) > 0 {
		return nil, plugin.ConfigErrorf("only", "%s match no tensor of %s", strings.Join(unmatched, ", "), s.cfg.Path)
	}
	return m, nil
}

func (s *Source) selected(name string, matched []bool) bool {
	if len(s.cfg.Only) == 0 {
		return true
	}
	hit := false
	for i, p := range s.cfg.Only {
		if ok, _ := path.Match(p, name); ok || p == name {
			matched[i] = true
			hit = true
		}
	}
	return hit
}

// Open returns one tensor's bytes, decompressed when the file is compressed.
func (s *Source) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	if s.byName == nil {
		if _, err := s.Describe(ctx); err != nil {
			return nil, err
		}
	}
	t, ok := s.byName[name]
	if !ok {
		return nil, &plugin.InputError{File: s.cfg.Path, Tensor: name, Msg: "no such tensor"}
	}
	return s.r.Open(t)
}

// Close releases the file.
func (s *Source) Close() error {
	if s.r == nil {
		return nil
	}
	err := s.r.Close()
	s.r = nil
	return err
}

// Probe reports 100 for a file that starts with an APR v2 magic, else 0.
func Probe(path string) int {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	var m [4]byte
	if _, err := io.ReadFull(f, m[:]); err != nil {
		return 0
	}
	switch m {
	case magicAprender, magicAprender2, magicSpec:
		return 100
	}
	return 0
}
