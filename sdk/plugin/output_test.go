package plugin

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
)

// TestWriteOutputReportsTheDigestAskedFor writes a small output with and
// without BeginOptions.Digests and checks the artifact CreateOutput and
// Committed make of it.
func TestWriteOutputReportsTheDigestAskedFor(t *testing.T) {
	data := []byte(`{"weight_map": {}}`)
	sum := sha256.Sum256(data)
	for _, opts := range []BeginOptions{{}, {Digests: true}, {Digests: true, NoFsync: true}} {
		p := filepath.Join(t.TempDir(), "model.index.json")
		art, err := WriteOutput(p, data, opts)
		if err != nil {
			t.Fatal(err)
		}
		want := ""
		if opts.Digests {
			want = hex.EncodeToString(sum[:])
		}
		if art.Path != p || art.Size != uint64(len(data)) || art.SHA256 != want {
			t.Errorf("%+v: artifact %+v, want %s, %d bytes, sha256 %q", opts, art, p, len(data), want)
		}
		if b, err := os.ReadFile(p); err != nil || string(b) != string(data) {
			t.Errorf("%+v: the file holds %q (%v)", opts, b, err)
		}
	}
}
