package main

import (
	"github.com/sluice-ml/sluice/core/host"
	"github.com/sluice-ml/sluice/plugins/apr"
	"github.com/sluice-ml/sluice/plugins/apsim"
	"github.com/sluice-ml/sluice/plugins/gguf"
	"github.com/sluice-ml/sluice/plugins/onnx"
	"github.com/sluice-ml/sluice/plugins/pytorch"
	"github.com/sluice-ml/sluice/plugins/safetensors"
)

// builtins is the one table of plugins compiled into sluice. Each is served
// by re-executing this binary as `sluice plugin serve NAME`.
var builtins = []host.Builtin{
	{Name: "safetensors", New: safetensors.Plugin},
	{Name: "gguf", New: gguf.Plugin},
	{Name: "apsim", New: apsim.Plugin},
	{Name: "apr", New: apr.Plugin},
	{Name: "pytorch", New: pytorch.Plugin},
	{Name: "onnx", New: onnx.Plugin},
}
