package pytorch

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/sluice-ml/sluice/sdk/binio"
	"github.com/sluice-ml/sluice/sdk/hfdir"
	"github.com/sluice-ml/sluice/sdk/localpath"
	"github.com/sluice-ml/sluice/sdk/plugin"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// Config configures a pytorch source.
type Config struct {
	// Path is a checkpoint file, a shard index or a model directory.
	Path string `hcl:"path" doc:"A torch.save checkpoint (pytorch_model.bin, .pt, .pth), a sharded checkpoint's pytorch_model.bin.index.json, or a Hugging Face model directory holding either."`
	// Only keeps the tensors whose names match one of these globs.
	Only []string `hcl:"only,optional" doc:"Glob patterns (path.Match syntax, e.g. \"model.layers.0.*\"); only tensors whose names match one are read. Default: all."`
	// StateDictKey names the top-level entry that holds the state dict.
	StateDictKey string `hcl:"state_dict_key,optional" doc:"Top-level entry of the checkpoint that holds the state dict. Default: \"state_dict\" if present, else \"model\" if present, else the whole checkpoint."`
	// DiscardNames lists tied names to drop in favour of their twin.
	DiscardNames []string `hcl:"discard_names,optional" doc:"Tensor names to mark as the duplicate when they share storage with another tensor, like transformers' _tied_weights_keys (e.g. [\"lm_head.weight\"]). Default: none, so the alphabetically first complete name is kept, as Hugging Face's conversion does without transformers."`
}

// Source reads a torch.save checkpoint, a sharded one, or a Hugging Face
// directory holding either. It is safe for concurrent Open calls.
type Source struct {
	cfg Config

	mu       sync.Mutex
	files    []*archive
	manifest *tensor.Manifest
	byName   map[string]located
	refused  [][]string
}

type located struct {
	a  *archive
	nt namedTensor
	l  layout
}

// NewSource checks the configuration; Describe reads the files.
func NewSource(cfg Config) (*Source, error) {
	if cfg.Path == "" {
		return nil, plugin.ConfigErrorf("path", "a checkpoint path is required")
	}
	if g, err := tensor.Selection(cfg.Only).Check(); err != nil {
		return nil, plugin.ConfigErrorf("only", "bad glob %q: %v", g, err)
	}
	if _, err := os.Stat(cfg.Path); err != nil {
		return nil, &plugin.InputError{File: cfg.Path, Msg: "cannot read the checkpoint", Err: err}
	}
	return &Source{cfg: cfg}, nil
}

// layoutPlan is what a path names: checkpoint files in order, the index's
// weight map when there is one, and the directory whose Hugging Face files
// are carried (empty for a lone checkpoint file).
type layoutPlan struct {
	files     []string
	weightMap map[string]string // tensor → file path
	index     string
	hfDir     string
}

func resolvePath(p string) (*layoutPlan, error) {
	st, err := os.Stat(p)
	if err != nil {
		return nil, &plugin.InputError{File: p, Msg: "cannot read the checkpoint", Err: err}
	}
	if !st.IsDir() {
		if strings.HasSuffix(p, ".index.json") {
			return readIndex(p)
		}
		return &layoutPlan{files: []string{p}}, nil
	}
	exists := func(name string) bool {
		fi, err := os.Stat(filepath.Join(p, name))
		return err == nil && !fi.IsDir()
	}
	var plan *layoutPlan
	switch {
	case exists("pytorch_model.bin.index.json"):
		plan, err = readIndex(filepath.Join(p, "pytorch_model.bin.index.json"))
	case exists("pytorch_model.bin"):
		plan = &layoutPlan{files: []string{filepath.Join(p, "pytorch_model.bin")}}
	default:
		idx, _ := filepath.Glob(filepath.Join(p, "*.bin.index.json"))
		var ckpts []string
		for _, pat := range []string{"*.bin", "*.pt", "*.pth"} {
			m, _ := filepath.Glob(filepath.Join(p, pat))
			ckpts = append(ckpts, m...)
		}
		switch {
		case len(idx) == 1:
			plan, err = readIndex(idx[0])
		case len(idx) == 0 && len(ckpts) == 1:
			plan = &layoutPlan{files: ckpts}
		case len(idx)+len(ckpts) == 0:
			return nil, &plugin.InputError{File: p, Msg: "no PyTorch checkpoint in the directory (looked for pytorch_model.bin.index.json, pytorch_model.bin, *.bin.index.json, *.bin, *.pt, *.pth)"}
		default:
			all := append(idx, ckpts...)
			for i := range all {
				all[i] = filepath.Base(all[i])
			}
			return nil, &plugin.InputError{File: p, Msg: "several candidate checkpoints in the directory (" + strings.Join(all, ", ") + "); set path to one of them"}
		}
	}
	if err != nil {
		return nil, err
	}
	plan.hfDir = p
	return plan, nil
}

// readIndex reads a Hugging Face shard index: {"weight_map": {tensor: file}}.
func readIndex(p string) (*layoutPlan, error) {
	b, err := hfdir.ReadFile(p)
	if err != nil {
		return nil, err
	}
	var idx struct {
		WeightMap map[string]string `json:"weight_map"`
	}
	if err := json.Unmarshal(b, &idx); err != nil {
		return nil, &binio.FormatError{File: p, Offset: -1, Msg: "shard index is not valid JSON", Err: err}
	}
	if len(idx.WeightMap) == 0 {
		return nil, &binio.FormatError{File: p, Offset: -1, Msg: "shard index has no weight_map"}
	}
	dir := filepath.Dir(p)
	plan := &layoutPlan{weightMap: map[string]string{}, index: p, hfDir: dir}
	seen := map[string]bool{}
	for name, file := range idx.WeightMap {
		if err := localpath.CheckName(dir, file); err != nil {
			return nil, &binio.FormatError{File: p, Offset: -1, Tensor: name,
				Msg: fmt.Sprintf("shard %q is not a file name inside the index's directory", file), Err: err}
		}
		full := filepath.Join(dir, file)
		plan.weightMap[name] = full
		if !seen[full] {
			seen[full] = true
			plan.files = append(plan.files, full)
		}
	}
	sort.Strings(plan.files) // transformers loads shards in sorted order
	return plan, nil
}

// inside refuses a file of a checkpoint directory (a shard, a side file)
// that resolves through a symbolic link to a file outside dir; links inside a
// Hugging Face cache repository are allowed (see sdk/localpath). dir is empty
// for a lone checkpoint file, which the user named.
func inside(dir, p string) error {
	if dir == "" {
		return nil
	}
	if err := localpath.Inside(dir, p); err != nil {
		if plugin.IsBadInput(err) {
			return fmt.Errorf("%s: %w", p, err)
		}
		return &plugin.InputError{File: p, Msg: "cannot read the file", Err: err}
	}
	return nil
}

// Describe reads each file's zip directory and pickle (never storages) and
// returns the manifest.
func (s *Source) Describe(ctx context.Context) (*tensor.Manifest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.manifest != nil {
		return s.manifest.Clone(), nil
	}
	m, err := s.describe(ctx)
	if err != nil {
		for _, a := range s.files {
			a.close()
		}
		s.files = nil
		return nil, err
	}
	s.manifest = m
	return m.Clone(), nil
}

func (s *Source) describe(ctx context.Context) (*tensor.Manifest, error) {
	plan, err := resolvePath(s.cfg.Path)
	if err != nil {
		return nil, err
	}
	var all []located
	where := map[string]*archive{}
	for _, p := range plan.files {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := inside(plan.hfDir, p); err != nil {
			return nil, err
		}
		a, err := openArchive(p)
		if err != nil {
			return nil, err
		}
		s.files = append(s.files, a)
		if err := a.load(s.cfg.StateDictKey); err != nil {
			return nil, err
		}
		for _, nt := range a.tensors {
			if prev, dup := where[nt.name]; dup {
				return nil, &binio.FormatError{File: a.path, Offset: -1, Tensor: nt.name,
					Msg: "tensor also appears in " + prev.path}
			}
			where[nt.name] = a
			all = append(all, located{a: a, nt: nt})
		}
	}
	for name, file := range plan.weightMap {
		a, ok := where[name]
		if !ok || a.path != file {
			return nil, &binio.FormatError{File: plan.index, Offset: -1, Tensor: name,
				Msg: fmt.Sprintf("the index places the tensor in %s, which does not hold it", filepath.Base(file))}
		}
	}
	var kept []located
	for _, lt := range all {
		if tensor.Selection(s.cfg.Only).Selects(lt.nt.name) {
			kept = append(kept, lt)
		}
	}
	if len(kept) == 0 {
		return nil, &plugin.InputError{File: s.cfg.Path, Msg: "no tensors found (or none match only)"}
	}
	cands := make([]tieCandidate, len(kept))
	for i := range kept {
		lt := &kept[i]
		l, err := lt.a.checkLayout(lt.nt)
		if err != nil {
			return nil, err
		}
		lt.l = l
		st := lt.nt.ref.storage
		cands[i] = tieCandidate{
			name:     lt.nt.name,
			storage:  lt.a.path + "\x00" + st.key,
			nbytes:   st.nbytes,
			start:    l.start,
			stop:     l.stop,
			complete: lt.nt.ref.offset == 0 && l.size == st.nbytes,
		}
	}
	discard := map[string]bool{}
	for _, n := range s.cfg.DiscardNames {
		discard[n] = true
	}
	tied, refused := hfTies(cands, discard)
	s.refused = refused

	m := &tensor.Manifest{}
	// Hugging Face's pickle-to-safetensors conversion marks its output
	// {"format": "pt"}; carrying the mark gives sinks the same metadata.
	m.Metadata.Set("format", tensor.StringValue("pt"))
	s.byName = make(map[string]located, len(kept))
	for _, lt := range kept {
		ti := tensor.TensorInfo{Name: lt.nt.name, DType: lt.nt.ref.dtype, Shape: append([]uint64{}, lt.nt.ref.shape...), Size: lt.l.size}
		if keep, ok := tied[lt.nt.name]; ok {
			ti.SetAttr(tensor.AttrTiedTo, keep)
		}
		if lt.l.elements > 0 {
			e, err := lt.a.entry(lt.nt.ref.storage, lt.nt.name)
			if err != nil {
				return nil, err
			}
			if e.stored && lt.l.contiguous && !lt.a.bigEndian {
				ti.Location = &tensor.FileRef{Path: lt.a.abs, Offset: uint64(e.offset) + lt.l.start, Length: lt.l.size}
			}
		}
		m.Tensors = append(m.Tensors, ti)
		s.byName[lt.nt.name] = lt
	}
	if plan.hfDir != "" {
		if err := hfdir.Carry(&m.Metadata, plan.hfDir); err != nil {
			return nil, err
		}
	}
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", s.cfg.Path, err)
	}
	return m, nil
}

// Open returns one tensor's bytes, contiguous, in row-major order.
func (s *Source) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	s.mu.Lock()
	if s.manifest == nil {
		s.mu.Unlock()
		if _, err := s.Describe(ctx); err != nil {
			return nil, err
		}
		s.mu.Lock()
	}
	lt, ok := s.byName[name]
	s.mu.Unlock()
	if !ok {
		return nil, &plugin.InputError{File: s.cfg.Path, Tensor: name, Msg: "no such tensor"}
	}
	return lt.a.open(lt.nt, lt.l)
}

// Close releases the files.
func (s *Source) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var first error
	for _, a := range s.files {
		if err := a.close(); err != nil && first == nil {
			first = err
		}
	}
	s.files = nil
	return first
}
