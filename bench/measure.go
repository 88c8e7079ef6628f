package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// scenario is one command to time.
type scenario struct {
	name    string
	cmd     []string
	discard bool // send stdout to /dev/null
}

// measurement is one timed run.
type measurement struct {
	wall    time.Duration
	cpu     time.Duration // user+sys of the process and its children
	maxRSS  int64         // peak RSS of the process itself, bytes
	treeRSS int64         // peak sum of RSS over the process tree, bytes (shared memory counted per process)
}

func (s scenario) run() (measurement, error) {
	cmd := exec.Command(s.cmd[0], s.cmd[1:]...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if s.discard {
		cmd.Stdout = io.Discard
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return measurement{}, err
	}
	done := make(chan struct{})
	var tree int64
	go func() {
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if r := treeRSS(cmd.Process.Pid); r > tree {
					tree = r
				}
			}
		}
	}()
	err := cmd.Wait()
	close(done)
	wall := time.Since(start)
	if err != nil {
		return measurement{}, fmt.Errorf("%v: %s", err, stderr.String())
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	var self syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &self)
	cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	return measurement{wall: wall, cpu: cpu, maxRSS: ru.Maxrss * 1024, treeRSS: tree}, nil
}

// treeRSS sums VmRSS over pid and its descendants.
func treeRSS(pid int) int64 {
	var total int64
	pids := []int{pid}
	for len(pids) > 0 {
		p := pids[0]
		pids = pids[1:]
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p))
		if err == nil {
			for _, line := range strings.Split(string(b), "\n") {
				if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
					kb, _ := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
					total += kb * 1024
				}
			}
		}
		children, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", p, p))
		for _, c := range strings.Fields(string(children)) {
			if n, err := strconv.Atoi(c); err == nil {
				pids = append(pids, n)
			}
		}
	}
	return total
}

func median(ms []measurement) measurement {
	sort.Slice(ms, func(i, j int) bool { return ms[i].wall < ms[j].wall })
	m := ms[len(ms)/2]
	for _, x := range ms {
		if x.maxRSS > m.maxRSS {
			m.maxRSS = x.maxRSS
		}
		if x.treeRSS > m.treeRSS {
			m.treeRSS = x.treeRSS
		}
	}
	return m
}

// report prints a table: wall, GB/s of input, CPU, peak RSS, and ratios
// against cp and against the named baselines.
func report(scenarios []scenario, results [][]measurement, inputBytes int64, baselines map[string]string) {
	meds := map[string]measurement{}
	for i, s := range scenarios {
		meds[s.name] = median(results[i])
	}
	cp := meds["cp"]
	fmt.Printf("%-28s %9s %9s %9s %11s %11s %9s\n", "scenario", "wall", "GB/s", "CPU s", "peak RSS", "tree RSS", "vs cp")
	for _, s := range scenarios {
		m := meds[s.name]
		rate := float64(inputBytes) / m.wall.Seconds() / 1e9
		fmt.Printf("%-28s %9s %9.3f %9.2f %10.0fM %10.0fM %8.2fx\n", s.name, m.wall.Round(time.Millisecond), rate,
			m.cpu.Seconds(), float64(m.maxRSS)/(1<<20), float64(m.treeRSS)/(1<<20), cp.wall.Seconds()/m.wall.Seconds())
	}
	for a, b := range baselines {
		fmt.Printf("ratio %s / %s: %.2fx (throughput)\n", a, b, meds[b].wall.Seconds()/meds[a].wall.Seconds())
	}
}

// buildSluice builds the sluice binary into dir.
func buildSluice(dir string) (string, error) {
	out := filepath.Join(dir, "sluice")
	cmd := exec.Command("go", "build", "-o", out, "./cmd/sluice")
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("building sluice: %w", err)
	}
	return out, nil
}
