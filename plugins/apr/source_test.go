package apr

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sluice-ml/sluice/sdk/plugin"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

func openSourceCfg(t *testing.T, cfg map[string]any) (plugin.Source, error) {
	t.Helper()
	typ, _ := Plugin().Source("apr")
	return typ.Open(context.Background(), plugin.MustConfig(cfg))
}

func TestSourceDescribeAndOpen(t *testing.T) {
	ctx := context.Background()
	for _, opts := range allLayouts {
		t.Run(optsName(opts), func(t *testing.T) {
			mo := everyDType(11)
			path := filepath.Join(t.TempDir(), "m.apr")
			write(t, path, opts, mo)
			src, err := openSourceCfg(t, map[string]any{"path": path, "temp_dir": t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			m, err := src.Describe(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := m.Validate(); err != nil {
				t.Errorf("manifest: %v", err)
			}
			raw, _ := os.ReadFile(path)
			for _, ti := range m.Tensors {
				want := mo.data[ti.Name]
				if opts.Compression == CompressionNone {
					if ti.Location == nil || ti.Location.Path != path || ti.Location.Length != uint64(len(want)) {
						t.Fatalf("%s: location %+v", ti.Name, ti.Location)
					}
					if !bytes.Equal(raw[ti.Location.Offset:ti.Location.Offset+ti.Location.Length], want) {
						t.Errorf("%s: the location points at other bytes", ti.Name)
					}
				} else if ti.Location != nil {
					t.Errorf("%s: a compressed tensor has a location", ti.Name)
				}
				rc, err := src.Open(ctx, ti.Name)
				if err != nil {
					t.Fatal(err)
				}
				got, err := io.ReadAll(rc)
				rc.Close()
				if err != nil || !bytes.Equal(got, want) {
					t.Errorf("%s: Open gave %d bytes (%v), want %d", ti.Name, len(got), err, len(want))
				}
			}
			if _, err := src.Open(ctx, "nope"); !plugin.IsBadInput(err) {
				t.Errorf("unknown tensor: %v", err)
			}
		})
	}
}

func TestSourceOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.apr")
	write(t, path, WriteOptions{}, everyDType(12))
	src, err := openSourceCfg(t, map[string]any{"path": path, "only": []string{"a.*", "j.big"}})
	if err != nil {
		t.Fatal(err)
	}
	m, err := src.Describe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Tensors) != 2 || m.Tensors[0].Name != "a.f32" || m.Tensors[1].Name != "j.big" {
		t.Errorf("only selected %v", m.Tensors)
	}
	if _, err := src.Open(context.Background(), "b.f16"); err == nil {
		t.Error("a tensor left out by only was opened")
	}
	src.Close()
	src, _ = openSourceCfg(t, map[string]any{"path": path, "only": []string{"zz*"}})
	if _, err := src.Describe(context.Background()); !plugin.IsBadConfig(err) {
		t.Errorf("a pattern matching nothing: %v", err)
	}
	if _, err := openSourceCfg(t, map[string]any{"path": path, "only": []string{"[a"}}); !plugin.IsBadConfig(err) {
		t.Errorf("a malformed pattern: %v", err)
	}
}

func TestSourceVerifyDefault(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.apr")
	write(t, path, WriteOptions{}, everyDType(13))
	b, _ := os.ReadFile(path)
	r, _ := OpenFile(path, ReadOptions{})
	at := r.DataOffset + r.Tensors[0].Offset
	r.Close()
	b[at] ^= 0x10 // tensor data: only the footer checksum notices
	os.WriteFile(path, b, 0o644)
	src, _ := openSourceCfg(t, map[string]any{"path": path})
	if _, err := src.Describe(context.Background()); !errors.Is(err, ErrChecksum) || !plugin.IsBadInput(err) {
		t.Errorf("default: %v, want a checksum error", err)
	}
	src.Close()
	src, _ = openSourceCfg(t, map[string]any{"path": path, "verify": false})
	if _, err := src.Describe(context.Background()); err != nil {
		t.Errorf("verify = false: %v", err)
	}
	src.Close()
}

func TestSourceMissingFile(t *testing.T) {
	if _, err := openSourceCfg(t, map[string]any{"path": filepath.Join(t.TempDir(), "none.apr")}); !plugin.IsBadInput(err) {
		t.Errorf("missing file: %v", err)
	}
	if _, err := openSourceCfg(t, map[string]any{}); !plugin.IsBadConfig(err) {
		t.Errorf("no path: %v", err)
	}
}

func TestProbe(t *testing.T) {
	dir := t.TempDir()
	for _, opts := range []WriteOptions{{Layout: LayoutAprender}, {Layout: LayoutSpec}} {
		path := filepath.Join(dir, optsName(opts)+".apr")
		write(t, path, opts, goldenModel())
		if got := Probe(path); got != 100 {
			t.Errorf("%s: probe %d", path, got)
		}
	}
	other := filepath.Join(dir, "x.gguf")
	os.WriteFile(other, []byte("GGUF\x03\x00\x00\x00"), 0o644)
	if Probe(other) != 0 || Probe(filepath.Join(dir, "none")) != 0 {
		t.Error("probe of a non-APR file is not 0")
	}
}

func TestPluginTable(t *testing.T) {
	p := Plugin()
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	src, _ := p.Source("apr")
	snk, _ := p.Sink("apr")
	for _, name := range []string{"path", "verify", "only", "temp_dir"} {
		if a, ok := src.Schema.Attribute(name); !ok || a.Doc == "" {
			t.Errorf("source attribute %s missing or undocumented", name)
		}
	}
	for _, name := range []string{"path", "layout", "compression", "compression_level"} {
		if a, ok := snk.Schema.Attribute(name); !ok || a.Doc == "" {
			t.Errorf("sink attribute %s missing or undocumented", name)
		}
	}
}

// A GGUF-shaped source (dims reversed at the GGUF edge, bytes unchanged)
// keeps its row-major shape and bytes: no transpose happens here.
func TestNoTranspose(t *testing.T) {
	mo := &model{}
	b := f32Bytes(1, 2, 3, 4, 5, 6)
	mo.add("w", tensor.F32, []uint64{2, 3}, b)
	path := filepath.Join(t.TempDir(), "m.apr")
	write(t, path, WriteOptions{}, mo)
	r, err := OpenFile(path, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rc, _ := r.Open(&r.Tensors[0])
	got, _ := io.ReadAll(rc)
	if !slices.Equal(r.Tensors[0].Shape, []uint64{2, 3}) || !bytes.Equal(got, b) {
		t.Errorf("shape %v bytes %x", r.Tensors[0].Shape, got)
	}
}

// Any shard of a sharded model reads as the whole model.
func TestSourceShardedSet(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	mo := shardedModel()
	write(t, filepath.Join(dir, "model.apr"), WriteOptions{}, mo)
	src, err := openSourceCfg(t, map[string]any{"path": filepath.Join(dir, "model-00002-of-00003.apr")})
	if err != nil {
		t.Fatal(err)
	}
	m, err := src.Describe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Tensors) != len(mo.m.Tensors) {
		t.Fatalf("%d tensors from the set, want %d", len(m.Tensors), len(mo.m.Tensors))
	}
	if _, ok := m.Metadata.Get(RawJSONPrefix + "sharding"); ok {
		t.Error("the merged model keeps a shard's sharding object")
	}
	for _, ti := range m.Tensors {
		rc, err := src.Open(ctx, ti.Name)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(rc)
		rc.Close()
		if !bytes.Equal(got, mo.data[ti.Name]) {
			t.Errorf("%s differs", ti.Name)
		}
	}
	src.Close()

	os.Remove(filepath.Join(dir, "model-00003-of-00003.apr"))
	src, _ = openSourceCfg(t, map[string]any{"path": filepath.Join(dir, "model-00001-of-00003.apr")})
	if _, err := src.Describe(ctx); err == nil || !bytes.Contains([]byte(err.Error()), []byte("shard 3 of 3")) {
		t.Errorf("a missing shard: %v", err)
	}
	src.Close()
}
