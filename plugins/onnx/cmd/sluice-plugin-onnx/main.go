// Command sluice-plugin-onnx serves the ONNX plugin (source "onnx") to a
// Sluice host over hashicorp/go-plugin. Sluice also runs it built in; the
// standalone binary is for hosts that load plugins from disk.
package main

import (
	"github.com/sluice-ml/sluice/plugins/onnx"
	"github.com/sluice-ml/sluice/sdk/plugin"
)

func main() { plugin.Serve(onnx.Plugin()) }
