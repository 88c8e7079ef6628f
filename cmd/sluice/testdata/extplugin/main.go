// Command extplugin is a third-party plugin for sluice's tests: the
// safetensors plugin under another name ("extst").
package main

import (
	"github.com/sluice-ml/sluice/plugins/safetensors"
	"github.com/sluice-ml/sluice/sdk/plugin"
)

func main() {
	p := safetensors.Plugin()
	p.Name, p.Version = "extst", "9.9.9"
	for i := range p.Sources {
		p.Sources[i].Name = "extst"
	}
	for i := range p.Sinks {
		p.Sinks[i].Name = "extst"
		p.Sinks[i].Extensions = []string{".extst"}
	}
	plugin.Serve(p)
}
