package plugintest

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/sluice-ml/sluice/sdk/plugin"
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
// plugin: describing a large file reads only its header, and every fixture,
// damaged systematically (see Corrupt), gives a clean bad-input error or
// reads at its declared sizes — no panic, no hang, bounded memory.
func RunSource(t *testing.T, s SourceSuite) {
	t.Helper()
	if err := s.Plugin.Validate(); err != nil {
		t.Fatalf("plugin: %v", err)
	}
	if _, ok := s.Plugin.Source(s.Source); !ok {
		t.Fatalf("plugin %s has no source %q", s.Plugin.Name, s.Source)
	}
	if len(s.Fixtures) == 0 {
		t.Fatal("the suite gives no fixture")
	}
	if s.MaxHeaderRead == 0 {
		s.MaxHeaderRead = 1 << 20
	}
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
		cfg := map[string]any{"path": p}
		for k, v := range s.SourceConfig {
			cfg[k] = v
		}
		before := readChars(t)
		src, err := plugin.InProcess(s.Plugin).OpenSource(context.Background(), s.Source, plugin.MustConfig(cfg))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := src.Describe(context.Background()); err != nil {
			t.Fatal(err)
		}
		src.Close()
		if read := readChars(t) - before; read > s.MaxHeaderRead {
			t.Errorf("Describe of a %d-byte file read %d bytes (by /proc/self/io), more than %d", fi.Size(), read, s.MaxHeaderRead)
		}
	})
	for _, cs := range s.CorruptSuites(t) {
		t.Run("malformed-input/"+cs.File, func(t *testing.T) {
			Corrupt(t, cs)
		})
	}
}
