package npz

import (
	"encoding/binary"
	"fmt"
	"unicode/utf8"
)

// A .npz file is a ZIP archive with one stored (or, from
// numpy.savez_compressed, deflated) entry NAME.npy per array. The sink
// writes stored entries only, so every byte has an offset known before any
// tensor arrives: tensors can be written in any order, at once, straight to
// their place. The CRC-32 of each entry is computed as its tensor streams
// in and patched into the local header at Commit, when the central
// directory is written.
//
// ZIP64 records (APPNOTE.TXT 4.5.3, 4.3.14, 4.3.15) are written where a
// size or offset does not fit 32 bits, as numpy.savez does on large arrays.
// Entries carry the DOS time 1980-01-01 00:00, so the same tensors always
// give the same bytes.

const (
	sigLocal      = 0x04034b50
	sigCentral    = 0x02014b50
	sigEnd        = 0x06054b50
	sigZip64End   = 0x06064b50
	sigZip64Locat = 0x07064b50

	localHeaderLen   = 30
	centralHeaderLen = 46
	endLen           = 22
	zip64EndLen      = 56
	zip64LocatorLen  = 20

	max32 = 0xffffffff
	max16 = 0xffff

	// dosDate is 1980-01-01 in MS-DOS date format; the time is 00:00:00.
	dosDate = 1<<5 | 1
	// versionMadeBy says Unix (3) and ZIP 4.5.
	versionMadeBy = 3<<8 | 45
	// fileMode is -rw-r--r--, in the high half of the external attributes.
	fileMode = 0o100644 << 16
)

// zipEntry is one planned entry.
type zipEntry struct {
	name    string
	npy     []byte // the .npy header
	size    uint64 // the array's bytes
	headOff uint64 // offset of the local file header
	dataOff uint64 // offset of the array's first byte
	local64 bool   // the local header carries ZIP64 sizes
}

// entrySize is the entry's stored size: .npy header and array.
func (e *zipEntry) entrySize() uint64 { return uint64(len(e.npy)) + e.size }

// zipLayout is a whole archive, planned.
type zipLayout struct {
	entries []*zipEntry
	byName  map[string]*zipEntry
	cdOff   uint64
	cdSize  uint64
	size    uint64
	// force64 writes ZIP64 records everywhere, for tests.
	force64 bool
}

func planZip(entries []*zipEntry, force64 bool) (*zipLayout, error) {
	l := &zipLayout{entries: entries, byName: map[string]*zipEntry{}, force64: force64}
	var off uint64
	for _, e := range entries {
		if len(e.name) > max16 {
			return nil, fmt.Errorf("entry name of %d bytes is too long for ZIP", len(e.name))
		}
		if _, dup := l.byName[e.name]; dup {
			return nil, fmt.Errorf("two arrays named %q", e.name)
		}
		l.byName[e.name] = e
		e.local64 = force64 || e.entrySize() >= max32
		e.headOff = off
		e.dataOff = off + localHeaderLen + uint64(len(e.name)) + uint64(len(e.localExtra())) + uint64(len(e.npy))
		off = e.dataOff + e.size
	}
	l.cdOff = off
	for _, e := range entries {
		l.cdSize += centralHeaderLen + uint64(len(e.name)) + uint64(len(l.centralExtra(e)))
	}
	l.size = l.cdOff + l.cdSize + endLen
	if l.zip64End() {
		l.size += zip64EndLen + zip64LocatorLen
	}
	return l, nil
}

func (e *zipEntry) localExtra() []byte {
	if !e.local64 {
		return nil
	}
	b := binary.LittleEndian.AppendUint16(nil, 1)
	b = binary.LittleEndian.AppendUint16(b, 16)
	b = binary.LittleEndian.AppendUint64(b, e.entrySize())
	return binary.LittleEndian.AppendUint64(b, e.entrySize())
}

// centralExtra holds the ZIP64 fields of the central header: only those
// whose 32-bit field overflows, in the order the format fixes.
func (l *zipLayout) centralExtra(e *zipEntry) []byte {
	var body []byte
	if l.force64 || e.entrySize() >= max32 {
		body = binary.LittleEndian.AppendUint64(body, e.entrySize())
		body = binary.LittleEndian.AppendUint64(body, e.entrySize())
	}
	if l.force64 || e.headOff >= max32 {
		body = binary.LittleEndian.AppendUint64(body, e.headOff)
	}
	if body == nil {
		return nil
	}
	b := binary.LittleEndian.AppendUint16(nil, 1)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(body)))
	return append(b, body...)
}

func (l *zipLayout) zip64End() bool {
	return l.force64 || len(l.entries) >= max16 || l.cdOff >= max32 || l.cdSize >= max32
}

func flags(name string) uint16 {
	for i := 0; i < len(name); i++ {
		if name[i] >= utf8.RuneSelf {
			return 1 << 11 // the name is UTF-8
		}
	}
	return 0
}

func clamp32(v uint64, wide bool) uint32 {
	if wide {
		return max32
	}
	return uint32(v)
}

// localHeader is an entry's local file header and .npy header, with the
// CRC-32 left zero (Commit patches it at headOff+14).
func (e *zipEntry) localHeader() []byte {
	ver := uint16(20)
	if e.local64 {
		ver = 45
	}
	le := binary.LittleEndian
	b := le.AppendUint32(nil, sigLocal)
	b = le.AppendUint16(b, ver)
	b = le.AppendUint16(b, flags(e.name))
	b = le.AppendUint16(b, 0) // stored
	b = le.AppendUint16(b, 0) // time
	b = le.AppendUint16(b, dosDate)
	b = le.AppendUint32(b, 0) // CRC-32, patched at Commit
	b = le.AppendUint32(b, clamp32(e.entrySize(), e.local64))
	b = le.AppendUint32(b, clamp32(e.entrySize(), e.local64))
	extra := e.localExtra()
	b = le.AppendUint16(b, uint16(len(e.name)))
	b = le.AppendUint16(b, uint16(len(extra)))
	b = append(b, e.name...)
	b = append(b, extra...)
	return append(b, e.npy...)
}

// centralDirectory renders the central directory and the end records, with
// the entries' CRC-32s.
func (l *zipLayout) centralDirectory(crcs map[string]uint32) []byte {
	le := binary.LittleEndian
	var b []byte
	for _, e := range l.entries {
		extra := l.centralExtra(e)
		ver := uint16(20)
		if extra != nil {
			ver = 45
		}
		b = le.AppendUint32(b, sigCentral)
		b = le.AppendUint16(b, versionMadeBy)
		b = le.AppendUint16(b, ver)
		b = le.AppendUint16(b, flags(e.name))
		b = le.AppendUint16(b, 0)
		b = le.AppendUint16(b, 0)
		b = le.AppendUint16(b, dosDate)
		b = le.AppendUint32(b, crcs[e.name])
		wide := l.force64 || e.entrySize() >= max32
		b = le.AppendUint32(b, clamp32(e.entrySize(), wide))
		b = le.AppendUint32(b, clamp32(e.entrySize(), wide))
		b = le.AppendUint16(b, uint16(len(e.name)))
		b = le.AppendUint16(b, uint16(len(extra)))
		b = le.AppendUint16(b, 0) // comment
		b = le.AppendUint16(b, 0) // disk
		b = le.AppendUint16(b, 0) // internal attributes
		b = le.AppendUint32(b, fileMode)
		b = le.AppendUint32(b, clamp32(e.headOff, l.force64 || e.headOff >= max32))
		b = append(b, e.name...)
		b = append(b, extra...)
	}
	n := uint64(len(l.entries))
	if l.zip64End() {
		end64 := l.cdOff + l.cdSize
		b = le.AppendUint32(b, sigZip64End)
		b = le.AppendUint64(b, zip64EndLen-12)
		b = le.AppendUint16(b, versionMadeBy)
		b = le.AppendUint16(b, 45)
		b = le.AppendUint32(b, 0)
		b = le.AppendUint32(b, 0)
		b = le.AppendUint64(b, n)
		b = le.AppendUint64(b, n)
		b = le.AppendUint64(b, l.cdSize)
		b = le.AppendUint64(b, l.cdOff)
		b = le.AppendUint32(b, sigZip64Locat)
		b = le.AppendUint32(b, 0)
		b = le.AppendUint64(b, end64)
		b = le.AppendUint32(b, 1)
	}
	wide := l.zip64End()
	count := uint16(n)
	if wide && n >= max16 || l.force64 {
		count = max16
	}
	b = le.AppendUint32(b, sigEnd)
	b = le.AppendUint16(b, 0)
	b = le.AppendUint16(b, 0)
	b = le.AppendUint16(b, count)
	b = le.AppendUint16(b, count)
	b = le.AppendUint32(b, clamp32(l.cdSize, l.force64 || l.cdSize >= max32))
	b = le.AppendUint32(b, clamp32(l.cdOff, l.force64 || l.cdOff >= max32))
	b = le.AppendUint16(b, 0)
	return b
}
