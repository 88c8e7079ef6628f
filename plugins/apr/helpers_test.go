package apr

import (
	"context"
	"encoding/binary"
	"flag"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/sluice-ml/sluice/sdk/plugin"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

var update = flag.Bool("update", false, "rewrite golden files and the fuzz seed corpus")

func f32Bytes(vs ...float32) []byte {
	b := make([]byte, 0, 4*len(vs))
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	return b
}

// model is a small checkpoint built in a test: a manifest and its bytes.
type model struct {
	m    tensor.Manifest
	data map[string][]byte
}

func (mo *model) add(name string, d tensor.DType, shape []uint64, b []byte) {
	if mo.data == nil {
		mo.data = map[string][]byte{}
	}
	mo.m.Tensors = append(mo.m.Tensors, tensor.TensorInfo{Name: name, DType: d, Shape: shape, Size: uint64(len(b))})
	mo.data[name] = b
}

// goldenModel is the content of aprender's 516-byte golden vector
// (spec/apr.md §11): bias [1] = 0.125 and weights [8], F32, with the
// current writer's metadata.
func goldenModel() *model {
	mo := &model{}
	mo.m.Metadata.Set("model_type", tensor.StringValue("linear_regression"))
	mo.m.Metadata.Set("name", tensor.StringValue("golden-v2"))
	mo.m.Metadata.Set("version", tensor.StringValue("0.0.0-golden"))
	mo.m.Metadata.Set("created_at", tensor.StringValue("1700000000"))
	mo.m.Metadata.Set("total_size", tensor.U64Value(0))
	mo.m.Metadata.Set("param_count", tensor.U64Value(8))
	// Added out of name order: the writer sorts.
	mo.add("weights", tensor.F32, []uint64{8}, f32Bytes(1, 2, 0.5, -0.5, 4, -2, 0.25, 8))
	mo.add("bias", tensor.F32, []uint64{1}, f32Bytes(0.125))
	return mo
}

// write runs a sink over the model: Plan, Begin, every Write concurrently
// in a shuffled order, Commit.
func write(t testing.TB, path string, opts WriteOptions, mo *model) []plugin.Artifact {
	t.Helper()
	arts, err := tryWrite(path, opts, mo)
	if err != nil {
		t.Fatalf("writing %s: %v", path, err)
	}
	return arts
}

func tryWrite(path string, opts WriteOptions, mo *model) ([]plugin.Artifact, error) {
	ctx := context.Background()
	s := NewSink(path, opts)
	if _, err := s.Plan(ctx, &mo.m); err != nil {
		return nil, err
	}
	if err := s.Begin(ctx, &mo.m, plugin.BeginOptions{}); err != nil {
		return nil, err
	}
	order := rand.Perm(len(mo.m.Tensors))
	var wg sync.WaitGroup
	errs := make([]error, len(order))
	for k, i := range order {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := mo.m.Tensors[i].Name
			errs[k] = s.Write(ctx, name, plugin.BytesData(mo.data[name]))
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			s.Abort(ctx)
			return nil, err
		}
	}
	return s.Commit(ctx)
}

// writeBytes writes the model to a temporary file and returns its bytes.
func writeBytes(t testing.TB, opts WriteOptions, mo *model) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "model.apr")
	write(t, path, opts, mo)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// allLayouts lists every layout and compression combination.
var allLayouts = []WriteOptions{
	{Layout: LayoutAprender, Compression: CompressionNone},
	{Layout: LayoutAprender, Compression: CompressionLZ4},
	{Layout: LayoutAprender, Compression: CompressionZstd},
	{Layout: LayoutSpec, Compression: CompressionNone},
	{Layout: LayoutSpec, Compression: CompressionLZ4},
	{Layout: LayoutSpec, Compression: CompressionZstd},
}

func optsName(o WriteOptions) string { return string(o.Layout) + "-" + string(o.Compression) }
