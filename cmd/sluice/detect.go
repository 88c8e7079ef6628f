package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/sluice-ml/sluice/core/host"
	"github.com/sluice-ml/sluice/core/pipeline"
	"github.com/sluice-ml/sluice/sdk/plugin"
	"github.com/sluice-ml/sluice/sdk/tensor"
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
		return "", &inputError{path: path, err: fmt.Errorf("no plugin recognises this file (sources: %s)", strings.Join(h.Types(pipeline.Source), ", ")),
			hint: "sluice reads a file by its content, not its name; `sluice plugins list` shows what each plugin reads"}
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
	hint string
}

func (e *inputError) Error() string  { return e.path + ": " + e.err.Error() }
func (e *inputError) Unwrap() error  { return e.err }
func (e *inputError) BadInput() bool { return true }
func (e *inputError) Hint() string   { return e.hint }

// shardName matches NAME-00001-of-00003.EXT, the shard names of Hugging
// Face, gguf-split, apsim and APR sets.
var shardName = regexp.MustCompile(`^(.*)-([0-9]{5,})-of-([0-9]{5,})(\.[A-Za-z0-9]+)$`)

// resolveInput maps what a user typed to the path a source reads:
//
//   - an existing path is kept, except a shard of a safetensors set, which
//     becomes the set's index when one beside it lists the shard (the other
//     formats' sources read the whole set from any shard themselves);
//   - NAME.EXT that does not exist becomes NAME.EXT.index.json (apsim and
//     safetensors sets) or NAME-00001-of-0000N.EXT (gguf-split and APR
//     sets), the names a sharded output of NAME.EXT gets;
//   - NAME.EXT.index.json that does not exist becomes NAME.EXT when that
//     exists: the output was small enough to be written as one file.
//
// note says what was done, for people; it is empty when path is kept.
func resolveInput(path string) (resolved, note string) {
	fi, err := os.Stat(path)
	if err == nil {
		if fi.Mode().IsRegular() {
			if idx := setIndexOfShard(path); idx != "" {
				return idx, fmt.Sprintf("%s is a shard of a set; reading the whole set through %s", filepath.Base(path), filepath.Base(idx))
			}
		}
		return path, ""
	}
	if fi, err := os.Stat(path + ".index.json"); err == nil && fi.Mode().IsRegular() {
		return path + ".index.json", fmt.Sprintf("%s is a sharded checkpoint; reading it through %s", filepath.Base(path), filepath.Base(path)+".index.json")
	}
	if stem, ok := strings.CutSuffix(path, ".index.json"); ok {
		if fi, err := os.Stat(stem); err == nil && fi.Mode().IsRegular() {
			return stem, fmt.Sprintf("there is no %s: the checkpoint was written as the single file %s", filepath.Base(path), filepath.Base(stem))
		}
	}
	ext := filepath.Ext(path)
	if ext != "" {
		matches, _ := filepath.Glob(globEscape(strings.TrimSuffix(path, ext)) + "-00001-of-*" + globEscape(ext))
		sort.Strings(matches)
		for _, m := range matches {
			if shardName.MatchString(filepath.Base(m)) {
				return m, fmt.Sprintf("%s is a sharded checkpoint; reading it from %s", filepath.Base(path), filepath.Base(m))
			}
		}
	}
	return path, ""
}

func globEscape(s string) string {
	r := strings.NewReplacer(`*`, `\*`, `?`, `\?`, `[`, `\[`, `\`, `\\`)
	return r.Replace(s)
}

// setIndexOfShard returns the index of the safetensors set that path is a
// shard of: NAME.safetensors.index.json or model.safetensors.index.json
// beside it, when its weight_map names the shard; else "".
func setIndexOfShard(path string) string {
	m := shardName.FindStringSubmatch(filepath.Base(path))
	if m == nil || m[4] != ".safetensors" {
		return ""
	}
	dir := filepath.Dir(path)
	for _, name := range []string{m[1] + m[4] + ".index.json", "model.safetensors.index.json"} {
		idx := filepath.Join(dir, name)
		if indexNames(idx, filepath.Base(path)) {
			return idx
		}
	}
	return ""
}

// indexNames reports whether the Hugging Face index at idx places a tensor
// in the file called base.
func indexNames(idx, base string) bool {
	f, err := os.Open(idx)
	if err != nil {
		return false
	}
	defer f.Close()
	var ix struct {
		WeightMap map[string]string `json:"weight_map"`
	}
	if err := json.NewDecoder(io.LimitReader(f, 256<<20)).Decode(&ix); err != nil {
		return false
	}
	for _, file := range ix.WeightMap {
		if file == base {
			return true
		}
	}
	return false
}

// inspectHost returns a host for commands that read checkpoints without a
// pipeline (info, verify, diff, tokenize, template). Built-in plugins run
// inside this process unless isolate is set: these commands read headers
// and a plugin process costs more to start than the read itself (see
// docs/cli.md, "In-process reads"). Third-party plugins always run as
// processes.
func (a *app) inspectHost(isolate bool) *host.Host {
	return host.New(host.Options{Builtins: builtins, InProcess: !isolate || a.inProcess, PluginPath: host.SearchPath(os.Getenv(host.PluginPathEnv))})
}

// checkpoint is an opened source: what the user typed, the path read, its
// format, and its manifest.
type checkpoint struct {
	// Arg is the path as the user gave it.
	Arg string
	// Path is the path the source reads (see resolveInput).
	Path string
	// Note says how Arg became Path, or "".
	Note string
	// Format is the source type.
	Format string
	// Manifest is the source's description.
	Manifest *tensor.Manifest
	// Source reads tensor bytes; Close it.
	Source plugin.Source
}

// Close releases the source.
func (c *checkpoint) Close() error {
	if c.Source == nil {
		return nil
	}
	return c.Source.Close()
}

// openCheckpoint detects the format of arg and describes it, reading
// headers only: sources that verify whole files on open (apsim, APR) are
// told not to.
func openCheckpoint(ctx context.Context, h *host.Host, arg string) (*checkpoint, error) {
	path, note := resolveInput(arg)
	typ, err := detectSource(ctx, h, path)
	if err != nil {
		return nil, err
	}
	name, info, ok := h.Provider(pipeline.Source, typ)
	if !ok {
		return nil, fmt.Errorf("no plugin provides source %q", typ)
	}
	cfgv := map[string]any{"path": path}
	if c, ok := info.Source(typ); ok {
		if at, ok := c.Schema.Attribute("verify"); ok && at.Type == "bool" {
			cfgv["verify"] = false
		}
	}
	inst, err := h.Instance(ctx, name)
	if err != nil {
		return nil, err
	}
	cfg, err := plugin.ConfigFrom(cfgv)
	if err != nil {
		return nil, err
	}
	src, err := inst.OpenSource(ctx, typ, cfg)
	if err != nil {
		return nil, err
	}
	m, err := src.Describe(ctx)
	if err != nil {
		src.Close()
		return nil, err
	}
	return &checkpoint{Arg: arg, Path: path, Note: note, Format: typ, Manifest: m, Source: src}, nil
}
