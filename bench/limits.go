package main

import (
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"

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
// tensor data from one dtype to another on one goroutine. The rate is in
// elements per second of wall time.
func kernelRate(path string, from, to tensor.DType) (measurement, error) {
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
	dst := make([]byte, dn)
	// A first pass touches dst and warms caches; the timed passes that follow
	// measure the kernel alone. The rate is per CPU second of this process
	// (the kernel runs on one goroutine), so other load on the machine does
	// not lower it; the wall time is kept too.
	if err := codec.Convert(from, to, dst, src, n); err != nil {
		return measurement{}, fmt.Errorf("%s → %s: %w", from, to, err)
	}
	var best measurement
	for range 3 {
		c0 := processCPU()
		start := time.Now()
		codec.Convert(from, to, dst, src, n)
		m := measurement{wall: time.Since(start), cpu: processCPU() - c0}
		m.rate = float64(n) / max(m.cpu.Seconds(), 1e-9)
		if m.rate > best.rate {
			best = m
		}
	}
	return best, nil
}

// processCPU returns this process's user+system time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
