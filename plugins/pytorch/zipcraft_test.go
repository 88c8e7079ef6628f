package pytorch

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"testing"
)

// zipBytes builds a torch-style zip in memory.
func zipBytes(t testing.TB, entries ...entry) []byte {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range entries {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: e.name, Method: e.method})
		if err != nil {
			t.Fatal(err)
		}
		w.Write(e.data)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// patchZipSize rewrites the uncompressed size of entry name to n in its
// local header and central directory record.
func patchZipSize(t testing.TB, b []byte, name string, n uint32) []byte {
	b = append([]byte(nil), b...)
	patched := 0
	for i := 0; i+46 < len(b); i++ {
		switch {
		case bytes.Equal(b[i:i+4], []byte("PK\x03\x04")):
			nl := int(binary.LittleEndian.Uint16(b[i+26:]))
			if i+30+nl <= len(b) && string(b[i+30:i+30+nl]) == name {
				binary.LittleEndian.PutUint32(b[i+22:], n)
				patched++
			}
		case bytes.Equal(b[i:i+4], []byte("PK\x01\x02")):
			nl := int(binary.LittleEndian.Uint16(b[i+28:]))
			if i+46+nl <= len(b) && string(b[i+46:i+46+nl]) == name {
				binary.LittleEndian.PutUint32(b[i+24:], n)
				patched++
			}
		}
	}
	if patched != 2 {
		t.Fatalf("patched %d size fields of %s, want 2", patched, name)
	}
	return b
}

// oneTensor is a state dict {"w": f32 tensor} over storage "0", built with
// the given storage numel, offset, shape and stride.
func oneTensor(numel, offset int64, shape, stride []int64) []byte {
	p := newPickle().op('}')
	p.str("w").tensorV2("FloatStorage", "0", numel, offset, shape, stride).op('s', '.')
	return p.Bytes()
}
