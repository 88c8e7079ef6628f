// Command sluice-plugin-apsim serves the apsim format plugin (source and sink
// "apsim") to a Sluice host over hashicorp/go-plugin. Sluice also runs it
// built in; the standalone binary is for hosts that load plugins from disk.
package main

import (
	"github.com/sluice-ml/sluice/plugins/apsim"
	"github.com/sluice-ml/sluice/sdk/plugin"
)

func main() { plugin.Serve(apsim.Plugin()) }
