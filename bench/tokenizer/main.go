// Command tokenizer-bench measures sdk/tokenizer's encoding throughput on a
// few MB of mixed text with the Llama 3 vocabulary, and runs
// @huggingface/tokenizers (the reference that produced ../shared/tokref) on
// the same text in the same run, checking that both give the same ids.
//
//	cd bench/tokenizer && npm ci && go run . [-mb 4] [-reps 3] [-cpuprofile cpu.out]
//
// The text is built from ../shared (the seed documents, the specs and the
// reference vectors' texts: English, Japanese, code, tables, emoji,
// whitespace runs), then repeated with the letters and digits of each copy
// renamed by a fixed random permutation, so that the copies have new words
// rather than cache hits. It is cut into paragraphs, and each paragraph is
// encoded without special tokens.
//
// Without node or the npm package the reference is skipped and only the Go
// side is reported.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"github.com/sluice-ml/sluice/internal/refdata"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/sluice-ml/sluice/sdk/tokenizer"
)

func main() {
	mb := flag.Float64("mb", 4, "approximate size of the text in MB")
	reps := flag.Int("reps", 3, "timed passes over the text (the one with the least CPU time is reported)")
	shared := flag.String("shared", "", "the shared directory (default: ../shared next to the module root)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the Go passes to this file")
	flag.Parse()
	if err := run(*mb, *reps, *shared, *cpuprofile); err != nil {
		fmt.Fprintln(os.Stderr, "tokenizer-bench:", err)
		os.Exit(1)
	}
}

type result struct {
	Skip    string  `json:"skip,omitempty"`
	Seconds float64 `json:"seconds"` // wall clock
	CPU     float64 `json:"cpu"`     // CPU time of the process (GC included)
	Tokens  int     `json:"tokens"`
	Hash    uint32  `json:"hash"`
}

func run(mb float64, reps int, shared, cpuprofile string) error {
	if shared == "" {
		root, err := refdata.FindModuleRoot()
		if err != nil {
			return fmt.Errorf("%w; pass -shared", err)
		}
		shared = filepath.Join(root, "..", "shared")
	}
	vocab := filepath.Join(shared, "tokref", "llama3")
	tokJSON, err := os.ReadFile(filepath.Join(vocab, "tokenizer.json"))
	if err != nil {
		return fmt.Errorf("the Llama 3 vocabulary is needed: %w", err)
	}
	cfgJSON, err := os.ReadFile(filepath.Join(vocab, "tokenizer_config.json"))
	if err != nil {
		return err
	}
	chunks, err := corpus(shared, int(mb*1e6))
	if err != nil {
		return err
	}
	total := 0
	for _, c := range chunks {
		total += len(c)
	}
	fmt.Printf("text: %d paragraphs, %.2f MB\n", len(chunks), float64(total)/1e6)

	start := time.Now()
	tok, err := tokenizer.FromHuggingFace(tokJSON, cfgJSON)
	if err != nil {
		return err
	}
	fmt.Printf("go: load %v\n", time.Since(start).Round(time.Millisecond))
	if cpuprofile != "" {
		f, err := os.Create(cpuprofile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	goRes := result{Seconds: -1}
	var ids []int32
	for r := 0; r < reps; r++ {
		h, n := uint32(2166136261), 0
		t0, c0 := time.Now(), cpuTime()
		for _, c := range chunks {
			ids = tok.AppendEncode(ids[:0], c, false)
			for _, id := range ids {
				h = (h ^ uint32(id)) * 16777619
			}
			n += len(ids)
		}
		s, c := time.Since(t0).Seconds(), (cpuTime() - c0).Seconds()
		if goRes.Seconds < 0 || c < goRes.CPU {
			goRes = result{Seconds: s, CPU: c, Tokens: n, Hash: h}
		}
	}
	report("go", goRes, total)

	ref, err := reference(tokJSON, cfgJSON, chunks, reps)
	if err != nil {
		return err
	}
	if ref.Skip != "" {
		fmt.Println("reference skipped:", ref.Skip)
		return nil
	}
	report("@huggingface/tokenizers", ref, total)
	if ref.Tokens != goRes.Tokens || ref.Hash != goRes.Hash {
		return fmt.Errorf("the ids differ: go %d tokens (hash %08x), reference %d tokens (hash %08x)", goRes.Tokens, goRes.Hash, ref.Tokens, ref.Hash)
	}
	fmt.Printf("same ids: %d tokens\n", goRes.Tokens)
	fmt.Printf("ratio: go is %.1f× the throughput of @huggingface/tokenizers (CPU time; %.1f× by the wall clock)\n", ref.CPU/goRes.CPU, ref.Seconds/goRes.Seconds)
	return nil
}

func report(name string, r result, bytes int) {
	fmt.Printf("%s: %.3f s CPU (%.3f s wall), %.2f MB/s, %.0f k tokens/s of CPU time\n", name, r.CPU, r.Seconds, float64(bytes)/1e6/r.CPU, float64(r.Tokens)/1e3/r.CPU)
}

// reference runs bench.mjs with node on the same paragraphs.
func reference(tokJSON, cfgJSON []byte, chunks []string, reps int) (result, error) {
	node, err := exec.LookPath("node")
	if err != nil {
		return result{Skip: "node is not installed"}, nil
	}
	if _, err := os.Stat(filepath.Join("node_modules", "@huggingface", "tokenizers")); err != nil {
		return result{Skip: "@huggingface/tokenizers is not installed here (run npm ci in bench/tokenizer)"}, nil
	}
	dir, err := os.MkdirTemp("", "tokenizer-bench")
	if err != nil {
		return result{}, err
	}
	defer os.RemoveAll(dir)
	data, err := json.Marshal(chunks)
	if err != nil {
		return result{}, err
	}
	files := map[string][]byte{"tokenizer.json": tokJSON, "tokenizer_config.json": cfgJSON, "chunks.json": data}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return result{}, err
		}
	}
	cmd := exec.Command(node, "bench.mjs", filepath.Join(dir, "tokenizer.json"), filepath.Join(dir, "tokenizer_config.json"), filepath.Join(dir, "chunks.json"), fmt.Sprint(reps))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return result{}, fmt.Errorf("node bench.mjs: %w", err)
	}
	var r result
	if err := json.Unmarshal(bytes.TrimSpace(out), &r); err != nil {
		return result{}, fmt.Errorf("node bench.mjs printed %q: %w", out, err)
	}
	return r, nil
}

// corpus builds about size bytes of paragraphs from the shared documents and
// reference texts; every copy after the first renames letters and digits.
func corpus(shared string, size int) ([]string, error) {
	var base []string
	var docs []string
	for _, pattern := range []string{"DESIGN.md", "spec/*.md", "seeds/*.txt"} {
		m, _ := filepath.Glob(filepath.Join(shared, pattern))
		docs = append(docs, m...)
	}
	for _, p := range docs {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		for _, para := range strings.SplitAfter(string(b), "\n\n") {
			if para != "" {
				base = append(base, para)
			}
		}
	}
	vecs, _ := filepath.Glob(filepath.Join(shared, "tokref", "*", "vectors.jsonl"))
	for _, p := range vecs {
		f, err := os.Open(p)
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<24)
		for sc.Scan() {
			var v struct {
				Text string `json:"text"`
			}
			if json.Unmarshal(sc.Bytes(), &v) == nil && v.Text != "" {
				base = append(base, v.Text)
			}
		}
		f.Close()
	}
	if len(base) == 0 {
		return nil, errors.New("no text found under " + shared)
	}
	baseSize := 0
	for _, p := range base {
		baseSize += len(p)
	}
	r := rand.New(rand.NewPCG(1, 2))
	out := append([]string(nil), base...)
	for got := baseSize; got < size; got += baseSize {
		lower := r.Perm(26)
		digits := r.Perm(10)
		rename := func(c rune) rune {
			switch {
			case c >= 'a' && c <= 'z':
				return 'a' + rune(lower[c-'a'])
			case c >= 'A' && c <= 'Z':
				return 'A' + rune(lower[c-'A'])
			case c >= '0' && c <= '9':
				return '0' + rune(digits[c-'0'])
			}
			return c
		}
		for _, p := range base {
			out = append(out, strings.Map(rename, p))
		}
	}
	return out, nil
}
