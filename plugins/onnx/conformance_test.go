package onnx

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-ml/sluice/sdk/plugin"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// serveEnv makes the test binary serve the plugin when the conformance test
// starts it as a plugin process.
const serveEnv = "SLUICE_TEST_SERVE_ONNX"

func TestMain(m *testing.M) {
	if os.Getenv(serveEnv) == "1" {
		plugin.Serve(Plugin())
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestConformanceOverGoPlugin runs the source in-process and as a real
// go-plugin process with a shared arena, and checks both give the same
// manifests and bytes for every fixture, through Open and through arena
// chunks, and the same refusals. (sdk/plugintest.Run needs a sink to write
// its files, which a load-only plugin does not have.)
func TestConformanceOverGoPlugin(t *testing.T) {
	arena, err := plugin.NewArena(8, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer arena.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), serveEnv+"=1")
	remote, err := plugin.Launch(plugin.LaunchConfig{Cmd: cmd, Arena: arena, Label: "plugin onnx", StartTimeout: time.Minute})
	if err != nil {
		t.Fatalf("starting the plugin process: %v", err)
	}
	defer remote.Close()
	local := plugin.InProcess(Plugin())
	checkInfo(t, local.Info(), remote.Info())
	ctx := context.Background()
	for _, fixture := range []string{"model.onnx", "external/model.onnx"} {
		t.Run(fixture, func(t *testing.T) {
			path, _ := filepath.Abs(filepath.Join("testdata", fixture))
			lp, _ := local.Probe(ctx, "onnx", path)
			rp, err := remote.Probe(ctx, "onnx", path)
			if err != nil || rp != lp || rp < 90 {
				t.Errorf("probe over the wire %d (%v), in-process %d", rp, err, lp)
			}
			cfg := plugin.MustConfig(map[string]any{"path": path})
			ls, err := local.OpenSource(ctx, "onnx", cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer ls.Close()
			rs, err := remote.OpenSource(ctx, "onnx", cfg)
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
				want := readAllFrom(t, ls, ti.Name)
				got := readAllFrom(t, rs, ti.Name)
				if !bytes.Equal(got, want) {
					t.Errorf("%s: bytes over the wire differ", ti.Name)
				}
				if cs, ok := rs.(plugin.ChunkSource); ok && i%2 == 0 {
					if got := readArenaChunks(t, cs, arena, ti.Name); !bytes.Equal(got, want) {
						t.Errorf("%s: bytes through the arena differ", ti.Name)
					}
				}
			}
		})
	}
	t.Run("escaping external data", func(t *testing.T) {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(filepath.Dir(dir), "secret.bin"), make([]byte, 8), 0o644)
		path := modelWith(t, dir, externalTensor("w", "../secret.bin", 8))
		rs, err := remote.OpenSource(ctx, "onnx", plugin.MustConfig(map[string]any{"path": path}))
		if err != nil {
			t.Fatal(err)
		}
		defer rs.Close()
		_, err = rs.Describe(ctx)
		if err == nil || !strings.Contains(err.Error(), "leaves the model's directory") || !plugin.IsBadInput(err) {
			t.Errorf("over the wire: %v (bad input %v)", err, plugin.IsBadInput(err))
		}
	})
}

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

func readAllFrom(t *testing.T, s plugin.Source, name string) []byte {
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

func readArenaChunks(t *testing.T, cs plugin.ChunkSource, arena *plugin.Arena, name string) []byte {
	t.Helper()
	pool, err := arena.Reserve(context.Background(), 4)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	cr, err := cs.OpenChunks(context.Background(), name, pool, 1, 0)
	if err != nil {
		t.Fatalf("OpenChunks %s: %v", name, err)
	}
	defer cr.Close()
	var out []byte
	for {
		c, err := cr.NextChunk(context.Background())
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("chunks of %s: %v", name, err)
		}
		out = append(out, c.Data...)
		c.Release()
	}
}

// checkInfo compares what the plugin says over the wire with its own Info.
func checkInfo(t *testing.T, want, got *plugin.Info) {
	t.Helper()
	if !got.Arena {
		t.Errorf("the plugin process did not map the shared arena")
	}
	describe := func(i *plugin.Info) string {
		s := fmt.Sprintf("%s %s %d sinks", i.Name, i.Version, len(i.Sinks))
		for _, c := range i.Sources {
			s += fmt.Sprintf("; %s %q %v %v %v", c.Name, c.Doc, *c.Schema, c.Extensions, c.Probes)
		}
		return s
	}
	if describe(got) != describe(want) {
		t.Errorf("over the wire the plugin is %s, in-process %s", describe(got), describe(want))
	}
}
