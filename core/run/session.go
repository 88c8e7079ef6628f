package run

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/sluice-ml/sluice/core/host"
	"github.com/sluice-ml/sluice/core/pipeline"
	"github.com/sluice-ml/sluice/core/plan"
	"github.com/sluice-ml/sluice/core/transform"
	"github.com/sluice-ml/sluice/sdk/plugin"
)

// Session holds the opened stages of one pipeline.
type Session struct {
	Pipeline *pipeline.Pipeline
	Host     *host.Host
	Env      plan.Env
	// Plugins maps each source and sink stage to the plugin serving it.
	Plugins map[*pipeline.Stage]string
}

// Open starts the plugins the pipeline's enabled stages need and opens each
// stage with its configuration. Nothing is read yet.
func Open(ctx context.Context, p *pipeline.Pipeline, h *host.Host) (*Session, error) {
	s := &Session{
		Pipeline: p,
		Host:     h,
		Env: plan.Env{
			Sources:    map[*pipeline.Stage]plugin.Source{},
			Sinks:      map[*pipeline.Stage]plugin.Sink{},
			Transforms: map[*pipeline.Stage]transform.Transform{},
		},
		Plugins: map[*pipeline.Stage]string{},
	}
	startAll(ctx, p, h)
	for _, st := range p.Stages {
		if !st.Enabled {
			continue
		}
		if err := s.open(ctx, st); err != nil {
			s.Close()
			return nil, &plan.StageError{Stage: st, Err: err}
		}
	}
	return s, nil
}

// startAll starts every plugin the enabled stages need at once: a plugin
// process takes tens of milliseconds to start, mostly its own CPU, so
// several start in the time of one. Errors are left to the stage that needs
// the plugin, which reports them in its own name.
func startAll(ctx context.Context, p *pipeline.Pipeline, h *host.Host) {
	names := map[string]bool{}
	for _, st := range p.Stages {
		if !st.Enabled || st.Kind == pipeline.Transform {
			continue
		}
		if name, _, ok := h.Provider(st.Kind, st.Type); ok {
			names[name] = true
		}
	}
	if len(names) < 2 {
		return
	}
	var wg sync.WaitGroup
	for name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h.Instance(ctx, name)
		}()
	}
	wg.Wait()
}

func (s *Session) open(ctx context.Context, st *pipeline.Stage) error {
	if st.Kind == pipeline.Transform {
		f, ok := transform.Lookup(st.Type)
		if !ok {
			return fmt.Errorf("unknown transform type %q", st.Type)
		}
		tr, err := f.New(st.Config)
		if err != nil {
			return err
		}
		s.Env.Transforms[st] = tr
		return nil
	}
	name, _, ok := s.Host.Provider(st.Kind, st.Type)
	if !ok {
		return fmt.Errorf("no plugin provides a %s of type %q", st.Kind, st.Type)
	}
	inst, err := s.Host.Instance(ctx, name)
	if err != nil {
		return err
	}
	cfg, err := st.ConfigJSON()
	if err != nil {
		return err
	}
	s.Plugins[st] = name
	if st.Kind == pipeline.Source {
		src, err := inst.OpenSource(ctx, st.Type, plugin.Config{JSON: cfg})
		if err != nil {
			return err
		}
		s.Env.Sources[st] = src
		return nil
	}
	sk, err := inst.OpenSink(ctx, st.Type, plugin.Config{JSON: cfg})
	if err != nil {
		return err
	}
	s.Env.Sinks[st] = sk
	return nil
}

// Plan builds the plan.
func (s *Session) Plan(ctx context.Context) (*plan.Plan, error) {
	pl, err := plan.Build(ctx, s.Pipeline, s.Env)
	if err != nil {
		return nil, err
	}
	if len(pl.Sinks) == 0 {
		return nil, plan.ErrNothingToDo
	}
	return pl, nil
}

// Close closes the sources. Plugin processes belong to the host.
func (s *Session) Close() error {
	var errs []error
	for st, src := range s.Env.Sources {
		if err := src.Close(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", st.Addr(), err))
		}
	}
	return errors.Join(errs...)
}
