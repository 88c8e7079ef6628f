// Package gguf reads and writes GGUF, the checkpoint format of ggml,
// llama.cpp, Ollama and LM Studio, and serves it as a Sluice plugin: a source
// and a sink called "gguf".
//
// The reader (NewFile, OpenFile, OpenSet) parses headers the way debug/elf
// does: it takes an io.ReaderAt and a size, reads only the header, checks
// every length against the file before allocating, and hands out
// io.SectionReaders for tensor data. It accepts what ggml's reader accepts,
// plus nested arrays as gguf-py writes them; it refuses files whose tensor
// data runs past their end.
//
// The writer (PlanFile) lays out GGUF v3 that ggml's reader
// accepts and that is byte-identical to what ggml's writer produces for the
// same content.
//
// Shapes are row-major, outermost first, everywhere outside this package's
// Ne fields: GGUF stores ne[0] as the fastest dimension, and the package
// reverses dims at its edge. See docs/formats/gguf.md.
package gguf
