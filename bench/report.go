package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"
)

// Targets from issue 9 (and issue 2 for passthrough out of process).
const (
	targetVsCp        = 0.7
	targetOutVsIn     = 0.9
	targetQuant       = 0.85
	targetRSS         = 512 << 20
	targetInfo        = 50 * time.Millisecond
	targetOutVsInIss2 = 0.8
)

func mib(n int64) string { return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20)) }

func gbps(bytes int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(bytes) / d.Seconds() / 1e9
}

func met(ok bool) string {
	if ok {
		return "met"
	}
	return "**not met**"
}

// report prints the figures and the ratios as Markdown tables.
func (s *suite) report(w io.Writer, runs int, command string) {
	fmt.Fprintf(w, "### %s checkpoint (bf16, llama-shaped), %d runs per row, medians\n\n", humanBytes(s.size), runs)
	fmt.Fprintf(w, "Command: `%s`. Load average %s at the start, %s at the end.\n\n", command, s.loadStart, s.loadEnd)
	if s.coldCache {
		fmt.Fprintln(w, "Input digest cache cold: every run hashes its inputs for its run manifest, as a first conversion does.")
	} else {
		fmt.Fprintln(w, "Input digest cache warm: runs take their inputs' digests from the cache the warm-up round filled, as every conversion of a checkpoint after its first does (rows with a run manifest still hash every output).")
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| scenario | plugins | GB/s of input | wall, median [min–max] | CPU s | peak RSS, sluice | peak RSS, largest process | peak RSS, process tree | peak PSS, process tree | other load, cores |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|")
	for _, it := range s.items {
		if it.kernel != nil || it.group == "info" {
			continue
		}
		m := it.sum
		rss := func(n int64) string {
			if it.group == "limit" {
				return "–"
			}
			return mib(n)
		}
		fmt.Fprintf(w, "| %s | %s | %.3f | %.3f s [%.3f–%.3f] | %.2f | %s | %s | %s | %s | %.2f |\n", it.name, orDash(it.mode), gbps(it.input, m.wall),
			m.wall.Seconds(), m.minWall.Seconds(), m.maxWall.Seconds(), m.cpu.Seconds(), rss(m.selfHWM), rss(m.maxRSS), rss(m.treeRSS), rss(m.treePSS), m.foreign)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| `sluice info` on | wall, median [min–max] | CPU s | peak RSS | other load, cores |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	for _, it := range s.items {
		if it.group != "info" {
			continue
		}
		m := it.sum
		fmt.Fprintf(w, "| %s | %.1f ms [%.1f–%.1f] | %.3f | %s | %.2f |\n", strings.TrimPrefix(it.name, "info "), ms(m.wall), ms(m.minWall), ms(m.maxWall), m.cpu.Seconds(), mib(m.selfHWM), m.foreign)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| limit, in-process, a goroutine per core used | rate of each core, median | |")
	fmt.Fprintln(w, "|---|---|---|")
	for _, it := range s.items {
		if it.kernel == nil {
			continue
		}
		if it.group == "limit" {
			fmt.Fprintf(w, "| %s | %.3f GB/s | |\n", it.name, it.sum.rate/1e9)
			continue
		}
		fmt.Fprintf(w, "| %s | %.0f M elements/s | %.0f MB/s of 16-bit input |\n", it.name, it.sum.rate/1e6, it.sum.rate*2/1e6)
	}
	fmt.Fprintln(w)
	s.ratios(w)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

func (s *suite) find(name, mode string) *item {
	for _, it := range s.items {
		if it.name == name && it.mode == mode {
			return it
		}
	}
	return nil
}

// ratios prints every ratio to a limit and whether each target is met.
func (s *suite) ratios(w io.Writer) {
	fmt.Fprintln(w, "| ratio | value | target | |")
	fmt.Fprintln(w, "|---|---|---|---|")
	row := func(name string, v float64, target string, ok *bool) {
		verdict := ""
		if ok != nil {
			verdict = met(*ok)
		}
		fmt.Fprintf(w, "| %s | %.2f× | %s | %s |\n", name, v, target, verdict)
	}
	b := func(x bool) *bool { return &x }
	cp, cpSync, read := s.find("cp", ""), s.find("cp + fsync", ""), s.find("read (page cache)", "")
	sha := s.find("sha256", "")
	for _, it := range s.items {
		if it.mode == "" || it.kernel != nil {
			continue
		}
		label := it.name + ", " + it.mode
		rate := gbps(it.input, it.sum.wall)
		if it.group == "passthrough" {
			if cp != nil {
				v := rate / gbps(cp.input, cp.sum.wall)
				row(label+" / cp", v, fmt.Sprintf("≥ %.1f×", targetVsCp), b(v >= targetVsCp))
			}
			if cpSync != nil {
				row(label+" / (cp + fsync)", rate/gbps(cpSync.input, cpSync.sum.wall), "–", nil)
			}
			if read != nil && it.mode == "out of process" {
				row(label+" / page-cache read", rate/gbps(read.input, read.sum.wall), "–", nil)
			}
			if sha != nil && !strings.Contains(it.name, "no run manifest") {
				// The run manifest hashes the input and the output, one
				// stream each, which no number of cores speeds up.
				row(label+" / SHA-256 on one core", rate/(sha.sum.rate/1e9), "–", nil)
			}
		}
		if it.group == "quantize" {
			if lim, ok := s.quantLimit(it, 1); ok {
				v := lim.Seconds() / it.sum.wall.Seconds()
				row(fmt.Sprintf("%s / (our quantizer on 1 core × %d cores)", label, s.cores), v, fmt.Sprintf("≥ %.2f×", targetQuant), b(v >= targetQuant))
			}
			if lim, ok := s.quantLimit(it, s.cores); ok && s.cores > 1 {
				v := lim.Seconds() / it.sum.wall.Seconds()
				row(fmt.Sprintf("%s / (our quantizer on each of %d cores at once)", label, s.cores), v, "–", nil)
			}
			if cp != nil && it.mode == "out of process" {
				row(label+" / cp", rate/gbps(cp.input, cp.sum.wall), "–", nil)
			}
		}
		if it.twin != nil && len(it.twin.runs) > 0 {
			v := it.twin.sum.wall.Seconds() / it.sum.wall.Seconds()
			target := targetOutVsIn
			if strings.HasPrefix(it.name, "st → st") {
				target = targetOutVsInIss2 // issue 2; issue 9 asks 0.9 everywhere
				row(it.name+": out of process / in-process (issue 2)", v, fmt.Sprintf("≥ %.1f×", target), b(v >= target))
				target = targetOutVsIn
			}
			row(it.name+": out of process / in-process", v, fmt.Sprintf("≥ %.1f×", target), b(v >= target))
		}
	}
	var worst, worstTree *item
	for _, it := range s.items {
		if it.mode == "" {
			continue
		}
		if worst == nil || it.sum.selfHWM > worst.sum.selfHWM {
			worst = it
		}
		if worstTree == nil || it.sum.treePSS > worstTree.sum.treePSS {
			worstTree = it
		}
	}
	if worst != nil {
		fmt.Fprintf(w, "| peak RSS of the sluice process, largest over scenarios (%s, %s) | %s | < %s | %s |\n", worst.name, worst.mode, mib(worst.sum.selfHWM), mib(targetRSS), met(worst.sum.selfHWM < targetRSS))
		fmt.Fprintf(w, "| peak PSS of the process tree, largest over scenarios (%s, %s) | %s | < %s | %s |\n", worstTree.name, worstTree.mode, mib(worstTree.sum.treePSS), mib(targetRSS), met(worstTree.sum.treePSS < targetRSS))
	}
	for _, it := range s.items {
		if it.group == "info" {
			fmt.Fprintf(w, "| `sluice %s` | %.1f ms | < %d ms | %s |\n", it.name, ms(it.sum.wall), targetInfo/time.Millisecond, met(it.sum.wall < targetInfo))
		}
	}
	fmt.Fprintln(w)
}

func humanBytes(n uint64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// machine describes the machine the benchmark ran on.
func machine() string {
	cpu := "?"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				cpu = strings.TrimSpace(v)
				break
			}
		}
	}
	mem := int64(0)
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		mem = statusField(b, "MemTotal:")
	}
	kernel, _ := exec.Command("uname", "-r").Output()
	return fmt.Sprintf("%s, %d cores (GOMAXPROCS %d), %.0f GiB RAM, Linux %s, %s", cpu, runtime.NumCPU(), runtime.GOMAXPROCS(0),
		float64(mem)/(1<<30), strings.TrimSpace(string(kernel)), runtime.Version())
}
