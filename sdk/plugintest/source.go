package plugintest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/sluice-ml/sluice/sdk/plugin"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// SourceSuite describes a source-only plugin (one with no sink of its own
// format, such as PyTorch or ONNX readers) for RunSource: it cannot write the
// files Run damages, so it gives small valid fixtures instead.
type SourceSuite struct {
	// Plugin and Source name the source under test.
	Plugin *plugin.Plugin
	Source string
	// SourceConfig holds attributes beyond "path".
	SourceConfig map[string]any
	// Fixtures are paths of small valid files of the format (a few KiB):
	// every byte of the first is flipped in turn, every seventh byte of
	// the others.
	Fixtures []string
	// Sections, when set, finds the boundaries of a fixture's parts.
	Sections func(b []byte) []Section
	// Crafted are damaged files built on purpose, read under the first
	// fixture's name.
	Crafted []Damage
	// Large, when set, writes a valid file whose tensor data is large (64
	// MiB or more) into dir and returns its path: describing it must read
	// at most MaxHeaderRead bytes.
	Large func(dir string) (string, error)
	// MaxHeaderRead bounds the bytes Describe may read of Large's file;
	// default 1 MiB.
	MaxHeaderRead int64
	// TruncationMayRead is true for formats without an overall length
	// (protobuf): a file cut between two fields can be a smaller valid one.
	TruncationMayRead bool
	// NameFileInErrors requires every error to name the damaged file.
	NameFileInErrors bool
	// Compare lists valid inputs (files or directories) that RunSource
	// reads both in-process and through a real go-plugin process with the
	// shared arena: the probe scores (at least MinProbe), the manifests and
	// every tensor's bytes, through Open and through arena chunks, must be
	// the same. The test package's TestMain must call ServeIfChild. Empty:
	// no plugin process is started.
	Compare []string
	// MinProbe is the least probe score each of Compare must get.
	MinProbe int
	// Refused are inputs the plugin process must refuse, in Describe, with
	// a bad-input error (checked with Compare's plugin process).
	Refused []Refusal
}

// Refusal is an input a source must refuse over the wire.
type Refusal struct {
	// Name names the case.
	Name string
	// Path builds the input in dir, a fresh temporary directory, and returns
	// its path.
	Path func(t *testing.T, dir string) string
	// Contains must appear in the error's text.
	Contains string
}

// CorruptSuites returns the corruption suite of each fixture, the crafted
// damages going with the first.
func (s SourceSuite) CorruptSuites(t testing.TB) []CorruptSuite {
	var out []CorruptSuite
	for i, p := range s.Fixtures {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		cs := CorruptSuite{
			Plugin: s.Plugin, Source: s.Source, SourceConfig: s.SourceConfig,
			File: filepath.Base(p), Valid: b, TruncationMayRead: s.TruncationMayRead,
			NameFileInErrors: s.NameFileInErrors,
		}
		if s.Sections != nil {
			cs.Sections = s.Sections(b)
		}
		if i == 0 {
			cs.Crafted = s.Crafted
		} else {
			cs.FlipStride = 7
		}
		out = append(out, cs)
	}
	return out
}

// RunSource runs the checks of Run that need no sink on a source-only
// plugin: the inputs of Compare read the same in-process and over a real
// go-plugin process (and those of Refused are refused there); describing a
// large file reads only its header; and every fixture, damaged
// systematically (see Corrupt), gives a clean bad-input error or reads at
// its declared sizes — no panic, no hang, bounded memory.
func RunSource(t *testing.T, s SourceSuite) {
	t.Helper()
	checkSource(t, s.Plugin, s.Source)
	if len(s.Fixtures) == 0 {
		t.Fatal("the suite gives no fixture")
	}
	if s.MaxHeaderRead == 0 {
		s.MaxHeaderRead = 1 << 20
	}
	t.Run("over-the-wire", func(t *testing.T) {
		if len(s.Compare) == 0 && len(s.Refused) == 0 {
			t.Skip("the suite gives no input to compare")
		}
		compareOverWire(t, s)
	})
	t.Run("describe-reads-only-the-header", func(t *testing.T) {
		if s.Large == nil {
			t.Skip("the suite gives no large file")
		}
		if runtime.GOOS != "linux" {
			t.Skip("counts reads through /proc/self/io")
		}
		p, err := s.Large(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		describeReadsAtMost(t, s.Plugin, s.Source, s.config(p), fi.Size(), s.MaxHeaderRead)
	})
	for _, cs := range s.CorruptSuites(t) {
		t.Run("malformed-input/"+cs.File, func(t *testing.T) {
			Corrupt(t, cs)
		})
	}
}

// config is the source's configuration for path p.
func (s SourceSuite) config(p string) plugin.Config {
	cfg := map[string]any{"path": p}
	for k, v := range s.SourceConfig {
		cfg[k] = v
	}
	return plugin.MustConfig(cfg)
}

// compareOverWire reads each of s.Compare in-process and over a plugin
// process and checks both agree, then checks the refusals over the wire.
func compareOverWire(t *testing.T, s SourceSuite) {
	remote, arena := launch(t, s.Plugin)
	local := plugin.InProcess(s.Plugin)
	ctx := context.Background()
	for _, input := range s.Compare {
		t.Run(filepath.ToSlash(input), func(t *testing.T) {
			p, err := filepath.Abs(input)
			if err != nil {
				t.Fatal(err)
			}
			lp, _ := local.Probe(ctx, s.Source, p)
			rp, err := remote.Probe(ctx, s.Source, p)
			if err != nil || rp != lp || rp < s.MinProbe {
				t.Errorf("probe over the wire %d (%v), in-process %d, want at least %d", rp, err, lp, s.MinProbe)
			}
			ls, err := local.OpenSource(ctx, s.Source, s.config(p))
			if err != nil {
				t.Fatal(err)
			}
			defer ls.Close()
			rs, err := remote.OpenSource(ctx, s.Source, s.config(p))
			if err != nil {
				t.Fatal(err)
			}
			defer rs.Close()
			lm, err := ls.Describe(ctx)
			if err != nil {
				t.Fatal(err)
			}
			rm, err := rs.Describe(ctx)
			if err != nil {
				t.Fatal(err)
			}
			compareManifests(t, lm, rm)
			for i, ti := range lm.Tensors {
				want := readTensor(t, ls, ti.Name)
				if got := readTensor(t, rs, ti.Name); !bytes.Equal(got, want) {
					t.Errorf("%s: bytes over the wire differ", ti.Name)
				}
				if cs, ok := rs.(plugin.ChunkSource); ok && i%2 == 0 {
					if got := readChunks(t, cs, arena, ti); !bytes.Equal(got, want) {
						t.Errorf("%s: bytes through the arena differ", ti.Name)
					}
				}
			}
		})
	}
	for _, r := range s.Refused {
		t.Run("refuses/"+r.Name, func(t *testing.T) {
			p, err := filepath.Abs(r.Path(t, t.TempDir()))
			if err != nil {
				t.Fatal(err)
			}
			rs, err := remote.OpenSource(ctx, s.Source, s.config(p))
			if err != nil {
				t.Fatal(err)
			}
			defer rs.Close()
			_, err = rs.Describe(ctx)
			if err == nil || !strings.Contains(err.Error(), r.Contains) || !plugin.IsBadInput(err) {
				t.Errorf("over the wire: %v (bad input %v), want a bad-input error containing %q", err, plugin.IsBadInput(err), r.Contains)
			}
		})
	}
}

// compareManifests checks that a manifest read over the wire is the one
// read in-process: metadata, and each tensor's name, dtype, shape, size,
// attributes and file reference.
func compareManifests(t *testing.T, want, got *tensor.Manifest) {
	t.Helper()
	if !want.Metadata.Equal(&got.Metadata) {
		t.Errorf("metadata over the wire %v, in-process %v", got.Metadata.Keys(), want.Metadata.Keys())
	}
	if len(got.Tensors) != len(want.Tensors) {
		t.Fatalf("%d tensors over the wire, %d in-process", len(got.Tensors), len(want.Tensors))
	}
	for i := range want.Tensors {
		w, g := want.Tensors[i], got.Tensors[i]
		if fmt.Sprintf("%s %s %v %d %v", w.Name, w.DType, w.Shape, w.Size, w.Attrs) != fmt.Sprintf("%s %s %v %d %v", g.Name, g.DType, g.Shape, g.Size, g.Attrs) {
			t.Errorf("tensor %d over the wire %+v, in-process %+v", i, g, w)
		}
		if (w.Location == nil) != (g.Location == nil) || (w.Location != nil && *w.Location != *g.Location) {
			t.Errorf("%s: file reference over the wire %v, in-process %v", w.Name, g.Location, w.Location)
		}
	}
}

// readTensor reads one tensor whole through Open.
func readTensor(t *testing.T, s plugin.Source, name string) []byte {
	t.Helper()
	rc, err := s.Open(context.Background(), name)
	if err != nil {
		t.Fatalf("open %s: %v", name, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("read %s: %v", name, err)
	}
	return b
}
