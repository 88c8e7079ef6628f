package apr

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-ml/sluice/sdk/atomicfile"
	"github.com/sluice-ml/sluice/sdk/plugin"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

func TestPlanConversions(t *testing.T) {
	m := &tensor.Manifest{Tensors: []tensor.TensorInfo{
		{Name: "keep.f32", DType: tensor.F32, Shape: []uint64{4}, Size: 16},
		{Name: "keep.q4k", DType: tensor.Q4_K, Shape: []uint64{256}, Size: 144},
		{Name: "f64", DType: tensor.F64, Shape: []uint64{4}, Size: 32},
		{Name: "f8", DType: tensor.F8E4M3, Shape: []uint64{4}, Size: 4},
		{Name: "q8_0", DType: tensor.Q8_0, Shape: []uint64{2, 32}, Size: 68},
		{Name: "q5_K", DType: tensor.Q5_K, Shape: []uint64{256}, Size: 176},
	}}
	s := NewSink(filepath.Join(t.TempDir(), "m.apr"), WriteOptions{})
	p, err := s.Plan(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]tensor.DType{"f64": tensor.F32, "f8": tensor.F16, "q8_0": tensor.F32, "q5_K": tensor.F32}
	if len(p.Convert) != len(want) {
		t.Fatalf("conversions %+v", p.Convert)
	}
	for _, c := range p.Convert {
		if want[c.Tensor] != c.To || c.Reason == "" {
			t.Errorf("%s → %s (%q), want %s", c.Tensor, c.To, c.Reason, want[c.Tensor])
		}
	}
	notes := 0
	for _, n := range p.Notes {
		if _, ok := want[n.Tensor]; ok && strings.HasPrefix(n.Msg, "converted") {
			notes++
		}
	}
	if notes != len(want) {
		t.Errorf("%d conversion notes, want %d: %+v", notes, len(want), p.Notes)
	}
	// f32 16 + q4_K 144 + f32 16 + f16 8 + f32 256 + f32 1024, each padded to 64.
	if len(p.Files) != 1 || p.Files[0].Tensors != 6 {
		t.Fatalf("files %+v", p.Files)
	}
	if _, err := os.Stat(p.Files[0].Path); !os.IsNotExist(err) {
		t.Errorf("Plan created the output")
	}
}

func TestPlanRefusesIntegers(t *testing.T) {
	m := &tensor.Manifest{Tensors: []tensor.TensorInfo{
		{Name: "position_ids", DType: tensor.I64, Shape: []uint64{4}, Size: 32},
		{Name: "w", DType: tensor.F32, Shape: []uint64{4}, Size: 16},
	}}
	_, err := NewSink(filepath.Join(t.TempDir(), "m.apr"), WriteOptions{}).Plan(context.Background(), m)
	if err == nil || !plugin.IsBadInput(err) || !strings.Contains(err.Error(), "position_ids") {
		t.Fatalf("integer tensor: %v", err)
	}
}

func TestBeginRefusesUnconverted(t *testing.T) {
	m := &tensor.Manifest{Tensors: []tensor.TensorInfo{{Name: "x", DType: tensor.Q8_0, Shape: []uint64{32}, Size: 34}}}
	err := NewSink(filepath.Join(t.TempDir(), "m.apr"), WriteOptions{}).Begin(context.Background(), m, plugin.BeginOptions{})
	if err == nil || !strings.Contains(err.Error(), "unconverted") {
		t.Fatalf("Begin with q8_0: %v", err)
	}
}

func TestSinkConfig(t *testing.T) {
	bad := []SinkConfig{
		{Path: ""},
		{Path: "x.apr", Layout: "gguf"},
		{Path: "x.apr", Compression: "gzip"},
		{Path: "x.apr", Compression: "lz4", CompressionLevel: 12},
		{Path: "x.apr", CompressionLevel: -1},
	}
	for _, c := range bad {
		if _, err := c.options(); !plugin.IsBadConfig(err) {
			t.Errorf("%+v: %v, want a config error", c, err)
		}
	}
	typ, _ := Plugin().Sink("apr")
	if _, err := typ.Open(context.Background(), plugin.MustConfig(map[string]any{"path": "x.apr", "layuot": "spec"})); !plugin.IsBadConfig(err) {
		t.Errorf("a misspelt attribute: %v", err)
	}
	snk, err := typ.Open(context.Background(), plugin.MustConfig(map[string]any{"path": "x.apr", "layout": "spec", "compression": "zstd", "compression_level": 19}))
	if err != nil {
		t.Fatal(err)
	}
	if s := snk.(*Sink); s.opts != (WriteOptions{Layout: LayoutSpec, Compression: CompressionZstd, Level: 19}) {
		t.Errorf("options %+v", s.opts)
	}
}

func TestWriteErrors(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	mo := goldenModel()
	s := NewSink(filepath.Join(dir, "m.apr"), WriteOptions{})
	if err := s.Begin(ctx, &mo.m, plugin.BeginOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(ctx, "nope", plugin.BytesData(nil)); err == nil {
		t.Error("unknown tensor accepted")
	}
	if err := s.Write(ctx, "bias", plugin.BytesData(make([]byte, 8))); err == nil {
		t.Error("wrong size accepted")
	}
	if err := s.Write(ctx, "bias", plugin.BytesData(mo.data["bias"])); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(ctx, "bias", plugin.BytesData(mo.data["bias"])); err == nil {
		t.Error("second write accepted")
	}
	if _, err := s.Commit(ctx); err == nil || !strings.Contains(err.Error(), "weights") {
		t.Errorf("commit with a missing tensor: %v", err)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		t.Errorf("left behind: %s", e.Name())
	}
}

func TestAbortRemovesEverything(t *testing.T) {
	for _, opts := range allLayouts {
		ctx := context.Background()
		dir := t.TempDir()
		mo := everyDType(5)
		s := NewSink(filepath.Join(dir, "m.apr"), opts)
		if err := s.Begin(ctx, &mo.m, plugin.BeginOptions{}); err != nil {
			t.Fatal(err)
		}
		for _, ti := range mo.m.Tensors[:3] {
			if err := s.Write(ctx, ti.Name, plugin.BytesData(mo.data[ti.Name])); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Abort(ctx); err != nil {
			t.Fatal(err)
		}
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			t.Errorf("%s: left behind %s", optsName(opts), e.Name())
		}
	}
}

func TestFileDataCopiedByReference(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src.bin")
	payload := f32Bytes(1, 2, 3, 4, 5)
	os.WriteFile(src, append([]byte("junk"), payload...), 0o644)
	ctx := context.Background()
	m := &tensor.Manifest{Tensors: []tensor.TensorInfo{{Name: "x", DType: tensor.F32, Shape: []uint64{5}, Size: 20}}}
	for _, opts := range allLayouts {
		out := filepath.Join(dir, optsName(opts)+".apr")
		s := NewSink(out, opts)
		if err := s.Begin(ctx, m, plugin.BeginOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := s.Write(ctx, "x", plugin.FileData(tensor.FileRef{Path: src, Offset: 4, Length: 20})); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		r, err := OpenFile(out, ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		checkReader(t, r, &model{m: *m, data: map[string][]byte{"x": payload}})
		r.Close()
	}
}

func TestArtifacts(t *testing.T) {
	for _, opts := range allLayouts {
		path := filepath.Join(t.TempDir(), "m.apr")
		arts := write(t, path, opts, goldenModel())
		b, _ := os.ReadFile(path)
		if len(arts) != 1 || arts[0].Path != path || arts[0].Size != uint64(len(b)) || arts[0].SHA256 != sha256Hex(b) {
			t.Errorf("%s: artifact %+v for a %d-byte file", optsName(opts), arts, len(b))
		}
	}
}

func sha256Hex(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func readFull(r io.Reader, b []byte) (int, error) { return io.ReadFull(r, b) }

func shardedModel() *model {
	mo := everyDType(7)
	n := len(mo.m.Tensors)
	for i := range mo.m.Tensors {
		mo.m.Tensors[i].SetAttr(tensor.AttrShard, tensor.FormatShard(i*3/n+1, 3))
	}
	return mo
}

func TestSharding(t *testing.T) {
	for _, opts := range []WriteOptions{{Layout: LayoutAprender}, {Layout: LayoutSpec, Compression: CompressionZstd}} {
		t.Run(optsName(opts), func(t *testing.T) {
			dir := t.TempDir()
			mo := shardedModel()
			plan, err := NewSink(filepath.Join(dir, "model.apr"), opts).Plan(context.Background(), &mo.m)
			if err != nil {
				t.Fatal(err)
			}
			arts := write(t, filepath.Join(dir, "model.apr"), opts, mo)
			if len(arts) != 3 || len(plan.Files) != 3 {
				t.Fatalf("%d artifacts, %d planned files, want 3", len(arts), len(plan.Files))
			}
			seen := 0
			for i, a := range arts {
				want := filepath.Join(dir, "model-0000"+itoa(i+1)+"-of-00003.apr")
				if a.Path != want || plan.Files[i].Path != want {
					t.Errorf("shard %d at %s (planned %s), want %s", i, a.Path, plan.Files[i].Path, want)
				}
				r, err := OpenFile(a.Path, ReadOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if opts.Layout == LayoutAprender && r.Flags&uint32(FlagSharded) == 0 || opts.Layout == LayoutSpec && r.Flags&SpecFlagSharded == 0 {
					t.Errorf("shard %d: flags %#x lack SHARDED", i, r.Flags)
				}
				sh, _ := r.Metadata.Get(RawJSONPrefix + "sharding")
				s, _ := sh.Str()
				wantSh := `{"shard_count":3,"shard_index":` + itoa(i) + `,"total_size":` + itoa(int(mo.m.TotalSize())) + `,"pattern":"model-{:05d}-of-{:05d}.apr"}`
				if s != wantSh {
					t.Errorf("shard %d: sharding %s, want %s", i, s, wantSh)
				}
				for _, tt := range r.Tensors {
					seen++
					rc, _ := r.Open(&tt)
					got := make([]byte, tt.RawSize)
					if _, err := readFull(rc, got); err != nil || string(got) != string(mo.data[tt.Name]) {
						t.Errorf("shard %d: %s differs (%v)", i, tt.Name, err)
					}
					rc.Close()
				}
				r.Close()
			}
			if seen != len(mo.m.Tensors) {
				t.Errorf("%d tensors across shards, want %d", seen, len(mo.m.Tensors))
			}
		})
	}
}

func TestShardErrors(t *testing.T) {
	mo := everyDType(8)
	mo.m.Tensors[0].SetAttr(tensor.AttrShard, "1/2")
	if _, err := NewSink(filepath.Join(t.TempDir(), "m.apr"), WriteOptions{}).Plan(context.Background(), &mo.m); err == nil {
		t.Error("some tensors sharded, some not: accepted")
	}
	mo.m.Tensors[0].SetAttr(tensor.AttrShard, "x")
	if _, err := NewSink(filepath.Join(t.TempDir(), "m.apr"), WriteOptions{}).Plan(context.Background(), &mo.m); err == nil {
		t.Error("bad shard attribute accepted")
	}
	for i := range mo.m.Tensors {
		mo.m.Tensors[i].SetAttr(tensor.AttrShard, "1/1")
	}
	p, err := NewSink(filepath.Join(t.TempDir(), "m.apr"), WriteOptions{}).Plan(context.Background(), &mo.m)
	if err != nil || len(p.Files) != 1 || !strings.HasSuffix(p.Files[0].Path, "m.apr") {
		t.Errorf("1/1 shards: %v %+v", err, p)
	}
}

func TestLZ4SizeLimitPlanned(t *testing.T) {
	m := &tensor.Manifest{Tensors: []tensor.TensorInfo{{Name: "huge", DType: tensor.F32, Shape: []uint64{1 << 30}, Size: 1 << 32}}}
	_, err := NewSink("m.apr", WriteOptions{Compression: CompressionLZ4}).Plan(context.Background(), m)
	if !plugin.IsBadConfig(err) {
		t.Fatalf("a 4 GiB file with lz4: %v", err)
	}
	if _, err := NewSink("m.apr", WriteOptions{Compression: CompressionZstd}).Plan(context.Background(), m); err != nil {
		t.Fatalf("zstd: %v", err)
	}
}

func TestStaleTemporaryNames(t *testing.T) {
	// Outputs are written under atomicfile temporary names only.
	dir := t.TempDir()
	mo := everyDType(9)
	ctx := context.Background()
	for _, opts := range allLayouts {
		s := NewSink(filepath.Join(dir, optsName(opts)+".apr"), opts)
		if err := s.Begin(ctx, &mo.m, plugin.BeginOptions{}); err != nil {
			t.Fatal(err)
		}
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if !atomicfile.IsTemp(e.Name()) {
				t.Errorf("%s: non-temporary file %s during the write", optsName(opts), e.Name())
			}
		}
		s.Abort(ctx)
	}
	if _, err := os.Stat(filepath.Join(dir, "aprender-none.apr")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("final name exists before Commit: %v", err)
	}
}
