// Command sluice-plugin-gguf serves the GGUF format plugin (source and sink
// "gguf") to a Sluice host over hashicorp/go-plugin. Sluice also runs it
// built in; the standalone binary is for hosts that load plugins from disk.
package main

import (
	"github.com/sluice-ml/sluice/plugins/gguf"
	"github.com/sluice-ml/sluice/sdk/plugin"
)

func main() { plugin.Serve(gguf.Plugin()) }
