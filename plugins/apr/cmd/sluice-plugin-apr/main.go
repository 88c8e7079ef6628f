// Command sluice-plugin-apr serves the APR v2 format plugin (source and sink
// "apr") to a Sluice host over hashicorp/go-plugin. Sluice also runs it
// built in; the standalone binary is for hosts that load plugins from disk.
package main

import (
	"github.com/sluice-ml/sluice/plugins/apr"
	"github.com/sluice-ml/sluice/sdk/plugin"
)

func main() { plugin.Serve(apr.Plugin()) }
