package transform_test

import (
	"context"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-ml/sluice/core/runtest"
	"github.com/sluice-ml/sluice/internal/refdata"
	"github.com/sluice-ml/sluice/sdk/codec"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// f32Bytes encodes float32 values little-endian.
func f32Bytes(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// f32Values decodes little-endian float32 values.
func f32Values(b []byte) []float32 {
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

// normal returns n values drawn from N(0, sigma) with a fixed seed.
func normal(n int, sigma float64, seed uint64) []float32 {
	r := rand.New(rand.NewPCG(seed, seed^0x5eed))
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64() * sigma)
	}
	return v
}

// encode turns float32 values into dt with the codec.
func encode(t testing.TB, dt tensor.DType, v []float32) []byte {
	t.Helper()
	n, err := dt.ByteSize(uint64(len(v)))
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, n)
	if err := codec.EncodeFloat32(dt, b, v); err != nil {
		t.Fatal(err)
	}
	return b
}

// decode turns bytes of dt into float32 values with the codec.
func decode(t testing.TB, dt tensor.DType, b []byte, n int) []float32 {
	t.Helper()
	v := make([]float32, n)
	if err := codec.DecodeFloat32(dt, v, b); err != nil {
		t.Fatal(err)
	}
	return v
}

func elements(shape []uint64) int {
	n := 1
	for _, d := range shape {
		n *= int(d)
	}
	return n
}

// addFloat adds a tensor of normal values stored as dt.
func addFloat(t testing.TB, c *runtest.Checkpoint, name string, dt tensor.DType, shape []uint64, seed uint64) []float32 {
	t.Helper()
	v := normal(elements(shape), 0.02, seed)
	c.Add(name, dt, shape, encode(t, dt, v))
	return decode(t, dt, c.Data[name], len(v))
}

// run runs a pipeline over the checkpoints and fails the test on error.
func run(t testing.TB, src string, opts runtest.Options) *runtest.Result {
	t.Helper()
	res, err := runtest.Run(context.Background(), src, opts)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return res
}

// runErr runs a pipeline that must fail and returns the error.
func runErr(t testing.TB, src string, opts runtest.Options) error {
	t.Helper()
	_, err := runtest.Run(context.Background(), src, opts)
	if err == nil {
		t.Fatal("the run succeeded; want an error")
	}
	return err
}

// refDir returns ../shared/ref/quant, or skips the test when it is absent.
func refDir(t testing.TB) string {
	t.Helper()
	return filepath.Dir(refdata.Path(t, "ref", "quant", "normal.f32"))
}

func mustContain(t testing.TB, s string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(s, p) {
			t.Errorf("%q does not contain %q", s, p)
		}
	}
}
