package clitest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-ml/sluice/sdk/plugintest"
)

// Exit codes of the sluice command (docs/cli.md).
const (
	ExitOK       = 0
	ExitInternal = 1
	ExitConfig   = 2
	ExitBadInput = 3
	ExitSignal   = 130
)

// CorruptOptions tune CorruptCLI.
type CorruptOptions struct {
	// ConvertTo is the output file name for `sluice convert`; choose a
	// format that must decode the input's data (so a NaN scale is met).
	ConvertTo string
	// ConvertArgs are extra convert flags (e.g. --dtype f32).
	ConvertArgs []string
	// Flips is the number of flipped-byte files run through the CLI (the
	// in-process suite tries every byte); default 4.
	Flips int
	// Timeout bounds each command (default 30 s).
	Timeout time.Duration
	// MaxRSS bounds the peak memory of each process of a command — sluice
	// and every plugin process (default 100 MiB).
	MaxRSS int64
}

// CLIResult counts the runs of one kind of damage.
type CLIResult struct {
	Kind string
	// Runs is the number of commands run.
	Runs int
	// BadInput counts exit code 3 with a one-line error naming the file.
	BadInput int
	// OK counts exit code 0 (allowed where the damage may leave a readable
	// file).
	OK int
	// NothingLost counts runs after which no output file and no temporary
	// file existed (for failed conversions) or the output was complete.
	NothingLost int
	// PeakRSS is the largest peak memory of a process of a run, in bytes.
	PeakRSS int64
	// PeakTotalRSS is the largest sum of a run's processes' peaks.
	PeakTotalRSS int64
	// Slowest is the longest run.
	Slowest time.Duration
}

// CorruptCLI runs a selection of the suite's damaged files through the real
// CLI — `sluice info FILE` and `sluice convert FILE OUT` — and checks each run
// ends with exit code 3 and a clear error naming the file (or 0 where the
// damage may leave a readable file), within the time bound and the memory
// bound, without a panic, leaving no output and no temporary file behind.
// Every crafted damage is converted (and a sample described); a sample of
// the truncations and flipped bytes is run too.
func CorruptCLI(t *testing.T, bin string, s plugintest.CorruptSuite, opts CorruptOptions) []CLIResult {
	t.Helper()
	if opts.Flips == 0 {
		opts.Flips = 4
	}
	if opts.Timeout == 0 {
		opts.Timeout = 30 * time.Second
	}
	if opts.MaxRSS == 0 {
		opts.MaxRSS = 100 << 20
	}
	// Every crafted damage goes through `convert` (which reads the header,
	// then every tensor's data); `info` (headers only) takes the damages
	// that leave headers intact, and a sample of the rest. A few
	// truncations and flips go through too; the in-process suite tries
	// every one.
	type run struct {
		d    plugintest.Damage
		cmds []string
	}
	var runs []run
	var flips, cuts, random []plugintest.Damage
	crafted := 0
	for _, d := range s.Damages() {
		switch {
		case d.Kind == "flip":
			flips = append(flips, d)
		case d.Kind == "truncation" && strings.Contains(d.Name, "(random)"):
			random = append(random, d)
		case d.Kind == "truncation" && strings.Contains(d.Name, "from the end of"):
			// one byte either side of a boundary: in-process only
		case d.Kind == "truncation":
			cuts = append(cuts, d)
		default:
			cmds := []string{"convert"}
			if d.DataOnly || crafted%4 == 0 {
				cmds = append(cmds, "info")
			}
			crafted++
			runs = append(runs, run{d, cmds})
		}
	}
	sample := func(list []plugintest.Damage, n int, cmd string) {
		for i := 0; i < n && i < len(list); i++ {
			runs = append(runs, run{list[i*len(list)/min(n, len(list))], []string{cmd}})
		}
	}
	sample(cuts, 6, "info")
	sample(random, 2, "convert")
	sample(flips, opts.Flips, "convert")

	var mu sync.Mutex
	results := map[string]*CLIResult{}
	var kinds []string
	record := func(kind string, f func(r *CLIResult)) {
		mu.Lock()
		defer mu.Unlock()
		r := results[kind]
		if r == nil {
			r = &CLIResult{Kind: kind}
			results[kind] = r
			kinds = append(kinds, kind)
		}
		f(r)
	}
	sem := make(chan struct{}, 2)
	var wg sync.WaitGroup
	for i, rn := range runs {
		d := rn.d
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			dir := filepath.Join(t.TempDir(), fmt.Sprint(i))
			os.MkdirAll(filepath.Join(dir, "out"), 0o755)
			in := filepath.Join(dir, s.File)
			if err := os.WriteFile(in, d.Data, 0o644); err != nil {
				t.Error(err)
				return
			}
			out := filepath.Join(dir, "out", opts.ConvertTo)
			for _, cmd := range rn.cmds {
				args := []string{"info", in}
				if cmd == "convert" {
					args = append([]string{"convert", in, out, "--quiet"}, opts.ConvertArgs...)
				}
				r := Run(bin, opts.Timeout, nil, args...)
				mayRead := d.MayRead && !(cmd == "convert" && d.DataOnly)
				if cmd == "info" && d.DataOnly {
					mayRead = true
				}
				problem := checkRun(r, in, mayRead, opts)
				lost := true
				if cmd == "convert" {
					if p := checkOutputs(filepath.Join(dir, "out"), out, r.Code == ExitOK); p != "" {
						problem += p
						lost = false
					}
				}
				if problem != "" {
					t.Errorf("%s: %s: sluice %s: %s\nexit %d, stderr:\n%s", s.File, d.Name, cmd, problem, r.Code, r.Stderr)
				}
				record(d.Kind, func(c *CLIResult) {
					c.Runs++
					switch r.Code {
					case ExitBadInput:
						if problem == "" {
							c.BadInput++
						}
					case ExitOK:
						if problem == "" {
							c.OK++
						}
					}
					if lost && problem == "" {
						c.NothingLost++
					}
					c.PeakRSS = max(c.PeakRSS, r.MaxRSS)
					c.PeakTotalRSS = max(c.PeakTotalRSS, r.TotalRSS)
					c.Slowest = max(c.Slowest, r.Elapsed)
				})
			}
		}()
	}
	wg.Wait()
	out := make([]CLIResult, 0, len(kinds))
	for _, k := range kinds {
		r := results[k]
		out = append(out, *r)
		t.Logf("%s via the CLI: %-10s runs %3d, exit 3 %3d, exit 0 %3d, nothing lost %3d, peak RSS per process %.1f MiB (all processes %.1f MiB), slowest %s",
			s.File, k, r.Runs, r.BadInput, r.OK, r.NothingLost, float64(r.PeakRSS)/(1<<20), float64(r.PeakTotalRSS)/(1<<20), r.Slowest.Round(time.Millisecond))
	}
	return out
}

func checkRun(r Result, in string, mayRead bool, opts CorruptOptions) string {
	var p []string
	switch {
	case r.TimedOut:
		p = append(p, fmt.Sprintf("did not finish within %s", opts.Timeout))
	case Crashed(r.Stderr):
		p = append(p, "crashed")
	case r.Code == ExitBadInput:
		lines := strings.Split(strings.TrimSpace(r.Stderr), "\n")
		if !strings.HasPrefix(lines[0], "Error: ") {
			p = append(p, "the error is not one \"Error: …\" line")
		}
		if !strings.Contains(r.Stderr, filepath.Base(in)) {
			p = append(p, "the error does not name the file")
		}
	case r.Code == ExitOK && mayRead:
	case r.Code == ExitOK:
		p = append(p, "exit 0 for a damaged file")
	default:
		p = append(p, fmt.Sprintf("exit code %d, want %d (bad input)", r.Code, ExitBadInput))
	}
	if r.MaxRSS > opts.MaxRSS {
		p = append(p, fmt.Sprintf("a process peaked at %d MiB, more than %d MiB", r.MaxRSS>>20, opts.MaxRSS>>20))
	}
	return strings.Join(p, "; ")
}

// checkOutputs verifies that a failed conversion left nothing in dir, and a
// successful one left its output and no temporary file.
func checkOutputs(dir, out string, ok bool) string {
	entries, _ := os.ReadDir(dir)
	var p []string
	for _, e := range entries {
		if strings.Contains(e.Name(), ".sluice-tmp-") {
			p = append(p, "temporary file "+e.Name()+" left")
		} else if !ok {
			p = append(p, "output "+e.Name()+" left after a failed conversion")
		}
	}
	if ok {
		if _, err := os.Stat(out); err != nil {
			p = append(p, "exit 0 but no output")
		}
	}
	for _, e := range entries {
		os.RemoveAll(filepath.Join(dir, e.Name()))
	}
	return strings.Join(p, "; ")
}
