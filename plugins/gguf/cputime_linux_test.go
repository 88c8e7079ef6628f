package gguf

import (
	"time"

	"golang.org/x/sys/unix"
)

// threadCPU returns the CPU time the calling OS thread has used; callers
// lock the goroutine to its thread. It makes timing tests independent of
// other load on the machine. It reads the thread's CPU clock, which counts
// up to the call, where getrusage(RUSAGE_THREAD) counts only to the last
// scheduler tick and leaves out up to a tick of a short measurement.
func threadCPU() (time.Duration, bool) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0, false
	}
	return time.Duration(ts.Nano()), true
}
