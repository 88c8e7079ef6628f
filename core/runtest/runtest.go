// Package runtest runs pipelines in memory for tests of the core: a "mem"
// source serves a manifest and its bytes from memory, a "mem" sink keeps
// what it receives, and Run loads, plans and executes a pipeline through the
// real planner and runner (core/plan, core/run) without plugin processes or
// files, unless a sink is given a path.
//
// It is a test helper: nothing in Sluice's binary uses it.
package runtest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"sync"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/zclconf/go-cty/cty"

	"github.com/sluice-ml/sluice/core/pipeline"
	"github.com/sluice-ml/sluice/core/plan"
	"github.com/sluice-ml/sluice/core/run"
	"github.com/sluice-ml/sluice/core/transform"
	"github.com/sluice-ml/sluice/sdk/plugin"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// Checkpoint is an in-memory checkpoint: a manifest and the bytes of each
// tensor, by name.
type Checkpoint struct {
	Manifest *tensor.Manifest
	Data     map[string][]byte
}

// Add appends a tensor with its bytes; Size is set from the bytes.
func (c *Checkpoint) Add(name string, dt tensor.DType, shape []uint64, data []byte) {
	if c.Manifest == nil {
		c.Manifest = &tensor.Manifest{}
	}
	if c.Data == nil {
		c.Data = map[string][]byte{}
	}
	c.Manifest.Tensors = append(c.Manifest.Tensors, tensor.TensorInfo{Name: name, DType: dt, Shape: shape, Size: uint64(len(data))})
	c.Data[name] = data
}

// memSource serves a Checkpoint.
type memSource struct{ c *Checkpoint }

func (s *memSource) Describe(context.Context) (*tensor.Manifest, error) {
	return s.c.Manifest.Clone(), nil
}

func (s *memSource) Open(_ context.Context, name string) (io.ReadCloser, error) {
	b, ok := s.c.Data[name]
	if !ok {
		return nil, fmt.Errorf("runtest: no tensor %q", name)
	}
	return io.NopCloser(bytes.NewReader(b)), nil
}

func (s *memSource) Close() error { return nil }

// Sink is what a "mem" sink received.
type Sink struct {
	// Manifest is the manifest Begin announced.
	Manifest *tensor.Manifest
	// Data holds each tensor's bytes.
	Data map[string][]byte
	// Options are Begin's options (the signing key, when a sign stage is
	// upstream).
	Options plugin.BeginOptions
	// Committed is set by Commit, Aborted by Abort.
	Committed, Aborted bool
	// Plan is what the sink's Plan returned.
	Plan *plugin.SinkPlan

	mu sync.Mutex
}

// memSink keeps tensors in memory; with a path it also writes them, in
// manifest order, to one file on Commit.
type memSink struct {
	s       *Sink
	path    string
	convert map[string]string
	embeds  bool
}

func (k *memSink) Plan(_ context.Context, in *tensor.Manifest) (*plugin.SinkPlan, error) {
	sp := &plugin.SinkPlan{EmbedsSignature: k.embeds}
	names := make([]string, 0, len(k.convert))
	for n := range k.convert {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		dt, err := tensor.ParseDType(k.convert[n])
		if err != nil {
			return nil, err
		}
		sp.Convert = append(sp.Convert, plugin.Conversion{Tensor: n, To: dt, Reason: "asked by the test"})
	}
	if k.path != "" {
		sp.Files = []plugin.PlannedFile{{Path: k.path}}
	}
	k.s.Plan = sp
	return sp, nil
}

func (k *memSink) Begin(_ context.Context, m *tensor.Manifest, opts plugin.BeginOptions) error {
	k.s.mu.Lock()
	defer k.s.mu.Unlock()
	k.s.Manifest = m.Clone()
	k.s.Data = map[string][]byte{}
	k.s.Options = opts
	k.s.Options.SigningKey = append([]byte(nil), opts.SigningKey...)
	k.s.Options.Shards = append([]int(nil), opts.Shards...)
	return nil
}

func (k *memSink) Write(_ context.Context, name string, data plugin.TensorData) error {
	b, err := io.ReadAll(data)
	if err != nil {
		return err
	}
	if uint64(len(b)) != data.Size() {
		return fmt.Errorf("runtest: tensor %q: read %d of %d bytes", name, len(b), data.Size())
	}
	k.s.mu.Lock()
	defer k.s.mu.Unlock()
	if _, dup := k.s.Data[name]; dup {
		return fmt.Errorf("runtest: tensor %q written twice", name)
	}
	k.s.Data[name] = b
	return nil
}

func (k *memSink) Commit(context.Context) ([]plugin.Artifact, error) {
	k.s.mu.Lock()
	defer k.s.mu.Unlock()
	for _, t := range k.s.Manifest.Tensors {
		if _, ok := k.s.Data[t.Name]; !ok {
			return nil, fmt.Errorf("runtest: tensor %q never arrived", t.Name)
		}
	}
	k.s.Committed = true
	if k.path == "" {
		return nil, nil
	}
	var buf bytes.Buffer
	for _, t := range k.s.Manifest.Tensors {
		buf.Write(k.s.Data[t.Name])
	}
	if err := os.WriteFile(k.path, buf.Bytes(), 0o644); err != nil {
		return nil, err
	}
	return []plugin.Artifact{{Path: k.path, Size: uint64(buf.Len())}}, nil
}

func (k *memSink) Abort(context.Context) error {
	k.s.mu.Lock()
	defer k.s.mu.Unlock()
	k.s.Aborted = true
	return nil
}

// specs gives the decoding specs: transforms from the registry, "mem"
// sources (id) and sinks (id, path, convert, embeds_signature).
type specs struct{}

func (specs) Spec(kind pipeline.Kind, typ string) (hcldec.Spec, []string, bool) {
	switch kind {
	case pipeline.Transform:
		f, ok := transform.Lookup(typ)
		if !ok {
			return nil, nil, false
		}
		return f.Spec, f.Sensitive, true
	case pipeline.Source:
		if typ != "mem" {
			return nil, nil, false
		}
		return hcldec.ObjectSpec{"id": &hcldec.AttrSpec{Name: "id", Type: cty.String, Required: true}}, nil, true
	case pipeline.Sink:
		if typ != "mem" {
			return nil, nil, false
		}
		return hcldec.ObjectSpec{
			"id":               &hcldec.AttrSpec{Name: "id", Type: cty.String, Required: true},
			"path":             &hcldec.AttrSpec{Name: "path", Type: cty.String},
			"convert":          &hcldec.AttrSpec{Name: "convert", Type: cty.Map(cty.String)},
			"embeds_signature": &hcldec.AttrSpec{Name: "embeds_signature", Type: cty.Bool},
		}, nil, true
	}
	return nil, nil, false
}

func (specs) Types(kind pipeline.Kind) []string {
	if kind == pipeline.Transform {
		return transform.Names()
	}
	return []string{"mem"}
}

// Options configure Run.
type Options struct {
	// Sources maps a mem source's id to its checkpoint.
	Sources map[string]*Checkpoint
	// Workers is run.Options.Workers (0: every core).
	Workers int
	// Slots and SlotSize size the arena (defaults 16 × 1 MiB).
	Slots, SlotSize int
	// HeapBudget is run.Options.HeapBudget (default 64 MiB).
	HeapBudget uint64
	// PlanOnly stops after planning.
	PlanOnly bool
	// NoFsync is run.Options.NoFsync.
	NoFsync bool
}

// Result is a run's outcome.
type Result struct {
	Plan *plan.Plan
	// Sinks maps a mem sink's id to what it received.
	Sinks map[string]*Sink
	// Run is the runner's result (nil with PlanOnly).
	Run *run.Result
}

// Run loads the pipeline text, plans it and, unless PlanOnly, executes it.
func Run(ctx context.Context, src string, opts Options) (*Result, error) {
	p, diags := pipeline.LoadSource("test.hcl", []byte(src), ".", pipeline.Options{})
	if !diags.HasErrors() {
		diags = append(diags, p.Decode(specs{})...)
	}
	if diags.HasErrors() {
		return nil, diagError(diags)
	}
	env := plan.Env{
		Sources:    map[*pipeline.Stage]plugin.Source{},
		Sinks:      map[*pipeline.Stage]plugin.Sink{},
		Transforms: map[*pipeline.Stage]transform.Transform{},
	}
	res := &Result{Sinks: map[string]*Sink{}}
	for _, st := range p.Stages {
		if !st.Enabled {
			continue
		}
		cfg, _ := st.Config.UnmarkDeep()
		switch st.Kind {
		case pipeline.Source:
			id := cfg.GetAttr("id").AsString()
			c, ok := opts.Sources[id]
			if !ok {
				return nil, fmt.Errorf("runtest: %s: no checkpoint with id %q", st.Addr(), id)
			}
			env.Sources[st] = &memSource{c: c}
		case pipeline.Sink:
			s := &Sink{}
			k := &memSink{s: s, convert: map[string]string{}}
			if v := cfg.GetAttr("path"); !v.IsNull() {
				k.path = v.AsString()
			}
			if v := cfg.GetAttr("embeds_signature"); !v.IsNull() {
				k.embeds = v.True()
			}
			if v := cfg.GetAttr("convert"); !v.IsNull() {
				for kk, vv := range v.AsValueMap() {
					k.convert[kk] = vv.AsString()
				}
			}
			res.Sinks[cfg.GetAttr("id").AsString()] = s
			env.Sinks[st] = k
		case pipeline.Transform:
			f, _ := transform.Lookup(st.Type)
			tr, err := f.New(st.Config)
			if err != nil {
				return nil, &plan.StageError{Stage: st, Err: err}
			}
			env.Transforms[st] = tr
		}
	}
	pl, err := plan.Build(ctx, p, env)
	if err != nil {
		return nil, err
	}
	res.Plan = pl
	if opts.PlanOnly {
		return res, nil
	}
	slots, slotSize := opts.Slots, opts.SlotSize
	if slots == 0 {
		slots = 16
	}
	if slotSize == 0 {
		slotSize = 1 << 20
	}
	arena, err := plugin.NewArena(slots, slotSize)
	if err != nil {
		return nil, err
	}
	defer arena.Close()
	heap := opts.HeapBudget
	if heap == 0 {
		heap = 64 << 20
	}
	r, err := run.Execute(ctx, pl, run.Options{Arena: arena, HeapBudget: heap, Workers: opts.Workers, Sources: env.Sources, NoFsync: opts.NoFsync})
	if err != nil {
		return res, err
	}
	res.Run = r
	return res, nil
}

func diagError(d hcl.Diagnostics) error { return fmt.Errorf("runtest: pipeline: %s", d.Error()) }

// Decisions renders a stage's decisions, one per line, for golden files.
func (r *Result) Decisions(addr string) string {
	var b bytes.Buffer
	for _, sp := range r.Plan.Stages {
		if sp.Stage.Addr() != addr {
			continue
		}
		for _, d := range sp.Decisions {
			if d.Tensor == "" {
				fmt.Fprintf(&b, "%s\n", d.Msg)
			} else {
				fmt.Fprintf(&b, "%s: %s\n", d.Tensor, d.Msg)
			}
		}
	}
	return b.String()
}

// Stage returns a stage's plan.
func (r *Result) Stage(addr string) *plan.StagePlan {
	for _, sp := range r.Plan.Stages {
		if sp.Stage.Addr() == addr {
			return sp
		}
	}
	return nil
}
