package gguf

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice-ml/sluice/sdk/binio"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

var measure = flag.Bool("measure", false, "run the timing comparison with @huggingface/gguf (issue 3's measurement)")

// vocabModel writes a GGUF whose header carries a vocabulary of n tokens
// with scores, token types and n merges, like a Qwen or Llama 3 model, and
// one small tensor.
func vocabModel(t testing.TB, n int) string {
	m, data := smallManifest(TensorSpec{Name: "token_embd.weight", DType: tensor.F16, Shape: []uint64{4, 64}})
	tokens := make([]string, n)
	merges := make([]string, n)
	scores := make([]float32, n)
	types := make([]int32, n)
	for i := range tokens {
		tokens[i] = fmt.Sprintf("Ġtok%dén", i)
		merges[i] = fmt.Sprintf("Ġt ok%d", i)
		scores[i] = -float32(i)
		types[i] = 1
	}
	md := &m.Metadata
	md.Set("tokenizer.ggml.model", tensor.StringValue("gpt2"))
	md.Set("tokenizer.ggml.tokens", tensor.StringArray(tokens))
	md.Set("tokenizer.ggml.scores", tensor.Float32Array(scores))
	md.Set("tokenizer.ggml.token_type", tensor.Int32Array(types))
	md.Set("tokenizer.ggml.merges", tensor.StringArray(merges))
	path := filepath.Join(t.TempDir(), "vocab.gguf")
	sink, err := NewSink(&SinkConfig{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := runPipeline(t, m, memOpen(data), sink, nil); err != nil {
		t.Fatal(err)
	}
	return path
}

func describeOnce(t testing.TB, path string) time.Duration {
	start := time.Now()
	src, err := NewSource(&SourceConfig{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	m, err := src.Describe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	src.Close()
	d := time.Since(start)
	if v, _ := m.Metadata.Get("tokenizer.ggml.tokens"); v.Len() != 150000 {
		t.Fatalf("%d tokens", v.Len())
	}
	return d
}

func median(d []float64) float64 {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// TestDescribeVocabulary checks that describing a file with a 150,000-token
// vocabulary (and as many merges) stays well under 50 ms. It measures the
// CPU time of the describing thread, the least of several runs, so other
// load on the machine does not make it flaky.
func TestDescribeVocabulary(t *testing.T) {
	if raceEnabled {
		t.Skip("timings are meaningless under the race detector")
	}
	path := vocabModel(t, 150000)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	best, bestWall := time.Hour, time.Hour
	for i := 0; i < 7; i++ {
		before, ok := threadCPU()
		wall := describeOnce(t, path)
		after, _ := threadCPU()
		if !ok {
			t.Skip("no per-thread CPU time on this system")
		}
		best, bestWall = min(best, after-before), min(bestWall, wall)
	}
	t.Logf("Describe with a 150,000-token vocabulary and 150,000 merges: %v CPU, %v wall (least of 7)", best, bestWall)
	if best > 50*time.Millisecond {
		t.Errorf("Describe used %v of CPU, want well under 50 ms", best)
	}
}

// TestMeasureAgainstHuggingFace times Describe against @huggingface/gguf's
// parse of the same file in the same run (go test -run Measure -measure -v).
func TestMeasureAgainstHuggingFace(t *testing.T) {
	if !*measure {
		t.Skip("timing comparison; run with -measure")
	}
	dir := interopDir(t)
	path := vocabModel(t, 150000)
	const runs = 21
	var ours []float64
	for i := 0; i < runs; i++ {
		ours = append(ours, float64(describeOnce(t, path).Microseconds())/1000)
	}
	cmd := exec.Command("node", "read.mjs", "--bench", fmt.Sprint(runs), path)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v", err)
	}
	var js struct{ MS []float64 }
	if err := json.Unmarshal(out, &js); err != nil {
		t.Fatal(err)
	}
	t.Logf("150,000-token vocabulary + 150,000 merges: Sluice Describe median %.2f ms (first %.2f), @huggingface/gguf median %.2f ms (first %.2f): %.1f× faster",
		median(ours), ours[0], median(js.MS), js.MS[0], median(js.MS)/median(ours))
}

// TestMappedVocabularyReadsAndRewritesExactly reads a vocabulary large
// enough to be taken as a view of the mapped file, and checks it against a
// read of the same bytes from memory, element by element, and against a
// rewrite of the whole file, byte for byte.
func TestMappedVocabularyReadsAndRewritesExactly(t *testing.T) {
	const n = 20000 // the tokens take about 400 KB, over binio.MinMappedView
	path := vocabModel(t, n)
	mapped, fh, err := OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	copied, err := parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if !mapped.Metadata.Equal(&copied.Metadata) {
		t.Error("the metadata read through the mapping differs from the metadata read from memory")
	}
	v, _ := mapped.Metadata.Get("tokenizer.ggml.tokens")
	tokens, ok := v.StringSlice()
	if !ok || len(tokens) != n {
		t.Fatalf("%d tokens, want %d", len(tokens), n)
	}
	for i, tok := range tokens {
		if want := fmt.Sprintf("Ġtok%dén", i); tok != want {
			t.Fatalf("token %d = %q, want %q", i, tok, want)
		}
	}
	scores, _ := mapped.Metadata.Get("tokenizer.ggml.scores")
	if f, _ := scores.Index(n - 1).Float(); f != -float64(n-1) {
		t.Errorf("last score %v, want %d", f, -(n - 1))
	}

	out := filepath.Join(t.TempDir(), "again.gguf")
	if _, _, err := copyGGUF(t, SourceConfig{Path: path}, SinkConfig{Path: out}); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("rewrite differs (%d vs %d bytes; first difference at %d)", len(got), len(data), firstDiff(got, data))
	}
}

// TestTruncatedMappedVocabularyIsAnError cuts a file whose arrays are read
// as views of the mapped file at many points, inside each array and between
// them: every cut is an error naming the file and an offset, never a fault
// or a value that reaches past the end.
func TestTruncatedMappedVocabularyIsAnError(t *testing.T) {
	path := vocabModel(t, 20000)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	whole, err := parse(data)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, cut := range []int{24, 1000, 100000, 300000, 500000, 700000, 900000, int(whole.DataOffset) - 1} {
		if cut >= len(data) {
			continue
		}
		p := filepath.Join(dir, fmt.Sprintf("cut%d.gguf", cut))
		if err := os.WriteFile(p, data[:cut], 0o644); err != nil {
			t.Fatal(err)
		}
		f, fh, err := OpenFile(p)
		if err == nil {
			fh.Close()
			t.Errorf("cut at %d of %d bytes: parsed (%d keys)", cut, len(data), f.Metadata.Len())
			continue
		}
		var fe *binio.FormatError
		if !errors.As(err, &fe) || fe.Offset < 0 || fe.Offset > int64(cut) || !strings.Contains(err.Error(), p) {
			t.Errorf("cut at %d: %v, want a format error naming the file and an offset within it", cut, err)
		}
	}
}
