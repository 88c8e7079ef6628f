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

// madvPopulateRead is MADV_POPULATE_READ, which package syscall does not
// name.
const madvPopulateRead = 22

// Populate maps the pages of the running executable's read-only mappings
// that the page cache holds. Pages it does not hold (the binary's first
// start, a cache under pressure) are left to fault in as start-up touches
// them: populating them would read from the disk what start-up may never
// need. It returns the first error of reading /proc/self or of madvise.
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

// pathOf returns the path of a maps line: what follows its fifth field.
func pathOf(line []byte) []byte {
	rest := line
	for range 5 {
		_, rest, _ = bytes.Cut(bytes.TrimLeft(rest, " "), []byte(" "))
	}
	return bytes.TrimSpace(rest)
}
