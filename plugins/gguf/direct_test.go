package gguf

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/sluice-ml/sluice/sdk/plugin"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// directSink writes the tensors the GGUF sink offers (plugin.DirectWriter)
// into its files itself and tells it, as a host does out of process; the
// others go to Write.
type directSink struct {
	*Sink
	mu      sync.Mutex
	targets map[string]plugin.DirectTarget
	direct  []string
}

func (d *directSink) Begin(ctx context.Context, m *tensor.Manifest, opts plugin.BeginOptions) error {
	if err := d.Sink.Begin(ctx, m, opts); err != nil {
		return err
	}
	d.targets = map[string]plugin.DirectTarget{}
	for _, t := range d.DirectTargets() {
		d.targets[t.Tensor] = t
	}
	return nil
}

func (d *directSink) Write(ctx context.Context, name string, data plugin.TensorData) error {
	t, ok := d.targets[name]
	if !ok {
		return d.Sink.Write(ctx, name, data)
	}
	b, err := io.ReadAll(data)
	if err != nil {
		return err
	}
	if uint64(len(b)) != t.Size {
		return fmt.Errorf("tensor %q: %d bytes, target of %d", name, len(b), t.Size)
	}
	if _, err := t.File.(io.WriterAt).WriteAt(b, int64(t.Offset)); err != nil {
		return err
	}
	d.mu.Lock()
	d.direct = append(d.direct, name)
	d.mu.Unlock()
	return d.WrittenDirect(name)
}

// A Hugging Face llama checkpoint written the way a host writes out of
// process — every tensor the sink offers into its file by the host, the rows
// it permutes through Write — comes out byte for byte as written through
// Write alone, with the same digest; the permuted Q and K projections are
// not offered.
func TestDirectTargetsWriteTheSameFile(t *testing.T) {
	m, data := hfCheckpoint("llama")
	var files [2][]byte
	var digests [2]string
	var offered []string
	for i, direct := range []bool{false, true} {
		out := filepath.Join(t.TempDir(), "llama.gguf")
		gs, err := NewSink(&SinkConfig{Path: out, Architecture: "auto"})
		if err != nil {
			t.Fatal(err)
		}
		var sink plugin.Sink = gs
		ds := &directSink{Sink: gs}
		if direct {
			sink = ds
		}
		arts, _, err := runPipelineWith(t, m, memOpen(data), sink, bf16ToF32, plugin.BeginOptions{Digests: true})
		if err != nil {
			t.Fatal(err)
		}
		if files[i], err = os.ReadFile(out); err != nil {
			t.Fatal(err)
		}
		digests[i] = arts[0].SHA256
		offered = ds.direct
	}
	if !bytes.Equal(files[0], files[1]) {
		t.Fatalf("written in place, the file differs from byte %d", firstDiff(files[0], files[1]))
	}
	if digests[0] == "" || digests[0] != digests[1] {
		t.Errorf("digests %q and %q", digests[0], digests[1])
	}
	if len(offered) == 0 {
		t.Fatal("no tensor was offered")
	}
	for _, name := range offered {
		if strings.Contains(name, "q_proj") || strings.Contains(name, "k_proj") {
			t.Errorf("%s, whose rows the sink permutes, was offered", name)
		}
	}
}

// The sink refuses a notice for a tensor it did not plan, or one already
// written.
func TestWrittenDirectRefusals(t *testing.T) {
	m, data := smallManifest(TensorSpec{Name: "a", DType: tensor.F32, Shape: []uint64{4}}, TensorSpec{Name: "b", DType: tensor.F32, Shape: []uint64{4}})
	sink, err := NewSink(&SinkConfig{Path: filepath.Join(t.TempDir(), "m.gguf")})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := sink.Plan(ctx, m); err != nil {
		t.Fatal(err)
	}
	if err := sink.Begin(ctx, m, plugin.BeginOptions{}); err != nil {
		t.Fatal(err)
	}
	defer sink.Abort(ctx)
	if n := len(sink.DirectTargets()); n != 2 {
		t.Fatalf("%d targets offered, want 2", n)
	}
	if err := sink.WrittenDirect("nope"); err == nil || !strings.Contains(err.Error(), "not planned") {
		t.Errorf("a tensor not planned: %v", err)
	}
	if err := sink.WrittenDirect("a"); err != nil {
		t.Fatal(err)
	}
	if err := sink.WrittenDirect("a"); err == nil || !strings.Contains(err.Error(), "written twice") {
		t.Errorf("a tensor told twice: %v", err)
	}
	if err := sink.Write(ctx, "a", plugin.BytesData(data["a"])); err == nil {
		t.Error("a Write after the tensor was written in place succeeded")
	}
	if n := len(sink.DirectTargets()); n != 1 {
		t.Errorf("%d targets offered after one was written, want 1", n)
	}
}
