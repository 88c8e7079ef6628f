package codec

import (
	"errors"
	"math"
	"testing"

	"github.com/sluice-ml/sluice/sdk/tensor"
)

// TestCheckScales damages the scale of the second block of every ggml block
// type with a scale field, with NaN and ±Inf, and expects CheckScales to name
// that block; undamaged blocks, and every element type, pass.
func TestCheckScales(t *testing.T) {
	vals := make([]float32, 512)
	for i := range vals {
		vals[i] = float32(math.Sin(float64(i)))
	}
	for dt, fields := range scaleFields {
		f := formats[dt]
		if f == nil || f.encode == nil {
			continue
		}
		src := make([]byte, 512/f.blockSize*f.blockBytes)
		if err := EncodeFloat32(dt, src, vals); err != nil {
			t.Fatalf("%s: %v", dt, err)
		}
		if err := CheckScales(dt, src); err != nil {
			t.Errorf("%s: undamaged blocks refused: %v", dt, err)
		}
		for _, off := range fields {
			for _, bad := range []uint16{0x7e00, 0x7c00, 0xfc00} {
				d := append([]byte(nil), src...)
				d[f.blockBytes+off], d[f.blockBytes+off+1] = byte(bad), byte(bad>>8)
				var se *ScaleError
				if err := CheckScales(dt, d); !errors.As(err, &se) || se.Block != 1 || !se.BadInput() {
					t.Errorf("%s: scale at byte %d = %#04x: got %v, want a ScaleError for block 1", dt, off, bad, err)
				}
			}
		}
	}
	q8k := make([]byte, 2*292)
	q8k[292+3] = 0x7f
	q8k[292+2] = 0xc0 // f32 NaN
	if err := CheckScales(tensor.Q8_K, q8k); err == nil {
		t.Errorf("q8_K: a NaN scale passed")
	}
	if err := CheckScales(tensor.F32, []byte{0, 0, 0xc0, 0x7f}); err != nil {
		t.Errorf("f32 values are not scales: %v", err)
	}
}

// TestQTensorDecodeRefusesNonFiniteScales is a regression test: a QTensor
// whose stored scale is NaN or infinite (a damaged apsim file) decoded to
// NaN or infinite values; it is now a *ScaleError naming the scale.
func TestQTensorDecodeRefusesNonFiniteScales(t *testing.T) {
	info := tensor.TensorInfo{Name: "w", DType: QTInt8, Shape: []uint64{2, 4}}
	q, err := QTensorOf(&info)
	if err != nil {
		t.Fatal(err)
	}
	src, err := q.Encode([]float32{1, 2, 3, 4, 5, 6, 7, 8})
	if err != nil {
		t.Fatal(err)
	}
	dst := make([]float32, 8)
	if err := q.Decode(dst, src); err != nil {
		t.Fatalf("undamaged: %v", err)
	}
	for _, bits := range []uint32{0x7fc00000, 0x7f800000, 0xff800000} {
		d := append([]byte(nil), src...)
		d[0], d[1], d[2], d[3] = byte(bits), byte(bits>>8), byte(bits>>16), byte(bits>>24)
		var se *ScaleError
		if err := q.Decode(dst, d); !errors.As(err, &se) || se.Block != 0 {
			t.Errorf("scale bits %#08x: got %v, want a ScaleError", bits, err)
		}
	}
}
