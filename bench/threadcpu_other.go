//go:build !linux

package main

import "time"

// threadCPU returns the process's user+system time where a thread's own is
// not available: right for one converting thread only.
func threadCPU() time.Duration { return processCPU() }
