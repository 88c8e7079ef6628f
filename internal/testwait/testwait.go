// Package testwait helps tests wait for what other goroutines bring about.
package testwait

import (
	"testing"
	"time"
)

// Timeout is how long Until waits.
const Timeout = 5 * time.Second

// Until calls cond every millisecond until it reports true, and fails the
// test with "what never happened" when that takes longer than Timeout.
func Until(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(Timeout); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s never happened", what)
		}
	}
}
