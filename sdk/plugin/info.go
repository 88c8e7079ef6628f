package plugin

import (
	"context"
	"fmt"
)

// ProtocolVersion is the major version of the plugin protocol
// (sluice.plugin.v1); ProtocolMinor the newest minor this SDK speaks (1.1
// added partitioned sinks, 1.2 digests computed by sinks and outputs
// without fsync, 1.3 series of tensor writes over one stream, 1.4 converted
// tensors gathered into one message, 1.5 string arrays in one block, 1.6
// write lanes, 1.7 direct writes, 1.8 tensor tables in one block, 1.9 digests
// of direct writes computed by the host, 1.10 outputs kept in the page
// cache on request). Minors
// are additive: a peer of another minor of the same major works with this
// one.
const (
	ProtocolVersion = 1
	ProtocolMinor   = 10
)

// Info describes a running plugin: what `sluice plugins list` shows and what
// the core validates pipelines against.
type Info struct {
	Name          string
	Version       string
	ProtocolMinor int
	Sources       []ComponentInfo
	Sinks         []ComponentInfo
	// Arena reports that the plugin mapped the host's shared arena.
	Arena bool
	// FileRefs reports that the plugin reads file references itself; a
	// plugin that does not is sent the bytes instead.
	FileRefs bool
	// WriteSeries reports that the plugin takes the writes of many tensors
	// over one stream (protocol 1.3); to one that does not, the host opens a
	// stream per tensor.
	WriteSeries bool
	// WriteData reports that the plugin takes, among the tensors of one
	// WriteFiles message, tensors whose bytes lie whole in an arena slot
	// (protocol 1.4); to one that does not, the host writes each such tensor
	// on its own.
	WriteData bool
	// PackedStrings reports that the plugin takes string arrays as one
	// block each (protocol 1.5); to one that does not, the host sends them as
	// strings.
	PackedStrings bool
	// WriteLanes reports that the plugin serves WriteSeries over write lanes
	// (protocol 1.6), plain sockets the host hands it, as well as over gRPC.
	WriteLanes bool
	// DirectWrites reports that the plugin serves direct lanes (protocol
	// 1.7): a sink that implements DirectWriter hands the host its open
	// output files, and the host writes the tensors it offers itself.
	DirectWrites bool
	// PackedTensors reports that the plugin takes a manifest's tensors as
	// one block (protocol 1.8, a packed tensor table); to one that does not,
	// the host sends a message per tensor.
	PackedTensors bool
}

// ComponentInfo describes one source or sink type.
type ComponentInfo struct {
	Name       string
	Doc        string
	Schema     *Schema
	Extensions []string
	Probes     bool
}

// Source returns the source type called name.
func (i *Info) Source(name string) (*ComponentInfo, bool) { return findComponent(i.Sources, name) }

// Sink returns the sink type called name.
func (i *Info) Sink(name string) (*ComponentInfo, bool) { return findComponent(i.Sinks, name) }

func findComponent(cs []ComponentInfo, name string) (*ComponentInfo, bool) {
	for k := range cs {
		if cs[k].Name == name {
			return &cs[k], true
		}
	}
	return nil, false
}

// Info describes the plugin as a client would see it.
func (p *Plugin) Info() *Info {
	info := &Info{Name: p.Name, Version: p.Version, ProtocolMinor: ProtocolMinor, FileRefs: true, WriteSeries: true, WriteData: true, PackedStrings: true, PackedTensors: true}
	for _, s := range p.Sources {
		info.Sources = append(info.Sources, ComponentInfo{Name: s.Name, Doc: s.Doc, Schema: s.Schema, Extensions: s.Extensions, Probes: s.Probe != nil})
	}
	for _, s := range p.Sinks {
		info.Sinks = append(info.Sinks, ComponentInfo{Name: s.Name, Doc: s.Doc, Schema: s.Schema, Extensions: s.Extensions})
	}
	return info
}

// Instance is a plugin ready for use, in this process or another one.
type Instance interface {
	// Info describes the plugin.
	Info() *Info
	// OpenSource starts a source of the given type.
	OpenSource(ctx context.Context, component string, cfg Config) (Source, error)
	// OpenSink starts a sink of the given type.
	OpenSink(ctx context.Context, component string, cfg Config) (Sink, error)
	// Probe asks a source type how sure it is that it reads path (0–100).
	Probe(ctx context.Context, component, path string) (int, error)
	// Close stops the plugin.
	Close() error
}

// InProcess returns an Instance that calls p directly, without a process or
// gRPC: for profiling, tests and comparison.
func InProcess(p *Plugin) Instance { return inProcess{p} }

type inProcess struct{ p *Plugin }

func (ip inProcess) Info() *Info { return ip.p.Info() }

func (ip inProcess) OpenSource(ctx context.Context, component string, cfg Config) (Source, error) {
	st, ok := ip.p.Source(component)
	if !ok {
		return nil, fmt.Errorf("plugin %s has no source %q", ip.p.Name, component)
	}
	return st.Open(ctx, cfg)
}

func (ip inProcess) OpenSink(ctx context.Context, component string, cfg Config) (Sink, error) {
	st, ok := ip.p.Sink(component)
	if !ok {
		return nil, fmt.Errorf("plugin %s has no sink %q", ip.p.Name, component)
	}
	return st.Open(ctx, cfg)
}

func (ip inProcess) Probe(ctx context.Context, component, path string) (int, error) {
	st, ok := ip.p.Source(component)
	if !ok || st.Probe == nil {
		return 0, nil
	}
	return st.Probe(path), nil
}

func (ip inProcess) Close() error { return nil }
