package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"time"

	"github.com/sluice-ml/sluice/sdk/bytesize"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// item is one thing the suite times: a whole process (a sluice scenario or a
// limit such as cp), or an in-process kernel whose rate bounds a scenario.
type item struct {
	name  string // e.g. "st → gguf q8_0"
	group string // passthrough, quantize, info, limit, kernel
	mode  string // "out of process", "in-process" or ""
	argv  []string
	out   string // directory emptied before each run
	input int64  // bytes of input, for GB/s
	// twin is the in-process item of an out-of-process scenario.
	twin *item
	// srcDType is the input's dtype, for quantizer limits.
	srcDType tensor.DType
	// output is the file whose tensors say which kernels a quantizing
	// scenario ran (read with sluice info --json after the warm-up).
	output string
	// kernel measures an in-process limit instead of running argv.
	kernel func() (measurement, error)
	// elems counts, after the warm-up, the output's elements per dtype.
	elems map[tensor.DType]uint64

	runs []measurement
	sum  summary
}

// suite is everything one benchmark run needs.
type suite struct {
	dir       string // work directory for this size
	sluice    string
	size      uint64
	maxMemory string
	cores     int
	quiet     float64       // other tenants' load (cores) under which a run starts
	maxWait   time.Duration // longest wait for that
	only      *regexp.Regexp
	inputs    inputs
	items     []*item
	kernels   map[kernelKey]*item
	loadStart string
	loadEnd   string
	// cleanAfter empties an item's output directory after each run, to keep
	// the disk free when checkpoints are large.
	cleanAfter bool
	// cacheDir is sluice's cache directory in every run (XDG_CACHE_HOME);
	// coldCache empties it before each run.
	cacheDir  string
	coldCache bool
}

// inputs are the generated files of one size.
type inputs struct {
	bf16Dir  string // Hugging Face directory, bf16
	bf16File string // its model.safetensors
	f16GGUF  string // the same model in f16, as GGUF
	vocab    string // GGUF with a 150k vocabulary and tiny tensors
	many     string // safetensors of manyTensors small tensors
}

// prepare generates (or reuses) the inputs of one size.
func (s *suite) prepare(needF16 bool) error {
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return err
	}
	in := &s.inputs
	in.bf16Dir = filepath.Join(s.dir, "bf16")
	in.bf16File = filepath.Join(in.bf16Dir, "model.safetensors")
	if _, err := os.Stat(in.bf16File); err != nil {
		if err := generate(in.bf16Dir, s.size, tensor.BF16); err != nil {
			return err
		}
	}
	in.vocab = filepath.Join(filepath.Dir(s.dir), "vocab150k.gguf")
	if _, err := os.Stat(in.vocab); err != nil {
		fmt.Fprintln(os.Stderr, "bench: writing", in.vocab)
		if err := writeVocabGGUF(in.vocab, 150000); err != nil {
			return err
		}
	}
	in.many = filepath.Join(filepath.Dir(s.dir), "many-tensors", "model.safetensors")
	if _, err := os.Stat(in.many); err != nil {
		fmt.Fprintln(os.Stderr, "bench: writing", in.many)
		if err := writeManyTensors(in.many); err != nil {
			return err
		}
	}
	if !needF16 {
		return nil
	}
	in.f16GGUF = filepath.Join(s.dir, "f16.gguf")
	if _, err := os.Stat(in.f16GGUF); err == nil {
		return nil
	}
	f16Dir := filepath.Join(s.dir, "f16")
	if err := generate(f16Dir, s.size, tensor.F16); err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "bench: converting the f16 checkpoint to GGUF")
	p := s.pipeline("setup-f16", source("safetensors", filepath.Join(f16Dir, "model.safetensors"))+sink("gguf", in.f16GGUF, ""))
	if out, err := exec.Command(s.sluice, "run", p, "--quiet").CombinedOutput(); err != nil {
		return fmt.Errorf("converting to f16 GGUF: %v: %s", err, out)
	}
	return os.RemoveAll(f16Dir)
}

func generate(dir string, size uint64, dt tensor.DType) error {
	c := shapeFor(size, dt, 1)
	fmt.Fprintf(os.Stderr, "bench: generating %s (%d layers, %s)\n", dir, c.Layers, dt)
	return writeSample(dir, c)
}

func source(typ, path string) string {
	return fmt.Sprintf("source %q \"in\" {\n  path = %q\n}\n", typ, path)
}

// sink writes a sink block reading from input (source.in unless set).
func sink(typ, path, extra string, input ...string) string {
	in := "source.in"
	if len(input) > 0 {
		in = input[0]
	}
	return fmt.Sprintf("sink %q \"out\" {\n  input = %s\n  path  = %q\n%s}\n", typ, in, path, extra)
}

// pipeline writes a pipeline file and returns its path.
func (s *suite) pipeline(name, body string) string {
	p := filepath.Join(s.dir, "pipelines", name+".hcl")
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		panic(err)
	}
	return p
}

// build lists the suite's items.
func (s *suite) build() {
	in := s.inputs
	outRoot := filepath.Join(s.dir, "out")
	bf16Size := fileSize(in.bf16File)
	add := func(it *item) *item {
		if s.only != nil && !s.only.MatchString(it.name) && !s.only.MatchString(it.group) {
			return nil
		}
		s.items = append(s.items, it)
		return it
	}
	// The limits.
	cpOut := filepath.Join(outRoot, "cp")
	add(&item{name: "cp", group: "limit", argv: []string{"cp", in.bf16File, filepath.Join(cpOut, "copy")}, out: cpOut, input: bf16Size})
	add(&item{name: "cp + fsync", group: "limit", argv: []string{"sh", "-c", `cp "$1" "$2" && sync "$2"`, "sh", in.bf16File, filepath.Join(cpOut, "copy")}, out: cpOut, input: bf16Size})
	add(&item{name: "read (page cache)", group: "limit", argv: []string{"cat", in.bf16File}, input: bf16Size})
	add(&item{name: "sha256", group: "limit", input: bf16Size, kernel: func() (measurement, error) { return hashFile(in.bf16File) }})

	// The scenarios: each writes one file under out/SLUG.
	type scen struct {
		name, slug, group string
		src               tensor.DType
		input             int64
		body              func(out string) string // the pipeline, writing to out
		quantizes         bool
	}
	st := source("safetensors", in.bf16File)
	scens := []scen{
		{"st → st", "st", "passthrough", tensor.BF16, bf16Size, func(o string) string {
			return st + sink("safetensors", filepath.Join(o, "model.safetensors"), "  hf_files = false\n")
		}, false},
		{"st → apsim (sha256)", "apsim", "passthrough", tensor.BF16, bf16Size, func(o string) string {
			return st + sink("apsim", filepath.Join(o, "model.apsim"), "")
		}, false},
		{"st → gguf bf16", "gguf", "passthrough", tensor.BF16, bf16Size, func(o string) string {
			return st + sink("gguf", filepath.Join(o, "model.gguf"), "")
		}, false},
		{"st → gguf q8_0", "q8_0", "quantize", tensor.BF16, bf16Size, func(o string) string {
			return st + sink("gguf", filepath.Join(o, "model.gguf"), "  dtype = \"q8_0\"\n")
		}, true},
		{"st → gguf q4_0", "q4_0", "quantize", tensor.BF16, bf16Size, func(o string) string {
			return st + sink("gguf", filepath.Join(o, "model.gguf"), "  dtype = \"q4_0\"\n")
		}, true},
		{"st → gguf Q4_K_M", "q4km", "quantize", tensor.BF16, bf16Size, func(o string) string {
			return st + q4kmTransform + sink("gguf", filepath.Join(o, "model.gguf"), "", "transform.q4km")
		}, true},
	}
	scens = append(scens, scen{fmt.Sprintf("st → st, %d tensors of 16 KiB", manyTensors), "many", "tensors", tensor.BF16, fileSize(in.many), func(o string) string {
		return source("safetensors", in.many) + sink("safetensors", filepath.Join(o, "model.safetensors"), "  hf_files = false\n")
	}, false}, scen{fmt.Sprintf("st → gguf q8_0, %d tensors of 16 KiB", manyTensors), "many-q8_0", "tensors", tensor.BF16, fileSize(in.many), func(o string) string {
		return source("safetensors", in.many) + sink("gguf", filepath.Join(o, "model.gguf"), "  dtype = \"q8_0\"\n")
	}, true})
	if in.f16GGUF != "" {
		scens = append(scens, scen{"gguf f16 → gguf q8_0", "requant", "quantize", tensor.F16, fileSize(in.f16GGUF), func(o string) string {
			return source("gguf", in.f16GGUF) + sink("gguf", filepath.Join(o, "model.gguf"), "  dtype = \"q8_0\"\n")
		}, true})
	}
	for _, sc := range scens {
		out := filepath.Join(outRoot, sc.slug)
		p := s.pipeline(sc.slug, sc.body(out))
		output := ""
		if sc.quantizes {
			output = filepath.Join(out, "model.gguf")
		}
		base := []string{s.sluice, "run", p, "--quiet", "--max-memory", s.maxMemory}
		op := add(&item{name: sc.name, group: sc.group, mode: "out of process", argv: base, out: out, input: sc.input, srcDType: sc.src, output: output})
		ip := add(&item{name: sc.name, group: sc.group, mode: "in-process", argv: append(append([]string(nil), base...), "--in-process"), out: out, input: sc.input, srcDType: sc.src, output: output})
		if op != nil {
			op.twin = ip
		}
		// Every sluice run records a run manifest: the SHA-256 of every
		// input and output file. Two scenarios also run without, to show
		// what that costs and what the data plane does alone; the
		// passthrough also without syncing its output, which is the work
		// cp does.
		var variants []variant
		if sc.slug == "st" || sc.slug == "q8_0" {
			variants = append(variants, variant{" (no run manifest)", []string{"--run-manifest=false"}})
		}
		if sc.slug == "st" {
			variants = append(variants, variant{" (no run manifest, --fsync=false)", []string{"--run-manifest=false", "--fsync=false"}})
		}
		for _, v := range variants {
			name := sc.name + v.suffix
			nm := append(append([]string(nil), base...), v.flags...)
			op := add(&item{name: name, group: sc.group, mode: "out of process", argv: nm, out: out, input: sc.input, srcDType: sc.src, output: output})
			ip := add(&item{name: name, group: sc.group, mode: "in-process", argv: append(append([]string(nil), nm...), "--in-process"), out: out, input: sc.input, srcDType: sc.src, output: output})
			if op != nil {
				op.twin = ip
			}
		}
	}
	// sluice info on the inputs and on a 150k vocabulary.
	add(&item{name: "info safetensors " + bytesize.Human(uint64(bf16Size)), group: "info", argv: []string{s.sluice, "info", in.bf16File}})
	if in.f16GGUF != "" {
		add(&item{name: "info gguf " + bytesize.Human(uint64(fileSize(in.f16GGUF))), group: "info", argv: []string{s.sluice, "info", in.f16GGUF}})
	}
	add(&item{name: "info gguf 150k vocab", group: "info", argv: []string{s.sluice, "info", in.vocab}})
	add(&item{name: fmt.Sprintf("info safetensors %d tensors", manyTensors), group: "info", argv: []string{s.sluice, "info", in.many}})
}

// variant is a scenario run again with more flags.
type variant struct {
	suffix string // added to the scenario's name
	flags  []string
}

// q4kmTransform quantizes as llama-quantize Q4_K_M does, 1-D tensors f32.
const q4kmTransform = `transform "quantize" "q4km" {
  input  = source.in
  preset = "Q4_K_M"
  rule {
    max_dims = 1
    type     = "f32"
  }
}
`

func fileSize(p string) int64 {
	fi, err := os.Stat(p)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// runOnce runs one item once, after waiting for a quiet machine.
func (s *suite) runOnce(it *item) (measurement, error) {
	if it.out != "" {
		os.RemoveAll(it.out)
		os.MkdirAll(it.out, 0o755)
	}
	if it.kernel != nil {
		waitQuiet(s.quiet, s.maxWait)
		return it.kernel()
	}
	if s.coldCache {
		os.RemoveAll(s.cacheDir)
	}
	// Start from clean page-cache state: no dirty pages of earlier runs.
	exec.Command("sync").Run()
	waitQuiet(s.quiet, s.maxWait)
	m, _, err := runProcess(it.argv, false)
	if s.cleanAfter && it.out != "" && it.output == "" {
		os.RemoveAll(it.out)
	}
	return m, err
}

// execute runs a warm-up round and then runs rounds, every item once per
// round, so machine noise hits every item alike.
func (s *suite) execute(runs int) error {
	s.loadStart = loadAvg()
	for r := 0; r <= runs; r++ {
		for _, it := range roundOrder(s.items, r) {
			m, err := s.runOnce(it)
			if err != nil {
				return fmt.Errorf("%s %s: %w", it.name, it.mode, err)
			}
			if r == 0 {
				// The warm-up fills the page cache and produces the outputs
				// whose tensors say which quantizers ran.
				if it.output != "" && it.elems == nil {
					if it.elems, err = s.outputElems(it.output); err != nil {
						return err
					}
					s.addKernels(it)
				}
				continue
			}
			it.runs = append(it.runs, m)
			fmt.Fprintf(os.Stderr, "bench: round %d/%d %-28s %-15s %8s  (other load %.2f cores)\n", r, runs, it.name, it.mode, m.wall.Round(time.Millisecond), m.foreign)
		}
	}
	s.loadEnd = loadAvg()
	for _, it := range s.items {
		it.sum = summarize(it.runs)
	}
	return nil
}

// roundOrder returns the items in the order round r runs them: every
// scenario's two modes one after the other, out of process first in even
// rounds and in-process first in odd ones. Run in one order only, the first
// mode of a pair always follows another scenario (its output's deletion,
// its writeback, the page cache it left) and the second always its twin, a
// bias the ratio of the two would carry.
func roundOrder(items []*item, r int) []*item {
	order := slices.Clone(items)
	if r%2 == 0 {
		return order
	}
	for i := 0; i+1 < len(order); i++ {
		if order[i].twin != nil && order[i].twin == order[i+1] {
			order[i], order[i+1] = order[i+1], order[i]
			i++
		}
	}
	return order
}

// outputElems counts an output's elements per dtype with sluice info.
func (s *suite) outputElems(path string) (map[tensor.DType]uint64, error) {
	out, err := exec.Command(s.sluice, "info", "--json", path).Output()
	if err != nil {
		return nil, fmt.Errorf("sluice info %s: %w", path, err)
	}
	var js struct {
		Tensors []struct {
			DType string   `json:"dtype"`
			Shape []uint64 `json:"shape"`
		} `json:"tensors"`
	}
	if err := json.Unmarshal(out, &js); err != nil {
		return nil, fmt.Errorf("sluice info --json %s: %w", path, err)
	}
	elems := map[tensor.DType]uint64{}
	for _, t := range js.Tensors {
		n := uint64(1)
		for _, d := range t.Shape {
			n *= d
		}
		elems[tensor.DType(t.DType)] += n
	}
	return elems, nil
}

// kernelKey names a quantizer limit: a conversion, timed on one core alone
// (copies 1) or on every core at once (copies = the cores).
type kernelKey struct {
	from, to tensor.DType
	copies   int
}

// addKernels adds, for every dtype a quantizing scenario wrote, items
// timing our own quantizer on one core alone and, on a machine of more
// than one core, on every core at once (once per pair of dtypes).
func (s *suite) addKernels(it *item) {
	if s.kernels == nil {
		s.kernels = map[kernelKey]*item{}
	}
	sample := s.inputs.bf16File
	if it.srcDType == tensor.F16 {
		sample = s.inputs.f16GGUF
	}
	for dt := range it.elems {
		for _, copies := range slices.Compact([]int{1, s.cores}) {
			key := kernelKey{it.srcDType, dt, copies}
			if _, ok := s.kernels[key]; ok || dt == it.srcDType {
				continue
			}
			name := fmt.Sprintf("quantizer %s → %s, 1 core", it.srcDType, dt)
			if copies > 1 {
				name = fmt.Sprintf("quantizer %s → %s, each of %d cores at once", it.srcDType, dt, copies)
			}
			k := &item{name: name, group: "kernel"}
			k.kernel = func() (measurement, error) { return kernelRate(sample, key.from, key.to, key.copies) }
			s.kernels[key] = k
			s.items = append(s.items, k)
		}
	}
}

// quantLimit returns the wall time the scenario's quantizers alone would
// take on every core: the sum, over the dtypes written, of the elements
// divided by our single-threaded rate (measured on one core alone, copies
// 1, or on every core at once), divided by the cores.
func (s *suite) quantLimit(it *item, copies int) (time.Duration, bool) {
	var secs float64
	for dt, n := range it.elems {
		if dt == it.srcDType {
			continue
		}
		k := s.kernels[kernelKey{it.srcDType, dt, copies}]
		if k == nil || k.sum.rate == 0 {
			return 0, false
		}
		secs += float64(n) / k.sum.rate
	}
	return time.Duration(secs / float64(s.cores) * float64(time.Second)), true
}

func defaultCores() int { return runtime.GOMAXPROCS(0) }
