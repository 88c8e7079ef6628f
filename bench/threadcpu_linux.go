package main

import (
	"time"

	"golang.org/x/sys/unix"
)

// threadCPU returns the calling thread's user+system time. It reads the
// thread's CPU clock, which counts to the nanosecond up to the call;
// getrusage's RUSAGE_THREAD counts only to the thread's last scheduler
// tick, so a poll of a few hundred microseconds measured either nothing or
// a whole tick.
func threadCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}
