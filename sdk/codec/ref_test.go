package codec

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluice-ml/sluice/internal/refdata"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// refTypes are the dtypes with ggml reference vectors in ../shared/ref/quant.
var refTypes = []tensor.DType{
	tensor.F16, tensor.BF16,
	tensor.Q8_0, tensor.Q4_0, tensor.Q4_1, tensor.Q5_0, tensor.Q5_1,
	tensor.Q2_K, tensor.Q3_K, tensor.Q4_K, tensor.Q5_K, tensor.Q6_K,
	tensor.TQ1_0, tensor.TQ2_0, tensor.MXFP4, tensor.IQ4NL, tensor.IQ4XS,
}

// refDir returns ../shared/ref/quant beside the module root, or skips the
// test, saying why, when the ggml reference vectors are absent.
func refDir(t testing.TB) string {
	t.Helper()
	return filepath.Dir(refdata.Path(t, "ref", "quant", "edge.f32"))
}

func readF32File(t testing.TB, path string) []float32 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b)%4 != 0 {
		t.Fatalf("%s: %d bytes is not a whole number of float32", path, len(b))
	}
	x := make([]float32, len(b)/4)
	for i := range x {
		x[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return x
}

// TestGGMLReference checks every quantizer and dequantizer byte for byte
// against ggml's own output on the edge-case and the normal data.
func TestGGMLReference(t *testing.T) {
	dir := refDir(t)
	for _, set := range []string{"edge", "normal"} {
		x := readF32File(t, filepath.Join(dir, set+".f32"))
		for _, dt := range refTypes {
			t.Run(set+"/"+string(dt), func(t *testing.T) {
				info, _ := dt.Info()
				want, err := os.ReadFile(filepath.Join(dir, set+"."+string(dt)))
				if err != nil {
					t.Fatal(err)
				}
				got := make([]byte, len(want))
				if err := EncodeFloat32(dt, got, x); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					bb := int(info.BlockBytes)
					bad, first := 0, -1
					for i := 0; i < len(want); i += bb {
						if !bytes.Equal(got[i:i+bb], want[i:i+bb]) {
							if first < 0 {
								first = i / bb
							}
							bad++
						}
					}
					bs := int(info.BlockSize)
					t.Errorf("quantize: %d of %d blocks differ; first is block %d (elements %d..%d)\n got %x\nwant %x\ninput %v",
						bad, len(want)/bb, first, first*bs, (first+1)*bs-1,
						got[first*bb:(first+1)*bb], want[first*bb:(first+1)*bb], x[first*bs:(first+1)*bs])
				}

				wantF := readF32File(t, filepath.Join(dir, set+"."+string(dt)+".f32"))
				back := make([]float32, len(x))
				if err := DecodeFloat32(dt, back, want); err != nil {
					t.Fatal(err)
				}
				bad, first := 0, -1
				for i := range back {
					if math.Float32bits(back[i]) != math.Float32bits(wantF[i]) {
						if first < 0 {
							first = i
						}
						bad++
					}
				}
				if bad > 0 {
					t.Errorf("dequantize: %d of %d values differ; first at %d: got %g (%#08x), want %g (%#08x)",
						bad, len(back), first, back[first], math.Float32bits(back[first]), wantF[first], math.Float32bits(wantF[first]))
				}
			})
		}
	}
}
