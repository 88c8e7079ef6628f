//go:build linux

package warmstart

import (
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
	exe := make([]byte, 4096)
	n, err := syscall.Readlink("/proc/self/exe", exe)
	if err != nil {
		return err
	}
	exe = exe[:n]
	maps, err := readAll("/proc/self/maps")
	if err != nil {
		return err
	}
	page := uintptr(syscall.Getpagesize())
	for _, m := range executableMappings(maps, exe) {
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
	for len(maps) > 0 {
		line := maps
		if i := indexByte(maps, '\n'); i >= 0 {
			line, maps = maps[:i], maps[i+1:]
		} else {
			maps = nil
		}
		// start-end perms offset dev inode path
		f := fields(line, 6)
		if len(f) < 6 || string(f[5]) != string(exe) || len(f[1]) < 2 || f[1][0] != 'r' || f[1][1] != '-' {
			continue
		}
		dash := indexByte(f[0], '-')
		if dash < 0 {
			continue
		}
		start, ok1 := parseHex(f[0][:dash])
		end, ok2 := parseHex(f[0][dash+1:])
		if ok1 && ok2 && start < end {
			found = append(found, mapping{start, end})
		}
	}
	return found
}

// fields splits line at runs of spaces into at most n fields, the last
// taking the rest of the line (a path may hold spaces).
func fields(line []byte, n int) [][]byte {
	var f [][]byte
	for len(line) > 0 && len(f) < n-1 {
		for len(line) > 0 && line[0] == ' ' {
			line = line[1:]
		}
		i := indexByte(line, ' ')
		if i < 0 {
			i = len(line)
		}
		if i > 0 {
			f = append(f, line[:i])
		}
		line = line[i:]
	}
	for len(line) > 0 && line[0] == ' ' {
		line = line[1:]
	}
	if len(line) > 0 {
		f = append(f, line)
	}
	return f
}

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}

func parseHex(b []byte) (uintptr, bool) {
	if len(b) == 0 || len(b) > 16 {
		return 0, false
	}
	var v uintptr
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			v = v<<4 | uintptr(c-'0')
		case c >= 'a' && c <= 'f':
			v = v<<4 | uintptr(c-'a'+10)
		default:
			return 0, false
		}
	}
	return v, true
}

// readAll reads a file of /proc whole.
func readAll(path string) ([]byte, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer syscall.Close(fd)
	b := make([]byte, 0, 8192)
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := syscall.Read(fd, b[len(b):cap(b)])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return b, nil
		}
		b = b[:len(b)+n]
	}
}
