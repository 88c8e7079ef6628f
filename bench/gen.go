package main

import (
	"bufio"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/sluice-ml/sluice/internal/sample"
	"github.com/sluice-ml/sluice/sdk/bytesize"
	"github.com/sluice-ml/sluice/sdk/codec"
	"github.com/sluice-ml/sluice/sdk/safetensors"
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

// Many-tensor checkpoint: per-tensor costs (planning, one write per tensor,
// the plugin protocol's messages) that a llama-shaped checkpoint of a few
// hundred tensors hides. Mixture-of-experts models have tens of thousands of
// tensors (one per expert and projection).
const (
	manyTensors     = 20000
	manyTensorShape = 64 * 128 // bf16 elements: 16 KiB each
)

// writeManyTensors writes a safetensors file of manyTensors small bf16
// tensors, with normally distributed values.
func writeManyTensors(path string) error {
	ts := make([]safetensors.Tensor, manyTensors)
	for i := range ts {
		ts[i] = safetensors.Tensor{
			Name:  fmt.Sprintf("model.layers.%d.mlp.experts.%d.%s.weight", i/192, i/3%64, [3]string{"gate_proj", "up_proj", "down_proj"}[i%3]),
			DType: tensor.BF16, Shape: []uint64{64, 128}, Size: manyTensorShape * 2,
		}
	}
	l, err := safetensors.PlanLayout(ts, nil)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path + ".tmp")
	if err != nil {
		return err
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<20)
	w.Write(l.Prefix)
	rng := rand.New(rand.NewPCG(7, 7))
	values := make([]float32, manyTensorShape)
	buf := make([]byte, 2*manyTensorShape)
	for range ts {
		for i := range values {
			values[i] = float32(rng.NormFloat64() * 0.02)
		}
		if err := codec.EncodeFloat32(tensor.BF16, buf, values); err != nil {
			return err
		}
		w.Write(buf)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(path+".tmp", path)
}
