// Package tensor holds the vocabulary every Sluice component shares: the dtype
// registry (element types and block-quantized types with their geometry),
// typed metadata values, tensor descriptions and manifests.
//
// Shapes are row-major, outermost dimension first, as in PyTorch and
// safetensors. Formats that store dimensions in another order (GGUF stores the
// fastest dimension first) convert at their edge; no bytes move for that.
//
// The package describes tensors; it does not read or write files and does not
// convert numbers. Number formats live in sdk/codec.
package tensor
