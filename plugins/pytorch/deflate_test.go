package pytorch

import (
	"archive/zip"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-ml/sluice/sdk/plugin"
)

// TestDeflatedStorageIsCheckedToItsEnd is a regression test: a tensor read
// from a deflated storage stopped at the size the zip directory declares, so
// a stream that went on (a decompression bomb: 64 MiB of zeros behind a
// directory that says 24 bytes) or whose bytes were damaged (a CRC that does
// not match) was read without error. Reading a storage to its end now checks
// that it ends there, with its CRC.
func TestDeflatedStorageIsCheckedToItsEnd(t *testing.T) {
	pkl := oneTensor(6, 0, []int64{6}, []int64{1})
	good := zipBytes(t, entry{name: "archive/data.pkl", data: pkl}, entry{name: "archive/data/0", data: le32(1, 2, 3, 4, 5, 6), method: zip.Deflate})
	bomb := patchZipSize(t, zipBytes(t, entry{name: "archive/data.pkl", data: pkl},
		entry{name: "archive/data/0", data: make([]byte, 64<<20), method: zip.Deflate}), "archive/data/0", 24)
	badCRC := append([]byte(nil), good...)
	i := strings.Index(string(badCRC), "PK\x01\x02") // the central directory record of data.pkl
	j := strings.Index(string(badCRC[i+4:]), "PK\x01\x02") + i + 4
	badCRC[j+16] ^= 0xff // CRC-32 of archive/data/0 in its directory record
	for name, b := range map[string][]byte{"good": good, "bomb": bomb, "bad CRC": badCRC} {
		p := filepath.Join(t.TempDir(), "model.bin")
		os.WriteFile(p, b, 0o644)
		s, err := NewSource(Config{Path: p})
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.Describe(context.Background())
		if err == nil {
			// As the plugin server reads: io.ReadFull of the declared size.
			var rc io.ReadCloser
			if rc, err = s.Open(context.Background(), "w"); err == nil {
				_, err = io.ReadFull(rc, make([]byte, 24))
				rc.Close()
			}
		}
		s.Close()
		if name == "good" {
			if err != nil {
				t.Errorf("good: %v", err)
			}
		} else if err == nil || !plugin.IsBadInput(err) {
			t.Errorf("%s: got %v, want a bad-input error", name, err)
		}
	}
}
