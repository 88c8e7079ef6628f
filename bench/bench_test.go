package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/sluice-ml/sluice/plugins/gguf"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// TestVocabGGUFIsThePeersFile checks the 150k-vocabulary GGUF: 19 keys, 300
// tensors, 150,000 tokens and merges, readable by our GGUF source.
func TestVocabGGUFIsThePeersFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "vocab.gguf")
	if err := writeVocabGGUF(p, 150000); err != nil {
		t.Fatal(err)
	}
	src, err := gguf.NewSource(&gguf.SourceConfig{Path: p})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	m, err := src.Describe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Tensors) != 300 || m.Metadata.Len() != 19 {
		t.Errorf("%d tensors and %d keys, want 300 and 19", len(m.Tensors), m.Metadata.Len())
	}
	for _, k := range []string{"tokenizer.ggml.tokens", "tokenizer.ggml.merges", "tokenizer.ggml.scores", "tokenizer.ggml.token_type"} {
		if v, _ := m.Metadata.Get(k); v.Len() != 150000 {
			t.Errorf("%s has %d elements, want 150000", k, v.Len())
		}
	}
}

func TestStatusField(t *testing.T) {
	status := []byte("Name:\tsluice\nVmHWM:\t  204800 kB\nVmRSS:\t  102400 kB\n")
	if got := statusField(status, "VmRSS:"); got != 100<<20 {
		t.Errorf("VmRSS = %d", got)
	}
	if got := statusField(status, "VmHWM:"); got != 200<<20 {
		t.Errorf("VmHWM = %d", got)
	}
	if got := statusField([]byte("Pss: 8 kB\n"), "Pss:"); got != 8<<10 {
		t.Errorf("Pss at the start = %d", got)
	}
	if got := statusField(status, "VmSwap:"); got != 0 {
		t.Errorf("missing field = %d", got)
	}
}

func TestSummaryTakesMediansAndPeaks(t *testing.T) {
	ms := []measurement{
		{wall: 3 * time.Second, cpu: 1 * time.Second, selfHWM: 10, foreign: 1},
		{wall: 1 * time.Second, cpu: 3 * time.Second, selfHWM: 30, foreign: 0},
		{wall: 2 * time.Second, cpu: 2 * time.Second, selfHWM: 20, foreign: 0.5},
	}
	s := summarize(ms)
	if s.wall != 2*time.Second || s.minWall != time.Second || s.maxWall != 3*time.Second || s.cpu != 2*time.Second {
		t.Errorf("medians: %+v", s)
	}
	if s.selfHWM != 30 || s.foreign != 0.5 {
		t.Errorf("peak %d, mean load %v", s.selfHWM, s.foreign)
	}
}

// TestPollingCostsLittle runs a process that holds 1 GiB of touched memory
// for 1.5 s (smaps_rollup then walks 262,144 page-table entries per read)
// and checks that measuring it found its memory and that the poller's
// thread spent at most a twentieth of a core: polled every 10 ms, it spent
// a third or more. The poller's own thread CPU is the measure, not the
// bench process's: starting the child, copying its output and the Go
// runtime's own work cost CPU too, and the whole process once measured 8%
// of a core on a busy CI machine where it measures 2% on an idle one.
func TestPollingCostsLittle(t *testing.T) {
	if os.Getenv("SLUICE_BENCH_HOLD") != "" {
		holdMemory()
		return
	}
	argv := childOfTest(t, "SLUICE_BENCH_HOLD", "/proc/self/smaps_rollup")
	// Other processes (go test runs packages side by side) only ever add to
	// the poller's CPU time, so its cost is the least of up to three runs.
	var costs []string
	for range 3 {
		m, _, err := runProcess(argv, false)
		if err != nil {
			t.Fatal(err)
		}
		if m.treeRSS < 1<<30 || m.treePSS < 1<<30 || m.maxRSS < 1<<30 {
			t.Errorf("RSS %d, PSS %d, largest %d: want at least 1 GiB each", m.treeRSS, m.treePSS, m.maxRSS)
		}
		if m.pollCPU <= 0 {
			t.Fatalf("the poller's CPU time was not measured: %v", m.pollCPU)
		}
		share := m.pollCPU.Seconds() / m.wall.Seconds()
		if share <= 0.05 {
			return
		}
		costs = append(costs, fmt.Sprintf("%v of CPU for a %v run, %.3f of a core", m.pollCPU, m.wall, share))
	}
	t.Errorf("polling cost the poller more than 0.05 of a core in every run: %s", strings.Join(costs, "; "))
}

// TestShortProcessPeakRSS checks that the peak RSS of a process that lives
// a few milliseconds, as `sluice info` does, is measured: the child touches
// 32 MiB, waits 5 ms and exits.
func TestShortProcessPeakRSS(t *testing.T) {
	if os.Getenv("SLUICE_BENCH_BRIEF") != "" {
		b := make([]byte, 32<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		time.Sleep(5 * time.Millisecond)
		b[len(b)-1] = 2
		return
	}
	argv := childOfTest(t, "SLUICE_BENCH_BRIEF", "/proc/self/status")
	m, _, err := runProcess(argv, false)
	if err != nil {
		t.Fatal(err)
	}
	if m.selfHWM < 32<<20 || m.maxRSS < 32<<20 {
		t.Errorf("peak RSS %d, largest %d, of a %v process that touched 32 MiB: want at least 32 MiB", m.selfHWM, m.maxRSS, m.wall)
	}
}

// childOfTest returns the command line that runs test t again in a child
// process, with env set to 1 there (the child's cue to act the measured
// process instead of the test), and skips t where procFile, which the
// measurement reads, does not exist.
func childOfTest(t *testing.T, env, procFile string) []string {
	t.Helper()
	if _, err := os.Stat(procFile); err != nil {
		t.Skipf("needs Linux's %s", procFile)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(env, "1")
	return []string{exe, "-test.run=^" + t.Name() + "$"}
}

// TestPollsOftenAtTheStart checks the poller's waits: short at the start of
// a run (startShare times the poll's cost, at least startPoll), then
// pollShare times the poll's cost, at least minPoll.
func TestPollsOftenAtTheStart(t *testing.T) {
	for _, c := range []struct{ elapsed, cost, want time.Duration }{
		{0, 20 * time.Microsecond, startPoll},
		{startSpan - time.Millisecond, 60 * time.Microsecond, startPoll},
		{5 * time.Millisecond, 300 * time.Microsecond, startShare * 300 * time.Microsecond},
		{startSpan, 20 * time.Microsecond, minPoll},
		{time.Second, 8 * time.Millisecond, pollShare * 8 * time.Millisecond},
	} {
		if got := pollWait(c.elapsed, c.cost); got != c.want {
			t.Errorf("pollWait(%v, %v) = %v, want %v", c.elapsed, c.cost, got, c.want)
		}
	}
}

// holdMemory is the child of TestPollingCostsLittle.
func holdMemory() {
	b := make([]byte, 1<<30)
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1
	}
	time.Sleep(1500 * time.Millisecond)
	b[len(b)-1] = 2
}

// TestKernelRateIsTheMedianPass checks that the quantizer limit is the
// median of its passes, as the scenarios it is compared with are, and not
// the fastest.
func TestKernelRateIsTheMedianPass(t *testing.T) {
	pass := func(r float64) measurement { return measurement{rate: r} }
	if got := medianPass([]measurement{pass(3), pass(1), pass(2)}).rate; got != 2 {
		t.Errorf("median of 3, 1, 2 = %v, want 2", got)
	}
	if got := medianPass([]measurement{pass(4), pass(1), pass(3), pass(2)}).rate; got != 2 {
		t.Errorf("median of 4, 1, 3, 2 = %v, want 2 (the slower middle one)", got)
	}
}

// TestKernelRateCountsTheConvertingThreads times a conversion on one and on
// two goroutines at once: each counts the CPU time of the threads that
// converted, so two copies take about twice the CPU time of one, and the
// rate is per core whatever the copies.
func TestKernelRateCountsTheConvertingThreads(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sample.bin")
	data := make([]byte, 32<<20)
	for i := range data {
		data[i] = byte(i * 7) // bf16 values of every exponent
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	var ms [3]measurement
	for _, copies := range []int{1, 2} {
		m, err := kernelRate(path, tensor.BF16, tensor.Q8_0, copies)
		if err != nil {
			t.Fatal(err)
		}
		// A thread's CPU time of 0 would give n / 1 ns.
		if m.cpu <= 0 || m.rate <= 0 || m.rate > 1e11 {
			t.Fatalf("%d copies: cpu %v, rate %.3g elements/s", copies, m.cpu, m.rate)
		}
		ms[copies] = m
	}
	if ms[2].cpu < ms[1].cpu*13/10 {
		t.Errorf("two copies took %v of CPU, one %v: the second thread was not counted", ms[2].cpu, ms[1].cpu)
	}
	if r := ms[2].rate / ms[1].rate; r < 0.3 || r > 3 {
		t.Errorf("rate per core %.3g with two copies, %.3g with one", ms[2].rate, ms[1].rate)
	}
	if _, err := kernelRate(path, tensor.BF16, tensor.DType("nope"), 1); err == nil {
		t.Error("an unknown dtype was timed")
	}
}

func TestRoundsAlternateTheModesOfAScenario(t *testing.T) {
	cp := &item{name: "cp"}
	op := &item{name: "st", mode: "out of process"}
	ip := &item{name: "st", mode: "in-process"}
	op.twin = ip
	kernel := &item{name: "sha256"}
	items := []*item{cp, op, ip, kernel}
	names := func(order []*item) string {
		var b strings.Builder
		for _, it := range order {
			b.WriteString(it.name + "/" + it.mode + " ")
		}
		return b.String()
	}
	for r, want := range []string{
		"cp/ st/out of process st/in-process sha256/ ",
		"cp/ st/in-process st/out of process sha256/ ",
		"cp/ st/out of process st/in-process sha256/ ",
	} {
		if got := names(roundOrder(items, r)); got != want {
			t.Errorf("round %d: %s, want %s", r, got, want)
		}
	}
	if items[1] != op || items[2] != ip {
		t.Error("roundOrder reordered the suite's own list")
	}
}

// A timed process writes its output to the null device, not into a pipe the
// bench drains: what it writes costs it no more than it would under a
// shell's redirection to /dev/null.
func TestTimedOutputGoesToTheNullDevice(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	if _, _, err := runProcess([]string{"sh", "-c", `test "$(readlink /proc/$$/fd/1)" = /dev/null`}, false); err != nil {
		t.Fatalf("the timed process's stdout is not the null device: %v", err)
	}
	_, out, err := runProcess([]string{"echo", "kept"}, true)
	if err != nil || string(out) != "kept\n" {
		t.Fatalf("kept output %q, %v", out, err)
	}
}
