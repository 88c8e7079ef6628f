// Command sluice-plugin-safetensors serves the safetensors plugin as its own
// binary, for use outside the sluice binary.
package main

import (
	"github.com/sluice-ml/sluice/plugins/safetensors"
	"github.com/sluice-ml/sluice/sdk/plugin"
)

func main() { plugin.Serve(safetensors.Plugin()) }
