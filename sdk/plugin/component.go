package plugin

import (
	"context"
	"fmt"
)

// Plugin is what one plugin binary serves: a name, a version and its
// components. A binary may serve several source and sink types.
type Plugin struct {
	// Name is the plugin's name, e.g. "safetensors".
	Name string
	// Version is the plugin's semantic version.
	Version string
	Sources []SourceType
	Sinks   []SinkType
}

// SourceType is one kind of source a plugin serves.
type SourceType struct {
	// Name is the component type used in pipelines: source "NAME" "label".
	Name string
	// Doc is a one-paragraph description for `sluice plugins list` and docs.
	Doc string
	// Schema describes the block's attributes; see SchemaOf.
	Schema *Schema
	// Extensions lists file name suffixes this source usually reads
	// (".gguf"), as a hint only: detection is by content (Probe).
	Extensions []string
	// Probe reports how sure the source is that it can read path, from 0
	// (not at all) to 100 (its magic bytes and header check out). It reads
	// as little as it can. Nil means the source is never auto-detected.
	Probe func(path string) int
	// Open builds a source from its decoded configuration. It should only
	// open files; Describe does the reading.
	Open func(ctx context.Context, cfg Config) (Source, error)
}

// SinkType is one kind of sink a plugin serves.
type SinkType struct {
	// Name is the component type used in pipelines: sink "NAME" "label".
	Name string
	// Doc is a one-paragraph description.
	Doc string
	// Schema describes the block's attributes; see SchemaOf.
	Schema *Schema
	// Extensions lists file name suffixes this sink writes; `sluice convert`
	// picks a sink by the output's suffix.
	Extensions []string
	// Open builds a sink from its decoded configuration. It must not create
	// files; Begin does.
	Open func(ctx context.Context, cfg Config) (Sink, error)
}

// NewSourceType builds a SourceType whose schema comes from the hcl tags of
// C and whose Open receives the configuration decoded into a *C.
func NewSourceType[C any](name, doc string, open func(ctx context.Context, cfg *C) (Source, error)) SourceType {
	return SourceType{
		Name:   name,
		Doc:    doc,
		Schema: MustSchemaOf[C](),
		Open: func(ctx context.Context, raw Config) (Source, error) {
			cfg := new(C)
			if err := raw.Decode(cfg); err != nil {
				return nil, err
			}
			return open(ctx, cfg)
		},
	}
}

// NewSinkType builds a SinkType whose schema comes from the hcl tags of C and
// whose Open receives the configuration decoded into a *C.
func NewSinkType[C any](name, doc string, open func(ctx context.Context, cfg *C) (Sink, error)) SinkType {
	return SinkType{
		Name:   name,
		Doc:    doc,
		Schema: MustSchemaOf[C](),
		Open: func(ctx context.Context, raw Config) (Sink, error) {
			cfg := new(C)
			if err := raw.Decode(cfg); err != nil {
				return nil, err
			}
			return open(ctx, cfg)
		},
	}
}

// Source returns the source type called name.
func (p *Plugin) Source(name string) (*SourceType, bool) {
	for i := range p.Sources {
		if p.Sources[i].Name == name {
			return &p.Sources[i], true
		}
	}
	return nil, false
}

// Sink returns the sink type called name.
func (p *Plugin) Sink(name string) (*SinkType, bool) {
	for i := range p.Sinks {
		if p.Sinks[i].Name == name {
			return &p.Sinks[i], true
		}
	}
	return nil, false
}

// Validate checks that names are set and unique and that every component has
// a schema and an Open function.
func (p *Plugin) Validate() error {
	if p.Name == "" || p.Version == "" {
		return fmt.Errorf("plugin needs a name and a version")
	}
	seen := map[string]bool{}
	for _, s := range p.Sources {
		if s.Name == "" || s.Open == nil || s.Schema == nil {
			return fmt.Errorf("plugin %s: source %q needs a name, a schema and Open", p.Name, s.Name)
		}
		if seen["source "+s.Name] {
			return fmt.Errorf("plugin %s: source %q declared twice", p.Name, s.Name)
		}
		seen["source "+s.Name] = true
	}
	for _, s := range p.Sinks {
		if s.Name == "" || s.Open == nil || s.Schema == nil {
			return fmt.Errorf("plugin %s: sink %q needs a name, a schema and Open", p.Name, s.Name)
		}
		if seen["sink "+s.Name] {
			return fmt.Errorf("plugin %s: sink %q declared twice", p.Name, s.Name)
		}
		seen["sink "+s.Name] = true
	}
	return nil
}
