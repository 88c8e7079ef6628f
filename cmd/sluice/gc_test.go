package main

import (
	"math"
	"runtime/debug"
	"testing"
)

func TestRelaxGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))

	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	relaxGC()
	if p := debug.SetGCPercent(100); p != -1 {
		t.Errorf("GC percent after relaxGC = %d, want -1 (off until the limit)", p)
	}
	if l := debug.SetMemoryLimit(math.MaxInt64); l != headerHeapLimit {
		t.Errorf("memory limit after relaxGC = %d, want %d", l, headerHeapLimit)
	}

	t.Setenv("GOGC", "50")
	debug.SetGCPercent(50)
	relaxGC()
	if p := debug.SetGCPercent(100); p != 50 {
		t.Errorf("GC percent with GOGC set = %d, want it left at 50", p)
	}
}
