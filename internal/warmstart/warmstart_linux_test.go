package warmstart

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

func TestExecutableMappings(t *testing.T) {
	maps := `00400000-00f0d000 r-xp 00000000 fe:00 9981294                            /opt/my tools/sluice
00f0d000-01ab1000 r--p 00b0d000 fe:00 9981294                            /opt/my tools/sluice
01ab1000-01b98000 rw-p 016b1000 fe:00 9981294                            /opt/my tools/sluice
01b98000-03be5000 rw-p 00000000 00:00 0 
7f0000000000-7f0000001000 r-xp 00000000 fe:00 1234                       /usr/lib/libc.so.6
7f0000002000-7f0000003000 r--p 00000000 fe:00 1234                       /opt/my tools/sluice2
7ffd1000-7ffd0000 r--p 00000000 fe:00 9981294                            /opt/my tools/sluice
zz-7ffd0000 r--p 00000000 fe:00 9981294                                  /opt/my tools/sluice
7ffe1000-7ffe2000 r--p 00000000 fe:00 9981294                            /opt/my tools/sluice`
	got := executableMappings([]byte(maps), []byte("/opt/my tools/sluice"))
	want := []mapping{{0x400000, 0xf0d000}, {0xf0d000, 0x1ab1000}, {0x7ffe1000, 0x7ffe2000}}
	if len(got) != len(want) {
		t.Fatalf("got %x, want %x", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("mapping %d: got %x, want %x", i, got[i], want[i])
		}
	}
	if got := executableMappings(nil, []byte("/x")); len(got) != 0 {
		t.Errorf("no maps: got %x", got)
	}
}

// TestPopulateMakesTheExecutableResident: after the kernel is told to
// drop this process's pages of the executable's constants (they come back
// from the file as they are touched), Populate maps every page of the
// executable's read-only mappings again.
func TestPopulateMakesTheExecutableResident(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Skip(err)
	}
	dropped := 0
	for _, m := range executableMappings(maps, []byte(exe)) {
		if perms := mappingPerms(maps, m); perms == "r--p" {
			if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, m.start, m.end-m.start, syscall.MADV_DONTNEED); errno != 0 {
				t.Fatal(errno)
			}
			dropped++
		}
	}
	if dropped == 0 {
		t.Skip("the executable has no mapping of constants apart from its code")
	}
	if short, _ := partlyResident(t); len(short) == 0 {
		t.Fatal("dropping the constants' pages left them resident: the test cannot tell")
	}
	if err := Populate(); errors.Is(err, syscall.EINVAL) {
		t.Skip("this kernel has no MADV_POPULATE_READ (Linux 5.14)")
	} else if err != nil {
		t.Fatal(err)
	}
	short, checked := partlyResident(t)
	if checked == 0 {
		t.Fatal("no read-only mapping of the executable in /proc/self/smaps")
	}
	for _, s := range short {
		t.Errorf("after Populate: %s", s)
	}
}

// mappingPerms returns the permissions of mapping m in a maps listing.
func mappingPerms(maps []byte, m mapping) string {
	for _, line := range strings.Split(string(maps), "\n") {
		fs := strings.Fields(line)
		if len(fs) < 2 {
			continue
		}
		from, to, _ := strings.Cut(fs[0], "-")
		start, _ := strconv.ParseUint(from, 16, 64)
		end, _ := strconv.ParseUint(to, 16, 64)
		if uintptr(start) == m.start && uintptr(end) == m.end {
			return fs[1]
		}
	}
	return ""
}

// partlyResident describes the executable's read-only mappings that are
// not wholly resident, and counts the mappings it looked at.
func partlyResident(t *testing.T) (short []string, checked int) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Skip(err)
	}
	current, size := "", 0 // the mapping whose counts follow, if one of exe's read-only ones
	for _, line := range strings.Split(string(b), "\n") {
		fs := strings.Fields(line)
		switch {
		case len(fs) >= 6 && strings.Contains(fs[0], "-"):
			current = ""
			if strings.HasSuffix(line, exe) && strings.HasPrefix(fs[1], "r-") {
				current = fs[0]
			}
		case current != "" && len(fs) >= 2 && fs[0] == "Size:":
			size, _ = strconv.Atoi(fs[1])
		case current != "" && len(fs) >= 2 && fs[0] == "Rss:":
			rss, _ := strconv.Atoi(fs[1])
			if rss != size {
				short = append(short, fmt.Sprintf("mapping %s of %s: %d of %d kB resident", current, exe, rss, size))
			}
			checked++
			current = ""
		}
	}
	return short, checked
}

// TestCachedRunsFollowThePageCache: in a mapping of a file whose pages were
// dropped from the page cache, only the pages read since are cached runs.
func TestCachedRunsFollowThePageCache(t *testing.T) {
	page := uintptr(os.Getpagesize())
	size := 16 * int(page)
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, bytes.Repeat([]byte{7}, size), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil { // clean pages, which the kernel may drop
		t.Fatal(err)
	}
	if err := unix.Fadvise(int(f.Fd()), 0, int64(size), unix.FADV_DONTNEED); err != nil {
		t.Skip(err)
	}
	b, err := unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(b)
	start := uintptr(unsafe.Pointer(&b[0]))
	m := mapping{start, start + uintptr(size)}
	if runs := cachedRuns(m, page); len(runs) != 0 {
		t.Skipf("the kernel kept pages of the file after FADV_DONTNEED (%x): the test cannot tell", runs)
	}
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_RANDOM); err != nil { // no readahead
		t.Fatal(err)
	}
	for _, p := range []int{2, 3, 9} {
		if _, err := f.ReadAt(make([]byte, page), int64(p)*int64(page)); err != nil {
			t.Fatal(err)
		}
	}
	runs := cachedRuns(m, page)
	want := []mapping{{start + 2*page, start + 4*page}, {start + 9*page, start + 10*page}}
	if len(runs) != len(want) {
		t.Fatalf("cached runs %x, want %x", runs, want)
	}
	for i := range want {
		if runs[i] != want[i] {
			t.Errorf("run %d: %x, want %x", i, runs[i], want[i])
		}
	}
}

func TestAnonymousMappingAt(t *testing.T) {
	maps := `00400000-00f0d000 r-xp 00000000 fe:00 9981294                            /opt/sluice
01b98000-03be5000 rw-p 00000000 00:00 0 
2a3c00000000-2a3c00800000 rw-p 00000000 00:00 0                          [anon: Go: heap]
2a3c00800000-2a3c04000000 ---p 00000000 00:00 0 
7f0000000000-7f0000100000 rw-p 00000000 fe:00 1234                       /data/file
7f0000200000-7f0000300000 rw-s 00000000 00:01 77                         /memfd:sluice-arena (deleted)
7f0000300000-7f0000400000 rw-p 00000000 00:00 0                          [stack]`
	for _, tc := range []struct {
		a    uintptr
		want mapping
		ok   bool
	}{
		{0x1b98000, mapping{0x1b98000, 0x3be5000}, true},
		{0x3be4fff, mapping{0x1b98000, 0x3be5000}, true},
		{0x2a3c00400000, mapping{0x2a3c00000000, 0x2a3c00800000}, true},
		{0x3be5000, mapping{}, false},      // between mappings
		{0x2a3c00900000, mapping{}, false}, // reserved, not mapped
		{0x7f0000000100, mapping{}, false}, // a file's
		{0x7f0000200100, mapping{}, false}, // shared
		{0x7f0000300100, mapping{}, false}, // the stack
		{0x500000, mapping{}, false},       // code
	} {
		got, ok := anonymousMappingAt([]byte(maps), tc.a)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%#x: got %x, %v; want %x, %v", tc.a, got, ok, tc.want, tc.ok)
		}
	}
}

// TestPopulateMakesTheHeapAheadResident: after Populate, the pages of the
// heap from its newest object up, heapAhead bytes or to the end of its
// mapping, are resident.
func TestPopulateMakesTheHeapAheadResident(t *testing.T) {
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Skip(err)
	}
	page := uintptr(syscall.Getpagesize())
	if err := populateHeap(maps, page); errors.Is(err, syscall.EINVAL) {
		t.Skip("the kernel does not populate mappings (MADV_POPULATE_WRITE, Linux 5.14)")
	} else if err != nil {
		t.Fatal(err)
	}
	from := uintptr(unsafe.Pointer(heapObject)) &^ (page - 1)
	m, ok := anonymousMappingAt(maps, from)
	if !ok {
		t.Fatalf("no mapping of the heap holds %#x", from)
	}
	end := min(m.end, from+heapAhead)
	vec := make([]byte, (end-from)/page)
	if _, _, errno := syscall.Syscall(syscall.SYS_MINCORE, from, end-from, uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		t.Fatal(errno)
	}
	missing := 0
	for _, v := range vec {
		if v&1 == 0 {
			missing++
		}
	}
	if missing > 0 {
		t.Errorf("%d of the %d pages from the heap's newest object up are not resident", missing, len(vec))
	}
}
