// Package host starts and keeps track of the plugins a run uses: built-in
// plugins served by re-executing the sluice binary (`sluice plugin serve
// NAME`), third-party plugin binaries found on SLUICE_PLUGIN_PATH (checked
// against a pinned sha256 before they start), or any of them in-process for
// profiling and comparison.
//
// Only cmd/sluice knows which plugins are built in; it hands the table to New.
package host

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/hcl/v2/hcldec"

	"github.com/sluice-ml/sluice/core/pipeline"
	"github.com/sluice-ml/sluice/core/transform"
	"github.com/sluice-ml/sluice/internal/pluginenv"
	"github.com/sluice-ml/sluice/sdk/detached"
	"github.com/sluice-ml/sluice/sdk/plugin"
)

// Builtin is a plugin compiled into the sluice binary.
type Builtin struct {
	Name string
	New  func() *plugin.Plugin
}

// Options configure a Host.
type Options struct {
	// Builtins is the table of built-in plugins.
	Builtins []Builtin
	// InProcess runs every plugin inside this process.
	InProcess bool
	// Executable is the sluice binary that serves built-ins; defaults to
	// os.Executable().
	Executable string
	// Arena is passed to every plugin process.
	Arena *plugin.Arena
	// PluginPath lists directories searched for third-party plugin binaries
	// named sluice-plugin-NAME.
	PluginPath []string
	// Pins maps a plugin name to the hex sha256 its binary must have.
	Pins map[string]string
	// Ahead, when set, hands out processes of Executable started before
	// the host knew which plugins it needs; built-in plugins are served
	// by them first.
	Ahead Ahead
	// Timeout stops a plugin process that makes no progress for that long
	// (see plugin.LaunchConfig.Timeout): zero means plugin.DefaultTimeout,
	// negative never.
	Timeout time.Duration
}

// Ahead hands out plugin processes started before the host knew which
// plugins it needs (cmd/sluice starts them as it starts: internal/standby).
type Ahead interface {
	// Take returns the LaunchConfig.Start that tells a process of the
	// binary at exe, started ahead and not yet taken, the command of a
	// built-in plugin; or nil, when there is none.
	Take(exe string) func(cmd *exec.Cmd) (plugin.Process, error)
	// Release ends the processes no plugin took.
	Release()
}

// PluginPathEnv names the environment variable listing plugin directories.
const PluginPathEnv = "SLUICE_PLUGIN_PATH"

// BinaryPrefix starts the file name of every third-party plugin binary.
const BinaryPrefix = "sluice-plugin-"

// Host starts plugins on demand and stops them on Close.
type Host struct {
	opts Options

	mu        sync.Mutex
	running   map[string]plugin.Instance
	external  map[string]*External // by plugin name, once discovered
	discover  sync.Once
	discErr   error
	infoCache map[string]*plugin.Info
}

// External is a third-party plugin binary.
type External struct {
	Name   string
	Path   string
	SHA256 string
	Info   *plugin.Info
	// Err is why the plugin could not be started, if it could not.
	Err error
}

// New returns a Host.
func New(opts Options) *Host {
	return &Host{opts: opts, running: map[string]plugin.Instance{}, external: map[string]*External{}, infoCache: map[string]*plugin.Info{}}
}

// Close stops every plugin the host started, all at once: stopping one
// waits for its process to exit (a few milliseconds), and those waits need
// not follow each other.
func (h *Host) Close() error {
	if h.opts.Ahead != nil {
		// Processes started ahead that no plugin took are not needed now.
		h.opts.Ahead.Release()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	var wg sync.WaitGroup
	for name, inst := range h.running {
		wg.Go(func() { inst.Close() })
		delete(h.running, name)
	}
	wg.Wait()
	return nil
}

// SetPins adds pinned sha256 digests of plugin binaries (plugin name → hex),
// e.g. from a pipeline's sluice block. Call it before any plugin starts.
func (h *Host) SetPins(pins map[string]string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.opts.Pins == nil {
		h.opts.Pins = map[string]string{}
	}
	for k, v := range pins {
		h.opts.Pins[k] = v
	}
}

// Builtins returns the built-in table.
func (h *Host) Builtins() []Builtin { return h.opts.Builtins }

func (h *Host) builtin(name string) (Builtin, bool) {
	for _, b := range h.opts.Builtins {
		if b.Name == name {
			return b, true
		}
	}
	return Builtin{}, false
}

// builtinInfo describes a built-in plugin without starting a process: the
// binary that serves it is this one.
func (h *Host) builtinInfo(b Builtin) *plugin.Info {
	h.mu.Lock()
	defer h.mu.Unlock()
	if i, ok := h.infoCache[b.Name]; ok {
		return i
	}
	i := b.New().Info()
	h.infoCache[b.Name] = i
	return i
}

// Provider finds the plugin that provides a source or sink type: built-ins
// first, then third-party binaries.
func (h *Host) Provider(kind pipeline.Kind, typ string) (name string, info *plugin.Info, ok bool) {
	for _, b := range h.opts.Builtins {
		i := h.builtinInfo(b)
		if hasComponent(i, kind, typ) {
			return b.Name, i, true
		}
	}
	for _, e := range h.Externals() {
		if e.Info != nil && hasComponent(e.Info, kind, typ) {
			return e.Name, e.Info, true
		}
	}
	return "", nil, false
}

func hasComponent(i *plugin.Info, kind pipeline.Kind, typ string) bool {
	switch kind {
	case pipeline.Source:
		_, ok := i.Source(typ)
		return ok
	case pipeline.Sink:
		_, ok := i.Sink(typ)
		return ok
	}
	return false
}

// Spec implements pipeline.Specs.
func (h *Host) Spec(kind pipeline.Kind, typ string) (hcldec.Spec, []string, bool) {
	if kind == pipeline.Transform {
		f, ok := transform.Lookup(typ)
		if !ok {
			return nil, nil, false
		}
		return f.Spec, f.Sensitive, true
	}
	_, info, ok := h.Provider(kind, typ)
	if !ok {
		return nil, nil, false
	}
	var c *plugin.ComponentInfo
	if kind == pipeline.Source {
		c, _ = info.Source(typ)
	} else {
		c, _ = info.Sink(typ)
	}
	spec, sensitive, err := pipeline.SchemaSpec(c.Schema)
	if err != nil {
		return nil, nil, false
	}
	return spec, sensitive, true
}

// Types implements pipeline.Specs.
func (h *Host) Types(kind pipeline.Kind) []string {
	if kind == pipeline.Transform {
		return transform.Names()
	}
	seen := map[string]bool{}
	add := func(i *plugin.Info) {
		cs := i.Sources
		if kind == pipeline.Sink {
			cs = i.Sinks
		}
		for _, c := range cs {
			seen[c.Name] = true
		}
	}
	for _, b := range h.opts.Builtins {
		add(h.builtinInfo(b))
	}
	for _, e := range h.Externals() {
		if e.Info != nil {
			add(e.Info)
		}
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Instance returns the running plugin called name, starting it if needed.
func (h *Host) Instance(ctx context.Context, name string) (plugin.Instance, error) {
	h.mu.Lock()
	if inst, ok := h.running[name]; ok {
		h.mu.Unlock()
		return inst, nil
	}
	h.mu.Unlock()
	inst, err := h.start(name)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if prev, ok := h.running[name]; ok {
		inst.Close()
		return prev, nil
	}
	h.running[name] = inst
	return inst, nil
}

func (h *Host) start(name string) (plugin.Instance, error) {
	if b, ok := h.builtin(name); ok {
		if h.opts.InProcess {
			return plugin.InProcess(b.New()), nil
		}
		exe := h.opts.Executable
		if exe == "" {
			var err error
			if exe, err = os.Executable(); err != nil {
				return nil, fmt.Errorf("finding the sluice binary to serve plugin %s: %w", name, err)
			}
		}
		cmd := exec.Command(exe, "plugin", "serve", name)
		cmd.Env = pluginenv.Environ()
		cfg := plugin.LaunchConfig{Cmd: cmd, Arena: h.opts.Arena, Label: fmt.Sprintf("plugin %q", name), SHA256: h.pin(name), Timeout: h.opts.Timeout, HostTLS: true}
		if h.opts.Ahead != nil {
			// A process of this binary started ahead, initialised and
			// waiting: told the command, it serves the plugin sooner.
			cfg.Start = h.opts.Ahead.Take(exe)
		}
		return plugin.Launch(cfg)
	}
	h.scan()
	h.mu.Lock()
	e, ok := h.external[name]
	h.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("no plugin named %q: not built in, and no %s%s on %s", name, BinaryPrefix, name, PluginPathEnv)
	}
	cmd := exec.Command(e.Path)
	cmd.Env = pluginenv.Environ()
	return plugin.Launch(plugin.LaunchConfig{Cmd: cmd, Arena: h.opts.Arena, Label: fmt.Sprintf("plugin %q (%s)", name, e.Path), SHA256: h.pin(name), Timeout: h.opts.Timeout})
}

func (h *Host) pin(name string) []byte {
	h.mu.Lock()
	s, ok := h.opts.Pins[name]
	h.mu.Unlock()
	if !ok {
		return nil
	}
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != sha256.Size {
		// A malformed pin matches no binary, so the plugin is refused.
		return make([]byte, sha256.Size)
	}
	return b
}

// scan finds the third-party plugin binaries on the plugin path, once,
// without starting them.
func (h *Host) scan() {
	h.discover.Do(func() {
		for _, dir := range h.opts.PluginPath {
			entries, err := os.ReadDir(dir)
			if err != nil {
				continue
			}
			for _, e := range entries {
				n := e.Name()
				if !strings.HasPrefix(n, BinaryPrefix) || e.IsDir() {
					continue
				}
				name := strings.TrimPrefix(n, BinaryPrefix)
				if _, dup := h.external[name]; dup {
					continue
				}
				if _, builtin := h.builtin(name); builtin {
					continue
				}
				p := filepath.Join(dir, n)
				fi, err := os.Stat(p)
				if err != nil || fi.Mode()&0o111 == 0 {
					continue
				}
				ext := &External{Name: name, Path: p}
				ext.SHA256, _ = FileSHA256(p)
				h.mu.Lock()
				h.external[name] = ext
				h.mu.Unlock()
			}
		}
	})
}

// Externals lists the third-party plugin binaries on the plugin path,
// starting each once to learn what it serves.
func (h *Host) Externals() []*External {
	h.scan()
	h.mu.Lock()
	var out []*External
	for _, e := range h.external {
		out = append(out, e)
	}
	h.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	for _, e := range out {
		if e.Info != nil {
			continue
		}
		inst, err := h.Instance(context.Background(), e.Name)
		if err != nil {
			e.Err = err
			continue
		}
		e.Info = inst.Info()
	}
	return out
}

// Unavailable explains why no plugin provides a stage type when some
// third-party plugin could not be started; "" otherwise.
func (h *Host) Unavailable(kind pipeline.Kind, typ string) string {
	var reasons []string
	for _, e := range h.Externals() {
		if e.Err != nil {
			reasons = append(reasons, e.Err.Error())
		}
	}
	return strings.Join(reasons, "; ")
}

// FileSHA256 returns the hex sha256 of a file.
func FileSHA256(p string) (string, error) {
	sum, _, err := detached.Digest(p)
	return sum, err
}

// SearchPath returns the directories searched for third-party plugins,
// given the value of SLUICE_PLUGIN_PATH: its entries, or when it is empty
// the default plugin directory (see DefaultPluginDir).
func SearchPath(env string) []string {
	if dirs := splitPath(env); len(dirs) > 0 {
		return dirs
	}
	if d, err := DefaultPluginDir(); err == nil {
		return []string{d}
	}
	return nil
}
