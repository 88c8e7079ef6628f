// Package fuzzseed writes the seed corpus of `go test -fuzz` targets: files
// under a package's testdata/fuzz/FuzzXxx/ in the "go test fuzz v1" format,
// which `go test` runs as regression cases and the fuzzer starts from.
//
// Tests call Sync with the seeds they generate; with -update-seeds (or the
// package's own -update flag, when it has one) the files are written,
// otherwise Sync checks they are all there, so a seed added in code is never
// forgotten in the committed corpus.
package fuzzseed

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
)

// Encode renders values as a corpus file. Supported types are those fuzz
// targets take: []byte, string, bool, the integer types, float32, float64.
func Encode(values ...any) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("go test fuzz v1\n")
	for _, v := range values {
		switch x := v.(type) {
		case []byte:
			fmt.Fprintf(&b, "[]byte(%q)\n", x)
		case string:
			fmt.Fprintf(&b, "string(%q)\n", x)
		case bool, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
			fmt.Fprintf(&b, "%T(%v)\n", x, x)
		case float32, float64:
			fmt.Fprintf(&b, "%T(%v)\n", x, x)
		default:
			return nil, fmt.Errorf("fuzzseed: unsupported type %T", v)
		}
	}
	return b.Bytes(), nil
}

var updateSeeds = flag.Bool("update-seeds", false, "rewrite the fuzz seed corpus under testdata/fuzz")

// Updating reports whether -update-seeds, or a package's own -update, is set.
func Updating() bool {
	if *updateSeeds {
		return true
	}
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// Seed is one corpus entry: its file name and the fuzz function's arguments.
type Seed struct {
	Name   string
	Values []any
}

// Sync writes seeds to testdata/fuzz/target/ when updating, and
// otherwise reports every seed whose file is missing. (A committed seed may
// lag behind a writer that changed: it is still a valid input.)
func Sync(t testing.TB, target string, seeds []Seed) {
	t.Helper()
	dir := filepath.Join("testdata", "fuzz", target)
	sort.Slice(seeds, func(i, j int) bool { return seeds[i].Name < seeds[j].Name })
	for _, s := range seeds {
		want, err := Encode(s.Values...)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, s.Name)
		if Updating() {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if _, err := os.Stat(p); err != nil {
			t.Errorf("seed %s is missing; run the test with -update: %v", p, err)
		}
	}
}
