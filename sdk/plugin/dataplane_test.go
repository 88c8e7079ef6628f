package plugin_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sluice-ml/sluice/sdk/plugin"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// The test binary serves genPlugin when started with this variable set.
const serveEnv = "SLUICE_SDK_TEST_SERVE"

func TestMain(m *testing.M) {
	if os.Getenv(serveEnv) == "1" {
		plugin.Serve(genPlugin())
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// tensorBytes derives a tensor's bytes from its name.
func tensorBytes(name string, size int) []byte {
	out := make([]byte, 0, size+32)
	seed := sha256.Sum256([]byte(name))
	for len(out) < size {
		seed = sha256.Sum256(seed[:])
		out = append(out, seed[:]...)
	}
	return out[:size]
}

// genPlugin has a source that generates tensors and a sink that stores each
// tensor in its own file.
func genPlugin() *plugin.Plugin {
	type srcCfg struct {
		Count int `hcl:"count"`
		Size  int `hcl:"size"`
	}
	type sinkCfg struct {
		Dir string `hcl:"dir"`
	}
	return &plugin.Plugin{Name: "gen", Version: "1.0.0",
		Sources: []plugin.SourceType{plugin.NewSourceType("gen", "generated tensors", func(ctx context.Context, c *srcCfg) (plugin.Source, error) {
			return &genSource{n: c.Count, size: c.Size}, nil
		})},
		Sinks: []plugin.SinkType{plugin.NewSinkType("files", "one file per tensor", func(ctx context.Context, c *sinkCfg) (plugin.Sink, error) {
			return &fileSink{dir: c.Dir}, nil
		})},
	}
}

type genSource struct{ n, size int }

func (s *genSource) Describe(ctx context.Context) (*tensor.Manifest, error) {
	m := &tensor.Manifest{}
	for i := 0; i < s.n; i++ {
		size := s.size + i*37
		m.Tensors = append(m.Tensors, tensor.TensorInfo{Name: fmt.Sprint("t", i), DType: tensor.U8, Shape: []uint64{uint64(size)}, Size: uint64(size)})
	}
	return m, nil
}

func (s *genSource) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	var i int
	fmt.Sscanf(name, "t%d", &i)
	return io.NopCloser(bytes.NewReader(tensorBytes(name, s.size+i*37))), nil
}

func (s *genSource) Close() error { return nil }

type fileSink struct{ dir string }

func (s *fileSink) Plan(ctx context.Context, in *tensor.Manifest) (*plugin.SinkPlan, error) {
	return &plugin.SinkPlan{}, nil
}
func (s *fileSink) Begin(ctx context.Context, m *tensor.Manifest, _ plugin.BeginOptions) error {
	return os.MkdirAll(s.dir, 0o755)
}
func (s *fileSink) Write(ctx context.Context, name string, data plugin.TensorData) error {
	f, err := os.Create(filepath.Join(s.dir, name))
	if err != nil {
		return err
	}
	defer f.Close()
	return plugin.CopyToFile(f, 0, data)
}
func (s *fileSink) Commit(ctx context.Context) ([]plugin.Artifact, error) { return nil, nil }
func (s *fileSink) Abort(ctx context.Context) error                       { return nil }

// TestArenaDataPlaneUnderConcurrency moves many multi-chunk tensors through
// the shared arena at once — reads into small pools, writes from them — and
// checks every byte.
func TestArenaDataPlaneUnderConcurrency(t *testing.T) {
	arena, err := plugin.NewArena(16, 4096)
	if err != nil {
		t.Fatal(err)
	}
	defer arena.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), serveEnv+"=1")
	c, err := plugin.Launch(plugin.LaunchConfig{Cmd: cmd, Arena: arena, Label: "plugin gen", StartTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if !c.Info().Arena {
		t.Fatal("the plugin did not map the arena")
	}
	if !c.Info().WriteLanes || !c.Info().DirectWrites {
		t.Fatal("the plugin does not serve the write and direct lanes of the socket it was passed")
	}
	ctx := context.Background()
	src, err := c.OpenSource(ctx, "gen", plugin.MustConfig(map[string]any{"count": 40, "size": 9000}))
	if err != nil {
		t.Fatal(err)
	}
	m, err := src.Describe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	sink, err := c.OpenSink(ctx, "files", plugin.MustConfig(map[string]any{"dir": dir}))
	if err != nil {
		t.Fatal(err)
	}
	if err := sink.Begin(ctx, m, plugin.BeginOptions{}); err != nil {
		t.Fatal(err)
	}
	cs := src.(plugin.ChunkSource)
	var wg sync.WaitGroup
	errs := make(chan error, len(m.Tensors))
	for _, ti := range m.Tensors {
		ti := ti
		wg.Add(1)
		go func() {
			defer wg.Done()
			pool, err := arena.Reserve(ctx, 3)
			if err != nil {
				errs <- err
				return
			}
			defer pool.Close()
			// Read into slots, then write the very same slots to the sink.
			cr, err := cs.OpenChunks(ctx, ti.Name, pool, 7, 0)
			if err != nil {
				errs <- err
				return
			}
			data := plugin.NewChunkData(ctx, ti.Size, cr, nil)
			if err := sink.Write(ctx, ti.Name, data); err != nil {
				errs <- fmt.Errorf("%s: %w", ti.Name, err)
			}
			data.Close()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for _, ti := range m.Tensors {
		got, err := os.ReadFile(filepath.Join(dir, ti.Name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, tensorBytes(ti.Name, int(ti.Size))) {
			t.Errorf("%s: bytes differ after the arena round trip", ti.Name)
		}
	}
	if arena.Free() != arena.Slots() {
		t.Errorf("%d slots still reserved", arena.Slots()-arena.Free())
	}
}
