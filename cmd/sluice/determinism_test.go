package main

import (
	"bytes"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/sluice-ml/sluice/internal/sample"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// TestParallelQuantizationIsReproducible quantizes tensors that span several
// 8 MiB arena slots (a 24 MiB bf16 embedding and output: three chunks each,
// worked on by several workers at once) with one worker and with two, in
// and out of process: every output must be byte for byte the same.
func TestParallelQuantizationIsReproducible(t *testing.T) {
	in := t.TempDir()
	c := sample.Config{Vocab: 6144, Hidden: 2048, Layers: 1, Heads: 16, KVHeads: 8, Intermediate: 256, Shards: 1, DType: tensor.BF16, Seed: 5}
	if err := sample.Write(in, c); err != nil {
		t.Fatal(err)
	}
	sameOutputs(t, 2, func(out string) string {
		src := fmt.Sprintf("source \"safetensors\" \"in\" {\n  path = %q\n}\n", filepath.Join(in, "model.safetensors"))
		for _, dt := range []string{"q8_0", "q4_0"} {
			src += fmt.Sprintf("sink \"gguf\" %q {\n  input = source.in\n  path  = %q\n  dtype = %q\n}\n", dt, filepath.Join(out, dt+".gguf"), dt)
		}
		return src
	}, []string{"--workers", "1"}, []string{"--workers", "2"}, []string{"--workers", "1", "--in-process"}, []string{"--workers", "2", "--in-process"})
}

// TestManySmallConversionsMatchInProcess converts a checkpoint of a few
// hundred small tensors, each one chunk for one sink: out of process the
// host gathers their converted bytes into messages of several tensors
// (protocol 1.4), in-process each is written alone. The files must be the
// same byte for byte.
func TestManySmallConversionsMatchInProcess(t *testing.T) {
	in := t.TempDir()
	c := sample.Default
	c.Hidden, c.Intermediate, c.Layers, c.Shards = 256, 256, 24, 1
	if err := sample.Write(in, c); err != nil {
		t.Fatal(err)
	}
	for _, dt := range []string{"q8_0", "q4_K", "f32"} {
		t.Run(dt, func(t *testing.T) {
			sameOutputs(t, 1, func(out string) string {
				return fmt.Sprintf("source \"safetensors\" \"in\" {\n  path = %q\n}\nsink \"gguf\" \"out\" {\n  input = source.in\n  path  = %q\n  dtype = %q\n}\n",
					filepath.Join(in, "model.safetensors"), filepath.Join(out, "model.gguf"), dt)
			}, nil, []string{"--in-process"})
		})
	}
}

// sameOutputs runs the pipeline src writes into an output directory once
// per mode (extra arguments of sluice run), and checks that every run
// wrote the same want files, byte for byte.
func sameOutputs(t *testing.T, want int, src func(out string) string, modes ...[]string) {
	t.Helper()
	var runs []map[string][]byte
	var names []string
	for _, mode := range modes {
		name := strings.Join(mode, " ")
		if name == "" {
			name = "sluice run"
		}
		out := t.TempDir()
		p := writePipeline(t, src(out))
		args := append([]string{"run", p, "--quiet", "--run-manifest=false"}, mode...)
		if _, stderr, code := sluice(t, args...); code != 0 {
			t.Fatalf("%s: exit %d\n%s", name, code, stderr)
		}
		runs = append(runs, listFiles(t, out))
		names = append(names, name)
	}
	if len(runs[0]) != want {
		t.Fatalf("the first run wrote %d files, want %d", len(runs[0]), want)
	}
	files := make([]string, 0, len(runs[0]))
	for f := range runs[0] {
		files = append(files, f)
	}
	sort.Strings(files)
	for i := 1; i < len(runs); i++ {
		if len(runs[i]) != len(runs[0]) {
			t.Errorf("%s wrote %d files, %s wrote %d", names[i], len(runs[i]), names[0], len(runs[0]))
		}
		for _, f := range files {
			if !bytes.Equal(runs[i][f], runs[0][f]) {
				t.Errorf("%q: %s differs from the output of %q", names[i], f, names[0])
			}
		}
	}
}
