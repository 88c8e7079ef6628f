//go:build !race

package main

// raceEnabled reports that the race detector is on; timing limits do not
// apply then.
const raceEnabled = false
