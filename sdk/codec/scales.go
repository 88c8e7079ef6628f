package codec

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/sluice-ml/sluice/sdk/tensor"
)

// scaleFields lists, for each ggml block type, the byte offsets of its f16
// scale fields (d, and the minimum dmin or m where the type has one), as
// ggml's ggml_validate_row_data checks them. q8_K's d is an f32.
var scaleFields = map[tensor.DType][]int{
	tensor.Q4_0:  {0},
	tensor.Q4_1:  {0, 2},
	tensor.Q5_0:  {0},
	tensor.Q5_1:  {0, 2},
	tensor.Q8_0:  {0},
	tensor.Q8_1:  {0, 2},
	tensor.Q2_K:  {80, 82},
	tensor.Q3_K:  {108},
	tensor.Q4_K:  {0, 2},
	tensor.Q5_K:  {0, 2},
	tensor.Q6_K:  {208},
	tensor.TQ1_0: {52},
	tensor.TQ2_0: {64},
	tensor.IQ4NL: {0},
	tensor.IQ4XS: {0},
}

// ScaleError reports a block whose scale is NaN or infinite: every value
// the block decodes to would be NaN or infinite. Such a block is damaged
// input, the way ggml's ggml_validate_row_data sees it.
type ScaleError struct {
	DType tensor.DType
	// Block is the index of the block in the bytes checked (of the scale,
	// for a QTensor).
	Block int
	// Value is the offending scale.
	Value float32
}

func (e *ScaleError) Error() string {
	return fmt.Sprintf("%s block %d has a scale of %v; a damaged block (every value it holds would be %v)", e.DType, e.Block, e.Value, e.Value)
}

// BadInput marks the error as caused by the input.
func (e *ScaleError) BadInput() bool { return true }

// CheckScales reports the first block of dt in src whose scale is NaN or
// infinite, as a *ScaleError. src holds whole blocks. Types without a float
// scale (element types, mxfp4 whose E8M0 exponent is always finite in ggml)
// always pass. Decoding does not call it: callers that take blocks from a
// file check them first.
func CheckScales(dt tensor.DType, src []byte) error {
	if dt == tensor.Q8_K {
		for b := 0; b+292 <= len(src); b += 292 {
			if f := math.Float32frombits(binary.LittleEndian.Uint32(src[b:])); math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
				return &ScaleError{DType: dt, Block: b / 292, Value: f}
			}
		}
		return nil
	}
	fields, ok := scaleFields[dt]
	if !ok {
		return nil
	}
	f := formats[dt]
	for b := 0; b+f.blockBytes <= len(src); b += f.blockBytes {
		for _, off := range fields {
			// An f16 is NaN or infinite when its exponent bits are all ones.
			if h := binary.LittleEndian.Uint16(src[b+off:]); h&0x7c00 == 0x7c00 {
				return &ScaleError{DType: dt, Block: b / f.blockBytes, Value: Float16ToFloat32(h)}
			}
		}
	}
	return nil
}
