//go:build linux

package warmstart

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
	"unsafe"
)

func init() { _ = Populate() }

// madvPopulateRead and madvPopulateWrite are MADV_POPULATE_READ and
// MADV_POPULATE_WRITE, which package syscall does not name.
const (
	madvPopulateRead  = 22
	madvPopulateWrite = 23
)

// heapAhead is how much of the Go heap, from its newest object up, Populate
// makes resident: about what a plugin process allocates before it serves
// its first call (the host allocates more).
const heapAhead = 8 << 20

// Populate maps the pages of the running executable's read-only mappings
// that the page cache holds, and heapAhead bytes of the heap from its newest
// object up. Pages of the executable the cache does not hold (the binary's
// first start, a cache under pressure) are left to fault in as start-up
// touches them: populating them would read from the disk what start-up may
// never need. It returns the first error of reading /proc/self or of
// madvise.
func Populate() error {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return err
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return err
	}
	page := uintptr(syscall.Getpagesize())
	for _, m := range executableMappings(maps, []byte(exe)) {
		for _, run := range cachedRuns(m, page) {
			if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, run.start, run.end-run.start, madvPopulateRead); errno != 0 {
				return errno
			}
		}
	}
	return populateHeap(maps, page)
}

// heapObject is an object of the heap's, whose address says where the heap
// grows.
var heapObject *[16]byte

// populateHeap makes resident heapAhead bytes of the heap from a new
// object's page up, as far as the heap's mapping goes: the Go runtime gives
// out heap memory from the lowest free address, so the pages above its
// newest object are the next it touches, each a page fault of its own.
func populateHeap(maps []byte, page uintptr) error {
	heapObject = new([16]byte)
	from := uintptr(unsafe.Pointer(heapObject)) &^ (page - 1)
	m, ok := anonymousMappingAt(maps, from)
	if !ok {
		return nil
	}
	end := min(m.end, from+heapAhead)
	if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, from, end-from, madvPopulateWrite); errno != 0 {
		return errno
	}
	return nil
}

// cachedRuns returns the runs of m's pages that are in the page cache
// (mincore), nothing if mincore fails.
func cachedRuns(m mapping, page uintptr) []mapping {
	vec := make([]byte, (m.end-m.start+page-1)/page)
	if len(vec) == 0 {
		return nil
	}
	if _, _, errno := syscall.Syscall(syscall.SYS_MINCORE, m.start, m.end-m.start, uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		return nil
	}
	var runs []mapping
	for i := 0; i < len(vec); {
		if vec[i]&1 == 0 {
			i++
			continue
		}
		j := i + 1
		for j < len(vec) && vec[j]&1 != 0 {
			j++
		}
		runs = append(runs, mapping{m.start + uintptr(i)*page, min(m.start+uintptr(j)*page, m.end)})
		i = j
	}
	return runs
}

// mapping is an address range of /proc/self/maps.
type mapping struct{ start, end uintptr }

// executableMappings returns the read-only mappings (code, constants) of
// the file exe among the lines of a /proc/PID/maps listing.
func executableMappings(maps, exe []byte) []mapping {
	var found []mapping
	for line := range bytes.Lines(maps) {
		// start-end perms offset dev inode path, the path holding any spaces
		f := bytes.Fields(line)
		if len(f) < 6 || !bytes.HasPrefix(f[1], []byte("r-")) || !bytes.Equal(pathOf(line), exe) {
			continue
		}
		from, to, ok := bytes.Cut(f[0], []byte("-"))
		start, err1 := strconv.ParseUint(string(from), 16, 64)
		end, err2 := strconv.ParseUint(string(to), 16, 64)
		if ok && err1 == nil && err2 == nil && start < end {
			found = append(found, mapping{uintptr(start), uintptr(end)})
		}
	}
	return found
}

// anonymousMappingAt returns the private writable mapping of no file that
// holds address a, among the lines of a /proc/PID/maps listing. Such a
// mapping has no path, or a name in brackets ("[anon: Go: heap]" where the
// kernel keeps the names the Go runtime gives its mappings).
func anonymousMappingAt(maps []byte, a uintptr) (mapping, bool) {
	for line := range bytes.Lines(maps) {
		f := bytes.Fields(line)
		if len(f) < 5 || !bytes.Equal(f[1], []byte("rw-p")) || len(f) > 5 && !bytes.HasPrefix(pathOf(line), []byte("[anon:")) {
			continue
		}
		from, to, ok := bytes.Cut(f[0], []byte("-"))
		start, err1 := strconv.ParseUint(string(from), 16, 64)
		end, err2 := strconv.ParseUint(string(to), 16, 64)
		if ok && err1 == nil && err2 == nil && uintptr(start) <= a && a < uintptr(end) {
			return mapping{uintptr(start), uintptr(end)}, true
		}
	}
	return mapping{}, false
}

// pathOf returns the path of a maps line: what follows its fifth field.
func pathOf(line []byte) []byte {
	rest := line
	for range 5 {
		_, rest, _ = bytes.Cut(bytes.TrimLeft(rest, " "), []byte(" "))
	}
	return bytes.TrimSpace(rest)
}
