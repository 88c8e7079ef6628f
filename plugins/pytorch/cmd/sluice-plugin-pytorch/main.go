// Command sluice-plugin-pytorch serves the PyTorch checkpoint plugin (source
// "pytorch") to a Sluice host over hashicorp/go-plugin. Sluice also runs it
// built in; the standalone binary is for hosts that load plugins from disk.
package main

import (
	"github.com/sluice-ml/sluice/plugins/pytorch"
	"github.com/sluice-ml/sluice/sdk/plugin"
)

func main() { plugin.Serve(pytorch.Plugin()) }
