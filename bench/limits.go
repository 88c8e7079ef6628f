package main

import (
	"cmp"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/sluice-ml/sluice/sdk/codec"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// hashFile times Go's SHA-256 of a file, read in 1 MiB pieces on one
// goroutine: the speed the apsim sink's digest is bound by.
func hashFile(path string) (measurement, error) {
	f, err := os.Open(path)
	if err != nil {
		return measurement{}, err
	}
	defer f.Close()
	h := sha256.New()
	buf := make([]byte, 1<<20)
	c0 := processCPU()
	start := time.Now()
	n, err := io.CopyBuffer(h, f, buf)
	if err != nil {
		return measurement{}, err
	}
	m := measurement{wall: time.Since(start), cpu: processCPU() - c0}
	m.rate = float64(n) / m.wall.Seconds()
	return m, nil
}

// kernelSample is how much of a checkpoint the quantizer limits convert.
const kernelSample = 32 << 20

// kernelRate times our own codec converting a piece of a checkpoint's
// tensor data from one dtype to another, on one goroutine per copy: copies
// 1 is one core's rate with the others idle; copies = the cores is the rate
// of each core when all of them convert at once, which shared caches,
// memory and clocks make lower. The rate is in elements per CPU second of
// the converting threads.
func kernelRate(path string, from, to tensor.DType, copies int) (measurement, error) {
	f, err := os.Open(path)
	if err != nil {
		return measurement{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return measurement{}, err
	}
	// Tensor data fills the file but its first KiB or MiB; take a piece
	// from the middle, a whole number of 256-element blocks.
	size := int64(kernelSample)
	if fi.Size() < 2*size {
		size = fi.Size() / 4
	}
	eb, _ := from.ByteSize(1)
	n := int(size) / int(eb) / 256 * 256
	src := make([]byte, n*int(eb))
	off := fi.Size() / 2 &^ 4095
	if _, err := f.ReadAt(src, off); err != nil {
		return measurement{}, fmt.Errorf("reading a sample of %s: %w", path, err)
	}
	// A NaN or infinity from reading across a tensor boundary would not
	// change the speed; values are what they are.
	dn, err := to.ByteSize(uint64(n))
	if err != nil {
		return measurement{}, err
	}
	// Each copy converts its own source into its own destination, so no two
	// threads share a cache line.
	srcs, dsts := make([][]byte, copies), make([][]byte, copies)
	for i := range copies {
		srcs[i], dsts[i] = src, make([]byte, dn)
		if i > 0 {
			srcs[i] = slices.Clone(src)
		}
	}
	// A first pass touches dst and warms caches; the timed passes that follow
	// measure the kernel alone. The rate is per CPU second of the threads
	// that convert, so other load on the machine does not lower it; the wall
	// time is kept too. The rate is the median pass, not the fastest: a
	// scenario is timed once per round, and the fastest of three passes
	// would compare it with the kernel's best moment (passes of a quarter
	// second vary by ±15 % on a shared machine).
	var passes [kernelPasses]measurement
	for i := -1; i < len(passes); i++ {
		m, err := convertAtOnce(from, to, dsts, srcs, n)
		if err != nil {
			return measurement{}, err
		}
		if i >= 0 {
			passes[i] = m
		}
	}
	return medianPass(passes[:]), nil
}

// convertAtOnce converts every src to its dst at the same time, one
// goroutine locked to its thread each, and returns the wall time, the
// threads' CPU time, and the elements converted per CPU second.
func convertAtOnce(from, to tensor.DType, dsts, srcs [][]byte, n int) (measurement, error) {
	cpus := make([]time.Duration, len(srcs))
	var g errgroup.Group
	var ready, start sync.WaitGroup
	ready.Add(len(srcs))
	start.Add(1)
	for i := range srcs {
		g.Go(func() error {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			ready.Done()
			start.Wait()
			c0 := threadCPU()
			err := codec.Convert(from, to, dsts[i], srcs[i], n)
			cpus[i] = threadCPU() - c0
			if err != nil {
				return fmt.Errorf("%s → %s: %w", from, to, err)
			}
			return nil
		})
	}
	ready.Wait()
	t0 := time.Now()
	start.Done()
	if err := g.Wait(); err != nil {
		return measurement{}, err
	}
	m := measurement{wall: time.Since(t0)}
	for _, c := range cpus {
		m.cpu += c
	}
	m.rate = float64(n*len(srcs)) / max(m.cpu.Seconds(), 1e-9)
	return m, nil
}

// kernelPasses is how many timed passes kernelRate makes.
const kernelPasses = 3

// medianPass returns the pass of median rate (of an even count, the
// slower of the middle two).
func medianPass(passes []measurement) measurement {
	sorted := slices.Clone(passes)
	slices.SortFunc(sorted, func(a, b measurement) int { return cmp.Compare(a.rate, b.rate) })
	return sorted[(len(sorted)-1)/2]
}

// processCPU returns this process's user+system time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
