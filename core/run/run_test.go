package run

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/sluice-ml/sluice/core/pipeline"
	"github.com/sluice-ml/sluice/core/plan"
	"github.com/sluice-ml/sluice/core/transform"
	"github.com/sluice-ml/sluice/sdk/codec"
	"github.com/sluice-ml/sluice/sdk/plugin"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// memSource serves tensors from memory, optionally through a file so some
// carry file references.
type memSource struct {
	m    *tensor.Manifest
	data map[string][]byte
}

func (s *memSource) Describe(ctx context.Context) (*tensor.Manifest, error) { return s.m, nil }
func (s *memSource) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	return io.NopCloser(bytes.NewReader(s.data[name])), nil
}
func (s *memSource) Close() error { return nil }

// memSink collects what it is given and can fail on a tensor.
type memSink struct {
	convert map[string]tensor.DType
	failOn  string

	mu       sync.Mutex
	got      map[string][]byte
	fileRefs int
	begun    bool
	commit   bool
	aborted  bool
}

func (s *memSink) Plan(ctx context.Context, in *tensor.Manifest) (*plugin.SinkPlan, error) {
	p := &plugin.SinkPlan{}
	for name, to := range s.convert {
		p.Convert = append(p.Convert, plugin.Conversion{Tensor: name, To: to})
	}
	return p, nil
}
func (s *memSink) Begin(ctx context.Context, m *tensor.Manifest, _ plugin.BeginOptions) error {
	s.begun, s.got = true, map[string][]byte{}
	return nil
}
func (s *memSink) Write(ctx context.Context, name string, data plugin.TensorData) error {
	if name == s.failOn {
		return fmt.Errorf("refusing %s", name)
	}
	if _, ok := data.File(); ok {
		s.mu.Lock()
		s.fileRefs++
		s.mu.Unlock()
	}
	b, err := io.ReadAll(data)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.got[name] = b
	s.mu.Unlock()
	return nil
}
func (s *memSink) Commit(ctx context.Context) ([]plugin.Artifact, error) {
	s.commit = true
	return nil, nil
}
func (s *memSink) Abort(ctx context.Context) error { s.aborted = true; return nil }

func f32Bytes(v []float32) []byte {
	b := make([]byte, 4*len(v))
	codec.EncodeFloat32(tensor.F32, b, v)
	return b
}

func build[S plugin.Sink](t *testing.T, src *memSource, sinks map[string]S, viaTransform map[string]transform.Transform) *plan.Plan {
	t.Helper()
	srcStage := &pipeline.Stage{Kind: pipeline.Source, Type: "mem", Name: "src", Enabled: true}
	p := &pipeline.Pipeline{Stages: []*pipeline.Stage{srcStage}}
	env := plan.Env{
		Sources:    map[*pipeline.Stage]plugin.Source{srcStage: src},
		Sinks:      map[*pipeline.Stage]plugin.Sink{},
		Transforms: map[*pipeline.Stage]transform.Transform{},
	}
	for name, sk := range sinks {
		in := srcStage
		if tr, ok := viaTransform[name]; ok {
			ts := &pipeline.Stage{Kind: pipeline.Transform, Type: "t", Name: "t_" + name, Enabled: true, Input: srcStage}
			p.Stages = append(p.Stages, ts)
			env.Transforms[ts] = tr
			in = ts
		}
		ss := &pipeline.Stage{Kind: pipeline.Sink, Type: "mem", Name: name, Enabled: true, Input: in}
		p.Stages = append(p.Stages, ss)
		env.Sinks[ss] = sk
	}
	pl, err := plan.Build(context.Background(), p, env)
	if err != nil {
		t.Fatal(err)
	}
	return pl
}

func execute(t *testing.T, pl *plan.Plan, src plugin.Source, slots, slotSize, workers int) error {
	t.Helper()
	arena, err := plugin.NewArena(slots, slotSize)
	if err != nil {
		t.Fatal(err)
	}
	defer arena.Close()
	sources := map[*pipeline.Stage]plugin.Source{}
	for _, sp := range pl.Stages {
		if sp.Stage.Kind == pipeline.Source {
			sources[sp.Stage] = src
		}
	}
	_, err = Execute(context.Background(), pl, Options{Arena: arena, HeapBudget: 64 << 20, Workers: workers, Sources: sources})
	if err == nil && arena.Free() != arena.Slots() {
		t.Errorf("%d of %d arena slots still reserved after the run", arena.Slots()-arena.Free(), arena.Slots())
	}
	return err
}

func TestQuantizedFanOutMatchesSerialCodec(t *testing.T) {
	// One large tensor (many chunks) and a small one, quantized for one sink
	// and passed raw to another.
	rows, cols := 700, 4096
	vals := make([]float32, rows*cols)
	for i := range vals {
		vals[i] = float32(math.Sin(float64(i)*0.001)) * 3
	}
	small := []float32{1, 2, 3, 4}
	src := &memSource{
		m: &tensor.Manifest{Tensors: []tensor.TensorInfo{
			{Name: "big", DType: tensor.F32, Shape: []uint64{uint64(rows), uint64(cols)}, Size: uint64(4 * len(vals))},
			{Name: "norm", DType: tensor.F32, Shape: []uint64{4}, Size: 16},
		}},
		data: map[string][]byte{"big": f32Bytes(vals), "norm": f32Bytes(small)},
	}
	want := make([]byte, rows*cols/32*34)
	if err := codec.EncodeFloat32(tensor.Q8_0, want, vals); err != nil {
		t.Fatal(err)
	}
	for _, workers := range []int{1, 2} {
		q := &memSink{convert: map[string]tensor.DType{"big": tensor.Q8_0}}
		raw := &memSink{}
		pl := build(t, src, map[string]*memSink{"q": q, "raw": raw}, nil)
		// 8 slots of 1 MiB: the 11 MiB tensor streams in chunks.
		if err := execute(t, pl, src, 10, 1<<20, workers); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(q.got["big"], want) {
			t.Errorf("workers=%d: quantized bytes differ from a serial EncodeFloat32", workers)
		}
		if !bytes.Equal(raw.got["big"], src.data["big"]) || !bytes.Equal(raw.got["norm"], src.data["norm"]) {
			t.Errorf("workers=%d: the raw sink got other bytes", workers)
		}
		if !q.commit || !raw.commit {
			t.Errorf("sinks not committed")
		}
	}
}

func TestFileReferencesReachSinksUnread(t *testing.T) {
	dir := t.TempDir()
	data := bytes.Repeat([]byte{1, 2, 3, 4}, 1<<18)
	p := filepath.Join(dir, "blob")
	os.WriteFile(p, append([]byte("header"), data...), 0o644)
	src := &memSource{m: &tensor.Manifest{Tensors: []tensor.TensorInfo{
		{Name: "w", DType: tensor.U8, Shape: []uint64{uint64(len(data))}, Size: uint64(len(data)), Location: &tensor.FileRef{Path: p, Offset: 6, Length: uint64(len(data))}},
	}}, data: map[string][]byte{}}
	sink := &memSink{}
	pl := build(t, src, map[string]*memSink{"out": sink}, nil)
	if err := execute(t, pl, src, 8, 1<<20, 2); err != nil {
		t.Fatal(err)
	}
	if sink.fileRefs != 1 || !bytes.Equal(sink.got["w"], data) {
		t.Errorf("file reference not passed (%d) or bytes differ", sink.fileRefs)
	}
	// A reference past the end of its file is refused as bad input.
	src.m.Tensors[0].Location.Length += 10
	src.m.Tensors[0].Size += 10
	src.m.Tensors[0].Shape[0] += 10
	q := &memSink{convert: map[string]tensor.DType{"w": tensor.F32}}
	pl = build(t, src, map[string]*memSink{"out": q}, nil)
	err := execute(t, pl, src, 8, 1<<20, 2)
	if err == nil || !plugin.IsBadInput(err) {
		t.Errorf("reference past the end: got %v, want a bad-input error", err)
	}
}

func TestSinkFailureAbortsEverySink(t *testing.T) {
	src := &memSource{m: &tensor.Manifest{Tensors: []tensor.TensorInfo{
		{Name: "a", DType: tensor.U8, Shape: []uint64{4}, Size: 4},
		{Name: "b", DType: tensor.U8, Shape: []uint64{4}, Size: 4},
	}}, data: map[string][]byte{"a": {1, 2, 3, 4}, "b": {5, 6, 7, 8}}}
	good, bad := &memSink{}, &memSink{failOn: "b"}
	pl := build(t, src, map[string]*memSink{"good": good, "bad": bad}, nil)
	err := execute(t, pl, src, 8, 1<<10, 2)
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte(`tensor "b"`)) {
		t.Fatalf("error %v does not name the tensor", err)
	}
	if !good.aborted || !bad.aborted || good.commit || bad.commit {
		t.Errorf("good aborted=%v committed=%v, bad aborted=%v committed=%v", good.aborted, good.commit, bad.aborted, bad.commit)
	}
}

func TestSmallArenaStillCompletes(t *testing.T) {
	// Six sinks, each converting the tensor differently: seven slots per
	// chunk, more than the arena's eight allow in parallel.
	vals := make([]float32, 4096)
	for i := range vals {
		vals[i] = float32(i)
	}
	src := &memSource{m: &tensor.Manifest{Tensors: []tensor.TensorInfo{
		{Name: "a", DType: tensor.F32, Shape: []uint64{16, 256}, Size: 16384},
	}}, data: map[string][]byte{"a": f32Bytes(vals)}}
	sinks := map[string]*memSink{}
	types := []tensor.DType{tensor.F16, tensor.BF16, tensor.Q8_0, tensor.Q4_0, tensor.F64, tensor.Q4_K}
	for i, d := range types {
		sinks[fmt.Sprint("s", i)] = &memSink{convert: map[string]tensor.DType{"a": d}}
	}
	pl := build(t, src, sinks, nil)
	if err := execute(t, pl, src, 8, 1<<10, 2); err != nil {
		t.Fatal(err)
	}
	for i, d := range types {
		size, _ := d.ShapeByteSize([]uint64{16, 256})
		want := make([]byte, size)
		codec.EncodeFloat32(d, want, vals)
		if !bytes.Equal(sinks[fmt.Sprint("s", i)].got["a"], want) {
			t.Errorf("%s: bytes differ", d)
		}
	}
	// Fewer slots than one chunk needs is a clear error.
	casts := map[string]*memSink{}
	for i, d := range []tensor.DType{tensor.F16, tensor.BF16, tensor.F64, tensor.F8E4M3, tensor.F8E5M2, tensor.I32} {
		casts[fmt.Sprint("c", i)] = &memSink{convert: map[string]tensor.DType{"a": d}}
	}
	err := execute(t, build(t, src, casts, nil), src, 4, 1<<10, 1)
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("raise --max-memory to 1MiB or more")) {
		t.Errorf("got %v, want an error asking for more memory", err)
	}
}

func TestPlanLayoutKeepsUnitsWholeAndChunksWithinASlot(t *testing.T) {
	in := tensor.TensorInfo{Name: "w", DType: tensor.BF16, Shape: []uint64{1000, 4096}, Size: 1000 * 4096 * 2}
	toF32, f32info, _ := transform.ConvertOp(&in, tensor.F32)
	toQ, qinfo, _ := transform.ConvertOp(&f32info, tensor.Q4_K)
	tree := &plan.Tree{Tensor: in, Root: &plan.Node{Size: in.Size}}
	n1 := &plan.Node{Op: toF32, Size: f32info.Size}
	n2 := &plan.Node{Op: toQ, Size: qinfo.Size}
	n1.Children = []*plan.Node{n2}
	tree.Root.Children = []*plan.Node{n1}
	slot := uint64(8 << 20)
	l := planLayout(tree, slot)
	if l.chunk == 0 || l.chunk%l.align != 0 {
		t.Fatalf("layout %+v", l)
	}
	// q4_K blocks are 256 elements: 512 bytes of bf16.
	if l.align%512 != 0 {
		t.Errorf("align %d does not keep q4_K blocks whole", l.align)
	}
	if l.chunk*2 > slot {
		t.Errorf("chunk %d becomes %d bytes of f32, more than a slot", l.chunk, l.chunk*2)
	}
	// The slot has room for 8 MiB of f32; a chunk holds only chunkTarget.
	if got, want := l.chunk*2, uint64(chunkTarget); got != want {
		t.Errorf("chunk %d becomes %d bytes of f32, want chunkTarget's %d", l.chunk, got, want)
	}
}

// unitOp is an op of units of a given size that changes no byte count.
type unitOp struct{ unit uint64 }

func (o unitOp) String() string              { return fmt.Sprintf("units of %d", o.unit) }
func (o unitOp) UnitBytes() (uint64, uint64) { return o.unit, o.unit }
func (o unitOp) Apply(dst, src []byte) error { copy(dst, src); return nil }

// An op whose unit is more than chunkTarget still streams, one unit to a
// chunk, as long as a unit fits in a slot; one larger than a slot needs
// the whole tensor.
func TestPlanLayoutChunksOfOneUnitPastTheTarget(t *testing.T) {
	const slot = 8 << 20
	for _, c := range []struct {
		unit, size, chunk uint64
	}{
		{unit: 4 << 10, size: 64 << 20, chunk: chunkTarget},
		{unit: 3 << 20, size: 24 << 20, chunk: 3 << 20},
		{unit: 8 << 20, size: 24 << 20, chunk: 8 << 20},
		{unit: 12 << 20, size: 24 << 20, chunk: 0},
	} {
		tree := &plan.Tree{Tensor: tensor.TensorInfo{Name: "w", Size: c.size}, Root: &plan.Node{Size: c.size}}
		tree.Root.Children = []*plan.Node{{Op: unitOp{c.unit}, Size: c.size}}
		l := planLayout(tree, slot)
		if l.chunk != c.chunk {
			t.Errorf("units of %d bytes in a tensor of %d: chunk %d, want %d", c.unit, c.size, l.chunk, c.chunk)
		}
	}
	// Without ops, bytes stream in chunks of a slot.
	tree := &plan.Tree{Tensor: tensor.TensorInfo{Name: "w", Size: 64 << 20}, Root: &plan.Node{Size: 64 << 20}}
	if l := planLayout(tree, slot); l.chunk != slot {
		t.Errorf("a tree without ops: chunk %d, want a slot, %d", l.chunk, slot)
	}
}
