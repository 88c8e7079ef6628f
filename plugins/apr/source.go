package apr

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/sluice-ml/sluice/sdk/localpath"
	"github.com/sluice-ml/sluice/sdk/plugin"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// SourceConfig is the configuration of source "apr".
type SourceConfig struct {
	Path    string   `hcl:"path" doc:"The APR v2 file to read (either layout). A shard NAME-0000i-of-0000N.apr of a sharded model brings in every shard: one model."`
	Verify  *bool    `hcl:"verify,optional" doc:"Check the footer checksum over the whole file before anything is read (default true). false trusts the storage: only headers are read up front. The aprender layout's header CRC is always checked."`
	Only    []string `hcl:"only,optional" doc:"Read only the tensors whose names match one of these names or globs (path.Match syntax, e.g. \"model.layers.0.*\")."`
	TempDir string   `hcl:"temp_dir,optional" doc:"Directory for the decompressed copy of a file compressed as a whole (aprender layout with LZ4 or ZSTD); default: the system temporary directory."`
}

// Source reads one APR file, or every shard of a sharded model.
type Source struct {
	cfg     SourceConfig
	path    string // absolute
	readers []*Reader
	paths   []string
	byName  map[string]sourceTensor
}

type sourceTensor struct {
	r *Reader
	t *Tensor
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
	if p, err := tensor.Selection(cfg.Only).Check(); err != nil {
		return nil, plugin.ConfigErrorf("only", "pattern %q: %v", p, err)
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

// shardName matches NAME-0000i-of-0000N.EXT.
var shardName = regexp.MustCompile(`^(.*)-([0-9]{5})-of-([0-9]{5})(\.[^./]*)?$`)

// shardCount returns the sharding object's shard_count and shard_index.
func shardCount(r *Reader) (count, index int, ok bool) {
	v, found := r.Metadata.Get(RawJSONPrefix + "sharding")
	s, _ := v.Str()
	var sh struct {
		Count *int `json:"shard_count"`
		Index *int `json:"shard_index"`
	}
	if !found || json.Unmarshal([]byte(s), &sh) != nil || sh.Count == nil || sh.Index == nil {
		return 0, 0, false
	}
	return *sh.Count, *sh.Index, true
}

func (s *Source) open(p string) (*Reader, error) {
	name := filepath.Join(filepath.Dir(s.cfg.Path), filepath.Base(p)) // as the user spelt the path
	return OpenFile(p, ReadOptions{NoVerify: s.cfg.Verify != nil && !*s.cfg.Verify, TempDir: s.cfg.TempDir, Name: name})
}

// load reads the file and, when it is one shard of a sharded model (its
// name NAME-0000i-of-0000N.apr and its sharding metadata agree), every
// other shard.
func (s *Source) load() error {
	first, err := s.open(s.path)
	if err != nil {
		return err
	}
	s.readers, s.paths = []*Reader{first}, []string{s.path}
	m := shardName.FindStringSubmatch(filepath.Base(s.path))
	count, index, ok := shardCount(first)
	if m == nil || !ok || count < 2 {
		return nil
	}
	n, _ := strconv.Atoi(m[3])
	i, _ := strconv.Atoi(m[2])
	if n != count || i != index+1 {
		return &plugin.InputError{File: s.cfg.Path, Msg: fmt.Sprintf("the file name says shard %d of %d, its metadata shard %d of %d", i, n, index+1, count)}
	}
	s.readers, s.paths = make([]*Reader, n), make([]string, n)
	s.readers[i-1], s.paths[i-1] = first, s.path
	for k := 1; k <= n; k++ {
		if k == i {
			continue
		}
		p := filepath.Join(filepath.Dir(s.path), fmt.Sprintf("%s-%05d-of-%05d%s", m[1], k, n, m[4]))
		// A sibling must not lead out of the directory through a link
		// (links inside a Hugging Face cache repository are fine).
		if err := localpath.Inside(filepath.Dir(s.path), p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			if plugin.IsBadInput(err) {
				return &plugin.InputError{File: p, Msg: fmt.Sprintf("shard %d of %d", k, n), Err: err}
			}
			return fmt.Errorf("shard %d of %d: %w", k, n, err)
		}
		r, err := s.open(p)
		if err != nil {
			return fmt.Errorf("shard %d of %d: %w", k, n, err)
		}
		s.readers[k-1], s.paths[k-1] = r, p
		if c, x, ok := shardCount(r); !ok || c != n || x != k-1 {
			return &plugin.InputError{File: p, Msg: fmt.Sprintf("expected shard %d of %d, its metadata says %d of %d", k, n, x+1, c)}
		}
	}
	return nil
}

// Describe reads the header, metadata and index (and, unless verify is
// false, checks the footer checksum over the whole file) and returns the
// manifest. Uncompressed tensors carry their file location. A shard of a
// sharded model brings in every shard: one model, the metadata of the
// first shard without its sharding object.
func (s *Source) Describe(context.Context) (*tensor.Manifest, error) {
	if s.readers == nil {
		if err := s.load(); err != nil {
			s.Close()
			return nil, err
		}
	}
	matched := make([]bool, len(s.cfg.Only))
	m := &tensor.Manifest{Metadata: s.readers[0].Metadata.Clone()}
	if len(s.readers) > 1 {
		m.Metadata.Delete(RawJSONPrefix + "sharding")
	}
	s.byName = map[string]sourceTensor{}
	for k, r := range s.readers {
		for i := range r.Tensors {
			t := &r.Tensors[i]
			if !s.selected(t.Name, matched) {
				continue
			}
			if _, dup := s.byName[t.Name]; dup {
				return nil, &plugin.InputError{File: s.paths[k], Tensor: t.Name, Msg: "the tensor is in two shards"}
			}
			s.byName[t.Name] = sourceTensor{r, t}
			ti := tensor.TensorInfo{Name: t.Name, DType: t.DType, Shape: append([]uint64(nil), t.Shape...), Size: t.RawSize}
			if off, ok := r.Section(t); ok {
				ti.Location = &tensor.FileRef{Path: s.paths[k], Offset: uint64(off), Length: t.Size}
			}
			m.Tensors = append(m.Tensors, ti)
		}
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

// selected is tensor.Selection's Mark, except that a pattern equal to the
// name also selects it when the name holds glob characters.
func (s *Source) selected(name string, matched []bool) bool {
	hit := tensor.Selection(s.cfg.Only).Mark(name, matched)
	for i, p := range s.cfg.Only {
		if p == name {
			matched[i], hit = true, true
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
	st, ok := s.byName[name]
	if !ok {
		return nil, &plugin.InputError{File: s.cfg.Path, Tensor: name, Msg: "no such tensor"}
	}
	return st.r.Open(st.t)
}

// Close releases the files.
func (s *Source) Close() error {
	var first error
	for _, r := range s.readers {
		if r != nil {
			if err := r.Close(); err != nil && first == nil {
				first = err
			}
		}
	}
	s.readers, s.byName = nil, nil
	return first
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
