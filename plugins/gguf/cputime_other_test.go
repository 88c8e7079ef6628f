//go:build !linux

package gguf

import "time"

// threadCPU is unavailable off Linux.
func threadCPU() (time.Duration, bool) { return 0, false }
