package hugeheap

import (
	"bufio"
	"fmt"
	"os"
	"runtime/debug"
	"strings"
	"testing"
)

// vmFlags returns the VmFlags of the mapping of /proc/self/smaps that holds
// address a.
func vmFlags(t *testing.T, a uintptr) []string {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skipf("no /proc/self/smaps: %v", err)
	}
	defer f.Close()
	in := false
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := s.Text()
		var start, end uintptr
		if n, _ := fmt.Sscanf(line, "%x-%x ", &start, &end); n == 2 {
			in = start <= a && a < end
			continue
		}
		if flags, ok := strings.CutPrefix(line, "VmFlags:"); ok && in {
			return strings.Fields(flags)
		}
	}
	t.Fatalf("no mapping of /proc/self/smaps holds %#x", a)
	return nil
}

func TestReserveAdvisesHugePages(t *testing.T) {
	if _, err := os.Stat("/sys/kernel/mm/transparent_hugepage/enabled"); err != nil {
		t.Skip("this kernel has no transparent huge pages")
	}
	from, end, err := reserve(16 << 20)
	if err != nil {
		t.Fatal(err)
	}
	if end-from < 12<<20 || from%hugePage != 0 || end%hugePage != 0 {
		t.Fatalf("advised [%#x, %#x): want at least 12 MiB on huge-page boundaries", from, end)
	}
	for _, a := range []uintptr{from, end - 1} {
		flags := vmFlags(t, a)
		found := false
		for _, f := range flags {
			found = found || f == "hg"
		}
		if !found {
			t.Errorf("the mapping of %#x has flags %v, no hg (MADV_HUGEPAGE)", a, flags)
		}
	}
}

func TestReserveRestoresTheCollector(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(150))
	if err := Reserve(8 << 20); err != nil {
		t.Logf("madvise: %v", err) // a kernel without huge pages; the collector must still be restored
	}
	if got := debug.SetGCPercent(150); got != 150 {
		t.Errorf("GOGC after Reserve = %d, want 150", got)
	}
}

func TestReserveOfLessThanTwoHugePagesDoesNothing(t *testing.T) {
	from, end, err := reserve(hugePage)
	if from != 0 || end != 0 || err != nil {
		t.Errorf("reserve(2 MiB) = %#x, %#x, %v; want nothing", from, end, err)
	}
}
