package main

import (
	"os"
	"runtime/debug"
)

// headerHeapLimit is the heap up to which a command that reads only headers
// (sluice info) runs without collecting garbage.
const headerHeapLimit = 256 << 20

// relaxGC lets a short command that reads only headers skip garbage
// collection until its memory reaches headerHeapLimit: it allocates a few
// MB and exits, and collecting them costs more than it frees (7-8 ms of a
// 40 ms sluice info on a GGUF with a 150k-token vocabulary). Past the limit
// the collector runs as usual. GOGC or GOMEMLIMIT in the environment win.
func relaxGC() {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	debug.SetGCPercent(-1)
	debug.SetMemoryLimit(headerHeapLimit)
}
