package onnx

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/sluice-ml/sluice/sdk/tensor"
)

// onnxType is one TensorProto.DataType the source reads: its registry
// dtype, and the typed field that holds it when raw_data is not used.
type onnxType struct {
	name  string
	dtype tensor.DType
	field protowire.Number
	// lo and hi bound the values an int32_data or uint64_data element may
	// hold for this type.
	lo, hi int64
}

// dataTypes maps TensorProto.DataType numbers to what the source reads.
var dataTypes = map[uint64]onnxType{
	1:  {"FLOAT", tensor.F32, tensorFloatData, 0, 0},
	2:  {"UINT8", tensor.U8, tensorInt32Data, 0, 255},
	3:  {"INT8", tensor.I8, tensorInt32Data, -128, 127},
	4:  {"UINT16", tensor.U16, tensorInt32Data, 0, 65535},
	5:  {"INT16", tensor.I16, tensorInt32Data, -32768, 32767},
	6:  {"INT32", tensor.I32, tensorInt32Data, -1 << 31, 1<<31 - 1},
	7:  {"INT64", tensor.I64, tensorInt64Data, 0, 0},
	9:  {"BOOL", tensor.Bool, tensorInt32Data, 0, 1},
	10: {"FLOAT16", tensor.F16, tensorInt32Data, 0, 65535},
	11: {"DOUBLE", tensor.F64, tensorDoubleData, 0, 0},
	12: {"UINT32", tensor.U32, tensorUint64Data, 0, 1<<32 - 1},
	13: {"UINT64", tensor.U64, tensorUint64Data, 0, 0},
	16: {"BFLOAT16", tensor.BF16, tensorInt32Data, 0, 65535},
	17: {"FLOAT8E4M3FN", tensor.F8E4M3, tensorInt32Data, 0, 255},
	19: {"FLOAT8E5M2", tensor.F8E5M2, tensorInt32Data, 0, 255},
}

// unsupportedTypes names the data types the source refuses.
var unsupportedTypes = map[uint64]string{
	0: "UNDEFINED", 8: "STRING", 14: "COMPLEX64", 15: "COMPLEX128",
	18: "FLOAT8E4M3FNUZ", 20: "FLOAT8E5M2FNUZ", 21: "UINT4", 22: "INT4",
	23: "FLOAT4E2M1", 24: "FLOAT8E8M0", 25: "UINT2", 26: "INT2",
}

func lookupType(n uint64) (onnxType, error) {
	if t, ok := dataTypes[n]; ok {
		return t, nil
	}
	if name, ok := unsupportedTypes[n]; ok {
		return onnxType{}, fmt.Errorf("data type %s (%d) is not supported", name, n)
	}
	return onnxType{}, fmt.Errorf("unknown data type %d", n)
}

var fieldNames = map[protowire.Number]string{
	tensorFloatData:  "float_data",
	tensorInt32Data:  "int32_data",
	tensorStringData: "string_data",
	tensorInt64Data:  "int64_data",
	tensorDoubleData: "double_data",
	tensorUint64Data: "uint64_data",
}
