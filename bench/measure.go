package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// measurement is one timed run of a whole process tree.
type measurement struct {
	wall time.Duration
	// cpu is user+system time of the process and every child it waited
	// for (the plugin processes of a sluice run).
	cpu time.Duration
	// selfHWM is the peak RSS of the measured process alone (its VmHWM,
	// polled every 10 ms or less often: see pollShare).
	selfHWM int64
	// maxRSS is the peak RSS of the largest process of the tree: the
	// largest VmHWM polled over the process and its descendants. (getrusage's
	// ru_maxrss would do for one process, but Linux carries a child's RSS
	// from before its exec, the bench's own, into it.)
	maxRSS int64
	// treeRSS is the peak of the summed RSS of the process tree; shared
	// memory (the arena) counts once per process that maps it.
	treeRSS int64
	// treePSS is the peak of the summed proportional set size of the tree:
	// shared pages are split between the processes that map them.
	treePSS int64
	// foreign is the CPU other processes on the machine used during the run,
	// in cores.
	foreign float64
	// waited is the time the tree's threads were ready to run but waiting
	// for a core (from /proc/*/task/*/schedstat, polled): with cpu, it
	// tells how many cores the run could have used on an idle machine.
	waited time.Duration
	// rate, when set, replaces wall as the measure (in-process kernels).
	rate float64
	// pollCPU is the CPU time the bench's poller thread spent polling the
	// tree: what measuring the run took from it.
	pollCPU time.Duration
}

// runProcess runs argv, polling its process tree's memory, and returns what
// it used. stdout goes to the null device unless keep is set, then it is
// returned: a writer that is not a file would put a pipe, and the bench's
// goroutine copying from it, behind every write the process makes, and time
// them as part of the process (`cat` of the input ran at a pipe's speed).
func runProcess(argv []string, keep bool) (measurement, []byte, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	var stderr, stdout bytes.Buffer
	cmd.Stderr = &stderr
	if keep {
		cmd.Stdout = &stdout
	}
	busy0, _ := cpuBusy()
	self0 := processCPU()
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return measurement{}, nil, err
	}
	var m measurement
	var mu sync.Mutex
	done := make(chan struct{})
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		// The poller keeps one thread, so that thread's CPU time is what
		// polling cost and nothing else the bench does, and what the
		// intervals between polls are scaled by.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		cpu0 := threadCPU()
		defer func() { m.pollCPU = threadCPU() - cpu0 }()
		sched := map[int][2]int64{}
		defer func() {
			for _, v := range sched {
				m.waited += time.Duration(v[1])
			}
		}()
		nextPSS := start.Add(startSpan)
		for {
			polledAt, cpuAt := time.Now(), threadCPU()
			withPSS := !polledAt.Before(nextPSS)
			rss, pss, hwm, maxHWM := treeMemory(cmd.Process.Pid, sched, withPSS)
			cost := threadCPU() - cpuAt
			if withPSS {
				nextPSS = polledAt.Add(pollShare * cost)
			}
			mu.Lock()
			m.treeRSS = max(m.treeRSS, rss)
			m.treePSS = max(m.treePSS, pss)
			m.selfHWM = max(m.selfHWM, hwm)
			m.maxRSS = max(m.maxRSS, maxHWM)
			mu.Unlock()
			select {
			case <-done:
				return
			case <-time.After(pollWait(time.Since(start), cost)):
			}
		}
	}()
	err := cmd.Wait()
	m.wall = time.Since(start)
	close(done)
	<-polled
	busy1, _ := cpuBusy()
	if err != nil {
		return measurement{}, nil, fmt.Errorf("%s: %v: %s", strings.Join(argv, " "), err, strings.TrimSpace(stderr.String()))
	}
	m.cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	m.foreign = max(0, (busy1-busy0).Seconds()-m.cpu.Seconds()-(processCPU()-self0).Seconds()) / m.wall.Seconds()
	return m, stdout.Bytes(), nil
}

// Polling a process tree costs the bench CPU time, which a CPU-bound
// scenario on a small machine loses: reading a process's smaps_rollup (its
// PSS) walks its page tables, 7–8 ms of kernel time for a sluice process
// with its arena mapped, so polling PSS every 10 ms took half of one of two
// cores. The poller therefore waits at least minPoll between polls, and
// after a poll that took T of its thread's CPU time, waits pollShare×T
// before the next one and before the next that reads PSS: it spends about
// 1/pollShare of one core at most. T is CPU time, not the poll's wall
// time: on a busy machine a poll waits for a core, and scaling by wall time
// stretched the intervals until a poller skipped a 1.5 s peak.
//
// For the first startSpan of a run the poller reads no PSS, waits at least
// startPoll and startShare×T: VmHWM is a high-water mark, but it can only
// be read while the process lives, and `sluice info` lives about 10 ms, so
// that polled every 10 ms or more its peak RSS came out as whatever the
// first poll, just after the exec, had seen (2-5 MiB, against the 27 MiB
// `/usr/bin/time` reports). That costs at most 1/startShare of a core for
// startSpan: 10 ms of CPU at the start of a run, where a long run's peaks
// are not.
const (
	minPoll    = 10 * time.Millisecond
	pollShare  = 50
	startPoll  = time.Millisecond
	startShare = 10
	startSpan  = 100 * time.Millisecond
)

// pollWait is how long the poller waits after a poll that took cost of its
// thread's CPU time, elapsed into the run.
func pollWait(elapsed, cost time.Duration) time.Duration {
	if elapsed < startSpan {
		return max(startPoll, startShare*cost)
	}
	return max(minPoll, pollShare*cost)
}

// treeMemory returns the summed RSS and, with withPSS, PSS of pid and its
// descendants, the high-water RSS of pid itself, and the largest high-water
// RSS in the tree. It records each thread's schedstat (nanoseconds on a
// core, nanoseconds waiting for one) in sched.
func treeMemory(pid int, sched map[int][2]int64, withPSS bool) (rss, pss, hwm, maxHWM int64) {
	pids := []int{pid}
	for len(pids) > 0 {
		p := pids[0]
		pids = pids[1:]
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p))
		if err != nil {
			continue
		}
		rss += statusField(status, "VmRSS:")
		h := statusField(status, "VmHWM:")
		if p == pid {
			hwm = h
		}
		maxHWM = max(maxHWM, h)
		if withPSS {
			if rollup, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", p)); err == nil {
				pss += statusField(rollup, "Pss:")
			}
		}
		// Per thread: its schedstat, and the children it started (a Go
		// program starts processes from any of its threads).
		tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", p))
		for _, t := range tasks {
			if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", p, t.Name())); err == nil {
				if f := strings.Fields(string(b)); len(f) >= 2 {
					tid, _ := strconv.Atoi(t.Name())
					run, _ := strconv.ParseInt(f[0], 10, 64)
					wait, _ := strconv.ParseInt(f[1], 10, 64)
					sched[tid] = [2]int64{run, wait}
				}
			}
			children, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", p, t.Name()))
			for _, c := range strings.Fields(string(children)) {
				if n, err := strconv.Atoi(c); err == nil {
					pids = append(pids, n)
				}
			}
		}
	}
	return rss, pss, hwm, maxHWM
}

// statusField reads a "Key:   123 kB" line, in bytes.
func statusField(b []byte, key string) int64 {
	i := bytes.Index(b, []byte("\n"+key))
	if i < 0 {
		if !bytes.HasPrefix(b, []byte(key)) {
			return 0
		}
		i = -1
	}
	rest := b[i+1+len(key):]
	if j := bytes.IndexByte(rest, '\n'); j >= 0 {
		rest = rest[:j]
	}
	f := strings.Fields(string(rest))
	if len(f) == 0 {
		return 0
	}
	kb, _ := strconv.ParseInt(f[0], 10, 64)
	return kb * 1024
}

// cpuBusy returns the CPU time every core of the machine spent busy since
// boot (everything in /proc/stat's first line but idle and iowait).
func cpuBusy() (time.Duration, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	var busy int64
	for i, s := range f[1:] {
		if i == 3 || i == 4 || i >= 8 { // idle, iowait; guest time is already in user
			continue
		}
		n, _ := strconv.ParseInt(s, 10, 64)
		busy += n
	}
	return time.Duration(busy) * time.Second / 100, nil // USER_HZ is 100 on Linux
}

// waitQuiet waits until the rest of the machine uses less than limit cores
// over half a second, for at most maxWait. It returns the load it last saw.
func waitQuiet(limit float64, maxWait time.Duration) float64 {
	deadline := time.Now().Add(maxWait)
	for {
		b0, err := cpuBusy()
		if err != nil {
			return 0
		}
		t0 := time.Now()
		time.Sleep(500 * time.Millisecond)
		b1, _ := cpuBusy()
		load := (b1 - b0).Seconds() / time.Since(t0).Seconds()
		if load < limit || time.Now().After(deadline) {
			return load
		}
	}
}

// loadAvg returns the first three fields of /proc/loadavg.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// summary is the median of several measurements of one scenario.
type summary struct {
	n       int
	wall    time.Duration // median
	minWall time.Duration
	maxWall time.Duration
	cpu     time.Duration // median
	waited  time.Duration // median
	selfHWM int64         // largest
	maxRSS  int64         // largest
	treeRSS int64         // largest
	treePSS int64         // largest
	foreign float64       // mean
	rate    float64       // median, for in-process kernels
}

func summarize(ms []measurement) summary {
	if len(ms) == 0 {
		return summary{}
	}
	s := summary{n: len(ms)}
	walls := make([]time.Duration, len(ms))
	cpus := make([]time.Duration, len(ms))
	waits := make([]time.Duration, len(ms))
	rates := make([]float64, len(ms))
	for i, m := range ms {
		walls[i], cpus[i], waits[i], rates[i] = m.wall, m.cpu, m.waited, m.rate
		s.selfHWM = max(s.selfHWM, m.selfHWM)
		s.maxRSS = max(s.maxRSS, m.maxRSS)
		s.treeRSS = max(s.treeRSS, m.treeRSS)
		s.treePSS = max(s.treePSS, m.treePSS)
		s.foreign += m.foreign / float64(len(ms))
	}
	sort.Slice(walls, func(i, j int) bool { return walls[i] < walls[j] })
	sort.Slice(cpus, func(i, j int) bool { return cpus[i] < cpus[j] })
	sort.Slice(waits, func(i, j int) bool { return waits[i] < waits[j] })
	sort.Float64s(rates)
	s.wall, s.minWall, s.maxWall = walls[len(walls)/2], walls[0], walls[len(walls)-1]
	s.cpu, s.waited, s.rate = cpus[len(cpus)/2], waits[len(waits)/2], rates[len(rates)/2]
	return s
}
