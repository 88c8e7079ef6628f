package run

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-ml/sluice/core/transform"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// rendezvousOp copies its input, but each call first waits until want calls
// are inside Apply at once: it proves that chunks of one tensor are worked
// on in parallel. It gives up (with an error) after a while.
type rendezvousOp struct {
	want int

	mu      sync.Mutex
	inside  int
	most    int
	met     chan struct{}
	metOnce sync.Once
}

func (o *rendezvousOp) String() string              { return "rendezvous" }
func (o *rendezvousOp) UnitBytes() (uint64, uint64) { return 4, 4 }

func (o *rendezvousOp) Apply(dst, src []byte) error {
	o.mu.Lock()
	o.inside++
	o.most = max(o.most, o.inside)
	if o.inside >= o.want {
		o.metOnce.Do(func() { close(o.met) })
	}
	o.mu.Unlock()
	defer func() {
		o.mu.Lock()
		o.inside--
		o.mu.Unlock()
	}()
	select {
	case <-o.met:
	case <-time.After(10 * time.Second):
		return fmt.Errorf("no other chunk of the tensor was worked on at the same time")
	}
	copy(dst, src)
	return nil
}

// opTransform applies one op to every tensor.
type opTransform struct{ op transform.Op }

func (t opTransform) Plan(in *tensor.Manifest) (*transform.Plan, error) {
	p := &transform.Plan{Out: in.Clone()}
	for _, ti := range in.Tensors {
		p.Mappings = append(p.Mappings, transform.Mapping{From: ti.Name, Ops: []transform.Op{t.op}})
	}
	return p, nil
}

// TestOneTensorUsesEveryWorker checks that the chunks of a single large
// tensor are worked on by several workers at once, not one after another.
func TestOneTensorUsesEveryWorker(t *testing.T) {
	vals := make([]float32, 1<<20) // 4 MiB: sixteen 256 KiB chunks
	for i := range vals {
		vals[i] = float32(i)
	}
	src := &memSource{m: &tensor.Manifest{Tensors: []tensor.TensorInfo{
		{Name: "embed", DType: tensor.F32, Shape: []uint64{1024, 1024}, Size: 4 << 20},
	}}, data: map[string][]byte{"embed": f32Bytes(vals)}}
	for _, workers := range []int{2, 3} {
		op := &rendezvousOp{want: workers, met: make(chan struct{})}
		sink := &memSink{}
		pl := build(t, src, map[string]*memSink{"out": sink}, map[string]transform.Transform{"out": opTransform{op}})
		if err := execute(t, pl, src, 32, 256<<10, workers); err != nil {
			t.Fatalf("workers=%d: %v", workers, err)
		}
		if op.most < workers {
			t.Errorf("workers=%d: at most %d chunks were worked on at once", workers, op.most)
		}
		if op.most > workers {
			t.Errorf("workers=%d: %d chunks were worked on at once, more than the workers", workers, op.most)
		}
		if !bytes.Equal(sink.got["embed"], src.data["embed"]) {
			t.Errorf("workers=%d: bytes differ", workers)
		}
	}
}

// countedSource is a memSource that counts the bytes read of it.
type countedSource struct {
	*memSource
	read atomic.Int64
}

func (s *countedSource) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	return io.NopCloser(&countedReader{r: bytes.NewReader(s.data[name]), n: &s.read}), nil
}

type countedReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c *countedReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// aheadOp copies its input slowly, as quantizing is slower than reading,
// and records the most bytes read of the source that no op had started on
// when one started.
type aheadOp struct {
	src     *countedSource
	mu      sync.Mutex
	started int64
	most    int64
}

func (o *aheadOp) String() string              { return "ahead" }
func (o *aheadOp) UnitBytes() (uint64, uint64) { return 4, 4 }

func (o *aheadOp) Apply(dst, src []byte) error {
	o.mu.Lock()
	o.started += int64(len(src))
	o.most = max(o.most, o.src.read.Load()-o.started)
	o.mu.Unlock()
	time.Sleep(time.Millisecond)
	copy(dst, src)
	return nil
}

// TestReadAheadIsBoundedOverTrees checks that the trees in flight together
// read only as far ahead of the cores as readAheadChunks allows, where each
// read a few chunks ahead of its own: every slot held at once is one more
// whose pages each process of the run touches. With slots larger than
// chunkTarget, the bound is a chunk of chunkTarget bytes, not a slot.
func TestReadAheadIsBoundedOverTrees(t *testing.T) {
	t.Run("slots of 64 KiB", func(t *testing.T) { testReadAheadBound(t, 64<<10, 12, 64<<10) })
	t.Run("slots of four chunkTargets", func(t *testing.T) { testReadAheadBound(t, 4*chunkTarget, 4, chunkTarget) })
}

// testReadAheadBound runs trees of four slots of f32 each through one worker
// and checks that at most most bytes were read ahead of the op.
func testReadAheadBound(t *testing.T, slotSize, trees int, most int64) {
	src := &countedSource{memSource: &memSource{m: &tensor.Manifest{}, data: map[string][]byte{}}}
	for i := range trees {
		name := fmt.Sprintf("t%02d", i)
		vals := make([]float32, slotSize) // four slots
		for j := range vals {
			vals[j] = float32(i*len(vals) + j)
		}
		src.m.Tensors = append(src.m.Tensors, tensor.TensorInfo{Name: name, DType: tensor.F32, Shape: []uint64{uint64(len(vals))}, Size: 4 * uint64(slotSize)})
		src.data[name] = f32Bytes(vals)
	}
	// With one worker the bound is exact: a chunk is read ahead only once
	// the one before it has the core.
	op := &aheadOp{src: src}
	sink := &memSink{}
	pl := build(t, src.memSource, map[string]*memSink{"out": sink}, map[string]transform.Transform{"out": opTransform{op}})
	if err := execute(t, pl, src, 64, slotSize, 1); err != nil {
		t.Fatal(err)
	}
	for name, want := range src.data {
		if !bytes.Equal(sink.got[name], want) {
			t.Errorf("%s: bytes differ", name)
		}
	}
	if op.most > most {
		t.Errorf("%d bytes were read ahead of the op, want at most a chunk, %d", op.most, most)
	}
}
