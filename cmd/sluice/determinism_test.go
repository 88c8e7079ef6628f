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
	var runs []map[string][]byte
	var names []string
	for _, mode := range [][]string{{"--workers", "1"}, {"--workers", "2"}, {"--workers", "1", "--in-process"}, {"--workers", "2", "--in-process"}} {
		out := t.TempDir()
		src := fmt.Sprintf("source \"safetensors\" \"in\" {\n  path = %q\n}\n", filepath.Join(in, "model.safetensors"))
		for _, dt := range []string{"q8_0", "q4_0"} {
			src += fmt.Sprintf("sink \"gguf\" %q {\n  input = source.in\n  path  = %q\n  dtype = %q\n}\n", dt, filepath.Join(out, dt+".gguf"), dt)
		}
		p := writePipeline(t, src)
		args := append([]string{"run", p, "--quiet", "--run-manifest=false"}, mode...)
		if _, stderr, code := sluice(t, args...); code != 0 {
			t.Fatalf("%s: exit %d\n%s", strings.Join(mode, " "), code, stderr)
		}
		runs = append(runs, listFiles(t, out))
		names = append(names, strings.Join(mode, " "))
	}
	if len(runs[0]) != 2 {
		t.Fatalf("the first run wrote %d files, want 2", len(runs[0]))
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
				t.Errorf("%s: %s differs from the output of %s", names[i], f, names[0])
			}
		}
	}
}
