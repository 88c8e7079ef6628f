package transform

import (
	"errors"
	"testing"

	"github.com/sluice-ml/sluice/sdk/codec"
	"github.com/sluice-ml/sluice/sdk/plugin"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// TestDecodingRefusesNonFiniteScales is a regression test: dequantizing a
// q8_0 block whose scale is NaN or infinite (a damaged checkpoint) gave NaN
// or infinite values without a word; the conversion now fails with a
// bad-input error naming the block.
func TestDecodingRefusesNonFiniteScales(t *testing.T) {
	in := tensor.TensorInfo{Name: "w", DType: tensor.Q8_0, Shape: []uint64{2, 32}, Size: 68}
	for _, to := range []tensor.DType{tensor.F32, tensor.Q4_0} {
		op, _, err := ConvertOp(&in, to)
		if err != nil {
			t.Fatal(err)
		}
		inBytes, outBytes := op.UnitBytes()
		src := make([]byte, 68)
		src[1], src[35] = 0x3c, 0x3c // scales 1.0
		dst := make([]byte, 68/inBytes*outBytes)
		if err := op.Apply(dst, src); err != nil {
			t.Fatalf("%s: undamaged blocks: %v", to, err)
		}
		for _, bad := range [][2]byte{{0x00, 0x7e}, {0x00, 0x7c}, {0x00, 0xfc}} {
			d := append([]byte(nil), src...)
			d[34], d[35] = bad[0], bad[1]
			err := op.Apply(dst, d)
			var se *codec.ScaleError
			if !errors.As(err, &se) || se.Block != 1 || !plugin.IsBadInput(err) {
				t.Errorf("q8_0 → %s, second scale %x: got %v, want a bad-input ScaleError for block 1", to, bad, err)
			}
		}
	}
}
