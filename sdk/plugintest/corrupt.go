package plugintest

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/sluice-ml/sluice/sdk/plugin"
)

// Section marks where one part of a valid file ends and the next begins (the
// end of the magic, of a header length, of the header, of a tensor's data).
// Corrupt truncates the file there and one byte on either side.
type Section struct {
	Offset int64
	Name   string
}

// Damage is one damaged file.
type Damage struct {
	// Name says what was done ("truncated at 8 (end of the length)", "byte 12
	// flipped", "shape claims 2^63 elements").
	Name string
	// Data is the damaged file.
	Data []byte
	// Kind groups damages in reports: "truncation", "flip" or "crafted".
	Kind string
	// MayRead is true when the damage can leave a readable file: a flipped
	// byte in tensor data or in a metadata string, a NaN scale (the source
	// hands over bytes; see DataOnly).
	MayRead bool
	// DataOnly is true when the header is intact and only decoding the
	// tensor data can find the damage (a NaN or infinite scale): reading
	// headers succeeds, a conversion that decodes the data must fail.
	DataOnly bool
	// Want, when set, must appear in the error.
	Want string
	// MaxAlloc, when set, bounds the bytes allocated while reading this
	// damaged file more tightly than the suite does (a header that claims a
	// terabyte must allocate nothing of the sort).
	MaxAlloc uint64
}

// CorruptSuite describes one small valid file of a format and how to
// damage it. Corrupt runs every damage through the plugin's source,
// in-process; a command-line harness can run Damages through the real CLI.
type CorruptSuite struct {
	// Plugin and Source name the source under test.
	Plugin *plugin.Plugin
	Source string
	// SourceConfig holds attributes beyond "path".
	SourceConfig map[string]any
	// File is the damaged file's name, e.g. "model.gguf".
	File string
	// Valid is the undamaged file; keep it small (a few KiB): every byte is
	// flipped in turn.
	Valid []byte
	// Sections are the boundaries of the file's parts.
	Sections []Section
	// Crafted are damages built on purpose: lengths claiming 2^31, 2^63 and
	// −1, offsets out of bounds or overlapping, dims whose product
	// overflows, duplicate names, invalid UTF-8, unknown dtypes …
	Crafted []Damage
	// RandomCuts is the number of truncations at random points (default 16).
	RandomCuts int
	// FlipStride flips every FlipStride-th byte (default 1: every byte).
	FlipStride int
	// Seed seeds the random cuts (default 1).
	Seed uint64
	// TruncationMayRead is true for formats without an overall length, where
	// a file cut between two fields can be a smaller valid file (protobuf).
	TruncationMayRead bool
	// Timeout bounds each read (default 10 s).
	Timeout time.Duration
	// MaxAlloc bounds the bytes allocated while reading one damaged file
	// (default 100 MiB).
	MaxAlloc uint64
	// NameFileInErrors requires every error to name the damaged file.
	NameFileInErrors bool
}

func (s *CorruptSuite) defaults() {
	if s.RandomCuts == 0 {
		s.RandomCuts = 16
	}
	if s.FlipStride <= 0 {
		s.FlipStride = 1
	}
	if s.Seed == 0 {
		s.Seed = 1
	}
	if s.Timeout == 0 {
		s.Timeout = 10 * time.Second
	}
	if s.MaxAlloc == 0 {
		s.MaxAlloc = 100 << 20
	}
}

// Damages lists every damaged file the suite tries: truncations at each
// section boundary and one byte either side, truncations at random points,
// every byte (or every FlipStride-th) flipped (XOR 0xff) in turn, and the
// crafted damages.
func (s CorruptSuite) Damages() []Damage {
	s.defaults()
	n := int64(len(s.Valid))
	cuts := map[int64]string{}
	for _, sec := range s.Sections {
		for _, d := range []int64{-1, 0, 1} {
			if off := sec.Offset + d; off >= 0 && off < n {
				if _, ok := cuts[off]; !ok || d == 0 {
					cuts[off] = fmt.Sprintf("truncated at %d (%+d from the end of %s)", off, d, sec.Name)
					if d == 0 {
						cuts[off] = fmt.Sprintf("truncated at %d (end of %s)", off, sec.Name)
					}
				}
			}
		}
	}
	rng := rand.New(rand.NewPCG(s.Seed, 0x5eed))
	for i := 0; i < s.RandomCuts && n > 1; i++ {
		off := rng.Int64N(n)
		if _, ok := cuts[off]; !ok {
			cuts[off] = fmt.Sprintf("truncated at %d (random)", off)
		}
	}
	offs := make([]int64, 0, len(cuts))
	for off := range cuts {
		offs = append(offs, off)
	}
	sort.Slice(offs, func(i, j int) bool { return offs[i] < offs[j] })
	var out []Damage
	for _, off := range offs {
		out = append(out, Damage{Name: cuts[off], Data: s.Valid[:off], Kind: "truncation", MayRead: s.TruncationMayRead})
	}
	for i := 0; i < len(s.Valid); i += s.FlipStride {
		d := append([]byte(nil), s.Valid...)
		d[i] ^= 0xff
		out = append(out, Damage{Name: fmt.Sprintf("byte %d flipped", i), Data: d, Kind: "flip", MayRead: true})
	}
	for _, c := range s.Crafted {
		if c.Kind == "" {
			c.Kind = "crafted"
		}
		out = append(out, c)
	}
	return out
}

// CorruptResult counts what happened to the damages of one kind.
type CorruptResult struct {
	Kind string
	// Tried is the number of damaged files read.
	Tried int
	// Refused is the number that gave a clean bad-input error.
	Refused int
	// Read is the number read without error (allowed only where the damage
	// may leave a readable file).
	Read int
	// Failed is the number that broke a rule: a panic, a hang, an error
	// that does not blame the input, too much memory, a damaged file read
	// where it must not be.
	Failed int
}

// Corrupt reads every damage of s through the plugin's source, in-process,
// and checks each ends with a bad-input error (or, where the damage may
// leave a readable file, with every tensor read at its declared size): no
// panic, no hang, no allocation beyond MaxAlloc, and no error that blames
// Sluice instead of the file. It returns the counts per kind of damage.
func Corrupt(t *testing.T, s CorruptSuite) []CorruptResult {
	t.Helper()
	s.defaults()
	dir := t.TempDir()
	valid := filepath.Join(dir, "valid-"+s.File)
	if err := os.WriteFile(valid, s.Valid, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readDamaged(s, valid); err != nil {
		t.Fatalf("the undamaged file does not read: %v", err)
	}
	path := filepath.Join(dir, s.File)
	results := map[string]*CorruptResult{}
	var kinds []string
	for _, d := range s.Damages() {
		r := results[d.Kind]
		if r == nil {
			r = &CorruptResult{Kind: d.Kind}
			results[d.Kind] = r
			kinds = append(kinds, d.Kind)
		}
		r.Tried++
		if err := os.WriteFile(path, d.Data, 0o644); err != nil {
			t.Fatal(err)
		}
		read, problem := checkDamage(s, path, d)
		switch {
		case problem != "":
			r.Failed++
			t.Errorf("%s: %s: %s", s.File, d.Name, problem)
			if r.Failed > 20 {
				t.Fatalf("too many failures; stopping")
			}
		case read:
			r.Read++
		default:
			r.Refused++
		}
	}
	out := make([]CorruptResult, 0, len(kinds))
	for _, k := range kinds {
		out = append(out, *results[k])
		r := results[k]
		t.Logf("%s: %-10s tried %4d, refused %4d, read %4d, failed %d", s.File, k, r.Tried, r.Refused, r.Read, r.Failed)
	}
	return out
}

// checkDamage reads one damaged file. It reports whether the file was read
// without error, and what is wrong ("" when nothing is).
func checkDamage(s CorruptSuite, path string, d Damage) (read bool, problem string) {
	type outcome struct {
		err   error
		panic any
		alloc uint64
	}
	done := make(chan outcome, 1)
	start := time.Now()
	go func() {
		var o outcome
		defer func() {
			if r := recover(); r != nil {
				o.panic = r
			}
			done <- o
		}()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		_, o.err = readDamaged(s, path)
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		o.alloc = after.TotalAlloc - before.TotalAlloc
	}()
	var o outcome
	select {
	case o = <-done:
	case <-time.After(s.Timeout):
		return false, fmt.Sprintf("reading it did not finish within %s", s.Timeout)
	}
	switch {
	case o.panic != nil:
		return false, fmt.Sprintf("reading it panicked: %v", o.panic)
	case o.alloc > s.MaxAlloc || (d.MaxAlloc > 0 && o.alloc > d.MaxAlloc):
		return false, fmt.Sprintf("reading it allocated %d bytes, more than allowed (in %s)", o.alloc, time.Since(start))
	case o.err == nil && !d.MayRead:
		return true, "it was read without error"
	case o.err == nil:
		return true, ""
	case !plugin.IsBadInput(o.err):
		return false, fmt.Sprintf("the error does not blame the input (it would exit as an internal failure): %T: %v", o.err, o.err)
	case strings.TrimSpace(o.err.Error()) == "":
		return false, "the error is empty"
	case s.NameFileInErrors && !strings.Contains(o.err.Error(), filepath.Base(path)):
		return false, fmt.Sprintf("the error does not name the file: %v", o.err)
	case d.Want != "" && !strings.Contains(o.err.Error(), d.Want):
		return false, fmt.Sprintf("the error does not say %q: %v", d.Want, o.err)
	}
	return false, ""
}

// readDamaged opens the source on path, describes it and reads every
// tensor, checking file references lie inside their files and every tensor
// yields its declared size.
func readDamaged(s CorruptSuite, path string) (tensors int, err error) {
	cfg := map[string]any{"path": path}
	for k, v := range s.SourceConfig {
		cfg[k] = v
	}
	c, err := plugin.ConfigFrom(cfg)
	if err != nil {
		return 0, err
	}
	ctx := context.Background()
	src, err := plugin.InProcess(s.Plugin).OpenSource(ctx, s.Source, c)
	if err != nil {
		return 0, err
	}
	defer src.Close()
	m, err := src.Describe(ctx)
	if err != nil {
		return 0, err
	}
	for _, ti := range m.Tensors {
		if l := ti.Location; l != nil {
			fi, err := os.Stat(l.Path)
			if err != nil {
				return 0, fmt.Errorf("tensor %q: its file reference: %w", ti.Name, err)
			}
			if end := l.Offset + l.Length; end < l.Offset || end > uint64(fi.Size()) || l.Length != ti.Size {
				return 0, fmt.Errorf("internal: tensor %q: file reference [%d, +%d) for %d bytes in a file of %d", ti.Name, l.Offset, l.Length, ti.Size, fi.Size())
			}
		}
		rc, err := src.Open(ctx, ti.Name)
		if err != nil {
			return 0, err
		}
		n, err := io.Copy(io.Discard, rc)
		rc.Close()
		if err != nil {
			return 0, err
		}
		if uint64(n) != ti.Size {
			return 0, fmt.Errorf("internal: tensor %q: read %d of its %d bytes without error", ti.Name, n, ti.Size)
		}
	}
	return len(m.Tensors), nil
}
