package main

import (
	"flag"
	"fmt"
	"math"

	"github.com/sluice-ml/sluice/internal/sample"
	"github.com/sluice-ml/sluice/sdk/bytesize"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// shapeFor picks a llama-like shape (hidden 2048, vocabulary 32000) whose
// weights total about size bytes, by the number of layers.
func shapeFor(size uint64, dtype tensor.DType, shards int) sample.Config {
	c := sample.Config{Vocab: 32000, Hidden: 2048, Heads: 16, KVHeads: 8, Intermediate: 5632, Shards: shards, DType: dtype, Seed: 7}
	bytesPer := uint64(2)
	if dtype == tensor.F32 {
		bytesPer = 4
	}
	h, v, inter := uint64(c.Hidden), uint64(c.Vocab), uint64(c.Intermediate)
	perLayer := (h*h*2 + h*h/2*2 + 3*h*inter + 2*h) * bytesPer
	fixed := (2*v*h + h) * bytesPer
	layers := 1
	if size > fixed {
		layers = int(math.Max(1, math.Round(float64(size-fixed)/float64(perLayer))))
	}
	c.Layers = layers
	return c
}

// writeSample generates a checkpoint; sample.Write streams, so any size fits.
func writeSample(dir string, c sample.Config) error { return sample.Write(dir, c) }

func genCommand(args []string) error {
	fs := flag.NewFlagSet("gen", flag.ExitOnError)
	size := fs.String("size", "1GiB", "approximate checkpoint size")
	dt := fs.String("dtype", "bf16", "bf16, f16 or f32")
	shards := fs.Int("shards", 1, "number of safetensors shards")
	fs.Parse(args)
	if fs.NArg() != 1 {
		return fmt.Errorf("gen needs an output directory")
	}
	n, err := bytesize.Parse(*size)
	if err != nil {
		return err
	}
	d, err := tensor.ParseDType(*dt)
	if err != nil {
		return err
	}
	c := shapeFor(n, d, *shards)
	if err := writeSample(fs.Arg(0), c); err != nil {
		return err
	}
	fmt.Printf("wrote %s: %d layers, hidden %d, %s\n", fs.Arg(0), c.Layers, c.Hidden, *dt)
	return nil
}
