package run

import (
	"bytes"
	"fmt"
	"sync"
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
