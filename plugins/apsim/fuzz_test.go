package apsim

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the fuzz seed corpus under testdata/fuzz")

// FuzzReader feeds arbitrary bytes to the file reader: parsing, the digest
// and signature checks and the manifest must never panic, and what parses
// must describe tensors that lie inside the file.
func FuzzReader(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		file, err := parseFile(bytes.NewReader(b), int64(len(b)), "fuzz.apsim")
		if err != nil {
			return
		}
		c := &checkpoint{files: []*openFile{{file: file}}}
		c.checkSingle(context.Background(), true, nil)
		m, _, err := c.manifest()
		if err != nil {
			return
		}
		for _, ti := range m.Tensors {
			if ti.Location != nil && ti.Location.Offset+ti.Location.Length > uint64(len(b)) {
				t.Fatalf("tensor %q lies outside the file", ti.Name)
			}
		}
	})
}

// FuzzIndex feeds arbitrary bytes to the index parser.
func FuzzIndex(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		ix, err := parseIndex(b, "fuzz.apsim.index.json")
		if err != nil {
			return
		}
		for _, s := range ix.Metadata.Shards {
			if err := checkShardName(s.File); err != nil {
				t.Fatalf("accepted shard name %q: %v", s.File, err)
			}
		}
		signingInput(ix.Metadata.signedShards(), ix.Metadata.signedMeta(), ix.WeightMap)
	})
}

// TestFuzzSeeds writes the seed corpus with -update and otherwise checks
// that it is there.
func TestFuzzSeeds(t *testing.T) {
	seeds := map[string][]byte{}
	dir := t.TempDir()
	c := smallCheckpoint(t)
	p := filepath.Join(dir, "small.apsim")
	mustSave(t, SinkConfig{Path: p}, c)
	seeds["FuzzReader/small"], _ = os.ReadFile(p)
	p = filepath.Join(dir, "signed.apsim")
	mustSave(t, SinkConfig{Path: p, Key: "fuzz"}, c)
	seeds["FuzzReader/signed"], _ = os.ReadFile(p)
	full := sampleCheckpoint(t, 71)
	p = filepath.Join(dir, "set.apsim")
	arts := mustSave(t, SinkConfig{Path: p, Shard: "100B", Key: "fuzz"}, full)
	seeds["FuzzReader/shard"], _ = os.ReadFile(arts[0].Path)
	seeds["FuzzIndex/signed"], _ = os.ReadFile(arts[len(arts)-1].Path)
	arts = mustSave(t, SinkConfig{Path: filepath.Join(dir, "two.apsim"), Shard: "250B"}, full)
	if len(arts) < 3 {
		t.Fatalf("%d files; the seeds need sets", len(arts))
	}
	seeds["FuzzIndex/plain"], _ = os.ReadFile(arts[len(arts)-1].Path)

	for name, b := range seeds {
		path := filepath.Join("testdata", "fuzz", name)
		content := "go test fuzz v1\n[]byte(" + strconv.Quote(string(b)) + ")\n"
		if *update {
			os.MkdirAll(filepath.Dir(path), 0o755)
			if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if _, err := os.Stat(path); err != nil {
			t.Errorf("seed %s is missing (run go test -run TestFuzzSeeds -update): %v", path, err)
		}
	}
}
