package run

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-ml/sluice/sdk/codec"
	"github.com/sluice-ml/sluice/sdk/plugin"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// gatherSink is a memSink that gathers small converted writes, as a plugin
// process's sink does, and counts the tensors whose bytes came in a piece of
// a shared slot.
type gatherSink struct {
	memSink
	pieces atomic.Int32
}

func (s *gatherSink) GathersDataWrites() bool { return true }

func (s *gatherSink) Write(ctx context.Context, name string, data plugin.TensorData) error {
	cd, ok := data.(interface {
		NextChunk(context.Context) (*plugin.Chunk, error)
	})
	if !ok {
		return s.memSink.Write(ctx, name, data)
	}
	var b []byte
	for {
		c, err := cd.NextChunk(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if _, _, _, cut := c.Piece(); cut {
			s.pieces.Add(1)
		}
		b = append(b, c.Data...)
		c.Release()
	}
	s.mu.Lock()
	s.got[name] = b
	s.mu.Unlock()
	return nil
}

// Small conversions for a sink that gathers them hand their outputs over
// in pieces of shared slots and give their own slots back; a large tensor
// whose chunks need the whole arena still gets it among them (no piece
// keeps a slot while nothing waits to be written), and every byte arrives.
func TestSmallConversionsShareSlotsBesideALargeOne(t *testing.T) {
	m := &tensor.Manifest{}
	data := map[string][]byte{}
	want := map[string][]byte{}
	add := func(name string, n int) {
		vals := make([]float32, n)
		for i := range vals {
			vals[i] = float32(i%97) - float32(len(name))
		}
		m.Tensors = append(m.Tensors, tensor.TensorInfo{Name: name, DType: tensor.F32, Shape: []uint64{uint64(n)}, Size: uint64(4 * n)})
		data[name] = f32Bytes(vals)
		w := make([]byte, 2*n)
		codec.EncodeFloat32(tensor.F16, w, vals)
		want[name] = w
	}
	for i := range 150 {
		add(fmt.Sprint("small", i), 64)
		if i == 75 {
			add("large", 4096) // 16 KiB: 16 chunks of the arena's 1 KiB slots
		}
	}
	src := &memSource{m: m, data: data}
	convert := map[string]tensor.DType{}
	for _, ti := range m.Tensors {
		convert[ti.Name] = tensor.F16
	}
	sink := &gatherSink{memSink: memSink{convert: convert}}
	pl := build(t, src, map[string]*gatherSink{"g": sink}, nil)
	done := make(chan error, 1)
	go func() { done <- execute(t, pl, src, 8, 1<<10, 2) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the run did not end within a minute")
	}
	for name, w := range want {
		if !bytes.Equal(sink.got[name], w) {
			t.Errorf("%s: %d bytes arrived, want %d", name, len(sink.got[name]), len(w))
		}
	}
	if n := sink.pieces.Load(); n == 0 {
		t.Error("no small output came in a piece of a shared slot")
	}
}
