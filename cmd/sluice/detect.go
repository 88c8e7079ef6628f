package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/sluice-ml/sluice/core/host"
	"github.com/sluice-ml/sluice/core/pipeline"
)

// detectSource finds the source type that reads path best, by content.
func detectSource(ctx context.Context, h *host.Host, path string) (string, error) {
	if _, err := os.Stat(path); err != nil {
		return "", &inputError{path: path, err: err}
	}
	type cand struct {
		typ   string
		score int
	}
	var cands []cand
	for _, b := range h.Builtins() {
		p := b.New()
		for _, s := range p.Sources {
			if s.Probe == nil {
				continue
			}
			if score := s.Probe(path); score > 0 {
				cands = append(cands, cand{s.Name, score})
			}
		}
	}
	for _, e := range h.Externals() {
		if e.Info == nil {
			continue
		}
		for _, s := range e.Info.Sources {
			if !s.Probes {
				continue
			}
			inst, err := h.Instance(ctx, e.Name)
			if err != nil {
				continue
			}
			if score, err := inst.Probe(ctx, s.Name, path); err == nil && score > 0 {
				cands = append(cands, cand{s.Name, score})
			}
		}
	}
	if len(cands) == 0 {
		return "", &inputError{path: path, err: fmt.Errorf("no plugin recognises this file (sources: %s)", strings.Join(h.Types(pipeline.Source), ", "))}
	}
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].score > cands[j].score })
	return cands[0].typ, nil
}

// sinkForPath picks the sink type for an output path by its extension.
func sinkForPath(h *host.Host, path string) (string, error) {
	base := strings.ToLower(filepath.Base(path))
	best, bestLen := "", 0
	add := func(name string, exts []string) {
		for _, e := range exts {
			if strings.HasSuffix(base, strings.ToLower(e)) && len(e) > bestLen {
				best, bestLen = name, len(e)
			}
		}
	}
	for _, b := range h.Builtins() {
		for _, s := range b.New().Sinks {
			add(s.Name, s.Extensions)
		}
	}
	for _, e := range h.Externals() {
		if e.Info != nil {
			for _, s := range e.Info.Sinks {
				add(s.Name, s.Extensions)
			}
		}
	}
	if best == "" {
		return "", configErr(fmt.Errorf("cannot tell the output format of %s from its name; use --format (sinks: %s)", path, strings.Join(h.Types(pipeline.Sink), ", ")))
	}
	return best, nil
}

// inputError is a missing or unrecognised input.
type inputError struct {
	path string
	err  error
}

func (e *inputError) Error() string  { return e.path + ": " + e.err.Error() }
func (e *inputError) Unwrap() error  { return e.err }
func (e *inputError) BadInput() bool { return true }
