// Command bench generates synthetic llama-shaped checkpoints and times whole
// sluice processes against the limits they are bound by (cp, a page-cache
// read, SHA-256, our own quantizers on one core), printing the ratios from
// the same run as Markdown tables. See docs/performance.md.
//
//	go run ./bench gen -size 1GiB DIR                 # a bf16 Hugging Face directory
//	go run ./bench run -size 1GiB                     # every scenario, in and out of process, with the limits
//	go run ./bench run -only 'st → st|cp'             # a subset (a regexp on names and groups)
//	go run ./bench scale -sizes 1GiB,2GiB,4GiB,8GiB   # peak RSS and throughput against size
//	go run ./bench passthrough                        # issue 2's measurement: st → st against cp
//	go run ./bench ab -runs 5 -- CMD… :: CMD…          # any commands against each other, interleaved
//
// Scenarios run interleaved, one run of each per round after a warm-up
// round, and each run waits (a while) for the rest of the machine to be
// quiet; the tables give medians and the load other processes put on the
// machine during the runs.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/sluice-ml/sluice/sdk/bytesize"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "gen":
		err = genCommand(os.Args[2:])
	case "run":
		err = runCommand(os.Args[2:], "")
	case "passthrough":
		err = runCommand(os.Args[2:], `^(st → st|cp|cp \+ fsync|read \(page cache\))$`)
	case "scale":
		err = scaleCommand(os.Args[2:])
	case "ab":
		err = abCommand(os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: go run ./bench gen|run|scale|passthrough|ab [flags]   (-h for each)")
	os.Exit(2)
}

// common holds the flags every timing command takes.
type common struct {
	dir, sluice, maxMemory, only, md string
	runs                             int
	quiet                            float64
	maxWait                          time.Duration
	noF16                            bool
	digestCache                      string
}

func (c *common) flags(fs *flag.FlagSet, runs int, only string) {
	fs.StringVar(&c.dir, "dir", filepath.Join(os.TempDir(), "sluice-bench"), "work directory; generated checkpoints are kept there and reused")
	fs.StringVar(&c.sluice, "sluice", "", "sluice binary to time (default: build ./cmd/sluice into the work directory)")
	fs.StringVar(&c.maxMemory, "max-memory", "256MiB", "sluice --max-memory (256MiB is sluice's default)")
	fs.StringVar(&c.only, "only", only, "run only the items whose name or group matches this regexp")
	fs.StringVar(&c.md, "md", "", "also append the Markdown report to this file")
	fs.IntVar(&c.runs, "runs", runs, "measured runs per item (after one warm-up run)")
	fs.Float64Var(&c.quiet, "quiet", 0.3, "start each run once other processes use fewer cores than this…")
	fs.DurationVar(&c.maxWait, "max-wait", 10*time.Second, "…or after waiting this long")
	fs.StringVar(&c.digestCache, "digest-cache", "warm",
		"sluice's input digest cache, a directory of the bench's, emptied when the bench starts: warm keeps the digests the warm-up round computed, as in every conversion of a checkpoint after its first; cold empties it before every run, so every run hashes its inputs, as a first conversion does")
	fs.BoolVar(&c.noF16, "no-f16", false, "skip the f16 GGUF re-quantization scenario (saves generating a second checkpoint)")
}

// newSuite builds the sluice binary if needed and returns a suite for size.
func (c *common) newSuite(size uint64) (*suite, error) {
	s := &suite{dir: filepath.Join(c.dir, strings.ReplaceAll(humanBytes(size), " ", "")), size: size, maxMemory: c.maxMemory,
		cores: defaultCores(), quiet: c.quiet, maxWait: c.maxWait, sluice: c.sluice}
	if c.digestCache != "warm" && c.digestCache != "cold" {
		return nil, fmt.Errorf("-digest-cache %q: warm or cold", c.digestCache)
	}
	// Every sluice process the bench starts inherits the cache's place, so
	// no run reads or fills the user's own cache.
	s.cacheDir, s.coldCache = filepath.Join(c.dir, "digest-cache"), c.digestCache == "cold"
	if err := os.RemoveAll(s.cacheDir); err != nil {
		return nil, err
	}
	os.Setenv("XDG_CACHE_HOME", s.cacheDir)
	if c.only != "" {
		re, err := regexp.Compile(c.only)
		if err != nil {
			return nil, fmt.Errorf("-only: %w", err)
		}
		s.only = re
	}
	if s.sluice == "" {
		bin := filepath.Join(c.dir, "bin", "sluice")
		fmt.Fprintln(os.Stderr, "bench: building", bin)
		cmd := exec.Command("go", "build", "-o", bin, "./cmd/sluice")
		// The build docs/cli.md recommends: static, so that every process
		// (sluice and each plugin it starts) skips the dynamic loader.
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("building sluice (run from the repository root, or pass -sluice): %w", err)
		}
		s.sluice, c.sluice = bin, bin
	}
	return s, nil
}

func (c *common) output(text string) error {
	fmt.Print(text)
	if c.md == "" {
		return nil
	}
	f, err := os.OpenFile(c.md, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.WriteString(text)
	return err
}

func runCommand(args []string, only string) error {
	fs := flag.NewFlagSet("run", flag.ExitOnError)
	var c common
	c.flags(fs, 3, only)
	size := fs.String("size", "1GiB", "checkpoint size (1GiB to 8GiB on a 24 GiB machine)")
	fs.Parse(args)
	n, err := bytesize.Parse(*size)
	if err != nil {
		return err
	}
	s, err := c.newSuite(n)
	if err != nil {
		return err
	}
	needF16 := !c.noF16 && (s.only == nil || s.only.MatchString("gguf f16 → gguf q8_0") || s.only.MatchString("quantize"))
	if err := s.prepare(needF16); err != nil {
		return err
	}
	s.build()
	if err := s.execute(c.runs); err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Machine: %s.\n\n", machine())
	s.report(&b, c.runs, "go run ./bench "+strings.Join(os.Args[1:], " "))
	return c.output(b.String())
}

func scaleCommand(args []string) error {
	fs := flag.NewFlagSet("scale", flag.ExitOnError)
	var c common
	c.flags(fs, 1, `^(st → st|st → apsim \(sha256\)|st → gguf q8_0|cp|info safetensors.*)$`)
	sizes := fs.String("sizes", "1GiB,2GiB,4GiB,8GiB", "checkpoint sizes")
	keep := fs.Bool("keep", false, "keep each size's generated checkpoint (by default it is removed once measured, except 1GiB)")
	fs.Parse(args)
	c.noF16 = true
	var suites []*suite
	for _, sz := range strings.Split(*sizes, ",") {
		n, err := bytesize.Parse(strings.TrimSpace(sz))
		if err != nil {
			return err
		}
		s, err := c.newSuite(n)
		if err != nil {
			return err
		}
		if err := s.prepare(false); err != nil {
			return err
		}
		s.cleanAfter = true
		s.build()
		if err := s.execute(c.runs); err != nil {
			return err
		}
		// Outputs of this size are no longer needed; keep the disk free.
		os.RemoveAll(filepath.Join(s.dir, "out"))
		if !*keep && n != 1<<30 {
			os.RemoveAll(s.inputs.bf16Dir)
		}
		suites = append(suites, s)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Machine: %s.\n\nCommand: `go run ./bench %s`, %d run(s) per row after a warm-up, medians.\n\n", machine(), strings.Join(os.Args[1:], " "), c.runs)
	fmt.Fprintln(&b, "| size | scenario | plugins | GB/s of input | wall | CPU s | peak RSS, sluice | peak RSS, largest process | peak PSS, process tree | other load, cores |")
	fmt.Fprintln(&b, "|---|---|---|---|---|---|---|---|---|---|")
	for _, s := range suites {
		for _, it := range s.items {
			if it.kernel != nil || it.group == "limit" && it.name != "cp" {
				continue
			}
			m := it.sum
			if it.group == "info" {
				fmt.Fprintf(&b, "| %s | `sluice %s` | – | – | %.1f ms | %.3f | %s | – | – | %.2f |\n", humanBytes(s.size), it.name, ms(m.wall), m.cpu.Seconds(), mib(m.selfHWM), m.foreign)
				continue
			}
			rss := func(n int64) string {
				if it.group == "limit" {
					return "–"
				}
				return mib(n)
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %.3f | %.2f s | %.2f | %s | %s | %s | %.2f |\n", humanBytes(s.size), it.name, orDash(it.mode), gbps(it.input, m.wall), m.wall.Seconds(), m.cpu.Seconds(), rss(m.selfHWM), rss(m.maxRSS), rss(m.treePSS), m.foreign)
		}
	}
	fmt.Fprintln(&b)
	return c.output(b.String())
}
