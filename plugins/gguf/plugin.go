package gguf

import "github.com/sluice-ml/sluice/sdk/plugin"

// Version is the plugin's semantic version.
const Version = "0.1.0"

// Plugin returns the GGUF plugin: source "gguf" and sink "gguf".
func Plugin() *plugin.Plugin {
	return &plugin.Plugin{
		Name:    "gguf",
		Version: Version,
		Sources: []plugin.SourceType{SourceType()},
		Sinks:   []plugin.SinkType{SinkType()},
	}
}
