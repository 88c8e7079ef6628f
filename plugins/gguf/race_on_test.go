//go:build race

package gguf

// raceEnabled reports a -race build, whose instrumentation makes timings meaningless.
const raceEnabled = true
