// Command sluice-plugin-npz is a third-party Sluice format plugin: it reads
// and writes NumPy .npz archives. Build it, then install it next to a
// pipeline:
//
//	go build -o sluice-plugin-npz .
//	sluice plugins install ./sluice-plugin-npz --pipeline path/to/pipeline-dir
//
// It imports nothing from Sluice but the SDK (github.com/sluice-ml/sluice/sdk/...).
package main

import (
	"github.com/sluice-ml/sluice/examples/plugin-npz/npz"
	"github.com/sluice-ml/sluice/sdk/plugin"
)

func main() { plugin.Serve(npz.Plugin()) }
