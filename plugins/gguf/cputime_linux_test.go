package gguf

import (
	"time"

	"golang.org/x/sys/unix"
)

// threadCPU returns the CPU time the calling OS thread has used; callers
// lock the goroutine to its thread. It makes timing tests independent of
// other load on the machine.
func threadCPU() (time.Duration, bool) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
