package main

import (
	"time"

	"golang.org/x/sys/unix"
)

// threadCPU returns the calling thread's user+system time.
func threadCPU() time.Duration {
	var ru unix.Rusage
	unix.Getrusage(unix.RUSAGE_THREAD, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
