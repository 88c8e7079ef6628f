// Package plugintest is the conformance kit every Sluice format plugin runs
// in its own tests. Run checks that a plugin's sink and source round-trip
// tensors of every dtype they declare, byte for byte, both in-process and
// over a real go-plugin process with the shared-memory arena; that describing
// a file reads only its header; and that truncated or garbled files give
// errors, never panics.
//
// A plugin's test package calls ServeIfChild from TestMain so the test binary
// can serve the plugin when the kit starts it as a child process:
//
//	func TestMain(m *testing.M) {
//		plugintest.ServeIfChild(myformat.Plugin())
//		os.Exit(m.Run())
//	}
//
//	func TestConformance(t *testing.T) {
//		plugintest.Run(t, plugintest.Suite{
//			Plugin: myformat.Plugin(), Source: "myformat", Sink: "myformat",
//			File: "model.myf", DTypes: []tensor.DType{tensor.F32, tensor.F16},
//		})
//	}
package plugintest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-ml/sluice/sdk/detached"
	"github.com/sluice-ml/sluice/sdk/plugin"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// serveEnv tells a test binary started by the kit to serve its plugin.
const serveEnv = "SLUICE_PLUGINTEST_SERVE"

// ServeIfChild serves p and never returns when the test binary was started
// by Run as a plugin process; otherwise it returns at once.
func ServeIfChild(p *plugin.Plugin) {
	if os.Getenv(serveEnv) == "1" {
		plugin.Serve(p)
		os.Exit(0)
	}
}

// Suite describes the plugin under test.
type Suite struct {
	// Plugin is the plugin, as its Plugin() function returns it.
	Plugin *plugin.Plugin
	// Source and Sink name the component types to test together.
	Source, Sink string
	// File is the output file name, e.g. "model.gguf".
	File string
	// SinkConfig and SourceConfig hold attributes beyond "path".
	SinkConfig, SourceConfig map[string]any
	// DTypes are the dtypes the pair round-trips unchanged.
	DTypes []tensor.DType
	// Metadata, when set, is written and must be read back with the same keys
	// and values (other keys may appear).
	Metadata *tensor.Metadata
	// Header parses a file's header from a ReaderAt, as the source does; Run
	// wraps it in a counting ReaderAt to check it reads only the header.
	Header func(r io.ReaderAt, size int64) error
	// MaxHeaderRead bounds the bytes a header read may touch; default 1 MiB.
	MaxHeaderRead int64
	// SkipOutOfProcess skips the go-plugin round trip (for plugins whose
	// test binary cannot serve them).
	SkipOutOfProcess bool
	// Digests declares that the sink reports the SHA-256 of every file it
	// commits when Begin asks (BeginOptions.Digests): the suite then fails
	// on an artifact without one. Any digest a sink reports must be exact,
	// declared or not.
	Digests bool
}

// Run runs the conformance checks as subtests of t.
func Run(t *testing.T, s Suite) {
	t.Helper()
	checkSource(t, s.Plugin, s.Source)
	if _, ok := s.Plugin.Sink(s.Sink); !ok {
		t.Fatalf("plugin %s has no sink %q", s.Plugin.Name, s.Sink)
	}
	if s.MaxHeaderRead == 0 {
		s.MaxHeaderRead = 1 << 20
	}
	t.Run("round-trip/in-process", func(t *testing.T) {
		roundTrip(t, s, plugin.InProcess(s.Plugin), nil)
	})
	t.Run("round-trip/out-of-process", func(t *testing.T) {
		if s.SkipOutOfProcess {
			t.Skip("the suite skips the out-of-process run")
		}
		c, arena := launch(t, s.Plugin)
		roundTrip(t, s, c, arena)
	})
	t.Run("describe-reads-only-the-header", func(t *testing.T) {
		headerOnly(t, s)
	})
	t.Run("malformed-input", func(t *testing.T) {
		malformed(t, s)
	})
}

// checkSource fails t unless p is a valid plugin with a source called
// source.
func checkSource(t *testing.T, p *plugin.Plugin, source string) {
	t.Helper()
	if err := p.Validate(); err != nil {
		t.Fatalf("plugin: %v", err)
	}
	if _, ok := p.Source(source); !ok {
		t.Fatalf("plugin %s has no source %q", p.Name, source)
	}
}

// launch starts the test binary as a go-plugin process serving p (see
// ServeIfChild) with a shared arena, checks that it describes itself as p
// does in-process and mapped the arena, and closes both when t ends.
func launch(t *testing.T, p *plugin.Plugin) (*plugin.Client, *plugin.Arena) {
	t.Helper()
	arena, err := plugin.NewArena(8, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { arena.Close() })
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), serveEnv+"=1")
	c, err := plugin.Launch(plugin.LaunchConfig{Cmd: cmd, Arena: arena, Label: "plugin " + p.Name, StartTimeout: time.Minute})
	if err != nil {
		t.Fatalf("starting the plugin over go-plugin (does TestMain call plugintest.ServeIfChild?): %v", err)
	}
	t.Cleanup(func() { c.Close() })
	checkInfo(t, p.Info(), c.Info())
	return c, arena
}

// checkInfo compares what the plugin says over the wire with its own Info:
// name, version and every component's name, doc, schema, extensions and
// probing; and checks the plugin process mapped the shared arena.
func checkInfo(t *testing.T, want, got *plugin.Info) {
	t.Helper()
	if !got.Arena {
		t.Errorf("the plugin process did not map the shared arena")
	}
	if got.Name != want.Name || got.Version != want.Version {
		t.Errorf("over the wire the plugin is %s %s, in-process %s %s", got.Name, got.Version, want.Name, want.Version)
	}
	if len(got.Sources) != len(want.Sources) || len(got.Sinks) != len(want.Sinks) {
		t.Fatalf("over the wire: %d sources and %d sinks, in-process %d and %d", len(got.Sources), len(got.Sinks), len(want.Sources), len(want.Sinks))
	}
	describe := func(c plugin.ComponentInfo) string {
		return fmt.Sprintf("%s %q %v %v %v", c.Name, c.Doc, c.Schema, c.Extensions, c.Probes)
	}
	for kind, pair := range map[string][2][]plugin.ComponentInfo{"source": {want.Sources, got.Sources}, "sink": {want.Sinks, got.Sinks}} {
		for i, w := range pair[0] {
			if g := pair[1][i]; describe(g) != describe(w) {
				t.Errorf("%s %s over the wire is %s, in-process %s", kind, w.Name, describe(g), describe(w))
			}
		}
	}
}

// testTensor is one generated tensor.
type testTensor struct {
	info tensor.TensorInfo
	data []byte
}

// makeTensors builds one tensor per dtype with deterministic bytes; rows are
// two blocks long so block types are valid. Scale multiplies the data size.
func makeTensors(t *testing.T, dtypes []tensor.DType, rows uint64) []testTensor {
	var out []testTensor
	seed := uint64(0x5eed)
	for i, d := range dtypes {
		info, ok := d.Info()
		if !ok {
			t.Fatalf("unknown dtype %q in the suite", d)
		}
		cols := 2 * max(info.BlockSize, 1)
		if info.BlockSize == 1 {
			cols = 24
		}
		shape := []uint64{rows, cols}
		size, err := d.ShapeByteSize(shape)
		if err != nil {
			t.Fatalf("dtype %s: %v", d, err)
		}
		data := make([]byte, size)
		for j := range data {
			seed = seed*6364136223846793005 + 1442695040888963407
			data[j] = byte(seed >> 56)
		}
		if d == tensor.Bool {
			for j := range data {
				data[j] &= 1
			}
		}
		name := fmt.Sprintf("layers.%d.%s.weight", i, strings.ReplaceAll(string(d), "_", ""))
		out = append(out, testTensor{info: tensor.TensorInfo{Name: name, DType: d, Shape: shape, Size: size}, data: data})
	}
	return out
}

func (s Suite) configs(path string) (sink, src plugin.Config, err error) {
	sc := map[string]any{"path": path}
	for k, v := range s.SinkConfig {
		sc[k] = v
	}
	rc := map[string]any{"path": path}
	for k, v := range s.SourceConfig {
		rc[k] = v
	}
	if sink, err = plugin.ConfigFrom(sc); err != nil {
		return
	}
	src, err = plugin.ConfigFrom(rc)
	return
}

// write writes tensors through the sink of inst; arena, when set, makes the
// data arena-backed so the slot path is used.
func write(t *testing.T, s Suite, inst plugin.Instance, arena *plugin.Arena, path string, tensors []testTensor) {
	t.Helper()
	ctx := context.Background()
	sinkCfg, _, err := s.configs(path)
	if err != nil {
		t.Fatal(err)
	}
	sink, err := inst.OpenSink(ctx, s.Sink, sinkCfg)
	if err != nil {
		t.Fatalf("opening sink: %v", err)
	}
	m := &tensor.Manifest{}
	if s.Metadata != nil {
		m.Metadata = s.Metadata.Clone()
	}
	for _, tt := range tensors {
		m.Tensors = append(m.Tensors, tt.info)
	}
	p, err := sink.Plan(ctx, m)
	if err != nil {
		t.Fatalf("sink plan: %v", err)
	}
	for _, c := range p.Convert {
		t.Errorf("the sink converts %s to %s (%s), but the suite declares it round-trips that dtype", c.Tensor, c.To, c.Reason)
	}
	for _, d := range p.Drop {
		t.Errorf("the sink drops %s: %s", d.Tensor, d.Msg)
	}
	if t.Failed() {
		sink.Abort(ctx)
		t.FailNow()
	}
	if err := sink.Begin(ctx, m, plugin.BeginOptions{Digests: true}); err != nil {
		t.Fatalf("sink begin: %v", err)
	}
	var pool *plugin.Pool
	if arena != nil {
		if pool, err = arena.Reserve(ctx, min(4, arena.Slots())); err != nil {
			t.Fatal(err)
		}
		defer pool.Close()
	}
	for i, tt := range tensors {
		var data plugin.TensorData = plugin.BytesData(tt.data)
		if pool != nil && i%2 == 0 {
			r := plugin.ReadChunks(bytes.NewReader(tt.data), uint64(len(tt.data)), pool, 1, 0)
			data = plugin.NewChunkData(ctx, uint64(len(tt.data)), r, nil)
		}
		if err := sink.Write(ctx, tt.info.Name, data); err != nil {
			sink.Abort(ctx)
			t.Fatalf("writing %s: %v", tt.info.Name, err)
		}
	}
	arts, err := sink.Commit(ctx)
	if err != nil {
		t.Fatalf("commit: %v", err)
	}
	if len(arts) == 0 {
		t.Errorf("commit reported no artifacts")
	}
	for _, a := range arts {
		fi, err := os.Stat(a.Path)
		if err != nil {
			t.Errorf("artifact %s: %v", a.Path, err)
		} else if a.Size != 0 && uint64(fi.Size()) != a.Size {
			t.Errorf("artifact %s is %d bytes, reported %d", a.Path, fi.Size(), a.Size)
		}
		if a.SHA256 == "" && s.Digests {
			t.Errorf("artifact %s: the sink reported no SHA-256, though the suite declares it does when asked", a.Path)
		}
		if a.SHA256 != "" {
			if got := fileSHA256(t, a.Path); got != a.SHA256 {
				t.Errorf("artifact %s: the sink reported SHA-256 %s, the file's is %s", a.Path, a.SHA256, got)
			}
		}
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	for _, e := range entries {
		if strings.Contains(e.Name(), ".sluice-tmp-") {
			t.Errorf("temporary file %s left after commit", e.Name())
		}
	}
}

func roundTrip(t *testing.T, s Suite, inst plugin.Instance, arena *plugin.Arena) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, s.File)
	tensors := makeTensors(t, s.DTypes, 3)
	write(t, s, inst, arena, path, tensors)

	_, srcCfg, _ := s.configs(path)
	src, err := inst.OpenSource(ctx, s.Source, srcCfg)
	if err != nil {
		t.Fatalf("opening source: %v", err)
	}
	defer src.Close()
	m, err := src.Describe(ctx)
	if err != nil {
		t.Fatalf("describe: %v", err)
	}
	if s.Metadata != nil {
		s.Metadata.All(func(k string, v tensor.Value) bool {
			got, ok := m.Metadata.Get(k)
			if !ok {
				t.Errorf("metadata %q lost", k)
			} else if !got.Equal(v) {
				t.Errorf("metadata %q: wrote %s, read %s", k, v, got)
			}
			return true
		})
	}
	for i, tt := range tensors {
		got, ok := m.Tensor(tt.info.Name)
		if !ok {
			t.Errorf("tensor %s missing after the round trip", tt.info.Name)
			continue
		}
		if got.DType != tt.info.DType || fmt.Sprint(got.Shape) != fmt.Sprint(tt.info.Shape) || got.Size != tt.info.Size {
			t.Errorf("tensor %s: wrote %s %v (%d bytes), read %s %v (%d bytes)", tt.info.Name,
				tt.info.DType, tt.info.Shape, tt.info.Size, got.DType, got.Shape, got.Size)
			continue
		}
		if got.Location != nil {
			b := readRef(t, got.Location)
			if !bytes.Equal(b, tt.data) {
				t.Errorf("tensor %s: its file reference points at other bytes", tt.info.Name)
			}
		}
		var data []byte
		if cs, ok := src.(plugin.ChunkSource); ok && arena != nil && i%2 == 1 {
			data = readChunks(t, cs, arena, tt.info)
		} else {
			rc, err := src.Open(ctx, tt.info.Name)
			if err != nil {
				t.Errorf("open %s: %v", tt.info.Name, err)
				continue
			}
			data, err = io.ReadAll(rc)
			rc.Close()
			if err != nil {
				t.Errorf("reading %s: %v", tt.info.Name, err)
				continue
			}
		}
		if !bytes.Equal(data, tt.data) {
			t.Errorf("tensor %s (%s): bytes differ after the round trip", tt.info.Name, tt.info.DType)
		}
	}
}

func readRef(t *testing.T, ref *tensor.FileRef) []byte {
	f, err := os.Open(ref.Path)
	if err != nil {
		t.Errorf("file reference: %v", err)
		return nil
	}
	defer f.Close()
	b := make([]byte, ref.Length)
	if _, err := f.ReadAt(b, int64(ref.Offset)); err != nil {
		t.Errorf("file reference %s [%d, +%d): %v", ref.Path, ref.Offset, ref.Length, err)
	}
	return b
}

func readChunks(t *testing.T, cs plugin.ChunkSource, arena *plugin.Arena, info tensor.TensorInfo) []byte {
	pool, err := arena.Reserve(context.Background(), 4)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	cr, err := cs.OpenChunks(context.Background(), info.Name, pool, 1, 0)
	if err != nil {
		t.Errorf("OpenChunks %s: %v", info.Name, err)
		return nil
	}
	defer cr.Close()
	var out []byte
	for {
		c, err := cr.NextChunk(context.Background())
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Errorf("reading %s through the arena: %v", info.Name, err)
			return nil
		}
		if c.Offset != uint64(len(out)) {
			t.Errorf("chunk of %s at offset %d, expected %d", info.Name, c.Offset, len(out))
		}
		out = append(out, c.Data...)
		c.Release()
	}
}

// countingReaderAt counts the bytes read through it.
type countingReaderAt struct {
	r io.ReaderAt
	n int64
}

func (c *countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.n += int64(n)
	return n, err
}

func headerOnly(t *testing.T, s Suite) {
	dir := t.TempDir()
	path := filepath.Join(dir, s.File)
	// One large tensor among small ones: 64 MiB of data.
	tensors := makeTensors(t, s.DTypes, 3)
	big := testTensor{info: tensor.TensorInfo{Name: "big.weight", DType: s.DTypes[0]}}
	info, _ := s.DTypes[0].Info()
	cols := 1024 * max(info.BlockSize, 1)
	rows := uint64(64<<20) / max(info.BlockBytes*uint64(cols)/max(info.BlockSize, 1), 1)
	big.info.Shape = []uint64{rows, uint64(cols)}
	big.info.Size, _ = big.info.DType.ShapeByteSize(big.info.Shape)
	big.data = make([]byte, big.info.Size)
	tensors = append(tensors, big)
	write(t, s, plugin.InProcess(s.Plugin), nil, path, tensors)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if s.Header != nil {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		cr := &countingReaderAt{r: f}
		if err := s.Header(cr, fi.Size()); err != nil {
			t.Fatalf("header: %v", err)
		}
		if cr.n > s.MaxHeaderRead {
			t.Errorf("reading the header of a %d-byte file read %d bytes, more than %d", fi.Size(), cr.n, s.MaxHeaderRead)
		}
	}
	if runtime.GOOS != "linux" {
		return
	}
	_, srcCfg, _ := s.configs(path)
	describeReadsAtMost(t, s.Plugin, s.Source, srcCfg, fi.Size(), s.MaxHeaderRead)
}

// describeReadsAtMost opens the source with cfg in-process and checks, by
// /proc/self/io, that describing the file (of size bytes) reads at most max
// bytes.
func describeReadsAtMost(t *testing.T, p *plugin.Plugin, source string, cfg plugin.Config, size, max int64) {
	t.Helper()
	before := ReadChars(t)
	src, err := plugin.InProcess(p).OpenSource(context.Background(), source, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := src.Describe(context.Background()); err != nil {
		t.Fatal(err)
	}
	src.Close()
	if read := ReadChars(t) - before; read > max {
		t.Errorf("Describe of a %d-byte file read %d bytes (by /proc/self/io), more than %d", size, read, max)
	}
}

// ReadChars returns the bytes this process has read so far (rchar of
// /proc/self/io), or skips the test where that count is not available. The
// difference of two calls bounds what the code between them read, for
// tests that describing a file reads only its header.
func ReadChars(t testing.TB) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		t.Skipf("cannot read /proc/self/io: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "rchar: "); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	t.Skip("no rchar in /proc/self/io")
	return 0
}

// malformed damages a valid file and checks that reading it never panics
// and that truncation is always an error.
func malformed(t *testing.T, s Suite) {
	dir := t.TempDir()
	path := filepath.Join(dir, s.File)
	tensors := makeTensors(t, s.DTypes, 1)
	write(t, s, plugin.InProcess(s.Plugin), nil, path, tensors)
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad-"+s.File)
	_, srcCfg, _ := s.configs(bad)
	readAll := func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("panic: %v", r)
				t.Errorf("reading a damaged file panicked: %v", r)
			}
		}()
		ctx := context.Background()
		src, err := plugin.InProcess(s.Plugin).OpenSource(ctx, s.Source, srcCfg)
		if err != nil {
			return err
		}
		defer src.Close()
		m, err := src.Describe(ctx)
		if err != nil {
			return err
		}
		for _, tt := range m.Tensors {
			if tt.Location != nil {
				fi, err := os.Stat(tt.Location.Path)
				if err != nil {
					return err
				}
				if tt.Location.Offset+tt.Location.Length > uint64(fi.Size()) || tt.Location.Offset+tt.Location.Length < tt.Location.Offset {
					return fmt.Errorf("file reference past the end")
				}
			}
			rc, err := src.Open(ctx, tt.Name)
			if err != nil {
				return err
			}
			n, err := io.Copy(io.Discard, rc)
			rc.Close()
			if err != nil {
				return err
			}
			if uint64(n) != tt.Size {
				return fmt.Errorf("tensor %s: read %d of %d bytes", tt.Name, n, tt.Size)
			}
		}
		return nil
	}
	var cuts []int
	for i := 0; i < len(orig) && i < 512; i += 7 {
		cuts = append(cuts, i)
	}
	for k := 1; k < 16; k++ {
		cuts = append(cuts, len(orig)*k/16)
	}
	cuts = append(cuts, len(orig)-1)
	for _, n := range cuts {
		if err := os.WriteFile(bad, orig[:n], 0o644); err != nil {
			t.Fatal(err)
		}
		if readAll() == nil {
			t.Errorf("a file truncated to %d of %d bytes was read without error", n, len(orig))
		}
	}
	step := max(1, len(orig)/200)
	for pos := 0; pos < len(orig); pos += step {
		damaged := append([]byte(nil), orig...)
		damaged[pos] ^= 0xff
		if err := os.WriteFile(bad, damaged, 0o644); err != nil {
			t.Fatal(err)
		}
		readAll()
	}
}

// fileSHA256 returns the hex SHA-256 of a file.
func fileSHA256(t *testing.T, path string) string {
	t.Helper()
	sum, _, err := detached.Digest(path)
	if err != nil {
		t.Fatal(err)
	}
	return sum
}
